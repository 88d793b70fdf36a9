"""Run OpenCEP (the peer) on several patterns at once, in its multi-pattern tree mode; a
script, started by bench_sharing_engine in a fresh process so its wall time counts from
process start.

    python benchmarks/opencep_multi.py OPENCEP_SRC SPEC.json EVENTS.csv OUT.json

SPEC.json: {"merge": "subtrees"|"leaves"|"alone", "patterns": [{"operator": "SEQ"|"AND",
"events": [[type, variable], ...], "less": [[variable, variable], ...], "window": seconds}]}
— every condition compares `diff` (first < second); "alone" runs OpenCEP once per pattern.
EVENTS.csv: `type,ts,price,diff` lines, no header, ts in seconds. Writes {"matches":
{pattern index: [[row index, ...], ...]}, "seconds": ...}. Nothing of OpenCEP is copied
here; it is imported from OPENCEP_SRC.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta

EPOCH = datetime(2020, 1, 1)


def main() -> None:
    source, spec_path, events, out = sys.argv[1:5]
    sys.path.insert(0, source)
    from base.DataFormatter import DataFormatter, EventTypeClassifier
    from base.Event import Event
    from CEP import CEP
    from stream.FileStream import FileInputStream
    from stream.Stream import OutputStream

    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)

    class ByType(EventTypeClassifier):
        def get_event_type(self, event_payload: dict):
            return event_payload["type"]

    class Ticks(DataFormatter):
        """`type,ts,price,diff` lines."""

        def __init__(self):
            super().__init__(ByType())

        def parse_event(self, raw_data: str):
            kind, ts, price, diff = raw_data.strip().split(",")
            return {"type": kind, "ts": EPOCH + timedelta(seconds=float(ts)),
                    "price": float(price), "diff": float(diff)}

        def get_event_timestamp(self, event_payload: dict):
            return event_payload["ts"]

    class Collect(OutputStream):
        def __init__(self):
            super().__init__()
            self.found: dict[int, list[list[int]]] = {}

            self.alone: int | None = None  # the pattern run alone

        def add_item(self, item):
            rows = sorted(e.payload[Event.INDEX_ATTRIBUTE_NAME] for e in item.events)
            if self.alone is not None:
                self.found.setdefault(self.alone, []).append(rows)
            for pattern_id in item.pattern_ids:  # OpenCEP numbers patterns from 1
                self.found.setdefault(pattern_id - 1, []).append(rows)

        def close(self):
            pass

    start = time.perf_counter()
    collected = Collect()
    if spec["merge"] == "alone":
        for index, pattern in enumerate(spec["patterns"]):
            Event.counter, collected.alone = 0, index  # rows numbered from 0 in every run
            CEP([_pattern(pattern)]).run(FileInputStream(events), collected, Ticks())
    else:
        CEP([_pattern(p) for p in spec["patterns"]], _parameters(spec["merge"])).run(
            FileInputStream(events), collected, Ticks())
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"matches": collected.found, "seconds": time.perf_counter() - start}, handle)


def _pattern(spec: dict):
    """One pattern in OpenCEP's API."""
    from base.Pattern import Pattern
    from base.PatternStructure import AndOperator, PrimitiveEventStructure, SeqOperator
    from condition.BaseRelationCondition import SmallerThanCondition
    from condition.CompositeCondition import AndCondition
    from condition.Condition import Variable

    operator = SeqOperator if spec["operator"] == "SEQ" else AndOperator
    events = [PrimitiveEventStructure(kind, var) for kind, var in spec["events"]]
    conditions = [SmallerThanCondition(Variable(a, lambda x: x["diff"]),
                                       Variable(b, lambda x: x["diff"]))
                  for a, b in spec["less"]]
    return Pattern(operator(*events), AndCondition(*conditions),
                   timedelta(seconds=spec["window"]))


def _parameters(merge: str):
    """Tree-based evaluation, patterns in their own order, merged into one multi-pattern
    tree by sharing equal subtrees (or only leaves)."""
    from adaptive.optimizer.OptimizerFactory import OptimizerParameters
    from adaptive.optimizer.OptimizerTypes import OptimizerTypes
    from evaluation.EvaluationMechanismFactory import TreeBasedEvaluationMechanismParameters
    from plan.multi.MultiPatternTreePlanMergeApproaches import (
        MultiPatternTreePlanMergeApproaches as Merge,
    )
    from plan.TreePlanBuilderFactory import TreePlanBuilderParameters
    from plan.TreePlanBuilderTypes import TreePlanBuilderTypes

    approach = {"subtrees": Merge.TREE_PLAN_SUBTREES_UNION,
                "leaves": Merge.TREE_PLAN_TRIVIAL_SHARING_LEAVES}[merge]
    builder = TreePlanBuilderParameters(builder_type=TreePlanBuilderTypes.TRIVIAL_LEFT_DEEP_TREE,
                                        tree_plan_merger_type=approach)
    return TreeBasedEvaluationMechanismParameters(
        optimizer_params=OptimizerParameters(opt_type=OptimizerTypes.TRIVIAL_OPTIMIZER,
                                             tree_plan_params=builder))


if __name__ == "__main__":
    main()
