"""A worker's part appended to the output while the worker still writes it
(`BackgroundFile` and `MatchWriter.append_growing`): the output holds what was written
before, then the part's every byte, whatever the pauses in its writing; a run that fails
meanwhile does not wait for a part that never completes."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.local.writer import BackgroundFile, GrowingFile

PIECES = st.lists(st.tuples(st.binary(min_size=0, max_size=300), st.sampled_from([0, 0.002, 0.02])),
                  max_size=12)


def _write_slowly(path: Path, pieces: list, done: threading.Event, *, create_late: bool) -> None:
    """The pieces written (and flushed) one by one with their pauses, then `done` set."""
    if create_late:
        time.sleep(0.02)
    with open(path, "wb") as part:
        for data, pause in pieces:
            part.write(data)
            part.flush()
            time.sleep(pause)
    done.set()


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=200), PIECES, PIECES, st.booleans())
def test_growing_parts_are_appended_whole_in_order(tmp_path_factory, before, first, second,
                                                   late):
    folder = tmp_path_factory.mktemp("grow")
    output = BackgroundFile(folder / "out.jsonl")
    output.write([before])
    writers = []
    for number, pieces in enumerate((first, second)):
        path, done = folder / f"part-{number}", threading.Event()
        writers.append(threading.Thread(target=_write_slowly, args=(path, pieces, done),
                                        kwargs={"create_late": late}))
        output.write([GrowingFile(path, done.is_set)])
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    output.close()
    expected = before + b"".join(d for d, _ in first) + b"".join(d for d, _ in second)
    assert (folder / "out.jsonl").read_bytes() == expected
    assert not (folder / "part-0").exists() and not (folder / "part-1").exists()


def test_a_failed_run_does_not_wait_for_a_part_that_never_completes(tmp_path):
    output = BackgroundFile(tmp_path / "out.jsonl")
    (tmp_path / "part").write_bytes(b"half a line")
    output.write([GrowingFile(tmp_path / "part", lambda: False)])
    closing = threading.Thread(target=output.close, kwargs={"complete": False})
    closing.start()
    closing.join(30)
    assert not closing.is_alive()
