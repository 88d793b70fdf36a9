"""The 100-pattern benchmark workload (`benchmarks/seed004_workload.py`) honours the parameters
it claims: a short sample of its events, generated at its rates by `cepplan synth` and measured
by `cepplan stats`, shows every type's rate in 2-47 events/s and every predicate's selectivity
in 0.003-0.92; the selectivities it declares are those of the events drawn."""

from __future__ import annotations

import json
import math

from benchmarks.seed004_workload import KEYS, STATED_RATES, STATED_SELECTIVITIES, seed004_workload
from tests.in_process import cepplan


def _sample(tmp_path, doc, seconds: float, draws: int = 1000):
    """`cepplan synth` at the doc's rates for `seconds`, then `cepplan stats`: (truth, stats)."""
    workload, events = tmp_path / "workload.json", tmp_path / "events.csv"
    workload.write_text(json.dumps(doc))
    rates = [arg for t, r in doc["statistics"]["rates"].items() for arg in ("--rate", f"{t}={r}")]
    made = cepplan("synth", workload, "-o", events, "--duration", seconds, "--keys", KEYS,
                   "--seed", 7, "--truth-draws", draws, "--quiet", *rates)
    assert made.returncode == 0, made.stderr
    measured = cepplan("stats", events, "-w", workload, "-o", tmp_path / "stats.json",
                       "--quiet")
    assert measured.returncode == 0, measured.stderr
    truth = json.loads((tmp_path / "events.truth.json").read_text())
    return truth, json.loads((tmp_path / "stats.json").read_text())


def test_measured_rates_and_selectivities_fall_within_the_stated_ranges(tmp_path):
    """With the key as equalities in `where`, `cepplan stats` samples every predicate over the
    window's cross product (10^5 tuples each): tight figures, the key's included. The first
    30 of the 100 patterns (the same with fewer asked), the measuring takes seconds."""
    whole, doc = seed004_workload(keyed=False), seed004_workload(n_patterns=30, keyed=False)
    assert whole["patterns"][:30] == doc["patterns"]
    sizes = [len(p["structure"]) - 1 for p in whole["patterns"]]
    assert len(sizes) == 100 and min(sizes) == 3 and max(sizes) == 5
    assert all(p["within"] == "900s" for p in whole["patterns"])
    assert {p["structure"][0] for p in whole["patterns"]} == {"SEQ", "AND"}
    _, stats = _sample(tmp_path, doc, 60)
    rates = stats["rates"]
    assert set(rates) == set(doc["event_types"])
    assert all(STATED_RATES[0] <= r <= STATED_RATES[1] for r in rates.values()), rates
    measured = [s for p in stats["selectivities"].values() for s in p.values()]
    assert len(measured) == sum(len(p["where"]) for p in doc["patterns"])
    low, high = STATED_SELECTIVITIES
    assert all(low <= s <= high for s in measured), (min(measured), max(measured))


def test_the_partitioned_workload_shares_the_key_instead_of_comparing_it():
    """The benchmark's form: the same patterns, the key equalities replaced by partitioning
    on the key (the same matches: every event of a match has the one key)."""
    chained, keyed = seed004_workload(keyed=False), seed004_workload()
    for plain, parted in zip(chained["patterns"], keyed["patterns"], strict=True):
        assert parted["partition_by"] == ["key"] and "partition_by" not in plain
        assert parted["structure"] == plain["structure"]
        assert parted["where"] == [w for w in plain["where"] if ".key ==" not in w]


def test_declared_selectivities_are_those_of_the_events_drawn(tmp_path):
    """Against synth's own Monte Carlo estimate on fresh draws of the attributes, within four
    standard errors: the band widths give the selectivities the planner is told."""
    doc = seed004_workload(n_patterns=20, keyed=False)
    truth, _ = _sample(tmp_path, doc, 10, draws=200_000)
    draws = truth["selectivity_draws"]
    for name, declared in doc["statistics"]["selectivities"].items():
        for text, value in declared.items():
            drawn = truth["selectivities"][name][text]
            assert abs(drawn - value) <= 4 * math.sqrt(value * (1 - value) / draws) + 1e-6, \
                (name, text, value, drawn)
