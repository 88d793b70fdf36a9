"""Count windows on the Spark stream's stateful step (`stream_state.StreamStep`, run here as
Spark runs it per micro-batch and key group, its state through Spark's group state, a
micro-batch run twice as after a failure before its commit): the key groups together give
the brute-force reference's matches, each once; and `cepplan run --follow --engine spark` on
a real local Spark gives them too."""

from __future__ import annotations

import tempfile
from itertools import pairwise
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from tests.engine.reference_matcher import canonical
from tests.engine.test_count_windows import EVENT, count_reference, pattern
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.test_spark_stream_plans import _rows, _run
from tests.engine.test_stream_matches import arrivals
from tests.engine.workloads import workload

# every pattern keyed by k: the stream is matched in key groups
COUNTED = {"join": ("join", 3), "kleene": ("kleene", 3), "not_middle": ("not_middle", 2)}


def keyed_workload():
    return workload([{**pattern(template, f"{count} events", True)[0], "name": name}
                     for name, (template, count) in COUNTED.items()], csv=True)


def reference(events: pd.DataFrame) -> dict:
    want = {name: sorted((name, *canonical(m)[1:])
                         for m in count_reference(template, count, True, events))
            for name, (template, count) in COUNTED.items()}
    return {name: found for name, found in want.items() if found}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(EVENT, max_size=24), delay=st.sampled_from([0.0, 1.0]),
       every=st.integers(1, 6), groups=st.integers(1, 3), replay=st.integers(0, 5),
       seed=st.integers(0, 100))
def test_key_groups_give_the_reference_matches(rows, delay, every, groups, replay, seed):
    events = arrivals(frame(sorted(rows, key=lambda r: r[1])), delay, seed)
    wl = keyed_workload()
    data = job_data(wl, trivial_plan(wl))
    data["options"]["max_delay"] = delay
    cuts = list(range(every, len(rows), every))
    bounds = [0, *cuts, len(events)]
    batches = []
    with tempfile.TemporaryDirectory() as folder:
        for number, (low, high) in enumerate(pairwise(bounds)):
            path = Path(folder) / f"part-{number:04d}.csv"
            write_events(events.iloc[low:high], wl, path)
            batches.append(_rows([(str(path), path.read_text(), False)],
                                 end=number == len(bounds) - 2))
    found: dict[str, list] = {}
    for group in range(groups):
        for name, matches in _run(data, batches, replay, group, groups)[0].items():
            found[name] = sorted(found.get(name, []) + matches)
    assert found == reference(events)
