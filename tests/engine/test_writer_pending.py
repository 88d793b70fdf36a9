"""The match writer's queue is bounded in bytes: a chunk of Kleene matches can be a hundred
MB, and 64 chunks queued behind a slow disk (or a writer thread starved of CPU) took the
matcher's whole memory budget, which then refused the run. A worker's file to append that is
a FIFO nobody has opened yet holds the writer thread here (as a slow disk would): the caller
waits once the bytes queued behind it reach the bound, and everything is written once the
FIFO is opened."""

from __future__ import annotations

import os
import threading
import time

from cepplan.engine_adapter.local.writer import BackgroundFile

CHUNK = 1 << 20


class SmallQueue(BackgroundFile):
    PENDING_BYTES = 4 * CHUNK  # the bound, scaled down with the chunks


def test_the_caller_waits_while_the_queued_bytes_reach_the_bound(tmp_path):
    held = tmp_path / "worker-part"
    os.mkfifo(held)
    output = SmallQueue(tmp_path / "out.jsonl")
    output.write([held])  # the thread waits in open() until a writer opens the FIFO
    queued: list[int] = []

    def produce() -> None:
        for number in range(20):
            output.write([bytes(CHUNK)])
            queued.append(number)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    seen = -1
    while len(queued) != seen:  # until the producer waits (or is done)
        seen = len(queued)
        time.sleep(0.5)
    assert len(queued) <= 5, len(queued)  # 4 chunks queued, then one more waits
    os.close(os.open(held, os.O_WRONLY))  # the FIFO opened and closed: nothing to append
    producer.join(60)
    output.close()
    assert len(queued) == 20
    assert (tmp_path / "out.jsonl").read_bytes() == bytes(20 * CHUNK)
