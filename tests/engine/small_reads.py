"""The in-process engine over events written to a CSV file and read a few rows at a time, so
that reading in batches, matching in ranges as read and slicing are exercised on small
hypothesis streams (the language tests compare what it finds with their references)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.local import engine
from cepplan.engine_adapter.local.source import read_batches
from cepplan.planner.plan import trivial_plan
from cepplan.stats.synth_write import write_events
from cepplan.workload.model import Workload
from tests.engine.test_local_engine import read_matches

BATCH_BYTES = 64  # a few rows per read batch


def run_read_in_small_batches(wl: Workload, events: pd.DataFrame, *,
                              settings: Sequence[tuple[Any, str, Any]] = (),
                              say: Callable[[str], None] = lambda _text: None,
                              **options: Any) -> tuple[dict, dict]:
    """(matches by pattern, metrics) of `wl`'s trivial plan over `events` as a CSV file read
    in batches of `BATCH_BYTES`; `settings`: (module, name, value) set for the run (range or
    slice sizes); `options`: more of `run_local_job`'s (`workers`)."""
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        path = Path(scratch) / "events.csv"
        write_events(events, wl, path)
        patch.setattr(engine, "read_batches", partial(read_batches, batch_bytes=BATCH_BYTES))
        for module, name, value in settings:
            patch.setattr(module, name, value)
        metrics = engine.run_local_job(job_data(wl, trivial_plan(wl)), [str(path)],
                                       Path(scratch) / "out", say=say, **options)
        return read_matches(Path(scratch) / "out"), metrics
