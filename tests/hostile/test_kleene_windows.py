"""A window of thousands of events of a Kleene type through `cepplan run`: its cap cuts
counted in `metrics.json` and said in the user's words, the expansion reading O(cap) events per
binding (in one piece); and the same window whose matches cannot fit on the output's disk (a
real 16 MiB tmpfs) refused before any is written, with one error naming the pattern, its
window and the figures."""

from __future__ import annotations

import json

import pytest

from tests.hostile import test_output_storage as storage
from tests.hostile.test_match_memory import _workload, cepplan, one_error, planned

COUNT = 6000  # B events in the window, every third passing `a.v <= b.v`


def dense(tmp_path, cap: int) -> tuple:
    """SEQ(a:A, KLEENE(b:B), c:A) over one A, COUNT B and one A within an hour."""
    raw = _workload([{"name": "bursts", "structure": ["SEQ", "a:A", ["KLEENE", "b:B"], "c:A"],
                      "where": ["a.v <= b.v", "a.v < c.v"], "partition_by": ["k"],
                      "within": "1h"}], cap=cap)
    rows = [("A", 0.0, "key1", 2)]
    rows += [("B", 1 + i / 1000, "key1", 2 if i % 3 == 2 else 1) for i in range(COUNT)]
    return planned(tmp_path, raw, [*rows, ("A", 30.0, "key1", 3)])


def test_cap_cuts_are_counted_and_said(tmp_path):
    """The k-th passing B as last event has k - 1 before it: with cap 4, 2,000 bindings,
    1,996 cut, matches the sum of 2^min(k - 1, 3); candidates read 4 per binding, so the
    expansion is one piece (all 6,000 per binding were 6 million, in pieces)."""
    cap, passing = 4, COUNT // 3
    plan, events = dense(tmp_path, cap)
    result = cepplan("run", plan, events, "-o", tmp_path / "out", "-q")
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["kleene_cap_hits"]["bursts"] == passing - cap
    assert metrics["matches"]["bursts"] == sum(2 ** min(k - 1, cap - 1)
                                               for k in range(1, passing + 1))
    assert metrics["chunk_splits"]["bursts"] == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: pattern bursts: 1,996 time(s) a Kleene variable had more than kleene_cap=4 "
        "events to choose from (for one choice of the other events and of its last): only "
        "its latest 4 were combined, so matches with more of its events, or with earlier "
        "ones, were not reported; raise options.kleene_cap in the workload (at most 30) or "
        "shorten the window to find them all"], result.stderr

tmpfs = storage.tmpfs  # the fixture: a real tmpfs of a given size


@pytest.fixture
def small_disk(tmpfs):
    """A real 16 MiB tmpfs (skipped where mounting is refused)."""
    return tmpfs("16m")


@pytest.mark.parametrize("workers", ["1", "2"])
def test_kleene_matches_past_the_disk_are_refused_before_writing(tmp_path, small_disk,
                                                                 workers):
    """Cap 16: 2,000 bindings of up to 2^15 subsets each, about 30 million matches, far
    more than 16 MiB even at 32 bytes an event: one error, nothing written."""
    plan, events = dense(tmp_path, 16)
    result = cepplan("run", plan, events, "-o", small_disk / "out", "-q",
                     "--workers", workers)
    line = one_error(result, "pattern bursts", "within its window of 3600 time units",
                     "Kleene matches", "options.kleene_cap=16", "free on the output's disk")
    assert int(line.split("write about ")[1].split()[0].replace(",", "")) > 1 << 20
    assert not list(small_disk.iterdir())  # no output, no staging left behind
