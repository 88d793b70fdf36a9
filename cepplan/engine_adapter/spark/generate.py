"""`plan.json` -> a self-contained job directory: job.py, runtime.zip, job.json, plan.json.

The zip mirrors the package paths of the files it ships (the runtime, the Spark job, and the
standalone foundation modules), with every package `__init__.py` written empty so nothing else
of cepplan is imported: the job runs with plain `spark-submit` where cepplan is not installed.
Each module also ships compiled (a `.pyc` checked against its source's hash): Python cannot
cache what it compiles from a zip, so without it the driver and every Python worker compiled
the whole runtime again; a Python of another version ignores the `.pyc` and reads the `.py`.
"""

from __future__ import annotations

import importlib.util
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import orjson

import cepplan
from cepplan.engine_adapter.job_spec import job_data
from cepplan.fileio import write_bytes_atomic
from cepplan.planner.plan import Plan
from cepplan.workload.model import Workload

PACKAGE_ROOT = Path(cepplan.__file__).resolve().parent
SHIPPED = (
    "engine_adapter/spark/job.py",
    "engine_adapter/spark/stages.py",
    "engine_adapter/spark/contexts.py",
    "engine_adapter/spark/covering.py",
    "engine_adapter/runtime/covering_run.py",
    "engine_adapter/runtime/context_windows.py",
    "engine_adapter/runtime/contexts.py",
    "engine_adapter/runtime/covering.py",
    "planner/covering.py",
    "costmodels/interests.py",
    "costmodels/qor.py",
    "engine_adapter/spark/acquire.py",
    "engine_adapter/runtime/acquire.py",
    "engine_adapter/spark/expr.py",
    "engine_adapter/spark/match.py",
    "engine_adapter/spark/positions.py",
    "engine_adapter/spark/shared.py",
    "engine_adapter/spark/tags.py",
    "engine_adapter/spark/read.py",
    # the in-process engine's stages, run per byte range by the range-local plan
    "engine_adapter/spark/ranges.py",
    "engine_adapter/local/engine.py",
    "engine_adapter/local/pandas_hold.py",
    "engine_adapter/local/writer.py",
    "engine_adapter/local/workers.py",
    "engine_adapter/local/byte_ranges.py",
    "engine_adapter/local/range_cut.py",
    "engine_adapter/local/totals.py",
    "engine_adapter/local/partial_counts.py",
    "engine_adapter/local/slices.py",
    "engine_adapter/local/shared.py",
    "engine_adapter/local/contexts.py",
    "engine_adapter/local/covering_io.py",
    # the live stream's job: the in-process stream matcher per micro-batch
    "engine_adapter/spark/stream_job.py",
    "engine_adapter/spark/stream_state.py",
    "engine_adapter/spark/stream_plans.py",
    "engine_adapter/local/stream.py",
    "engine_adapter/local/stream_skip.py",
    "engine_adapter/local/stream_positions.py",
    "engine_adapter/local/checkpoint.py",
    "engine_adapter/local/follow.py",
    "engine_adapter/local/stream_source.py",
    "engine_adapter/local/stream_output.py",
    "engine_adapter/local/stream_parts.py",
    "engine_adapter/runtime/arrivals.py",
    "engine_adapter/runtime/latency_histogram.py",
    "engine_adapter/local/range_match.py",
    "engine_adapter/local/range_skip.py",
    "engine_adapter/local/readable.py",
    "limits.py",
    "interrupt.py",
    "terminal.py",
    "fileio.py",
    "outputs.py",
    # the in-process reader, used by spark.read where the executors can import it (orjson)
    "engine_adapter/local/source.py",
    "errors.py",
    "sources/local_source.py",
    "sources/csv_ranges.py",
    "sources/csv_lines.py",
    "sources/raw_batches.py",
    "sources/try_cast.py",
    "sources/text_input.py",
    "sources/time_format.py",
    "sources/time_text.py",
    "engine_adapter/runtime/__init__.py",
    "engine_adapter/runtime/after_match.py",
    "engine_adapter/runtime/binding.py",
    "engine_adapter/runtime/contiguity.py",
    "engine_adapter/runtime/gaps.py",
    "engine_adapter/runtime/job.py",
    "engine_adapter/runtime/kleene.py",
    "engine_adapter/runtime/kleene_stage.py",
    "engine_adapter/runtime/lookup.py",
    "engine_adapter/runtime/match_rows.py",
    "engine_adapter/runtime/parquet_parts.py",
    "engine_adapter/runtime/matcher.py",
    "engine_adapter/runtime/matches.py",
    "engine_adapter/runtime/memory.py",
    "engine_adapter/runtime/negation.py",
    "engine_adapter/runtime/output_room.py",
    "engine_adapter/runtime/pieces.py",
    "engine_adapter/runtime/positions.py",
    "engine_adapter/runtime/records.py",
    "engine_adapter/runtime/shared_nodes.py",
    "engine_adapter/runtime/shared_plan.py",
    "engine_adapter/runtime/user_order.py",
    "costmodels/trees.py",
    "engine_adapter/runtime/spec.py",
    "engine_adapter/runtime/table.py",
    "engine_adapter/runtime/tagging.py",
    "engine_adapter/runtime/text_codes.py",
    "engine_adapter/runtime/timed_out_counts.py",
    "engine_adapter/runtime/timed_out_output.py",
    "workload/columns.py",
    "workload/expr/bounds.py",
    "workload/durations.py",
    "workload/expr/vectorized.py",
    "workload/spark_source.py",
    "workload/input_files.py",
    # what the in-process engine's consumer queries read the workload with
    "workload/model.py",
    "workload/source_spec.py",
    "workload/expr/ast.py",
    "workload/expr/errors.py",
    "workload/expr/portable.py",
    # an adaptive stream's online statistics and drift rule (`cepplan stats`' own code) and
    # the workload's loader they are given the workload by
    "adaptive/drift_check.py",
    "adaptive/drift.py",
    "adaptive/online_stats.py",
    "planner/invariants.py",
    "costmodels/markov.py",
    "stats/block_sample.py",
    "stats/collect.py",
    "stats/cooccurrence.py",
    "stats/distributions.py",
    "stats/freed_memory.py",
    "stats/keyed.py",
    "stats/keyed_file.py",
    "stats/local_scan.py",
    "stats/markov_chain.py",
    "stats/model_choice.py",
    "stats/rejected_rows.py",
    "stats/row_estimate.py",
    "stats/scan.py",
    "stats/selectivity.py",
    "stats/stats_file.py",
    "stats/step_counts.py",
    "stats/step_tally.py",
    "schema_check.py",
    "file_kinds.py",
    "workload/loader.py",
    "workload/context_model.py",
    "workload/count_windows.py",
    "workload/expr/parser.py",
    "workload/expr/printer.py",
    "workload/expr/typecheck.py",
    "workload/names.py",
    "workload/sections.py",
    "workload/statistics_section.py",
    "workload/strategies.py",
    "workload/after_match.py",
    "workload/alternation.py",
    "workload/optional.py",
    "workload/timed_out.py",
    "workload/expr/evaluate.py",
    "workload/structure.py",
)
SHIPPED_DATA = ("stats/stats.schema.json", "workload/workload.schema.json")  # read as resources
TEMPLATE = PACKAGE_ROOT / "engine_adapter" / "spark" / "job_template.py"
STREAM_TEMPLATE = PACKAGE_ROOT / "engine_adapter" / "spark" / "stream_template.py"
EMPTY_PACKAGES = ("", "engine_adapter", "engine_adapter/local", "engine_adapter/spark",
                  "workload", "workload/expr", "planner", "costmodels", "sources", "adaptive",
                  "stats")


