"""cepplan: optimizer-as-a-service for complex event processing workloads."""

import os

__version__ = "0.1.0"

# Arrow's allocator (mimalloc) reads this once, when pyarrow is loaded, so it is set before
# anything imports pyarrow: freed Arrow memory is kept for reuse instead of being handed
# back to the OS and faulted in again. The engine allocates and frees its rendered output
# (gigabytes per run) in chunks of megabytes; handed back, each chunk's pages fault anew,
# 0.05-0.55 s of system time per run that varied run to run (docs/matching.md, "Output
# cost"). A value the user set is kept.
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")
