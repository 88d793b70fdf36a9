"""Quality of result when one selection's result stands in for another's (seed 000 §3, eq. 1–3).

`needed` is the selection a query would process itself, `used` the selection whose result it
receives instead; both are sets of atomic event ids. Pure (numpy only) so the engine can ship it.
Empty sets: nothing used means no noise (precision 1), nothing needed means nothing missed
(recall 1), no events means every interest holds them all (disparity 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

Region = tuple[float, float, float, float]  # x1, y1, x2, y2, bounds inclusive


def precision(needed: AbstractSet[int], used: AbstractSet[int]) -> float:
    """|a(s) ∩ a(s')| / |a(s')|: the share of the used events the query wanted (eq. 1)."""
    return len(needed & used) / len(used) if used else 1.0


def recall(needed: AbstractSet[int], used: AbstractSet[int]) -> float:
    """|a(s) ∩ a(s')| / |a(s)|: the share of the wanted events the used result saw (eq. 2)."""
    return len(needed & used) / len(needed) if needed else 1.0


def precision_recall(needed: np.ndarray, used: np.ndarray) -> tuple[float, float]:
    """Eq. 1–2 on arrays of distinct event ids (the engine's vectorised form)."""
    common = np.intersect1d(needed, used, assume_unique=True).size
    return (common / used.size if used.size else 1.0,
            common / needed.size if needed.size else 1.0)


def disparity(xs: np.ndarray, ys: np.ndarray, regions: Sequence[Region]) -> float:
    """Σ_e |{r ∈ Iu : l(e) ∈ r}| / (|a(s)| |Iu|) over the events' locations and the spatial
    interests Iu used to produce them (eq. 3); 1 when every interest holds every event."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if xs.size == 0 or not regions:
        return 1.0
    inside = sum(int(np.count_nonzero((xs >= x1) & (xs <= x2) & (ys >= y1) & (ys <= y2)))
                 for x1, y1, x2, y2 in regions)
    return inside / (xs.size * len(regions))


def thresholds(query: Mapping[str, Any]) -> tuple[float, float, float | None]:
    """A consumer query's (precision, recall, disparity or None) thresholds, from its `qor`."""
    qor = query["qor"]
    return (qor["precision"], qor["recall"], qor.get("disparity"))


def meets(p: float, r: float, d: float, thresholds: tuple[float, float, float | None]) -> bool:
    """Whether a stand-in keeps a query's thresholds (precision, recall, optional disparity);
    a threshold is met when the quality reaches it (≥; seed 000 writes >, which would make a
    threshold of 1 unmeetable)."""
    tp, tr, td = thresholds
    return p >= tp and r >= tr and (td is None or d >= td)
