"""Find and check a run's inputs: the plan, the workload it was made for, the event files.

Everything here fails with an `InputError` before Spark starts (issue 5: "a plan that does not
fit its workload is an error before Spark starts").
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Sequence
from pathlib import Path

from cepplan.errors import InputError, Problem
from cepplan.file_kinds import check_kind
from cepplan.fileio import read_json
from cepplan.limits import check_readable
from cepplan.planner.plan import Plan, read_plan, trivial_plan
from cepplan.workload import Workload, load_workload
from cepplan.workload.input_files import InputFileError, files_in, is_glob


def plan_and_workload(plan_path: Path, workload_path: Path | None = None, *,
                      trivial: bool = False, warn: Callable[[str], None] | None = None
                      ) -> tuple[Plan, Workload]:
    """The plan (or, with `trivial`, the trivial plan) and its workload, checked to fit: the
    plan must record the workload it was made for (`workload.sha256`, the digest of the
    workload's content). A plan whose own content was changed since it was planned runs
    without its modelled figures, and `warn` is told so."""
    document = read_json(plan_path)
    check_kind(document, str(plan_path), "plan")  # a workload given where a plan belongs
    if workload_path is None:
        workload_path = _workload_of(document, plan_path)
    workload = load_workload(workload_path)
    if trivial:
        read_plan(plan_path, workload)
        return trivial_plan(workload), workload
    notes: list[str] = []
    plan = read_plan(plan_path, workload, notes)
    if not plan.workload_digest:
        raise InputError.single(str(plan_path), "workload.sha256", "the plan does not record "
                                "the workload it was made for: run `cepplan optimize` again "
                                "(or run the unoptimised plan: --plan-kind trivial)")
    if not workload.made_for(plan.workload_digest):
        raise InputError.single(str(plan_path), "workload.sha256",
                                f"the plan was made for another version of {workload_path}: "
                                "run `cepplan optimize` again")
    for note in notes if warn else ():
        warn(note)
    return plan, workload


def _workload_of(raw: object, plan_path: Path) -> Path:
    """The workload the plan document `raw` names, found as given or beside the plan."""
    meta = raw.get("workload") if isinstance(raw, dict) else None
    named = meta.get("path") if isinstance(meta, dict) else None
    if not named or not isinstance(named, str):
        raise InputError.single(str(plan_path), "workload.path",
                                "the plan does not name its workload: pass --workload")
    for candidate in (Path(named), plan_path.parent / named):
        if candidate.is_file():
            return candidate
    raise InputError.single(str(plan_path), "workload.path",
                            f"workload {named!r} not found (looked beside the current directory "
                            "and the plan): pass --workload")


def event_paths(paths: Sequence[str | Path]) -> list[str]:
    """The event inputs as given, each checked to name something readable: files,
    directories, quoted globs ('data/*.csv', expanded by the readers as Spark expands them)
    and URLs (hdfs://..., read by Spark); a directory must hold event files; every problem
    reported together."""
    problems = []
    for path in map(str, paths):
        try:
            if is_glob(path):
                if not glob.glob(path):
                    raise InputError.single(path, "", "no file or directory matches this "
                                            "pattern")
            elif "://" not in path:
                check_readable(path, "event file")
                files_in(path)  # a directory without event files
        except InputFileError as err:
            problems.append(Problem(err.path, "", err.message))
        except InputError as err:
            problems += err.problems
    if problems:
        raise InputError(problems)
    return [str(p) for p in paths]
