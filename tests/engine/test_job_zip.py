"""The job's runtime.zip carries its modules compiled, so the driver and each Python worker
import them without compiling; a module whose source no longer matches its compiled form,
or a Python of another version, reads the source instead. A module missing from it is an
error, never a quiet change of plan."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.spark.generate import SHIPPED, runtime_zip
from cepplan.planner.plan import trivial_plan
from cepplan.workload import load_workload
from tests.conftest import EXAMPLES

PROBE = "engine_adapter/runtime/matcher.py"


def imported(archive: Path, module: str, expression: str) -> str:
    """`expression` evaluated after importing `module` from `archive` in a fresh Python."""
    code = (f"import sys; sys.path.insert(0, {str(archive)!r}); import {module} as m; "
            f"print({expression})")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=archive.parent).stdout.strip()


def test_every_shipped_module_is_imported_compiled(tmp_path):
    archive = tmp_path / "runtime.zip"
    archive.write_bytes(runtime_zip())
    names = set(zipfile.ZipFile(archive).namelist())
    assert {f"cepplan/{path}c" for path in SHIPPED} <= names
    loaded = imported(archive, "cepplan.engine_adapter.runtime.matcher", "m.__file__")
    assert loaded.endswith("runtime.zip/cepplan/engine_adapter/runtime/matcher.pyc")


def test_a_changed_source_or_a_foreign_bytecode_is_read_from_the_source(tmp_path):
    """The source of one module edited in the zip (its bytecode now stale), and another's
    bytecode made foreign (another Python's magic number): both import their source."""
    original = tmp_path / "runtime.zip"
    original.write_bytes(runtime_zip())
    edited = tmp_path / "edited.zip"
    with zipfile.ZipFile(original) as old, zipfile.ZipFile(edited, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == f"cepplan/{PROBE}":
                data += b"\nEDITED_IN_THE_ZIP = 42\n"
            elif info.filename == "cepplan/limits.pyc":
                data = b"\x00\x00" + data[2:]
            new.writestr(info, data)
    assert imported(edited, "cepplan.engine_adapter.runtime.matcher",
                    "m.EDITED_IN_THE_ZIP") == "42"
    assert imported(edited, "cepplan.limits", "m.__file__").endswith("limits.py")


def test_a_module_missing_from_the_zip_fails_instead_of_choosing_a_slower_plan(tmp_path):
    """A runtime.zip lacking a module the in-process engine imports: the range-local plan's
    check names that module, where it used to answer "not eligible" and let the job run the
    shuffle plan unseen (as it did when partial_counts.py was not shipped)."""
    workload = load_workload(EXAMPLES / "fraud" / "workload.json")
    (tmp_path / "job.json").write_text(json.dumps(job_data(workload, trivial_plan(workload))))
    archive = tmp_path / "runtime.zip"
    with zipfile.ZipFile(archive, "w") as new, zipfile.ZipFile(io.BytesIO(runtime_zip())) as old:
        for info in old.infolist():
            if "local/partial_counts.py" not in info.filename:
                new.writestr(info, old.read(info))
    events = EXAMPLES / "fraud" / "events.csv"
    code = (f"import sys, json; sys.path.insert(0, {str(archive)!r})\n"
            "from cepplan.engine_adapter.spark.ranges import _eligible\n"
            f"data = json.load(open({str(tmp_path / 'job.json')!r}))\n"
            f"try:\n    print(_eligible(data, [{str(events)!r}]))\n"
            "except ImportError as err:\n    print('missing', err.name)\n")
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=tmp_path).stdout.strip()
    assert said == "missing cepplan.engine_adapter.local.partial_counts"


def test_every_shipped_module_imports_from_the_zip_alone(tmp_path):
    """The modules a shipped module imports from cepplan are shipped too: a fresh Python
    imports every one of them from the zip (cepplan's package is the zip's, so a module left
    out fails here, not on the cluster)."""
    archive = tmp_path / "runtime.zip"
    archive.write_bytes(runtime_zip())
    modules = ["cepplan." + path.removesuffix(".py").replace("/", ".") for path in SHIPPED]
    code = (f"import importlib, sys; sys.path.insert(0, {str(archive)!r}); "
            f"[importlib.import_module(m) for m in {modules!r}]; "
            "print(sys.modules['cepplan'].__file__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "runtime.zip" in done.stdout
