"""The PATTERN of a MATCH_RECOGNIZE query as `cepplan import` carries it over: single-row
variables in strict contiguity, optional ones (`B?`, `B??`), repeated ones (`B+`, `B*`,
`B{n}`, `B{n,}`, `B{n,m}`, `B{,m}`: KLEENE in strict contiguity, optional when n is 0), each
greedy or reluctant (`B+?`, `B*?`, `B{n,m}?`) but not both kinds in one query, and before the
last one at most one reluctant `X*?` of a variable that matches every row (docs/import.md).

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


_REPEATED = re.compile(r"([+*])|\{(\d*)(,(\d*))?\}")  # B+, B*, B{n}, B{n,}, B{n,m}, B{,m}


_AT_MOST_ONCE = {"{0,1}": "?", "{,1}": "?", "{0,1}?": "??", "{,1}?": "??"}  # B{0,1} is B?


@dataclass(frozen=True)
class RowPattern:
    """The variables bound, in order, the `X*?` standing before the last one (or None), the
    variables that may bind no row (`B?`, `B*`, `B{0,m}`), the preference of the quantified
    ones (`greedy`, `reluctant`; "" without any) and the repeated ones' (min, max) rows."""

    variables: list[str]
    gap: str | None
    optional: frozenset[str] = frozenset()
    prefer: str = ""
    repeated: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # (min, max)


def read_pattern(text: str, defined: frozenset[str] = frozenset()) -> RowPattern:
    """`text` (what PATTERN (...) holds) as a RowPattern, `defined` the variables whose DEFINE
    is not TRUE (an `X*?` before the last variable, X not among them, is a gap); ValueError
    saying what cannot be carried over."""
    for token, construct in _UNSUPPORTED:
        if token in text:
            raise ValueError(f"{construct} ({token!r}) is not supported")
    tokens = text.split()
    variables: list[str] = []
    gap = None
    optional: set[str] = set()
    preference: dict[str, str] = {}  # each quantified variable: greedy or reluctant
    repeated: dict[str, tuple[int, int | None]] = {}
    for at, token in enumerate(tokens):
        if token.upper().startswith("PERMUTE"):
            raise ValueError("PERMUTE is not supported")
        found = re.match(r"\w+", token)
        name = found.group() if found else token
        quantifier = token[found.end():] if found else token
        quantifier = _AT_MOST_ONCE.get(quantifier, quantifier)
        if quantifier == "*?" and 0 < at == len(tokens) - 2 and gap is None \
                and name not in defined:
            gap = name
        elif quantifier in ("?", "??"):
            optional.add(name)
            preference[name] = "greedy" if quantifier == "?" else "reluctant"
            variables.append(name)
        elif quantifier:
            low, high = _repeated(name, quantifier)
            repeated[name] = (max(1, low), high)
            if low == 0:
                optional.add(name)
            preference[name] = "reluctant" if quantifier.endswith("?") else "greedy"
            variables.append(name)
        else:
            variables.append(name)
        if not is_name(name) or name in _RESERVED or name.startswith("__"):
            raise ValueError(f"{name!r} cannot be a cepplan variable name")
        if sum(re.match(r"\w*", t).group() == name for t in tokens) > 1:
            raise ValueError(f"{name} appears twice: each variable matches one row")
    if not variables:
        raise ValueError("missing or empty")
    if len(optional) == len(variables):
        raise ValueError("every variable is optional: a match cannot be empty")
    if len(set(preference.values())) > 1:
        greedy = ", ".join(t for t in tokens if preference.get(re.match(r"\w*", t).group())
                           == "greedy")
        reluctant = ", ".join(t for t in tokens if preference.get(re.match(r"\w*", t).group())
                              == "reluctant")
        raise ValueError(f"greedy ({greedy}) and reluctant ({reluctant}) quantifiers together "
                         "are not supported: cepplan prefers matches one way per pattern")
    if preference and gap is not None:
        raise ValueError(f"a quantified variable ({', '.join(preference)}) with {gap}*? is not "
                         "supported")
    if repeated and len(variables) == 1:
        raise ValueError(f"a lone repeated variable ({variables[0]}) is not supported: cepplan "
                         "keeps its rows back to back only between other variables")
    prefer = next(iter(preference.values()), "")
    return RowPattern(variables, gap, frozenset(optional), prefer, repeated)


def _repeated(name: str, quantifier: str) -> tuple[int, int | None]:
    """The (fewest, most or None) rows of a repetition, greedy or reluctant; ValueError for a
    quantifier not carried over."""
    found = _REPEATED.fullmatch(quantifier.removesuffix("?"))
    if found is None:
        raise ValueError(f"{name + quantifier!r} is not supported: each variable matches one "
                         "row, none or one with ? and ??, or repeats with +, *, {n,m} (each "
                         "reluctant with a trailing ?)")
    if found.group(1):
        return (1 if found.group(1) == "+" else 0), None
    low = int(found.group(2) or 0)
    high = low if found.group(3) is None else (int(found.group(4)) if found.group(4) else None)
    if (high is not None and high < low) or high == 0:
        raise ValueError(f"the quantifier {quantifier!r} on {name} is not supported: it must "
                         "allow at least one row and its most rows be no fewer than its fewest")
    return low, high
