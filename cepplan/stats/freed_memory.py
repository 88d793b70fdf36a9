"""Give memory freed after a batch back to the system. Arrow's allocator (mimalloc) and glibc's
keep freed memory for reuse; a long scan interleaves each batch's short-lived buffers with the
few rows and counts it keeps, so the memory they keep grows with the number of batches, not
with what is held. Returned after each batch, the process's memory follows what it holds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import pyarrow


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim` (it returns the free pages inside the heap too), None elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


_TRIM = _malloc_trim()


def return_freed_memory() -> None:
    """Return the memory Arrow's pool and the C heap hold free to the system."""
    pyarrow.default_memory_pool().release_unused()
    if _TRIM is not None:
        _TRIM(0)
