"""The expression language's own error: a message and the character it points at."""

from __future__ import annotations

from cepplan.errors import CepplanError


class ExprError(CepplanError):
    """A predicate that does not parse or does not type-check, with the offending offset."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message = message
        self.pos = pos

    def caret(self, text: str) -> str:
        """The predicate text with a caret under the offending character (one line shown)."""
        line_start = text.rfind("\n", 0, self.pos) + 1
        line_end = text.find("\n", self.pos)
        line = text[line_start : line_end if line_end != -1 else len(text)]
        column = self.pos - line_start
        if len(line) > 120:  # keep very long input readable: show a window around the offset
            start = max(0, column - 60)
            line, column = line[start : start + 120], column - start
        return f"{line}\n{' ' * column}^"
