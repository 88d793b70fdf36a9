"""The JSON files cepplan reads — a workload, statistics, a plan — told apart by their
`format`, so a file given where another kind belongs is named for what it is, with the command
that makes the kind expected (`cepplan run workload.json ...`: plan it first)."""

from __future__ import annotations

from typing import Any

from cepplan.errors import InputError

FORMATS = {"workload": "cepplan.workload/", "statistics": "cepplan.stats/",
           "plan": "cepplan.plan/"}
_NAMES = {"workload": "a workload", "statistics": "a statistics file", "plan": "a plan"}


def kind_of(document: Any) -> str | None:
    """`workload`, `statistics` or `plan` by the document's `format`; None for anything else."""
    found = document.get("format") if isinstance(document, dict) else None
    if not isinstance(found, str):
        return None
    return next((kind for kind, prefix in FORMATS.items() if found.startswith(prefix)), None)


def check_kind(document: Any, file: str, expected: str) -> None:
    """Nothing if `document` is of the `expected` kind or of no known kind (its own checks
    then say what is wrong); else an `InputError` naming what it is and what to do."""
    found = kind_of(document)
    if found is None or found == expected:
        return
    raise InputError.single(file, "format", f"this is {_NAMES[found]}, not "
                            f"{_NAMES[expected]}: {_remedy(found, expected, file)}")


def _remedy(found: str, expected: str, file: str) -> str:
    if expected == "plan":
        if found == "workload":
            return f"plan it first with `cepplan optimize {file} -o plan.json`"
        return f"plan the workload with `cepplan optimize WORKLOAD --stats {file} -o plan.json`"
    if expected == "statistics":
        workload = file if found == "workload" else "WORKLOAD"
        return f"measure the events with `cepplan stats EVENTS -w {workload} -o stats.json`"
    made = "made" if found == "plan" else "measured"
    return f"give the workload.json it was {made} for"
