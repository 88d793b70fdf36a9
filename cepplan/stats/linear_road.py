"""A Linear-Road-like stream with known context episodes (seed 003 §7.1; Arasu et al.).

Position reports (`vid`, `speed`, `lane`, `pos`, `segment`) from the cars of each road segment,
every `report_every` time units with a little jitter. Each segment has congestion episodes
covering `congestion_share` of its time and accident episodes, each wholly inside a congestion
or wholly in clear traffic, at least a minute from any other bound. Speeds: clear U(62, 100),
congestion U(5, 35), accident U(5, 25) (from two time units after its start) plus two cars
stopped (speed 0) at one position, reporting from its start and half a unit later. The
truth lists every episode, so context windows derived from the events can be checked.

    result = linear_road(segments=4, duration=1800, seed=1)
    result.events  # canonical columns, type PositionReport, sorted by (__ts, __id)
    result.truth   # {"episodes": [{"segment", "context", "start", "end"}, ...], ...}
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cepplan.engine_adapter.runtime.context_windows import merge_spans
from cepplan.stats.synth import SynthResult
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

REPORT = "PositionReport"
ATTRIBUTES = {"vid": "long", "speed": "double", "lane": "string", "pos": "double",
              "segment": "long"}
LANES = np.array(["s1", "s2", "s3", "exit"], dtype=object)
CLEAR, CONGESTION, ACCIDENT = (62.0, 100.0), (5.0, 35.0), (5.0, 25.0)
MARGIN = 60.0  # time units kept between episode bounds, so each is detected on its own


def linear_road(*, segments: int = 4, duration: float = 1800.0, cars: int = 12,
                report_every: float = 30.0, congestion_share: float = 0.3,
                congestion_episodes: int = 2, accidents: int = 1, accident_length: float = 180.0,
                seed: int = 0) -> SynthResult:
    """Generate the stream; deterministic for a seed. `ValueError` when the episodes cannot
    fit into `duration` with their margins."""
    if not 0.0 <= congestion_share < 1.0:
        raise ValueError(f"congestion share must be in [0, 1), got {congestion_share}")
    rng = np.random.default_rng(seed)
    episodes: list[dict[str, Any]] = []
    parts = []
    for segment in range(segments):
        jams = _place(duration, congestion_share * duration, congestion_episodes, rng)
        crashes = _accidents(duration, jams, accidents, accident_length, rng)
        episodes += [{"segment": segment, "context": "congestion", "start": s, "end": e}
                     for s, e in jams]
        episodes += [{"segment": segment, "context": "accident", "start": s, "end": e}
                     for s, e in crashes]
        parts.append(_segment_reports(segment, duration, cars, report_every, jams, crashes,
                                      rng))
    events = pd.concat(parts, ignore_index=True).sort_values([EVENT_TS, "vid"], kind="stable")
    events = events.reset_index(drop=True)
    events.insert(0, EVENT_ID, np.arange(len(events), dtype=np.int64))
    events.insert(0, EVENT_TYPE, REPORT)
    truth = {
        "kind": "linear road ground truth", "time_unit": "s", "duration": float(duration),
        "generator": {"seed": seed, "segments": segments, "cars": cars,
                      "report_every": report_every, "congestion_share": congestion_share,
                      "congestion_episodes": congestion_episodes, "accidents": accidents,
                      "accident_length": accident_length,
                      "speeds": {"clear": CLEAR, "congestion": CONGESTION,
                                 "accident": ACCIDENT}},
        "counts": {REPORT: len(events)},
        "episodes": sorted(episodes, key=lambda e: (e["segment"], e["start"])),
        "coverage": _coverage(episodes, segments, duration),
    }
    return SynthResult(events=events, truth=truth)


def _place(duration: float, total: float, count: int,
           rng: np.random.Generator) -> list[tuple[float, float]]:
    """`count` disjoint episodes of equal length summing to `total`, at random places, each
    at least MARGIN from the others and from both ends of the stream."""
    if count == 0 or total <= 0:
        return []
    length = total / count
    free = duration - total - (count + 1) * MARGIN
    if free < 0:
        raise ValueError(f"{count} episodes of {length:g} do not fit into {duration:g} "
                         f"with {MARGIN:g} between them")
    gaps = np.diff(np.sort(np.concatenate([[0.0, free], rng.uniform(0, free, count)])))
    spans, at = [], 0.0
    for gap in gaps[:count]:
        at += MARGIN + gap
        spans.append((float(at), float(at + length)))
        at += length
    return spans


def _accidents(duration: float, jams: list[tuple[float, float]], count: int, length: float,
               rng: np.random.Generator) -> list[tuple[float, float]]:
    """Accidents each wholly inside one congestion or wholly in clear traffic."""
    stretches = [(s + MARGIN, e - MARGIN) for s, e in jams]
    bounds = [0.0] + [b for s, e in jams for b in (s, e)] + [duration]
    stretches += [(bounds[i] + MARGIN, bounds[i + 1] - MARGIN)
                  for i in range(0, len(bounds), 2)]
    fitting = [(s, e) for s, e in stretches if e - s >= length]
    chosen: list[tuple[float, float]] = []
    for index in rng.permutation(len(fitting))[:count]:
        low, high = fitting[index]
        start = float(rng.uniform(low, high - length))
        chosen.append((start, start + length))
    return sorted(chosen)


def _segment_reports(segment: int, duration: float, cars: int, every: float,
                     jams: list, crashes: list, rng: np.random.Generator) -> pd.DataFrame:
    phases = rng.uniform(0, every, cars)
    rows = []
    for car, phase in enumerate(phases):
        stamps = np.arange(phase, duration, every)
        stamps = np.clip(stamps + rng.uniform(-2.0, 2.0, len(stamps)), 0.0, duration - 1e-6)
        rows.append(pd.DataFrame({EVENT_TS: stamps, "vid": segment * 1000 + car}))
    table = pd.concat(rows, ignore_index=True)
    ts = table[EVENT_TS].to_numpy()
    low, high = np.full(len(ts), CLEAR[0]), np.full(len(ts), CLEAR[1])
    for spans, (lo, hi), delay in ((jams, CONGESTION, 0.0), (crashes, ACCIDENT, 2.0)):
        for start, end in spans:  # traffic slows once the stopped cars have been seen
            inside = (ts >= start + delay) & (ts < end)
            low[inside], high[inside] = lo, hi
    table["speed"] = rng.uniform(low, high)
    table["lane"] = LANES[rng.choice(4, len(ts), p=[0.3, 0.3, 0.3, 0.1])]
    table["pos"] = rng.uniform(0.0, 100.0, len(ts))
    stopped = [_stopped_cars(segment, n, start, end, every, rng)
               for n, (start, end) in enumerate(crashes)]
    table = pd.concat([table, *stopped], ignore_index=True)
    table["segment"] = segment
    return table


def _stopped_cars(segment: int, number: int, start: float, end: float, every: float,
                  rng: np.random.Generator) -> pd.DataFrame:
    """Two cars stopped at one position, reporting speed 0 from the accident's start."""
    where = float(np.round(rng.uniform(0.0, 100.0), 1))
    frames = []
    for car in range(2):
        stamps = np.arange(start + car * 0.5, end, every)
        frames.append(pd.DataFrame({EVENT_TS: stamps,
                                    "vid": segment * 1000 + 900 + 2 * number + car,
                                    "speed": 0.0, "lane": "s1", "pos": where}))
    return pd.concat(frames, ignore_index=True)


def _coverage(episodes: list[dict], segments: int, duration: float) -> dict[str, float]:
    """Share of segment-time each context type holds per the episodes (clear: the rest)."""
    total = segments * duration
    shares = {c: sum(e["end"] - e["start"] for e in episodes if e["context"] == c) / total
              for c in ("congestion", "accident")}
    clear_time = sum(duration - sum(e - s for s, e in merge_spans(
        [(e["start"], e["end"]) for e in episodes if e["segment"] == segment]))
        for segment in range(segments))
    shares["clear"] = clear_time / total
    return {k: round(v, 6) for k, v in shares.items()}
