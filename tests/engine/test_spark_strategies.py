"""Selection strategies on the Spark job: every strategy template of the in-process tests,
under next, strict and a per-variable mix, in one job over a stream full of equal
timestamps, equal the brute-force reference written from the definitions, under the trivial
and a many-step plan."""

from __future__ import annotations

import random

from cepplan.stats.synth_write import write_events
from tests.engine import workloads
from tests.engine.reference_matcher import canonical
from tests.engine.reference_strategies import strategy_matches
from tests.engine.test_kleene_strict import KLEENE_SEQUENCES
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_job import plans_equal_expected
from tests.engine.test_strategies import SEQUENCES
from tests.engine.workloads import TYPES

STRATEGIES = {"next": "next", "strict": "strict", "mixed": {"c": "strict", "b": "next"}}


def strategy_workload(with_strategy: bool):
    """Each template under next, strict and a per-variable mix (named TEMPLATE_STRATEGY; the
    mix names the variables the template has), ties allowed."""
    patterns = []
    for name, (template,) in sorted(SEQUENCES.items()):
        variables = {leaf.split(":")[0] for leaf in template["structure"][2:]
                     if isinstance(leaf, str)}
        for label, strategy in STRATEGIES.items():
            if not isinstance(strategy, str):
                strategy = {v: s for v, s in strategy.items() if v in variables}
            pattern = {**template, "name": f"{name}_{label}"}
            if with_strategy:
                pattern["strategy"] = strategy
            patterns.append(pattern)
    return workloads.workload(patterns, seq_ties="allow", csv=True)


def test_spark_strategies_equal_reference(spark, tmp_path):
    rng = random.Random(3)
    rows = [(rng.choice(TYPES), rng.randint(0, 10), rng.randint(0, 4),
             rng.choice([0.5, 2.0]), rng.choice("xy")) for _ in range(45)]
    workload, events = strategy_workload(True), frame(rows)
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    chosen = {p.name: p.strategy for p in workload.patterns}
    expected = {name: sorted(map(canonical, found)) for name, found
                in strategy_matches(strategy_workload(False), chosen, events).items()}
    assert sum(1 for found in expected.values() if found) >= len(expected) // 2
    plans_equal_expected(spark, workload, path, expected, tmp_path)


def test_spark_strict_kleene_equals_reference(spark, tmp_path):
    """The strict Kleene templates of the in-process tests (pattern-wide strict), in one job
    over a stream full of equal timestamps and two keys, equal the brute-force reference."""
    rng = random.Random(5)
    rows = [(rng.choice(TYPES), rng.randint(0, 12), rng.randint(0, 4),
             rng.choice([0.5, 2.0]), rng.choice("xy")) for _ in range(40)]
    events = frame(rows)

    def kleene_workload(strategy: str | None):
        patterns = [{**template, "name": name, **({"strategy": strategy} if strategy else {})}
                    for name, (template,) in sorted(KLEENE_SEQUENCES.items())]
        return workloads.workload(patterns, seq_ties="allow", csv=True)

    workload = kleene_workload("strict")
    path = tmp_path / "events.csv"
    write_events(events, workload, path)
    expected = {name: sorted(map(canonical, found)) for name, found in strategy_matches(
        kleene_workload(None), dict.fromkeys(KLEENE_SEQUENCES, "strict"), events).items()}
    assert sum(1 for found in expected.values() if found) >= len(expected) // 2
    plans_equal_expected(spark, workload, path, expected, tmp_path)
