"""OpenCEP's multi-pattern evaluation beside cepplan's shared plan, on one stock-like workload
both express and the same events (part of `python -m benchmarks sharing_engine`; OpenCEP runs
in its own process, `opencep_multi.py`, from the checkout `OPENCEP_SRC` names)."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.workload.loader import build_workload

ROOT = Path(__file__).resolve().parent.parent


def versus_opencep(tmp: Path, limit: float, patterns: int, seconds: float) -> None:
    """OpenCEP's multi-pattern tree (equal subtrees of its pattern-order trees merged, or
    only leaves) and cepplan's shared plan on the same stock-like workload and events:
    matches per pattern and throughput, each engine in its own process for OpenCEP."""
    source = os.environ.get("OPENCEP_SRC")
    print(f"\n-- OpenCEP multi-pattern evaluation vs cepplan, {patterns} SEQ/AND patterns "
          f"of 2-4 tickers with diff comparisons, {seconds:g} s of events --")
    if not source:
        print("skipped: set OPENCEP_SRC to an OpenCEP checkout to compare with it")
        return
    spec, raw = _peer_workload(patterns)
    wl = build_workload(raw)
    frame = _peer_events(wl, seconds)
    peer_events, spec_path = tmp / "peer.csv", tmp / "peer-spec.json"
    frame[["type", "ts", "price", "diff"]].to_csv(peer_events, index=False, header=False)
    events = pd.DataFrame({"__type": frame["type"], "__ts": frame["ts"], "__id": frame.index,
                           "price": frame["price"], "diff": frame["diff"]})
    base = trivial_plan(wl)
    chosen = evaluation(wl, wl.statistics, base, EvaluationSettings("tabu", "edge", limit))
    rows: dict[str, tuple[float, dict]] = {}
    for name, plan, share in (("cepplan trivial", base, False),
                              ("cepplan chosen, unshared", chosen, False),
                              ("cepplan chosen, shared", chosen, True)):
        job = job_from_json(job_data(wl, plan))
        best = np.inf
        for _ in range(2):  # best of two: the machine is shared
            start = time.perf_counter()
            result = run_local(events, job, share=share)
            best = min(best, time.perf_counter() - start)
        rows[name] = (best, {p: sorted(sorted(e["id"] for e in m["events"].values()) for m in ms)
                             for p, ms in result.matches.items()})
    names = [p["name"] for p in raw["patterns"]]
    for title, merge, naming in (("OpenCEP subtrees merged", "subtrees", "ticker"),
                                 ("OpenCEP, names per pattern", "subtrees", "own"),
                                 ("OpenCEP one by one", "alone", "ticker")):
        spec_path.write_text(json.dumps({"patterns": _renamed(spec, naming), "merge": merge}))
        out = tmp / "peer-out.json"
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "opencep_multi.py"), source,
                        str(spec_path), str(peer_events), str(out)], check=True, cwd=source)
        answer = json.loads(out.read_text())
        found = answer["matches"]
        rows[title] = (answer["seconds"],
                       {name: sorted(found.get(str(i), [])) for i, name in enumerate(names)})
    reference = rows["cepplan trivial"][1]
    total = sum(len(m) for m in reference.values())
    print(f"{len(events)} events, {total} matches (cepplan trivial); modelled cost chosen "
          f"{chosen.sharing['modelled_cost']['chosen']:.4g} vs trivial "
          f"{chosen.sharing['modelled_cost']['trivial']:.4g}, "
          f"{len(chosen.sharing['shared'])} shared nodes")
    print(f"{'run':>26} {'wall s':>8} {'events/s':>10} {'vs OpenCEP alone':>20} "
          f"{'patterns with equal matches':>28}")
    peer = rows["OpenCEP one by one"][0]
    for name, (wall, found) in rows.items():
        equal = sum(found.get(p, []) == reference.get(p, []) for p in names)
        print(f"{name:>26} {wall:>8.2f} {len(events) / wall:>10.0f} {peer / wall:>19.1f}x "
              f"{equal:>20}/{len(names)}")
    print("(OpenCEP's seconds: building its trees, reading its file and matching, timed in "
          "its process; cepplan's: matching the same events, already in memory, best of two. "
          "OpenCEP merges "
          "subtrees by variable name: with a ticker's variable named alike in every pattern "
          "it shares them; with names of each pattern's own it shares nothing)")


def _renamed(spec: dict, naming: str) -> list[dict]:
    """The peer's patterns with each variable named after its ticker (as generated), or
    after its ticker and its pattern (`own`: nothing has equal names across patterns)."""
    if naming == "ticker":
        return spec["patterns"]
    out = []
    for index, pattern in enumerate(spec["patterns"]):
        name = {var: f"{var}_{index}" for _, var in pattern["events"]}
        out.append({**pattern, "events": [[t, name[v]] for t, v in pattern["events"]],
                    "less": [[name[a], name[b]] for a, b in pattern["less"]]})
    return out


def _peer_workload(n: int) -> tuple[dict, dict]:
    """Patterns both engines express: SEQ/AND of 2-4 distinct tickers (popular ones more
    often, so patterns overlap), `x.diff < y.diff` on 1-2 consecutive pairs, one window;
    a ticker's variable is its name, so OpenCEP's sharing (equal names only) can apply."""
    rng = random.Random(3)
    tickers = [f"T{i}" for i in range(8)]
    weights = [1.0 / (i + 1) for i in range(8)]
    rates = {t: round(rng.uniform(1.0, 4.0), 2) for t in tickers}
    spec_patterns, patterns = [], []
    for index in range(n):
        size = rng.choice((2, 3, 3, 4))
        chosen: list[str] = []
        while len(chosen) < size:
            pick = rng.choices(tickers, weights)[0]
            if pick not in chosen:
                chosen.append(pick)
        variables = [t.lower() for t in chosen]
        pairs = list(itertools.pairwise(variables))
        less = rng.sample(pairs, min(len(pairs), rng.choice((1, 2))))
        operator = rng.choice(("SEQ", "AND"))
        spec_patterns.append({"operator": operator,
                              "events": list(zip(chosen, variables, strict=True)),
                              "less": less, "window": 1.5})
        patterns.append({"name": f"r{index:02d}",
                         "structure": [operator, *(f"{v}:{t}" for v, t in
                                                   zip(variables, chosen, strict=True))],
                         "where": [f"{a}.diff < {b}.diff" for a, b in less],
                         "within": "1500ms"})
    raw = {
        "format": "cepplan.workload/1", "name": "peer_multi", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "type", "time_column": "ts"},
        "schemas": {"Tick": {"price": "double", "diff": "double"}},
        "event_types": {t: {"schema": "Tick"} for t in tickers},
        "patterns": patterns,
        "statistics": {"rates": rates, "selectivities": {p["name"]: {w: 0.5 for w in p["where"]}
                                                         for p in patterns}},
    }
    return {"patterns": spec_patterns}, raw


def _peer_events(wl, seconds: float) -> pd.DataFrame:
    """Poisson streams at the workload's rates, timestamps to the microsecond (OpenCEP's
    resolution), diff uniform in [0, 100)."""
    rng = np.random.default_rng(11)
    parts = [pd.DataFrame({"type": name,
                           "ts": rng.uniform(0, seconds, rng.poisson(rate * seconds))})
             for name, rate in wl.statistics.rates.items()]
    frame = pd.concat(parts).sort_values("ts", kind="stable").reset_index(drop=True)
    frame["ts"] = frame["ts"].round(6)
    frame["price"] = rng.uniform(0, 100, len(frame)).round(2)
    frame["diff"] = rng.uniform(0, 100, len(frame)).round(2)
    return frame
