"""The keyed cost models (docs/planner.md, "Keyed workloads") against Monte Carlo over keyed
streams: Poisson per key at known rates, keys uniform or Zipf. The reference is the plan
simulator run key by key, and tuples counted within a key and a window; with a single key the
keyed figures are today's."""

from __future__ import annotations

import itertools
from types import MappingProxyType

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.costmodels.keyed import key_classes, profile_factors
from cepplan.costmodels.operators import plan_cost
from cepplan.costmodels.trees import node_cost
from cepplan.planner.inputs import pattern_model
from cepplan.planner.simulator import simulate
from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE
from cepplan.workload.loader import build_workload
from cepplan.workload.model import KeyedStatistics, Statistics

TYPES = "ABC"


def _workload(operator: str, n: int, window: float):
    variables = "abc"[:n]
    return build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"k": "string"}} for t in TYPES},
        "patterns": [{"name": "p", "within": window, "partition_by": ["k"],
                      "structure": [operator, *[f"{v}:{t}" for v, t in zip(variables, TYPES,
                                                                            strict=False)]]}]})


def _weights(keys: int, skew: float) -> np.ndarray:
    raw = 1.0 / np.arange(1, keys + 1, dtype=float) ** skew
    return raw / raw.sum()


def _keyed_stream(rates: dict[str, float], weights: np.ndarray, duration: float,
                  seed: int) -> pd.DataFrame:
    """Each key k sees each type t as a Poisson process at rates[t] · weights[k]."""
    rng = np.random.default_rng(seed)
    kinds, times, keys = [], [], []
    for type_name, rate in rates.items():
        for key, weight in enumerate(weights):
            count = rng.poisson(rate * weight * duration)
            times.append(rng.uniform(0.0, duration, count))
            kinds.append(np.full(count, type_name, dtype=object))
            keys.append(np.full(count, key))
    ts = np.concatenate(times)
    order = np.argsort(ts, kind="stable")
    return pd.DataFrame({EVENT_TYPE: np.concatenate(kinds)[order], EVENT_TS: ts[order],
                         EVENT_ID: np.arange(len(ts)), "k": np.concatenate(keys)[order]})


def _statistics(rates: dict[str, float], weights: np.ndarray, span: float) -> Statistics:
    """The true key profile: every key its own class with its expected counts over `span`."""
    classes = tuple((1, MappingProxyType({t: r * w * span for t, r in rates.items()}))
                    for w in weights)
    keyed = KeyedStatistics(len(weights), span, classes)
    return Statistics(rates=MappingProxyType(dict(rates)),
                      keyed=MappingProxyType({"p": keyed}))


@pytest.mark.parametrize("operator", ["SEQ", "AND"])
@pytest.mark.parametrize("skew", [0.0, 1.1])
def test_rows_to_matchers_match_the_simulator_run_key_by_key(operator, skew):
    """Sparse within each key (λW <= 0.1) though dense over all keys (ΣλW = 0.9): every order
    of one-event steps transmits what the simulator, run per key, transmits (within 10 %);
    the unkeyed model, which lets every key's events combine, is far off."""
    rates, duration = {"A": 0.2, "B": 0.3, "C": 0.4}, 60_000.0
    weights = _weights(40, skew)
    workload = _workload(operator, 3, 1.0)
    pattern = workload.patterns[0]
    events = _keyed_stream(rates, weights, duration, seed=7)
    keyed = pattern_model(workload, pattern, _statistics(rates, weights, duration), {}, None)
    unkeyed = pattern_model(workload, pattern, Statistics(rates=rates), {}, None)
    costs = {o.var: o.occurrence.rate for o in keyed.operands}
    unkeyed_errors = []
    for order in itertools.permutations(pattern.variables):
        steps = tuple(frozenset([v]) for v in order)
        simulated = sum(simulate(part, pattern, steps).transmitted
                        for _, part in events.groupby("k"))
        predicted = plan_cost(keyed, steps, costs) * duration
        assert predicted == pytest.approx(simulated, rel=0.10), order
        unkeyed_errors.append(plan_cost(unkeyed, steps, costs) * duration / simulated - 1)
    assert max(unkeyed_errors) > 0.25  # beyond the keyed model's tolerance


