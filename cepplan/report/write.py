"""Write a report as `report.html` with `report.md` and `report.json` beside it: all three
rendered and written first, then renamed into place together (or none of them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cepplan.errors import InputError
from cepplan.fileio import write_bytes_atomic, write_json_atomic, written_together

SUFFIXES = (".html", ".md", ".json")


def report_paths(output: str | Path) -> dict[str, Path]:
    """The three files a report is written to, named after `output` (any of the suffixes, or
    none: `report` gives report.html, report.md and report.json); a directory is refused."""
    path = Path(output)
    if os.path.isdir(path):  # False for a name too long: refused by the output checks
        raise InputError.single(str(output), "", "is a directory; name the report's file, "
                                f"such as {path / 'report.html'}")
    stem = path.with_suffix("") if path.suffix in SUFFIXES else path
    return {suffix: stem.with_name(stem.name + suffix) for suffix in SUFFIXES}


def write_report(report: Mapping[str, Any], output: str | Path) -> dict[str, Path]:
    """Render and write all three files; returns their paths by suffix."""
    from cepplan.report.render_html import render_html
    from cepplan.report.render_md import render_markdown

    paths = report_paths(output)
    with written_together():
        write_json_atomic(paths[".json"], report)
        write_bytes_atomic(paths[".md"], render_markdown(report).encode())
        write_bytes_atomic(paths[".html"], render_html(report).encode())
    return paths
