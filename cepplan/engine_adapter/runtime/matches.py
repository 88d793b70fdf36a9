"""The matches of one pattern in one partition as the matcher's stages hand them on: the ranks
each positive variable binds, and the counts of work cut, held back or split on the way."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cepplan.engine_adapter.runtime.spec import OperandSpec


@dataclass
class Matches:
    """Matches of one pattern in one partition: per positive variable, the ranks it binds
    (one per match for a plain variable; a tuple in time order for a Kleene variable)."""

    single: dict[str, np.ndarray] = field(default_factory=dict)
    kleene: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    count: int = 0
    cap_hits: int = 0
    held_back: int = 0  # matches whose negation the input's time span does not decide
    splits: int = 0  # pieces the steps were split into beyond the first (`pieces`)

    @staticmethod
    def joined(parts: list[Matches]) -> Matches:
        """Batches of matches over the same table, one after the other (one concatenation
        per variable, however many batches)."""
        out = Matches()
        for var in dict.fromkeys(v for part in parts for v in part.single):
            out.single[var] = np.concatenate([p.single[var] for p in parts if var in p.single])
        for part in parts:
            for var, tuples in part.kleene.items():
                out.kleene.setdefault(var, []).extend(tuples)
            out.count += part.count
            out.cap_hits += part.cap_hits
            out.held_back += part.held_back
            out.splits += part.splits
        return out

    def ranks_of(self, var: str, row: int) -> tuple[int, ...]:
        """The ranks bound to `var` in match `row`."""
        if var in self.kleene:
            return self.kleene[var][row]
        return (int(self.single[var][row]),)


def select(matches: Matches, keep: np.ndarray) -> Matches:
    """The matches where `keep` holds, with the same counts of cut and split work."""
    index = np.flatnonzero(keep)
    return Matches(single={v: a[index] for v, a in matches.single.items()},
                   kleene={v: [s[i] for i in index] for v, s in matches.kleene.items()},
                   count=len(index), cap_hits=matches.cap_hits, held_back=matches.held_back,
                   splits=matches.splits)


def ends(operands: tuple[OperandSpec, ...], matches: Matches
          ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per positive variable, the rank of its first and of its last event in each match."""
    firsts, lasts = {}, {}
    for o in operands:
        if o.var in matches.kleene:
            sets = matches.kleene[o.var]
            firsts[o.var] = np.fromiter((s[0] for s in sets), np.int64, len(sets))
            lasts[o.var] = np.fromiter((s[-1] for s in sets), np.int64, len(sets))
        else:
            firsts[o.var] = lasts[o.var] = matches.single[o.var]
    return firsts, lasts
