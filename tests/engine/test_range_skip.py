"""After-match skips decided range by range on match arrays (`after_match.kept_arrays`, as
`local.range_skip` applies them): matches cut into time ranges by their last event, each
range's in any order and in several outputs, each range's resume points carried to the next,
keep exactly what the brute-force reference keeps over all of them at once (ties in time,
Kleene sets, two keys)."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.local import engine
from cepplan.engine_adapter.runtime import after_match
from cepplan.engine_adapter.runtime.after_match import (
    SkipRule,
    kept_arrays,
    summary,
    summary_arrays,
)
from tests.engine.reference_after_match import reference_skip
from tests.engine.small_reads import run_read_in_small_batches
from tests.engine.test_after_match import (
    TEMPLATES,
    expected,
    patterns,
    random_rows,
    skip_value,
)
from tests.engine.test_matcher_vs_reference import frame
from tests.engine.workloads import workload

SKIPS = ["to_next_event", "past_last_event", {"to_first": "b"}, {"to_last": "b"}]

MATCH = st.tuples(st.integers(0, 3), st.lists(st.integers(1, 12), min_size=1, max_size=3,
                                               unique=True), st.sampled_from(["x", "y"]))


def _match(ids: tuple[int, list[int], str], times: list[int]) -> dict:
    """SEQ(a, b+): `a` the event before b's first, b's events in order, every event keyed."""
    a, b, key = ids
    b = sorted(b)
    a = min(a, b[0] - 1)

    def event(i: int) -> dict:
        return {"id": i, "ts": float(times[i]), "k": key}

    return {"pattern": "p", "events": {"a": event(a), "b": [event(i) for i in b]}}


@settings(max_examples=200, deadline=None)
@given(found=st.lists(MATCH, max_size=25, unique_by=lambda m: (m[0], tuple(sorted(m[1])),
                                                               m[2])),
       gaps=st.lists(st.integers(0, 1), min_size=13, max_size=13),
       cuts=st.lists(st.integers(0, 13), max_size=4), skip=st.sampled_from(SKIPS),
       data=st.data())
def test_skipping_range_by_range_keeps_what_the_reference_keeps(found, gaps, cuts, skip, data):
    times = [sum(gaps[:i + 1]) for i in range(13)]  # ids in time order, many ties
    matches = list({json.dumps(m): m for m in (_match(f, times) for f in found)}.values())
    rule = SkipRule(*((skip, "") if isinstance(skip, str) else next(iter(skip.items()))),
                    ("k",))
    bounds: dict = {}
    kept = []
    edges = sorted({times[0] - 1, *(times[min(c, 12)] for c in cuts), times[-1] + 1})
    for low, high in pairwise(edges):
        mine = [m for m in matches if low <= m["events"]["b"][-1]["ts"] < high]
        mine = data.draw(st.permutations(mine))
        split = sorted(data.draw(st.lists(st.integers(0, len(mine)), max_size=3)))
        outputs = [mine[a:b] for a, b in zip([0, *split], [*split, len(mine)], strict=True)]
        masks = kept_arrays([summary_arrays([summary(m, rule) for m in out])
                             for out in outputs], bounds)
        kept += [m for out, mask in zip(outputs, masks, strict=True)
                 for m, k in zip(out, mask.tolist(), strict=True) if k]
    expected = reference_skip(matches, skip, ["k"])
    assert sorted(map(json.dumps, kept)) == sorted(map(json.dumps, expected))


def _no_pass_over_files(*_args: object) -> None:
    raise AssertionError("the written matches were read again")


@pytest.mark.parametrize("kind", ["past_last_event", "to_last"])
def test_one_process_skips_range_by_range_without_reading_its_files(kind):
    """Events in time order matched by one process in ranges of a few rows: the skip is
    applied to each range's matches before they are written (the files are never read
    again) and keeps the reference's matches, counted as dropped in metrics.json."""
    rows = random_rows(3, 60, 30)
    template, var = TEMPLATES["seq_keyed"]
    skip = skip_value(kind, var)
    events = frame(rows)
    wl = workload(patterns(template, skip), csv=True)
    found, metrics = run_read_in_small_batches(
        wl, events, settings=[(engine, "REGION_ROWS", 6),
                              (after_match, "skip_in_files", _no_pass_over_files)])
    want = expected(template, skip, events)
    assert len(want["p"]) < len(want["q"])
    assert {k: found.get(k, []) for k in want} == want
    assert metrics["after_match_skipped"]["p"] == len(want["q"]) - len(want["p"])
