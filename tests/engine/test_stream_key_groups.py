"""A stream matched in key groups, as the Spark stream runs it (`StreamMatcher.owned` with
`stream_state.key_group`): every group reads every arrival, keeps only its keys' events;
together the groups give the reference matcher's matches on the events that were not late
(lateness by the whole stream's watermark), each late event written by one group, and the
groups' figures added give the stream's counts."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.engine_adapter.spark.stream_job import key_groups
from cepplan.engine_adapter.spark.stream_state import key_attributes, key_group, merged_figures
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth import synthesize
from cepplan.workload import load_workload
from cepplan.workload.columns import EVENT_ID, EVENT_TS
from tests.engine.example_data import EXAMPLES
from tests.engine.test_stream_matches import arrivals, expected, late_mask, stream


def _fraud_without_conditions():
    """The fraud patterns (every one keyed by user) without their conditions: many matches
    on a few minutes of synthetic events."""
    raw = json.loads((EXAMPLES / "fraud" / "workload.json").read_text())
    for pattern in raw["patterns"]:
        pattern.pop("where", None)
    raw.get("statistics", {}).pop("selectivities", None)
    path = Path(tempfile.mkdtemp(prefix="cepplan-key-groups-")) / "workload.json"
    path.write_text(json.dumps(raw))
    return load_workload(path)


FRAUD = _fraud_without_conditions()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), groups=st.integers(2, 4),
       delay=st.sampled_from([0.0, 0.5, 2.0]), cuts=st.lists(st.integers(1, 150), max_size=8))
def test_key_groups_together_give_the_reference_matches(seed, groups, delay, cuts):
    data = job_data(FRAUD, trivial_plan(FRAUD))
    attributes = key_attributes(job_from_json(data))
    assert attributes == ("user",)
    events = synthesize(FRAUD, seed=seed, truth_draws=100, duration=30, total_rate=5.0,
                         n_keys=6).events
    arrived = arrivals(events, 2 * delay, seed)  # some beyond the delay: late
    late = late_mask(arrived[EVENT_TS].to_numpy(), delay)
    found: dict[str, list] = {}
    late_ids: list[int] = []
    figures = []
    for group in range(groups):
        with tempfile.TemporaryDirectory() as folder:
            got, late_of_group, metrics = stream(
                FRAUD, data, arrived, delay, cuts, Path(folder),
                owned=lambda rows, g=group: key_group(rows, attributes, groups) == g)
        for name, matches in got.items():
            found.setdefault(name, []).extend(matches)
        late_ids += late_of_group
        metrics["stream"] = {"micro_batches": 1, "late_events": {}}
        figures.append(metrics)
    want = expected(FRAUD, arrived.loc[~late])
    assert {k: sorted(v) for k, v in found.items()} == want
    assert sorted(late_ids) == sorted(arrived.loc[late, EVENT_ID].tolist())
    merged = merged_figures(figures)
    assert merged["matches"] == {p.name: len(want.get(p.name, [])) for p in FRAUD.patterns}
    assert merged["rows_read"] == len(arrived)


def test_key_groups_of_a_new_a_restarted_and_an_older_stream(tmp_path):
    """A new keyed stream takes the parallelism given, a restart what it recorded, a
    checkpoint of a stream started without key groups (Spark's offsets, no record) one
    group; a workload without a key shared by every pattern, one group."""
    data = job_data(FRAUD, trivial_plan(FRAUD))
    new, older = tmp_path / "new", tmp_path / "older"
    new.mkdir()
    (older / "spark" / "offsets").mkdir(parents=True)
    assert key_groups(data, new, 3) == 3
    assert key_groups(data, new, 8) == 3  # a restart on another master keeps its groups
    assert key_groups(data, older, 3) == 1
    stocks = load_workload(EXAMPLES / "stocks" / "workload.json")
    assert key_groups(job_data(stocks, trivial_plan(stocks)), tmp_path, 3) == 1


def test_a_key_read_as_integer_or_double_is_in_one_group():
    """An integer key column is doubles in a file with a missing value, Python integers when
    too large for doubles: the same key lands in the same group whatever its form."""
    forms = [np.array([5, 7, 2**60]), np.array([5.0, 7.0, np.nan]),
             np.array([5, 7, 2**60, None], dtype=object)]
    groups = [key_group(Columns({"user": f}), ("user",), 7)[:2] for f in forms]
    assert all((g == groups[0]).all() for g in groups)
    assert key_group(Columns({"user": forms[0]}), ("user",), 7)[2] == \
        key_group(Columns({"user": forms[2]}), ("user",), 7)[2]
