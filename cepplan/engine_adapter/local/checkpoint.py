"""A live stream's checkpoint (`cepplan run --follow DIR --checkpoint CKPT`): at each
micro-batch boundary, once the batch's matches are on disk, the files read, the matcher's
state (watermark, retained events with their arrival times, counts, count windows' next
positions) and the output files'
lengths, in one Arrow IPC file replaced atomically. A restart truncates the outputs to the
recorded lengths and goes on from there: no match lost, none twice (docs/engine.md,
"Restart from a checkpoint")."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.local.totals import PatternTotals
from cepplan.engine_adapter.runtime.table import Columns
from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic

FORMAT = "cepplan.checkpoint/1"
FILE = "checkpoint.arrow"
LATENCY_FILE = "latency.f8"
_META = b"cepplan.checkpoint"
_ARRIVED = "__arrived"  # the retained events' arrival wall times
_JSON_PREFIX = "json:"  # a column of Python values (strings, None, numbers), as JSON text


def job_digest(data: dict[str, Any]) -> str:
    """A fingerprint of the job (plan, patterns, types, reader): a checkpoint only resumes
    the job it was written for."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


class Checkpoint:
    """The checkpoint directory `folder` of a stream of `source` into `out` for the job
    `digest`: `load` what a killed run recorded, `save` after each micro-batch. `matches` is
    the matches' format (`jsonl` or `parquet`): the output's recorded lengths are in its terms."""

    def __init__(self, folder: Path, digest: str, source: str, out: Path,
                 matches: str = "jsonl"):
        self.folder = folder
        self.path = folder / FILE
        self.latency_log = folder / LATENCY_FILE  # each match's detection latency
        self.identity = {"format": FORMAT, "job": digest, "matches": matches,
                         "source": os.path.realpath(source), "output": os.path.realpath(out)}
        if folder.exists() and not folder.is_dir():
            raise InputError.single(str(folder), "", "is a file; --checkpoint needs a directory")
        if folder.is_dir() and not self.path.exists() and any(
                not f.name.startswith(".") for f in folder.iterdir()):  # a kill's temporary
            raise InputError.single(str(folder), "", "is not empty and holds no checkpoint: "
                                    "give a new or empty directory, or the one of the run "
                                    "to continue")

    def load(self) -> dict[str, Any] | None:
        """What the last checkpoint recorded (None: there is none yet, start afresh); an
        `InputError` when it is not one or was written for another job, source or output."""
        if not self.path.exists():
            return None
        import pyarrow as pa

        try:
            state = decode(self.path.read_bytes())
        except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as err:
            raise InputError.single(str(self.path), "", f"is not a cepplan checkpoint "
                                    f"({str(err)[:80]})") from None
        state.setdefault("matches", "jsonl")  # recorded before streams wrote Parquet
        for key, what in (("format", "a checkpoint format"), ("job", "plan or workload"),
                          ("matches", "--format"), ("source", "followed source"),
                          ("output", "output directory")):
            if state.get(key) != self.identity[key]:
                raise InputError.single(str(self.path), "", f"was written for another {what} "
                                        f"({state.get(key)!s:.60}); give the same arguments "
                                        "as the run it continues, or a new --checkpoint")
        return state

    def save(self, matcher: StreamMatcher, lengths: dict[str, int], files: list[str],
             figures: dict[str, int], skips: dict[str, Any] | None = None) -> None:
        """Record the state after a micro-batch whose outputs are on disk at `lengths`
        (and `skips`, the after-match skips' state, `StreamSkips.state`)."""
        state = {**self.identity, "files_read": files, "output_bytes": lengths,
                 "figures": figures, **({"after_match": skips} if skips else {})}
        write_bytes_atomic(self.path, encode(matcher, state))


def encode(matcher: StreamMatcher, state: dict[str, Any]) -> bytes:
    """The matcher's state (watermark, counts, retained events with their arrival times) and
    `state` (JSON values) as the bytes of one Arrow IPC file."""
    pool, arrived = matcher.retained()
    return encode_columns(Columns({**{n: pool[n] for n in pool.columns}, _ARRIVED: arrived}),
                          {**state, "matcher": _matcher_state(matcher)})


