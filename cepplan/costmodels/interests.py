"""Geometry of consumer interests (seed 000 §2.1, §4.2.2): where a moving query looks at a
given time, how much two interests overlap, and each query's processing neighbours.

Pure (numpy only) so the engine can ship it. Regions are [x1, y1, x2, y2], bounds inclusive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

Region = tuple[float, float, float, float]


def region_at(query: Mapping[str, Any], when: float) -> Region:
    """The query's interest at time `when`: its fixed region, or the region's shape centred on
    the last focal point of its `track` at or before `when` (the first one before it starts)."""
    x1, y1, x2, y2 = query["region"]
    track = query.get("track")
    if not track:
        return (x1, y1, x2, y2)
    times = [point[0] for point in track]
    _, fx, fy = track[max(0, int(np.searchsorted(times, when, side="right")) - 1)]
    half_w, half_h = (x2 - x1) / 2, (y2 - y1) / 2
    return (fx - half_w, fy - half_h, fx + half_w, fy + half_h)


def regions_on_track(query: Mapping[str, Any]) -> list[Region]:
    """Every interest `region_at` gives the query at some time: its region centred on each
    focal point of its track (of points with equal times, the last), or its fixed region;
    linear in the track, where calling `region_at` at every track time is quadratic."""
    track = query.get("track")
    if not track:
        return [region_at(query, 0.0)]
    last = {point[0]: point for point in track}
    return [region_at({"region": query["region"], "track": [point]}, point[0])
            for point in last.values()]


def area(region: Region) -> float:
    return max(0.0, region[2] - region[0]) * max(0.0, region[3] - region[1])


def overlap(a: Region, b: Region) -> float:
    """The area two interests share."""
    return area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def processing_neighbours(queries: Sequence[Mapping[str, Any]], when: float,
                          k: int | None, distance: float | None) -> list[list[int]]:
    """Per query, the queries of the same operator it may process on behalf of: the k nearest
    focal points within `distance` (all of them when k and distance are not given), nearest
    first, ties by position (a simplified Fig. 6: the query's own focal point is the
    reference)."""
    centres = [_centre(region_at(q, when)) for q in queries]
    out = []
    for n, query in enumerate(queries):
        others = [(math.dist(centres[n], centres[m]), m) for m, other in enumerate(queries)
                  if m != n and other["operator"] == query["operator"]]
        near = sorted(o for o in others if distance is None or o[0] <= distance)
        out.append([m for _, m in (near if k is None else near[:k])])
    return out


def _centre(region: Region) -> tuple[float, float]:
    return ((region[0] + region[2]) / 2, (region[1] + region[3]) / 2)
