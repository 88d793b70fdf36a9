"""Synthetic mobility (seed 000 §5): cars driving on a grid of roads, each emitting speed events
as it goes; a share of them are consumers whose square interest follows the car.

Trajectories are known (they are the consumers' `track`s), so reuse can be checked exactly:
    sim = simulate_cars(MobilitySpec(cars=100, consumers=25), seed=0)
    sim.events       # kind, t, car, v, x, y (one row per speed event, time ordered)
    sim.tracks       # consumer car -> [[t, x, y], ...] sampled every `track_step`
    mobility_workload(sim, spec)   # a workload.json dict with those consumers
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class MobilitySpec:
    """The simulated area (a `side` x `side` square with roads every `spacing`), the cars and
    their speeds (distance per time unit), the speed events per car per time unit, and the
    consumers: how many, their interest side, window, thresholds and batch length."""

    side: float = 2000.0
    spacing: float = 200.0
    cars: int = 100
    duration: float = 120.0
    speed: tuple[float, float] = (6.0, 16.0)
    event_rate: float = 0.5
    consumers: int = 25
    interest: float = 800.0
    window_time: float | None = 2.0
    window_count: int | None = None
    precision: float = 0.7
    recall: float = 0.7
    batch: float = 10.0
    track_step: float = 10.0
    neighbors_k: int | None = 8
    neighbors_distance: float | None = None


@dataclass(frozen=True)
class Simulation:
    events: pd.DataFrame
    tracks: dict[str, list[list[float]]]


def simulate_cars(spec: MobilitySpec, seed: int = 0) -> Simulation:
    """Drive every car along the road grid (turning at random at crossings) and emit speed
    events as a Poisson process per car; record the consumers' positions every track step."""
    rng = np.random.default_rng(seed)
    step = 0.5  # simulation step in time units
    times = np.arange(0.0, spec.duration + step, step)
    speeds = rng.uniform(*spec.speed, size=spec.cars)
    positions = _drive(spec, rng, times, speeds)  # (cars, steps, 2)
    rows = []
    for car in range(spec.cars):
        n = rng.poisson(spec.event_rate * spec.duration)
        at = np.sort(rng.uniform(0, spec.duration, n))
        index = np.minimum((at / step).astype(int), len(times) - 1)
        noise = rng.normal(0, 2.0, n)
        rows.append(pd.DataFrame({"kind": "Speed", "t": at, "car": car,
                                  "v": np.maximum(0.0, speeds[car] + noise),
                                  "x": positions[car, index, 0], "y": positions[car, index, 1]}))
    events = pd.concat(rows, ignore_index=True).sort_values(["t", "car"], kind="stable")
    consumers = rng.choice(spec.cars, size=min(spec.consumers, spec.cars), replace=False)
    sampled = np.arange(0.0, spec.duration, spec.track_step)
    tracks = {}
    for car in sorted(consumers.tolist()):
        index = np.minimum((sampled / step).astype(int), len(times) - 1)
        tracks[f"car-{car}"] = [[float(t), round(float(x), 2), round(float(y), 2)]
                                for t, (x, y) in zip(sampled, positions[car, index],
                                                     strict=True)]
    return Simulation(events.reset_index(drop=True), tracks)


def mobility_workload(sim: Simulation, spec: MobilitySpec, name: str = "mobile-cars",
                      events_format: str = "jsonl") -> dict[str, Any]:
    """A workload.json document for the simulated events: one average-speed operator, one
    query per consumer car whose square interest follows its track."""
    half = spec.interest / 2
    window = ({"count": spec.window_count} if spec.window_count else
              {"time": spec.window_time})
    queries = [{"id": car, "operator": "avg_speed", "region": [-half, -half, half, half],
                "window": window, "qor": {"precision": spec.precision, "recall": spec.recall},
                "track": track} for car, track in sim.tracks.items()]
    neighbors = {k: v for k, v in (("k", spec.neighbors_k),
                                   ("distance", spec.neighbors_distance)) if v is not None}
    rate = len(sim.events) / spec.duration
    return {
        "format": "cepplan.workload/1", "name": name, "time_unit": "s",
        "source": {"format": events_format, "type_column": "kind", "time_column": "t"},
        "event_types": {"Speed": {"attributes": {"car": "long", "v": "double", "x": "double",
                                                 "y": "double"}}},
        "patterns": [{"name": "hard_braking", "structure": ["SEQ", "a:Speed", "b:Speed"],
                      "where": ["b.v < a.v - 8"], "partition_by": ["car"], "within": "5s"}],
        "consumers": {"operators": {"avg_speed": {"event_type": "Speed", "aggregate": "avg",
                                                  "attribute": "v", "x": "x", "y": "y"}},
                      "queries": queries, "neighbors": neighbors,
                      "batch": {"time": spec.batch}},
        "statistics": {"rates": {"Speed": round(rate, 4)}},
    }


def _drive(spec: MobilitySpec, rng: np.random.Generator, times: np.ndarray,
           speeds: np.ndarray) -> np.ndarray:
    """Positions of every car at every time: cars start at random crossings and drive along
    grid roads at their own speed, choosing a random direction at each crossing."""
    crossings = int(spec.side // spec.spacing)
    moves = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]])
    out = np.zeros((spec.cars, len(times), 2))
    dt = times[1] - times[0] if len(times) > 1 else 1.0
    for car in range(spec.cars):
        cell = rng.integers(0, crossings + 1, size=2).astype(float)
        speed = speeds[car] / spec.spacing  # crossings per time unit
        heading = _turn(cell, moves, None, crossings, rng)
        progress = 0.0
        for k in range(len(times)):
            out[car, k] = (cell + heading * progress) * spec.spacing
            progress += speed * dt
            while progress >= 1.0:
                cell = cell + heading
                progress -= 1.0
                heading = _turn(cell, moves, heading, crossings, rng)
    return out


def _turn(cell: np.ndarray, moves: np.ndarray, heading: np.ndarray | None, crossings: int,
          rng: np.random.Generator) -> np.ndarray:
    """A random direction that stays on the grid and does not turn back (unless it must)."""
    options = [m for m in moves if 0 <= cell[0] + m[0] <= crossings
               and 0 <= cell[1] + m[1] <= crossings
               and (heading is None or not (m == -heading).all())]
    return options[rng.integers(len(options))] if options else -heading
