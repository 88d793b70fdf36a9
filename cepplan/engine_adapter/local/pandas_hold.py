"""Keep pandas out of a run that does not need it: pyarrow imports pandas the first time it
converts any Python or NumPy value (to check for pandas objects), a fifth of a small
in-process run.

`hold_pandas_back` lets pyarrow settle that pandas is absent, and arms an import hook so that
whenever pandas is imported later (a stage that needs it), pyarrow is told right after, before
anyone hands it a pandas object (else it would take a Series for a plain sequence).
"""

from __future__ import annotations

import importlib.util
import sys
from importlib.abc import Loader, MetaPathFinder
from typing import Any


def hold_pandas_back() -> None:
    """pyarrow without pandas until pandas is imported (a no-op once it is)."""
    if "pandas" in sys.modules or any(isinstance(f, _TellArrow) for f in sys.meta_path):
        return
    import pyarrow as pa

    sys.meta_path.insert(0, _Absent())
    try:
        pa.array([0])  # pyarrow looks for pandas once, here, and finds none
    finally:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Absent)]
    sys.meta_path.insert(0, _TellArrow())


def _tell_arrow() -> None:
    import pyarrow as pa

    _ = pa.lib._pandas_api.compat  # asked for its pandas layer, pyarrow looks again


class _Absent(MetaPathFinder):
    """Fails `import pandas` (briefly, while pyarrow looks for it)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ImportError("pandas held back")


class _TellArrow(MetaPathFinder):
    """Finds pandas as usual, with a loader that tells pyarrow once pandas is loaded."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenTellArrow(spec.loader)
        return spec


class _ThenTellArrow(Loader):
    """pandas' own loader, then `_tell_arrow`."""

    def __init__(self, loader: Loader):
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _tell_arrow()

    def __getattr__(self, name: str) -> Any:  # the rest of the loader's interface
        return getattr(self._loader, name)