def decode(blob: bytes) -> dict[str, Any]:
    """What `encode` wrote, for `restore` (the retained events under "retained")."""
    import pyarrow as pa

    with pa.ipc.open_file(pa.BufferReader(blob)) as reader:
        table = reader.read_all()
    return {**json.loads(table.schema.metadata[_META]), "retained": table}


def encode_columns(columns: Columns, state: dict[str, Any]) -> bytes:
    """Events (`Columns`, exactly) and `state` (JSON values) as the bytes of one Arrow IPC
    file."""
    import pyarrow as pa

    table = pa.table(dict(_to_arrow(n, columns[n]) for n in columns.columns))
    table = table.replace_schema_metadata({_META: json.dumps(state)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_columns(blob: bytes) -> tuple[Columns, dict[str, Any]]:
    """What `encode_columns` wrote."""
    state = decode(blob)
    table = state.pop("retained")
    return Columns({name.removeprefix(_JSON_PREFIX): _from_arrow(name, table[name])
                    for name in table.column_names}), state


def recorded_files(folder: Path) -> list[str]:
    """The followed files the checkpoint in `folder` records as read ([] before the first):
    where a restart would go on from."""
    import pyarrow as pa

    try:
        with pa.ipc.open_file(folder / FILE) as reader:
            return json.loads(reader.schema.metadata[_META])["files_read"]
    except FileNotFoundError:
        return []


def restore(matcher: StreamMatcher, state: dict[str, Any]) -> None:
    """Put the matcher back as `save` recorded it."""
    saved = state["matcher"]
    matcher.latest, matcher.evaluated = saved["latest"], saved["evaluated"]
    matcher.covered.first, matcher.covered.last = saved["covered"]
    matcher.rows_before = saved["rows_before"]
    matcher.counts.update(saved["counts"])
    matcher.late.update(saved["late"])
    matcher.totals = {name: PatternTotals(**t) for name, t in saved["totals"].items()}
    matcher.built = saved["built"]
    matcher.partials = {int(k): v for k, v in saved["partials"].items()}
    matcher.seconds.update(saved["seconds"])
    if matcher.positions is not None:
        matcher.positions.restore(saved["positions"])
    table = state["retained"]
    if table.num_rows:
        data = {}
        for name in table.column_names:
            if name != _ARRIVED:
                data[name.removeprefix(_JSON_PREFIX)] = _from_arrow(name, table[name])
        matcher.held = [Columns(data)]
        matcher.arrived = [table[_ARRIVED].to_numpy()]
        matcher.state_rows = table.num_rows


def _matcher_state(matcher: StreamMatcher) -> dict[str, Any]:
    return {"latest": matcher.latest, "evaluated": matcher.evaluated,
            "covered": list(matcher.covered.span), "rows_before": matcher.rows_before,
            "counts": dict(matcher.counts), "late": dict(matcher.late),
            "totals": {name: asdict(t) for name, t in matcher.totals.items()},
            "built": matcher.built, "partials": matcher.partials,
            "seconds": matcher.seconds,
            **({"positions": matcher.positions.state()} if matcher.positions else {})}


def _to_arrow(name: str, values: np.ndarray):
    """(column name, Arrow array): strings and None as an Arrow string column; other Python
    values (numbers of a JSON source) as JSON text, marked by the name's prefix; exact."""
    import pyarrow as pa

    if values.dtype != object:
        return name, pa.array(values)
    try:
        return name, pa.array(values, pa.string(), from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _JSON_PREFIX + name, pa.array(  # json, not orjson: NaN stays NaN
            [json.dumps(v.item() if isinstance(v, np.generic) else v) for v in values],
            pa.string())


def _from_arrow(name: str, column) -> np.ndarray:
    if name.startswith(_JSON_PREFIX):
        out = np.empty(len(column), dtype=object)
        out[:] = [json.loads(v) for v in column.to_pylist()]
        return out
    return column.to_numpy()
