"""Where the local engine's time goes on a synthetic many-pattern workload, with and without
the shared plan: `python -m benchmarks.profile_sharing_engine` prints cProfile's cumulative
times of the engine's own functions (the matcher's join is what the cost model counts)."""

from __future__ import annotations

import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from benchmarks.bench_sharing_engine import _synthetic_events
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local.engine import run_local_job
from cepplan.planner.evaluation import EvaluationSettings, evaluation
from cepplan.planner.plan import trivial_plan
from cepplan.search.synthetic import synthetic_workload
from cepplan.workload.loader import build_workload


def main() -> None:
    raw = synthetic_workload(100, seed=1, window_s=1, special=0.1)
    for pattern in raw["patterns"]:
        pattern["within"] = "100ms"
        pattern["structure"] = [o[1] if isinstance(o, list) and o[0] == "KLEENE" else o
                                for o in pattern["structure"]]
    wl = build_workload(raw)
    tmp = Path(tempfile.mkdtemp())
    events = _synthetic_events(wl, tmp, 10.0)
    plan = evaluation(wl, wl.statistics, trivial_plan(wl), EvaluationSettings("tabu", "edge", 5))
    data = job_data(wl, plan)
    for name, job in (("unshared", {k: v for k, v in data.items() if k != "sharing"}),
                      ("shared", data)):
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        run_local_job(job, [str(events)], tmp / name, say=lambda _: None)
        profile.disable()
        print(f"\n== chosen plan, {name}: {time.perf_counter() - start:.2f} s wall")
        pstats.Stats(profile).sort_stats("cumulative").print_stats(
            "engine_adapter|TextIOWrapper", 20)


if __name__ == "__main__":
    main()
