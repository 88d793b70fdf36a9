"""After-match skips decided range by range on match arrays (`after_match.kept_arrays`, as
`local.range_skip` applies them): matches cut into time ranges by their last event, each
range's in any order and in several outputs, each range's resume points carried to the next,
keep exactly what the brute-force reference keeps over all of them at once (ties in time,
Kleene sets, two keys)."""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.runtime.after_match import (
    SkipRule,
    kept_arrays,
    summary,
    summary_arrays,
)
from tests.engine.reference_after_match import reference_skip

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
