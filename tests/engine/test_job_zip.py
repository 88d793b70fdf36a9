"""The job's runtime.zip carries its modules compiled, so the driver and each Python worker
import them without compiling; a module whose source no longer matches its compiled form,
or a Python of another version, reads the source instead."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from cepplan.engine_adapter.spark.generate import SHIPPED, runtime_zip

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
