"""Text attributes as whole-number codes, so that a join on `a.user == b.user` looks its
candidates up in the sliced index numeric look-ups use (docs/matching.md, "Indexed joins").

A table's text values are numbered once per partition in one numbering shared by all its
columns (a dictionary: equal values get equal codes, whichever column holds them), so a
row's value read from another column (`a.card == b.payer`) finds its code too, and a value
no column holds finds none. Missing values are numbered like any other (the predicate still
decides: the look-up keeps a superset of the candidates it keeps).
"""

from __future__ import annotations

from itertools import islice

import numpy as np

from cepplan.engine_adapter.runtime.table import Table

ABSENT = -1  # the code of a value no coded column holds: no candidate has it


def _text_or_missing(value: object) -> bool:
    """A value a text column holds: a string, or missing (None, NaN)."""
    return isinstance(value, str) or value is None or (isinstance(value, float)
                                                      and value != value)


class TextCodes:
    """The codes of a table's text columns, each column numbered when first asked for."""

    def __init__(self, table: Table):
        self.table = table
        self.numbers: dict[object, int] = {}
        self.columns: dict[str, np.ndarray | None] = {}

    def column(self, attr: str) -> np.ndarray | None:
        """The code of `attr`'s value per table rank; None when `attr` is not a text column
        (numbers, flags, or objects other than strings and missing values)."""
        if attr not in self.columns:
            self.columns[attr] = self._numbered(self.table.column(attr))
        return self.columns[attr]

    def of(self, values: np.ndarray) -> np.ndarray:
        """The codes of any values (`ABSENT` for one no coded column holds)."""
        get = self.numbers.get
        return np.fromiter((get(v, ABSENT) for v in values.tolist()), np.int64, len(values))

    def _numbered(self, values: np.ndarray) -> np.ndarray | None:
        """Codes for a column's values, numbering the new ones; None (and none numbered) when
        it is not a text column."""
        if values.dtype.kind not in "OU":
            return None
        numbers = self.numbers
        before = len(numbers)
        try:
            codes = np.fromiter((numbers.setdefault(v, len(numbers)) for v in values.tolist()),
                                np.int64, len(values))
        except TypeError:  # an unhashable value: not a text column
            codes = None
        added = list(islice(numbers, before, None))
        if codes is None or not all(_text_or_missing(v) for v in added):
            for value in added:
                del numbers[value]
            return None
        return codes
