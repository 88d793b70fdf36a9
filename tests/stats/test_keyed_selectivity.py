"""Join selectivities of a partitioned pattern are measured within keys (docs/stats.md): on a
synthetic keyed stream whose parameters are known — per key its own rates (skewed) and its own
attribute means, so that the selectivity within keys is far from the one across keys — the
estimate equals the analytic value: the share of within-key candidate pairs that pass,
Σ_k r_A,k r_B,k p_k / Σ_k r_A,k r_B,k with p_k = Φ((ν_k − μ_k) / (σ√2))."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from cepplan.stats.selectivity import estimate_pattern
from cepplan.workload import build_workload
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

SIGMA, KEYS, SPAN = 5.0, 40, 40_000.0


def _workload(operator: str):
    return build_workload({
        "format": "cepplan.workload/1", "name": "keyed-sel", "time_unit": "s",
        "event_types": {t: {"attributes": {"x": "double", "u": "string"}} for t in "AB"},
        "patterns": [{"name": "p", "structure": [operator, "a:A", "b:B"], "partition_by": ["u"],
                      "where": ["a.x < b.x"], "within": 10}]})


def _stream(seed: int) -> tuple[pd.DataFrame, float]:
    """Events of A and B per key (rates ∝ (KEYS − k)^-1, means μ_k = k, ν_k = KEYS − k) and the
    analytic within-key selectivity of a.x < b.x."""
    rng = np.random.default_rng(seed)
    frames, weights, passes = [], [], []
    for k in range(KEYS):
        rate = 0.3 / (KEYS - k)
        for kind, mean in (("A", float(k)), ("B", float(KEYS - k))):
            n = rng.poisson(rate * SPAN)
            frames.append(pd.DataFrame({EVENT_TYPE: kind, EVENT_TS: rng.uniform(0, SPAN, n),
                                        "x": rng.normal(mean, SIGMA, n), "u": f"k{k}"}))
        weights.append(rate * rate)
        passes.append(0.5 * math.erfc(-(KEYS - 2 * k) / (SIGMA * math.sqrt(2) * math.sqrt(2))))
    events = pd.concat(frames, ignore_index=True).sort_values(EVENT_TS, kind="stable")
    events[EVENT_ID] = np.arange(len(events))
    events[EVENT_TYPE] = events[EVENT_TYPE].astype("category")
    return events.reset_index(drop=True), float(np.dot(weights, passes) / sum(weights))


@pytest.mark.parametrize("operator", ["SEQ", "AND"])
def test_join_selectivity_within_keys_equals_the_known_value(operator):
    events, truth = _stream(11)
    across = float((events.loc[events[EVENT_TYPE] == "A", "x"].to_numpy()[:2000, None]
                    < events.loc[events[EVENT_TYPE] == "B", "x"].to_numpy()[None, :2000])
                   .mean())
    assert across > 3 * truth  # measured across keys it would be several times too large
    got = estimate_pattern(_workload(operator).patterns[0], events, seq_ties="strict",
                           budget=100_000, seed=1)["a.x < b.x"]
    low, high = got["ci95"]
    assert got["n"] > 5_000 and low - 0.002 <= truth <= high + 0.002, (got, truth)
