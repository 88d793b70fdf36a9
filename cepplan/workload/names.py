"""What a name is in a workload — event types, attributes, patterns, variables, emitted
attributes — in one place: a word of letters (of any script: `Retrait_été`, `Überweisung`,
`取引`), digits and `_`, not starting with a digit, as Python's identifiers are
(`str.isidentifier`, Unicode's UAX 31), which the runtime checks too. Compared as written (no
Unicode normalisation: type names must equal the event files' values)."""

from __future__ import annotations

RULE = "letters of any script, digits and '_', not starting with a digit"
# fields every event has in the matches written: an attribute of the same name would be
# written beside them under one key, hiding the event's own (an attribute `id` is allowed
# when it is `source.id_column`: then it is the events' own id, written once)
RESERVED_ATTRIBUTES = {
    "ts": "every event has it (its timestamp)",
    "id": "every event has it in the matches (its id); to read the events' ids from a "
          "column named id, set source.id_column to \"id\"",
    "type": "every event has it in the matches (its event type)",
}


def is_name(text: str) -> bool:
    """Whether `text` is a name."""
    return text.isidentifier()


def name_length(text: str, start: int) -> int:
    """How many characters of `text` from `start` form a name (0: none starts there)."""
    if not text[start:start + 1].isidentifier():
        return 0
    end = start + 1
    while end < len(text) and ("_" + text[end]).isidentifier():
        end += 1
    return end - start
