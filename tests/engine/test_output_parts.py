"""Every reader of a run's output reads all its part files, not only `part-00000`: a run on N
workers writes one part per byte range (docs/engine.md, "Outputs"). Each test puts what decides
its outcome in the second part."""

from __future__ import annotations

import json
from pathlib import Path

from cepplan.engine_adapter.runtime.after_match import apply_skips
from cepplan.engine_adapter.runtime.timed_out_output import split_timed_out
from cepplan.report.measure import Run


def _match(pattern: str, ts: float, ident: int) -> str:
    """One JSON line of a one-event match (the engine's rendering: `pattern` first)."""
    event = {"id": ident, "type": "A", "ts": ts, "k": "u"}
    return json.dumps({"pattern": pattern, "events": {"a": event}}) + "\n"


def _parts(out: Path, folder: str, *texts: str) -> None:
    """`texts` as `OUT/folder/part-00000.jsonl`, `part-00001.jsonl`, ..."""
    (out / folder).mkdir(parents=True, exist_ok=True)
    for number, text in enumerate(texts):
        (out / folder / f"part-{number:05d}.jsonl").write_text(text)


def test_the_skip_pass_reads_every_part(tmp_path):
    """`past_last_event` on a pattern of two-event matches: the kept match in part 0 ends at
    ts 3, so the match in part 1 starting at ts 2 is dropped, the one starting at 5 kept."""
    def pair(first: float, last: float) -> str:
        return json.dumps({"pattern": "p", "events": {
            "a": {"id": int(first), "type": "A", "ts": first, "k": "u"},
            "b": {"id": int(last), "type": "A", "ts": last, "k": "u"}}}) + "\n"

    _parts(tmp_path, "matches", pair(1, 3), pair(2, 4) + pair(5, 6))
    data = {"after_match": {"p": {"kind": "past_last_event", "partition_by": ["k"]}}}
    metrics: dict = {}
    apply_skips(tmp_path, data, metrics)
    assert metrics["after_match_skipped"] == {"p": 1}
    assert (tmp_path / "matches" / "part-00001.jsonl").read_text() == pair(5, 6)
    assert (tmp_path / "matches" / "part-00000.jsonl").read_text() == pair(1, 3)


def test_a_preference_reads_every_part(tmp_path):
    """`prefer: greedy` with matches sharing a first event across two parts: only the most
    preferred (the longer, in part 1) is kept."""
    short = json.dumps({"pattern": "p", "events": {
        "a": {"id": 1, "type": "A", "ts": 1.0, "k": "u"},
        "b": [{"id": 2, "type": "B", "ts": 2.0, "k": "u"}]}}) + "\n"
    long = json.dumps({"pattern": "p", "events": {
        "a": {"id": 1, "type": "A", "ts": 1.0, "k": "u"},
        "b": [{"id": 2, "type": "B", "ts": 2.0, "k": "u"},
              {"id": 3, "type": "B", "ts": 3.0, "k": "u"}]}}) + "\n"
    _parts(tmp_path, "matches", short, long)
    data = {"after_match": {"p": {"kind": "past_last_event", "partition_by": ["k"],
                                  "prefer": "greedy", "variables": ["a", "b"]}}}
    metrics: dict = {}
    apply_skips(tmp_path, data, metrics)
    assert metrics["after_match_skipped"] == {"p": 1}
    assert (tmp_path / "matches" / "part-00000.jsonl").read_text() == ""
    assert (tmp_path / "matches" / "part-00001.jsonl").read_text() == long


def test_timed_out_lines_are_moved_out_of_every_part(tmp_path):
    """A timed-out partial match in part 1 goes to `timed_out/part-00001.jsonl`."""
    timed_out = ('{"pattern": "p", "timed_out": {"k": 1, "at": 4.0}, "events": '
                 '{"a": {"id": 9, "type": "A", "ts": 1.0}}}\n')
    _parts(tmp_path, "matches", _match("p", 1.0, 1), _match("p", 2.0, 2) + timed_out)
    split_timed_out(tmp_path, {"patterns": [{"name": "p~t", "reported_as": "p",
                                             "timed_out": 1}]})
    assert (tmp_path / "matches" / "part-00001.jsonl").read_text() == _match("p", 2.0, 2)
    assert (tmp_path / "timed_out" / "part-00001.jsonl").read_text() == timed_out
    assert not (tmp_path / "timed_out" / "part-00000.jsonl").exists()


def test_compare_reads_every_part(tmp_path):
    """Two runs whose part 0 is the same and part 1 differs are told apart by `compare`,
    and a run's matches are those of both parts."""
    runs = []
    for ts in (2.0, 3.0):
        out = tmp_path / str(ts)
        _parts(out, "matches", _match("p", 1.0, 1), _match("p", ts, 2))
        runs.append(Run({}, 0.0, out))
    assert runs[0].digest != runs[1].digest
    assert len(runs[0].matches()["p"]) == 2
