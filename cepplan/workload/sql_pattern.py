"""The PATTERN of a MATCH_RECOGNIZE query as `cepplan import` carries it over: single-row
variables in strict contiguity, and before the last one at most one reluctant `X*?` of a
variable that matches every row (docs/import.md).

`A B X*? C` finds, after B, the first row on which C's DEFINE holds: X takes the fewest rows
it can and, C being last, nothing after C can fail and make SQL try more. That is cepplan's
skip-till-next-match (`next`) for C. Before another variable, SQL would backtrack into X when
that variable failed, which `next` does not do, so it is refused there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cepplan.workload.names import is_name

_RESERVED = {"and", "or", "not", "true", "false", "ts"}
_UNSUPPORTED = (("|", "alternation"), ("(", "grouping"), ("{-", "exclusion"),
                ("^", "an anchor"), ("$", "an anchor"))


@dataclass(frozen=True)
class RowPattern:
    """The variables bound, in order, and the `X*?` standing before the last one (or None)."""

    variables: list[str]
    gap: str | None


def read_pattern(text: str) -> RowPattern:
    """`text` (what PATTERN (...) holds) as a RowPattern; ValueError saying what cannot be
    carried over."""
    for token, construct in _UNSUPPORTED:
        if token in text:
            raise ValueError(f"{construct} ({token!r}) is not supported")
    tokens = text.split()
    variables: list[str] = []
    gap = None
    for at, token in enumerate(tokens):
        if token.upper().startswith("PERMUTE"):
            raise ValueError("PERMUTE is not supported")
        found = re.match(r"\w+", token)
        name = found.group() if found else token
        quantifier = token[found.end():] if found else token
        if quantifier == "*?" and 0 < at == len(tokens) - 2 and gap is None:
            gap = name
        elif quantifier:
            raise ValueError(f"the quantifier {quantifier!r} on {name} is not supported: each "
                             "variable matches one row (a reluctant X*? of a variable matching "
                             "every row may stand before the last variable)")
        else:
            variables.append(name)
        if not is_name(name) or name in _RESERVED or name.startswith("__"):
            raise ValueError(f"{name!r} cannot be a cepplan variable name")
        if tokens.count(name) + sum(t.startswith(f"{name}*") for t in tokens) > 1:
            raise ValueError(f"{name} appears twice: each variable matches one row")
    if not variables:
        raise ValueError("missing or empty")
    return RowPattern(variables, gap)
