"""The join-order model (docs/planner.md, "Join orders in the engine") against the engine:
on Poisson streams with known rates and conditions of known selectivity, the partial matches
per join step the plan models (plan.json's provenance) are those `cepplan run` measures
(metrics.json) within 12 %; hand-computed figures for a cross product and a narrowed step;
the band pattern over a long window is planned with a join order that runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.bench_windows import BAND
from benchmarks.stock_bars import workload as bars_workload
from benchmarks.stock_bars import write_bars
from cepplan.costmodels.join_orders import JoinCondition, by_steps, join_work
from cepplan.search.problem import problem_from_workload
from cepplan.workload import build_workload
from tests.in_process import cepplan

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 0.12  # Poisson counts of ~1,000 per prefix: a few % of noise, the rest the model's
RATES = {"A": 2.0, "B": 1.5, "C": 1.0}
VALUES = 100  # x uniform over 0 … 99
WINDOW = 4.0
# P(0 < b.x - a.x < 4) over two uniform draws: differences 1, 2, 3 of 100 × 100 pairs
BAND_SELECTIVITY = (99 + 98 + 97) / VALUES**2
LESS_SELECTIVITY = (1 - 1 / VALUES) / 2  # P(a.x < c.x)


def _cepplan(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`cepplan ARGS` in this process, or in a child process with `env` (a memory budget
    is the process's own)."""
    done = cepplan(*args) if env is None else subprocess.run(
        [sys.executable, "-m", "cepplan", *args], cwd=ROOT, text=True, capture_output=True,
        env={**os.environ, **env}, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def _stream(path: Path, duration: float, seed: int, ids: int = 0) -> None:
    """Each type a Poisson process at RATES, x uniform over VALUES, as CSV; with `ids`, s
    a string id uniform over that many."""
    rng = np.random.default_rng(seed)
    rows = []
    for kind, rate in RATES.items():
        count = rng.poisson(rate * duration)
        x = rng.integers(0, VALUES, count).tolist()
        s = [f"id-{n}" for n in rng.integers(0, ids, count)] if ids else ["-"] * count
        rows += zip([kind] * count, rng.uniform(0, duration, count).tolist(), x, s,
                    strict=True)
    rows.sort(key=lambda r: r[1])
    path.write_text("event,ts,x,s\n" + "".join(f"{k},{t!r},{x},{s}\n" for k, t, x, s in rows))


def planned_and_measured(directory: Path) -> tuple[dict, dict]:
    """Pattern p's modelled join-order figures (`cepplan optimize --search none`, plan.json's
    provenance) and the metrics of `cepplan run`, over `directory`'s w.json and events.csv."""
    _cepplan("optimize", str(directory / "w.json"), "-o", str(directory / "plan.json"),
             "--search", "none", "-q")
    plan = json.loads((directory / "plan.json").read_text())
    _cepplan("run", str(directory / "plan.json"), str(directory / "events.csv"), "-o",
             str(directory / "out"), "-q")
    metrics = json.loads((directory / "out" / "metrics.json").read_text())
    return plan["provenance"]["engine_steps"]["join_orders"]["p"], metrics


def _workload(path: Path, where: list[str], selectivities: dict[str, float]) -> None:
    path.write_text(json.dumps({
        "format": "cepplan.workload/1", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "event",
                   "time_column": "ts"},
        "event_types": {t: {"attributes": {"x": "long", "s": "string"}} for t in RATES},
        "statistics": {"rates": RATES, "selectivities": {"p": selectivities}},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "where": where, "within": WINDOW}]}))


def test_modelled_partial_matches_per_step_are_the_measured_ones(tmp_path):
    where = ["0 < b.x - a.x", "b.x - a.x < 4", "a.x < c.x"]
    # the band's two halves are not independent: one condition per half, their product
    # the band's selectivity, as a user who measured the band would give them
    _workload(tmp_path / "w.json", where, {where[0]: 1.0, where[1]: BAND_SELECTIVITY,
                                           where[2]: LESS_SELECTIVITY})
    _stream(tmp_path / "events.csv", 3000.0, seed=5)
    _cepplan("optimize", str(tmp_path / "w.json"), "-o", str(tmp_path / "plan.json"),
             "--search", "none", "-q")
    plan = json.loads((tmp_path / "plan.json").read_text())
    modelled = plan["provenance"]["engine_steps"]["join_orders"]["p"]
    assert plan["patterns"]["p"]["order"] == modelled["order"]
    _cepplan("run", str(tmp_path / "plan.json"), str(tmp_path / "events.csv"), "-o",
             str(tmp_path / "out"), "-q")
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert_modelled(modelled, metrics, WINDOW, TOLERANCE)


def test_modelled_partial_matches_per_step_with_a_string_equality(tmp_path):
    """The same with a join on a string id (10 ids: a.s == c.s keeps a tenth of the pairs):
    the string equality is priced as the look-up it narrows, its partial matches measured."""
    where = ["a.s == c.s", "a.x < b.x"]
    _workload(tmp_path / "w.json", where, {where[0]: 0.1, where[1]: LESS_SELECTIVITY})
    _stream(tmp_path / "events.csv", 3000.0, seed=6, ids=10)
    modelled, metrics = planned_and_measured(tmp_path)
    assert_modelled(modelled, metrics, WINDOW, TOLERANCE)


