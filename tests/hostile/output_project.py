"""A small project folder for the output-safety tests (the mobile example cut to 200 events,
its plan, the user's own notes) and the command line of every command that writes, with a
snapshot of a folder to prove that nothing in it was lost or changed."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from cepplan.cli.app import app
from tests.hostile.conftest import EXAMPLES

MOBILE = EXAMPLES / "mobile"
EVENTS = "data/events.jsonl"

# command -> its arguments around `-o OUT`, run from inside the project (tiny and fast:
# the in-process engine only, one-second planning)
WRITERS: dict[str, tuple[list[str], list[str]]] = {
    "optimize": (["optimize", "workload.json"], ["-q", "--time-limit", "1"]),
    "stats": (["stats", EVENTS, "-w", "workload.json"], ["-q"]),
    "synth": (["synth", "workload.json"], ["-q", "--duration", "10"]),
    "compare": (["compare", "workload.json"], ["-q", "--time-limit", "1"]),
    "generate": (["generate", "plan.json"], ["-q"]),
    "run": (["run", "plan.json", EVENTS], ["-q", "--engine", "local"]),
    "cover": (["cover", "plan.json", EVENTS], ["-q"]),
    "synth-mobile": (["synth-mobile"], ["-q", "--cars", "4", "--consumers", "2",
                                        "--duration", "10"]),
}
# the files each command reads, in the project
INPUTS = {"optimize": ["workload.json"], "stats": ["workload.json", EVENTS],
          "synth": ["workload.json"], "compare": ["workload.json"],
          "generate": ["plan.json", "workload.json"],
          "run": ["plan.json", "workload.json", EVENTS],
          "cover": ["plan.json", "workload.json", EVENTS], "synth-mobile": []}
DIRECTORY_WRITERS = ("generate", "run", "cover", "synth-mobile")
FILE_WRITERS = ("optimize", "stats", "synth", "compare")


def command(name: str, out: object) -> list[str]:
    """The command line of `name` writing to `out`."""
    before, after = WRITERS[name]
    return [*before, "-o", str(out), *after]


def make_project(folder: Path) -> Path:
    """workload.json, plan.json, data/events.jsonl, notes.txt and docs/readme.md in `folder`."""
    folder.mkdir(parents=True)
    shutil.copy(MOBILE / "workload.json", folder / "workload.json")
    (folder / "data").mkdir()
    lines = (MOBILE / "events.jsonl").read_bytes().splitlines(keepends=True)[:200]
    (folder / EVENTS).write_bytes(b"".join(lines))
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "docs").mkdir()
    (folder / "docs" / "readme.md").write_text("# mine\n")
    with contextlib.chdir(folder):
        app(["optimize", "workload.json", "-o", "plan.json", "-q", "--time-limit", "1"],
            standalone_mode=False)
    return folder


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under `folder` (links not followed): its kind and content."""
    found: dict[str, tuple] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            mode = path.lstat().st_mode
            key = str(path.relative_to(folder))
            if stat.S_ISLNK(mode):
                found[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                found[key] = ("dir",)
            elif stat.S_ISREG(mode):
                found[key] = ("file", path.read_bytes())
            else:
                found[key] = ("special", stat.S_IFMT(mode), path.lstat().st_rdev)
    return found


def lost(before: dict[str, tuple], after: dict[str, tuple],
         may_change: tuple[str, ...] = ()) -> list[str]:
    """Entries of `before` gone or changed in `after`, except under the `may_change` paths."""
    def allowed(key: str) -> bool:
        return any(key == p or key.startswith(p.rstrip("/") + "/") for p in may_change)

    return sorted(k for k, v in before.items() if after.get(k) != v and not allowed(k))
