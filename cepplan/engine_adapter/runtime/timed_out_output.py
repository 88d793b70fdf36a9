"""Where timed-out partial matches are written: `OUT/timed_out/`, beside `OUT/matches/` and
mirroring its part files, never among the complete matches (docs/engine.md, "Outputs").

One rule for every writer: a hidden pattern of `cepplan/workload/timed_out.py` (its job data
has `timed_out`) writes to `TIMED_OUT_DIR`; its lines open with `timed_out_head`. A live
stream routes each pattern's lines by `output_folders` as it writes them; a batch run, whose
part files its workers and Spark's tasks write with every pattern's lines together, moves the
lines opening with a timed-out head out of its staged part files (`split_timed_out`) before
it is published, as the after-match skips are applied.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MATCHES_DIR = "matches"
TIMED_OUT_DIR = "timed_out"


def output_folder(pattern: Mapping[str, Any]) -> str:
    """The folder of `OUT` that pattern's lines go to (a job data's pattern)."""
    return TIMED_OUT_DIR if pattern.get("timed_out") else MATCHES_DIR


def output_folders(patterns: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """`output_folder` of each of a job data's `patterns`, by name."""
    return {p["name"]: output_folder(p) for p in patterns}


def timed_out_head(user: str) -> str:
    """How a timed-out partial match of the user's pattern `user` opens its JSON line
    (format doc, "Timed-out partial matches"); no complete match's line opens so."""
    return f'{{"pattern": {json.dumps(user)}, "timed_out": '


def timed_out_heads(patterns: Iterable[Mapping[str, Any]]) -> tuple[bytes, ...]:
    """The line openings of the timed-out partial matches of a job data's `patterns`."""
    users = sorted({p["reported_as"] for p in patterns if p.get("timed_out")})
    return tuple(timed_out_head(user).encode() for user in users)


def split_timed_out(staging: Path, data: Mapping[str, Any]) -> None:
    """Each part file of `staging/matches/` (JSON lines) rid of the job's timed-out partial
    matches, which go to the part file of the same name under `staging/timed_out/` (each
    written as a temporary file, then renamed). Nothing happens without a `timed_out`
    pattern."""
    heads = timed_out_heads(data.get("patterns", ()))
    if not heads:
        return
    target = staging / TIMED_OUT_DIR
    target.mkdir(exist_ok=True)
    for path in sorted((staging / MATCHES_DIR).glob("*.jsonl")):
        _split_file(path, target / path.name, heads)


def _split_file(path: Path, aside: Path, heads: tuple[bytes, ...]) -> None:
    """`path`'s lines opening with one of `heads` moved to `aside` (none: `path` untouched)."""
    kept_path = path.with_name(f".{path.name}.kept")
    aside_path = aside.with_name(f".{aside.name}.part")
    moved = 0
    with open(path, "rb") as source, open(kept_path, "wb") as kept, \
            open(aside_path, "wb") as timed_out:
        for line in source:
            if line.startswith(heads):
                timed_out.write(line)
                moved += 1
            else:
                kept.write(line)
    if not moved:
        kept_path.unlink()
        aside_path.unlink()
        return
    os.replace(aside_path, aside)
    os.replace(kept_path, path)