def test_strings_narrow_a_look_up_by_equality_alone():
    """The matcher looks a number up by any bound, a string by `==` (its codes) and a flag
    by none: the planner prices the look-ups it will make."""
    wl = build_workload({
        "format": "cepplan.workload/1", "time_unit": "s",
        "event_types": {t: {"attributes": {"x": "long", "s": "string", "f": "bool"}}
                        for t in RATES},
        "statistics": {"rates": RATES},
        "patterns": [{"name": "p", "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "where": ["a.s == c.s", "a.s < b.s", "b.f == c.f", "a.x < b.x",
                                "b.ts - a.ts < 2"],
                      "within": WINDOW}]})
    problem = problem_from_workload(wl, wl.statistics)
    narrows = {c.key: c.narrows for c in problem.patterns[0].conditions}
    assert sorted(narrows.values(), key=sorted) == sorted([
        frozenset({("a", "s"), ("c", "s")}), frozenset(), frozenset(),
        frozenset({("a", "x"), ("b", "x")}), frozenset({("a", "ts"), ("b", "ts")})], key=sorted)


def assert_modelled(modelled: dict, metrics: dict, window: float, tolerance: float) -> None:
    """The modelled partial matches per window of each of the 3 join steps equal those
    `metrics.json` measured for pattern p, alive per `window` (docs/sharing.md)."""
    first, last = metrics["input_span"]
    measured = [n * window / ((last - first) * k)
                for k, n in enumerate(metrics["partial_matches"]["p"]["by_prefix"], start=1)]
    assert len(measured) == 3
    for k, (model, seen) in enumerate(zip(modelled["partial_matches_per_window"], measured,
                                          strict=True), start=1):
        assert model == pytest.approx(seen, rel=tolerance), (k, modelled, measured)


def test_a_step_without_a_condition_reads_the_cross_product():
    """Hand-computed figures: SEQ(a, b, c) with a band between a and c only, 200 events of
    each type per window. Order a, b, c reads every (a, b) pair of a window; a, c, b narrows
    c by the band and reads only the pairs it keeps plus the index's entries; both build the
    same complete matches. Over short ranges the nested loop is the cheaper read."""
    rates = {"a": 2.0, "b": 3.0, "c": 2.0}
    band = JoinCondition(frozenset("ac"), 0.01, frozenset({("c", "x"), ("a", "x")}))
    cross = join_work("abc", 100.0, rates, [band], True)
    narrowed = join_work("acb", 100.0, rates, [band], True)
    assert cross.built[1] == pytest.approx(200 * 300 / 2)  # C(ab): W²·r_a·r_b/2!
    assert cross.read[1] == cross.built[1] and cross.cross == 1
    assert narrowed.built[1] == pytest.approx(200 * 200 / 2 * 0.01)
    index_entries = 200 * 2 * np.sqrt(2 * 2.0 * 100.0)  # C(a)·2·√(2·r_c·W)
    assert narrowed.read[1] == pytest.approx(narrowed.built[1] + index_entries)
    assert narrowed.built[2] == pytest.approx(cross.built[2])
    assert by_steps(["abc"], 100.0, rates, [band], True).order in (
        ("a", "c", "b"), ("c", "a", "b"))
    short = join_work("acb", 1.0, rates, [band], True)
    assert short.read[1] == pytest.approx(2 * 2 / 2)  # the nested loop: C(ac) unfiltered
    # a condition of unknown selectivity (1) still avoids the cross product among equals
    unknown = [JoinCondition(frozenset("ac"), 1.0), JoinCondition(frozenset("bc"), 1.0)]
    assert join_work("abc", 10.0, rates, unknown, True).cross == 1
    assert by_steps(["abc"], 10.0, rates, unknown, True).cross == 0


def test_the_band_pattern_over_a_long_window_is_planned_to_run(tmp_path):
    """The band pattern SEQ(a:MSFT, b:DRIV, c:MSFT) with two bands over 1,400 minutes and
    measured statistics. The plan chosen from them, a,c -> b, was evaluated in the order
    a, b, c: every (a, b) pair of a window (13 million at 10^5 rows, killed at 3 GB). Now the
    plan's join order narrows every step, and the run builds few partial matches."""
    bars = tmp_path / "bars.txt"
    write_bars(bars, 20_000)
    wl = bars_workload([])
    wl["patterns"] = [{"name": "p", "structure": ["SEQ", "a:MSFT", "b:DRIV", "c:MSFT"],
                       "where": BAND, "within": 1400}]
    (tmp_path / "w.json").write_text(json.dumps(wl))
    _cepplan("stats", str(bars), "-w", str(tmp_path / "w.json"), "-o",
             str(tmp_path / "stats.json"), "-q")
    _cepplan("optimize", str(tmp_path / "w.json"), "--stats", str(tmp_path / "stats.json"),
             "-o", str(tmp_path / "plan.json"), "-q")
    plan = json.loads((tmp_path / "plan.json").read_text())
    order = plan["patterns"]["p"]["order"]
    assert set(order[:2]) != {"a", "b"}, order  # no step without a condition
    _cepplan("run", str(tmp_path / "plan.json"), str(bars), "-o", str(tmp_path / "out"), "-q",
             env={"CEPPLAN_MATCH_MEMORY": "1G"})
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    built = metrics["partial_matches"]["p"]["by_prefix"]
    assert built[1] < 20_000, built  # the order a, b, c built about 2 million here