def _ordered_tuples(events: pd.DataFrame, types: str, window: float) -> int:
    """Tuples of events of `types` in that order within one key and one window [iW, (i+1)W):
    per event, the ordered prefixes ending at it, summed over the earlier events of its group."""
    frame = events[events[EVENT_TYPE].isin(list(types))]
    group = pd.factorize(pd.MultiIndex.from_arrays(
        [np.floor(frame[EVENT_TS] / window).astype(np.int64), frame["k"]]))[0]
    order = np.lexsort((frame[EVENT_TS].to_numpy(), group))
    group, kinds = group[order], frame[EVENT_TYPE].to_numpy()[order]
    ending = (kinds == types[0]).astype(float)
    for type_name in types[1:]:
        earlier = pd.Series(ending).groupby(group).cumsum().to_numpy() - ending
        ending = np.where(kinds == type_name, earlier, 0.0)
    return int(ending.sum())


@pytest.mark.parametrize("skew", [0.0, 1.1])
def test_partial_matches_per_window_match_tuples_counted_within_keys(skew):
    """C(S)·κ(S) (seed 004 App. C per key, summed over the key profile, merged to its classes)
    against the ordered tuples of S counted within each key and window, within 8 %."""
    rates, duration, window = {"A": 0.2, "B": 0.3, "C": 0.4}, 400_000.0, 10.0
    weights = _weights(40, skew)
    events = _keyed_stream(rates, weights, duration, seed=11)
    stats = _statistics(rates, weights, duration).keyed["p"]
    classes = key_classes(stats.classes, stats.span)
    kinds = {v: (t, 1.0) for v, t in zip("abc", TYPES, strict=True)}
    factors = profile_factors(classes, kinds, window, {})
    by_var = {v: rates[t] for v, t in zip("abc", TYPES, strict=True)}
    windows = duration / window
    for size in (2, 3):
        variables = "abc"[:size]
        predicted = node_cost(variables, window, by_var, {}, True, factors)
        measured = _ordered_tuples(events, TYPES[:size], window) / windows
        assert predicted == pytest.approx(measured, rel=0.08), variables
        assert node_cost(variables, window, by_var, {}, True) > 3 * measured  # unkeyed


@settings(max_examples=40)
@given(operator=st.sampled_from(["SEQ", "AND"]), n=st.integers(2, 3),
       window=st.floats(0.1, 20.0),
       rates=st.lists(st.floats(0.001, 2.0), min_size=3, max_size=3))
def test_a_single_key_gives_todays_figures(operator, n, window, rates):
    """One key holding every event: f_e(U) = P_U L_e(U) and κ = 1, so every plan costs what
    the unkeyed model says."""
    by_type = dict(zip(TYPES, rates, strict=True))
    workload = _workload(operator, n, window)
    pattern = workload.patterns[0]
    span = 1000.0
    keyed = pattern_model(workload, pattern, _statistics(by_type, np.ones(1), span), {}, None)
    unkeyed = pattern_model(workload, pattern, Statistics(rates=by_type), {}, None)
    assert keyed.keyed is not None and unkeyed.keyed is None
    costs = {o.var: o.occurrence.rate for o in unkeyed.operands}
    for order in itertools.permutations(pattern.variables):
        steps = tuple(frozenset([v]) for v in order)
        assert plan_cost(keyed, steps, costs) == pytest.approx(plan_cost(unkeyed, steps, costs),
                                                               rel=1e-9)
    assert all(f == pytest.approx(1.0, rel=1e-9) for f in keyed.keyed.factors.values())