def runtime_zip() -> bytes:
    """The `--py-files` zip: shipped modules at their package paths, empty package inits."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in EMPTY_PACKAGES:
            path = f"cepplan/{package}/__init__.py" if package else "cepplan/__init__.py"
            archive.writestr(_entry(path), "")
        for relative in SHIPPED:
            source = (PACKAGE_ROOT / relative).read_bytes()
            archive.writestr(_entry(f"cepplan/{relative}"), source)
            archive.writestr(_entry(f"cepplan/{relative}c"),
                             compiled(source, f"runtime.zip/cepplan/{relative}"))
        for relative in SHIPPED_DATA:
            archive.writestr(_entry(f"cepplan/{relative}"), (PACKAGE_ROOT / relative).read_bytes())
    return buffer.getvalue()


def compiled(source: bytes, path: str) -> bytes:
    """`source` as this Python's bytecode file, validated by the source's hash on import."""
    code = compile(source, path, "exec", dont_inherit=True)
    return importlib._bootstrap_external._code_to_hash_pyc(  # what py_compile writes
        code, importlib.util.source_hash(source), checked=True)


def _entry(path: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info


def generate(workload: Workload, plan: Plan, out_dir: str | Path, *,
             plan_kind: str = "plan", streaming: bool = False,
             adaptive: dict[str, Any] | None = None) -> Path:
    """Write the job into the new directory `out_dir` (`cepplan generate` stages it and
    renames it over its output only once everything is written: `outputs.written_directory`);
    `streaming`: the Structured Streaming job (`stream_job`) instead of the batch one;
    `adaptive`: its job.json's section for checking the statistics as it goes
    (`cepplan.adaptive.drift_check.job_section`)."""
    out_dir = Path(out_dir)
    data = job_data(workload, plan, plan_kind=plan_kind)
    if adaptive is not None:
        data["adaptive"] = adaptive
    out_dir.mkdir(parents=True)
    write_bytes_atomic(out_dir / "job.json", orjson.dumps(data, option=orjson.OPT_INDENT_2))
    write_bytes_atomic(out_dir / "plan.json", json.dumps(plan.to_json(), indent=2).encode())
    write_bytes_atomic(out_dir / "runtime.zip", runtime_zip())
    write_bytes_atomic(out_dir / "job.py",
                       (STREAM_TEMPLATE if streaming else TEMPLATE).read_bytes())
    return out_dir
