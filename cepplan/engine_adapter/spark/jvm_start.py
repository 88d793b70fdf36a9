"""JVM options that make Spark's driver start in a few seconds instead of tens of seconds.

Measured on the 2-core machine (`python -m benchmarks engine_spark`): a spark-submit that counts
one row spent most of its time loading and JIT-compiling Spark's classes. Two JVM features cut
that: a class-data-sharing archive of the classes a Spark job loads (written once, at the exit
of the first job, into the user's cache directory; keyed by the pyspark version and the java
binary, so a change of either writes a new one), and the client compiler only
(`-XX:TieredStopAtLevel=1`: the driver's work is short and mostly in Python workers).
`CEPPLAN_SPARK_CDS=0` turns the archive off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyspark

FAST_JIT = "-XX:TieredStopAtLevel=1"


@dataclass(frozen=True)
class ClassArchive:
    """The archive to use (`options`) or to write at exit, then `keep` once the job succeeded."""

    path: Path | None
    writing: Path | None

    @property
    def options(self) -> list[str]:
        if self.writing is not None:
            return [f"-XX:ArchiveClassesAtExit={self.writing}"]
        if self.path is not None:
            return [f"-XX:SharedArchiveFile={self.path}"]
        return []

    def keep(self, succeeded: bool) -> None:
        """Move a freshly written archive into place (or drop it when the job failed)."""
        if self.writing is None or self.path is None:
            return
        if succeeded and self.writing.is_file():
            os.replace(self.writing, self.path)
        else:
            self.writing.unlink(missing_ok=True)


def class_archive() -> ClassArchive:
    """The class archive for this pyspark and java, or none when turned off or unwritable."""
    if os.environ.get("CEPPLAN_SPARK_CDS", "1") == "0":
        return ClassArchive(None, None)
    java = _java_binary()
    if java is None:
        return ClassArchive(None, None)
    stat = java.stat()
    key = hashlib.sha1(f"{pyspark.__version__}|{java}|{stat.st_size}|{stat.st_mtime_ns}"
                       .encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cepplan"
    path = cache / f"spark-{pyspark.__version__}-{key}.jsa"
    if path.is_file():
        return ClassArchive(path, None)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ClassArchive(None, None)
    return ClassArchive(path, cache / f".{path.name}.{os.getpid()}.tmp")


def _java_binary() -> Path | None:
    """The java that spark-submit starts: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not os.path.isfile(found):
        return None
    return Path(os.path.realpath(found))
