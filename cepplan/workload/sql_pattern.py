"""The PATTERN of a MATCH_RECOGNIZE query as `cepplan import` carries it over: single-row
variables in strict contiguity, optional ones (`B?` greedy, `B??` reluctant, not both kinds),
greedy repeated ones (`B+`, `B{n}`, `B{n,}`, `B{n,m}`, n >= 1: KLEENE in strict contiguity),
and before the last one at most one reluctant `X*?` of a variable that matches every row
(docs/import.md).

`A B X*? C` finds, after B, the first row on which C's DEFINE holds: X takes the fewest rows
it can and, C being last, nothing after C can fail and make SQL try more. That is cepplan's
skip-till-next-match (`next`) for C. Before another variable, SQL would backtrack into X when
that variable failed, which `next` does not do, so it is refused there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cepplan.workload.names import is_name

_RESERVED = {"and", "or", "not", "true", "false", "ts"}
_UNSUPPORTED = (("|", "alternation"), ("(", "grouping"), ("{-", "exclusion"),
                ("^", "an anchor"), ("$", "an anchor"))


_REPEATED = re.compile(r"\+|\{(\d+)(,(\d*))?\}")  # B+, B{n}, B{n,}, B{n,m}


_AT_MOST_ONCE = {"{0,1}": "?", "{,1}": "?", "{0,1}?": "??", "{,1}?": "??"}  # B{0,1} is B?


@dataclass(frozen=True)
class RowPattern:
    """The variables bound, in order, the `X*?` standing before the last one (or None), the
    optional variables and their preference (`greedy`, `reluctant`; "" without any)."""

    variables: list[str]
    gap: str | None
    optional: frozenset[str] = frozenset()
    prefer: str = ""
    repeated: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # (min, max)


def read_pattern(text: str) -> RowPattern:
    """`text` (what PATTERN (...) holds) as a RowPattern; ValueError saying what cannot be
    carried over."""
    for token, construct in _UNSUPPORTED:
        if token in text:
            raise ValueError(f"{construct} ({token!r}) is not supported")
    tokens = text.split()
    variables: list[str] = []
    gap = None
    optional: dict[str, str] = {}
    repeated: dict[str, tuple[int, int | None]] = {}
    for at, token in enumerate(tokens):
        if token.upper().startswith("PERMUTE"):
            raise ValueError("PERMUTE is not supported")
        found = re.match(r"\w+", token)
        name = found.group() if found else token
        quantifier = token[found.end():] if found else token
        quantifier = _AT_MOST_ONCE.get(quantifier, quantifier)
        if quantifier == "*?" and 0 < at == len(tokens) - 2 and gap is None:
            gap = name
        elif quantifier in ("?", "??"):
            optional[name] = "greedy" if quantifier == "?" else "reluctant"
            variables.append(name)
        elif quantifier and (bounds := _repeated(name, quantifier)):
            repeated[name] = bounds
            variables.append(name)
        elif quantifier:
            raise ValueError(f"{token!r} is not supported: each variable matches one row, or "
                             "none with ? (a reluctant X*? of a variable matching every row "
                             "may stand before the last variable)")
        else:
            variables.append(name)
        if not is_name(name) or name in _RESERVED or name.startswith("__"):
            raise ValueError(f"{name!r} cannot be a cepplan variable name")
        if sum(re.match(r"\w*", t).group() == name for t in tokens) > 1:
            raise ValueError(f"{name} appears twice: each variable matches one row")
    if not variables:
        raise ValueError("missing or empty")
    if len(set(optional.values())) > 1:
        raise ValueError("greedy (B?) and reluctant (B??) optional variables together are not "
                         "supported: cepplan prefers matches one way per pattern")
    if optional and gap is not None:
        raise ValueError(f"an optional variable with {gap}*? is not supported")
    if len(optional) == len(variables):
        raise ValueError("every variable is optional: a match cannot be empty")
    if repeated and (optional or gap is not None):
        raise ValueError(f"a repeated variable ({', '.join(repeated)}) with an optional one or "
                         "X*? is not supported")
    if repeated and len(variables) == 1:
        raise ValueError(f"a lone repeated variable ({variables[0]}) is not supported: cepplan "
                         "keeps its rows back to back only between other variables")
    prefer = "greedy" if repeated else next(iter(optional.values()), "")
    return RowPattern(variables, gap, frozenset(optional), prefer, repeated)


def _repeated(name: str, quantifier: str) -> tuple[int, int | None] | None:
    """The bounds of a greedy repetition (None: not one); ValueError for those not carried."""
    if quantifier.endswith("?") or quantifier.startswith("*"):
        raise ValueError(f"the quantifier {quantifier!r} on {name} is not supported: "
                         "repetitions carry over greedy and of at least one row (B+, B{n,m}, "
                         "n >= 1); B? and B?? too")
    found = _REPEATED.fullmatch(quantifier)
    if found is None:
        return None
    if quantifier == "+":
        return 1, None
    low = int(found.group(1))
    high = low if found.group(2) is None else (int(found.group(3)) if found.group(3) else None)
    if low < 1 or (high is not None and high < low):
        raise ValueError(f"the quantifier {quantifier!r} on {name} is not supported: "
                         "repetitions of at least one row (n >= 1, m >= n) carry over")
    return low, high
