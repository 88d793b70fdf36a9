"""`cepplan stats EVENTS... --workload W -o stats.json`: measure event files in this process
(`--engine local`) or with Spark (`--engine spark`); `auto` chooses (docs/stats.md).

Rates, occurrence models and selectivities go to `stats.json` (format `cepplan.stats/1`, see
docs/stats.md), which `cepplan optimize` reads; a summary table is printed at the end.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from cepplan.errors import InputError
from cepplan.workload import load_workload
from cepplan.workload.durations import DurationError, parse_duration
from cepplan.workload.source_spec import reader_arguments


def stats(
    events: list[str] = typer.Argument(..., help="Event files or directories (or globs)."),
    workload: Path = typer.Option(..., "--workload", "-w", help="The workload.json."),
    output: Path = typer.Option(..., "--output", "-o", help="Where to write stats.json."),
    engine: str = typer.Option("auto", "--engine",
                               help="local (in-process), spark, or auto: local unless --master "
                               "is given or the input is larger than 2 GiB."),
    master: str | None = typer.Option(None, "--master",
                                      help="Spark master URL (implies --engine spark under "
                                      "auto; default local[*])."),
    time_step: str = typer.Option("1", "--time-step",
                                  help="Step of the occurrence models: a number in the "
                                  "workload's time unit or e.g. '30s'."),
    markov_order: int = typer.Option(1, "--markov-order", help="Order m of the Markov chain."),
    sample: int = typer.Option(100_000, "--sample",
                               help="Events per pattern (and tuples per predicate) sampled for "
                               "selectivities."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample."),
    max_groups: int = typer.Option(1000, "--max-groups",
                                   help="Most keys / regions reported per type."),
    strict: bool = typer.Option(False, "--strict", help="Any rejected row is an error."),
    driver_memory: str = typer.Option("4g", "--driver-memory", help="Spark driver memory."),
    shuffle_partitions: int = typer.Option(0, "--shuffle-partitions",
                                           help="Spark shuffle partitions (0: 4 per core)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress, no summary."),
) -> None:
    """Measure rates, occurrence models and predicate selectivities of event files."""
    loaded = load_workload(workload)
    reader_arguments(loaded)  # a workload without a source fails here, before Spark starts
    step = _time_step(time_step, loaded.time_unit)
    for path in events:
        local = "://" not in path and not any(c in path for c in "*?[")
        if local and not os.path.exists(path):
            raise InputError.single(path, "", "no such file or directory")
    if sample < 1 or max_groups < 1:
        raise InputError.single(str(workload), "--sample" if sample < 1 else "--max-groups",
                                "must be at least 1")

    from cepplan.stats.engines import choose_engine, measure
    from cepplan.stats.progress import stage_progress
    from cepplan.stats.stats_file import write_stats

    chosen = choose_engine(engine, events, master=master)
    spark = None
    if chosen == "spark":
        from cepplan.stats.spark_session import stats_session

        spark = stats_session(master or "local[*]", driver_memory=driver_memory,
                              shuffle_partitions=shuffle_partitions)
    show = sys.stderr.isatty() and not quiet
    with stage_progress(spark, show) as on_stage:
        document = measure(
            events, loaded, engine=chosen, spark=spark, time_step=step,
            markov_order=markov_order, sample=sample, seed=seed, max_groups=max_groups,
            strict=strict, on_stage=on_stage)
    write_stats(document, output)
    rows = document["rows"]
    if rows["rejected"]:
        reasons = ", ".join(f"{k}: {v}" for k, v in rows["reasons"].items())
        print(f"warning: {rows['rejected']} of {rows['read']} rows rejected ({reasons})",
              file=sys.stderr)
    if not quiet:
        print_summary(document, Console(width=None if sys.stdout.isatty() else 110))
        engine_text = ("in-process engine" if chosen == "local"
                       else f"Spark engine ({master or 'local[*]'})")
        typer.echo(f"wrote {output} (measured by the {engine_text} in "
                   f"{document['provenance']['seconds']:.1f} s)")


def _time_step(text: str, time_unit: str) -> float:
    try:
        value: Any = float(text)
    except ValueError:
        value = text
    try:
        return parse_duration(value, time_unit)
    except DurationError as err:
        raise InputError.single("--time-step", "", str(err)) from None


def print_summary(document: dict[str, Any], console: Console) -> None:
    """The summary tables: per type rate, interval, dispersion index, burstiness and chosen
    model; per predicate selectivity with its interval and sample size."""
    unit = document["time_unit"]
    rows = document["rows"]
    table = Table(title=f"{rows['read']} rows read, {rows['rejected']} rejected; "
                  f"span {document['observed']['span']:g} {unit}")
    for name in ("type", "events", f"rate/{unit}", "95% CI", "disp.", "burst.", "model"):
        table.add_column(name, justify="left" if name in ("type", "model") else "right")
    for name, info in document["types"].items():
        occ = document["occurrence"][name]
        low, high = info["rate_ci95"]
        table.add_row(name, str(info["count"]), f"{info['rate']:.4g}",
                      f"{low:.3g}–{high:.3g}", _num(occ["poisson"]["dispersion_index"]),
                      _num(occ["markov"]["burstiness"]), occ["choice"]["model"])
    console.print(table)
    details = document["selectivity_details"]
    if details:
        sel = Table(title="selectivities")
        for name in ("pattern", "predicate", "kind", "value", "95% CI", "n"):
            sel.add_column(name, justify="right" if name in ("value", "n") else "left")
        for pattern, entries in details.items():
            for text, entry in entries.items():
                if entry["value"] is None:
                    sel.add_row(pattern, text, entry["kind"], "—", entry["reason"], "")
                    continue
                low, high = entry["ci95"]
                sel.add_row(pattern, text, entry["kind"], f"{entry['value']:.3f}",
                            f"{low:.3f}–{high:.3f}", str(entry["n"]))
        console.print(sel)


def _num(value: Any) -> str:
    return "—" if value is None or value != value else f"{value:.3g}"
