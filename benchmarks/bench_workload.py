"""Loading a workload of 10,000 patterns (issue target: under 5 s), phase by phase.

The generated workload mixes SEQ/AND/OR patterns over 50 primitive types with filters, joins,
Kleene and negation, keys and windows, and a layer of patterns built on other patterns, so the
loader exercises every check it has. The JSON parse alone is the baseline ratio.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import orjson

from cepplan.workload import load_workload
from cepplan.workload.loader import build_workload, schema_problems

TARGET_SECONDS = 5.0


def synthetic_workload(patterns: int, types: int = 50, seed: int = 0) -> dict:
    """A valid workload document with `patterns` patterns; every 10th builds on two others."""
    rng = random.Random(seed)
    attrs = {"price": "double", "volume": "long", "venue": "string", "key": "string"}
    doc = {
        "format": "cepplan.workload/1", "name": f"bench-{patterns}", "time_unit": "s",
        "schemas": {"Tick": attrs},
        "event_types": {f"T{i}": {"schema": "Tick"} for i in range(types)},
        "patterns": [], "statistics": {"rates": {f"T{i}": 1.0 + i for i in range(types)}},
    }
    for index in range(patterns):
        name = f"p{index}"
        if index % 10 == 9 and index >= 20:
            lower = rng.sample(range(index - 9), 2)
            doc["patterns"].append({
                "name": name, "structure": ["AND", f"x:p{lower[0]}", f"y:p{lower[1]}"],
                "where": ["x.key == y.key"], "within": "1min", "partition_by": ["key"],
                "emit": {"key": "x.key"},
            })
            continue
        t = [f"T{rng.randrange(types)}" for _ in range(3)]
        kind = index % 4
        if kind == 0:
            structure = ["SEQ", f"a:{t[0]}", ["KLEENE", f"b:{t[1]}"], f"c:{t[2]}"]
            where = ["a.price < b.price", "b.price < NEXT(b.price)", "c.price < FIRST(b.price)"]
        elif kind == 1:
            structure = ["AND", f"a:{t[0]}", f"b:{t[1]}", f"c:{t[2]}"]
            where = ["a.volume > 100", "abs(a.price - b.price) < 5 and b.venue == 'X'",
                     "c.price * 2 >= a.price"]
        elif kind == 2:
            structure = ["SEQ", f"a:{t[0]}", ["NOT", f"b:{t[1]}"], f"c:{t[2]}"]
            where = ["a.price < c.price", "b.venue != a.venue", "c.volume % 7 == 1"]
        else:
            structure = ["OR", f"a:{t[0]}", f"b:{t[1]}", f"c:{t[2]}"]
            where = ["a.price > 10", "not (b.volume < 3)", "c.venue == 'Y'"]
        body = {"name": name, "structure": structure, "where": where,
                "emit": {"key": "a.key"}, "partition_by": ["key"],
                "latency": {"max_steps": 2}}
        if kind != 3:
            body["within"] = f"{rng.randint(1, 60)}s"
        doc["patterns"].append(body)
    return doc


def main(quick: bool = False) -> None:
    count = 2_000 if quick else 10_000
    doc = synthetic_workload(count)
    data = orjson.dumps(doc)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.json"
        path.write_bytes(data)
        start = time.perf_counter()
        parsed = orjson.loads(path.read_bytes())
        parse_s = time.perf_counter() - start
        start = time.perf_counter()
        assert not schema_problems(parsed, str(path))
        schema_s = time.perf_counter() - start
        start = time.perf_counter()
        build_workload(parsed, file=str(path))
        build_s = time.perf_counter() - start - schema_s
        start = time.perf_counter()
        workload = load_workload(path)
        total_s = time.perf_counter() - start
    predicates = sum(len(p.predicates) for p in workload.patterns)
    print(f"workload: {len(workload.patterns)} patterns, {predicates} predicates, "
          f"{len(data) / 1e6:.1f} MB of JSON")
    print(f"{'phase':<28}{'seconds':>10}{'x JSON parse':>14}")
    for phase, seconds in [("JSON parse (orjson)", parse_s), ("JSON Schema (jsonschema)", schema_s),
                           ("meaning checks + model", build_s), ("load_workload, end to end",
                                                                 total_s)]:
        print(f"{phase:<28}{seconds:>10.3f}{seconds / parse_s:>14.1f}")
    verdict = "meets" if total_s < TARGET_SECONDS else "MISSES"
    print(f"target: under {TARGET_SECONDS:.0f} s for 10,000 patterns -> {verdict} "
          f"({total_s:.2f} s for {count})")
