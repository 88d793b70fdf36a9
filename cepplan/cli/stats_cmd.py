"""`cepplan stats EVENTS... --workload W -o stats.json`: measure event files in this process
(`--engine local`) or with Spark (`--engine spark`); `auto` chooses (docs/stats.md).

Rates, occurrence models and selectivities go to `stats.json` (format `cepplan.stats/1`, see
docs/stats.md), which `cepplan optimize` reads; a summary table is printed at the end.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from cepplan.cli import options
from cepplan.cli.options import Engine
from cepplan.terminal import echo

if TYPE_CHECKING:  # rich loads slowly: imported when a summary is printed
    from rich.console import Console

MAX_SAMPLE = 10_000_000  # events per pattern (and tuples per predicate) sampled
MAX_GROUPS = 1_000_000  # keys / regions reported per type
MAX_PARTITIONS = 100_000  # Spark shuffle partitions (Spark reads the setting as a 32-bit int)


def stats(
    events: list[str] = typer.Argument(..., metavar="EVENTS...",
                                       help="Event files or directories (or globs)."),
    workload: Path = options.workload_option("The workload.json.", required=True),
    output: Path = options.output("Where to write stats.json."),
    engine: Engine = options.choice(Engine.auto, "--engine", "local (in-process), spark, or "
                                    "auto: local unless --master is given or the input is "
                                    "larger than 2 GiB."),
    master: str | None = options.master(),
    time_step: str = options.time_step("Step of the occurrence models.", "1"),
    markov_order: int = typer.Option(1, "--markov-order", help="Order m of the Markov chain."),
    sample: int = typer.Option(100_000, "--sample",
                               help="Events per pattern (and tuples per predicate) sampled for "
                               "selectivities."),
    seed: int = options.seed("Seed of the sample."),
    max_groups: int = typer.Option(1000, "--max-groups",
                                   help="Most keys / regions reported per type."),
    strict: bool = typer.Option(False, "--strict", help="Any rejected row is an error."),
    driver_memory: str = typer.Option("4g", "--driver-memory", help="Spark driver memory."),
    shuffle_partitions: int = typer.Option(0, "--shuffle-partitions",
                                           help="Spark shuffle partitions (0: 4 per core)."),
    quiet: bool = options.quiet(),
    verbose: bool = options.verbose(),
) -> None:
    """Measure rates, occurrence models and predicate selectivities of event files."""
    from cepplan.limits import at_least, check_readable
    from cepplan.outputs import check_file_outputs, event_inputs
    from cepplan.workload import load_workload
    from cepplan.workload.source_spec import reader_arguments

    check_file_outputs([output], [("workload", workload), *event_inputs(events)])
    at_least("--markov-order", markov_order, 1, 8)
    at_least("--shuffle-partitions", shuffle_partitions, 0, MAX_PARTITIONS)
    at_least("--sample", sample, 1, MAX_SAMPLE)
    at_least("--max-groups", max_groups, 1, MAX_GROUPS)
    loaded = load_workload(workload)
    reader_arguments(loaded)  # a workload without a source fails here, before Spark starts
    step = options.duration_value("--time-step", time_step, loaded.time_unit)
    for path in events:
        local = "://" not in path and not any(c in path for c in "*?[")
        if local:
            check_readable(path, "event file")
    from cepplan.stats.engines import choose_engine, measure
    from cepplan.stats.progress import stage_progress
    from cepplan.stats.rejected_rows import check_rejected
    from cepplan.stats.stats_file import write_stats

    chosen = choose_engine(engine.value, events, master=master)
    spark = None
    if chosen == "spark":
        from cepplan.stats.spark_session import stats_session

        spark = stats_session(master or "local[*]", driver_memory=driver_memory,
                              shuffle_partitions=shuffle_partitions)
        if verbose:
            spark.sparkContext.setLogLevel("INFO")
    show = sys.stderr.isatty() and not quiet
    with stage_progress(spark, show) as on_stage:
        document = measure(
            events, loaded, engine=chosen, spark=spark, time_step=step,
            markov_order=markov_order, sample=sample, seed=seed, max_groups=max_groups,
            strict=strict, on_stage=on_stage)
        if loaded.contexts is not None:  # how long each context holds: docs/contexts.md
            from cepplan.stats.context_time import measure_contexts
            on_stage("context windows")
            document["contexts"] = measure_contexts(spark, events, loaded)
    write_stats(document, output, loaded)

    rows = document["rows"]
    warning = check_rejected(", ".join(events), rows["read"], rows["reasons"], events, loaded)
    if warning:
        echo(warning, err=True, lines=False)
    if not quiet:
        from rich.console import Console

        print_summary(document, Console(width=None if sys.stdout.isatty() else 110))
        engine_text = ("in-process engine" if chosen == "local"
                       else f"Spark engine ({master or 'local[*]'})")
        echo(f"wrote {output} (measured by the {engine_text} in "
                   f"{document['provenance']['seconds']:.1f} s)")


def print_summary(document: dict[str, Any], console: Console) -> None:
    """The summary tables: per type rate, interval, dispersion index, burstiness and chosen
    model; per predicate selectivity with its interval and sample size."""
    from rich.table import Table
    from rich.text import Text

    from cepplan.terminal import printable

    def plain(text: str) -> Text:  # names and predicates as text: no markup, no control codes
        return Text(printable(text, lines=False))

    unit = document["time_unit"]
    from cepplan.engine_adapter.metrics_table import NOT_USED

    rows = document["rows"]
    unused = rows["reasons"].get(NOT_USED, 0)
    types = ", ".join(rows.get("unknown_types", {}))
    not_used = f", {unused} not used (types the workload does not declare: {types})" \
        if unused else ""
    table = Table(title=f"{rows['read']} rows read, {rows['rejected'] - unused} rejected"
                  f"{not_used}; span {document['observed']['span']:g} {unit}")
    for name in ("type", "events", f"rate/{unit}", "95% CI", "disp.", "burst.", "model"):
        table.add_column(name, justify="left" if name in ("type", "model") else "right")
    for name, info in document["types"].items():
        occ = document["occurrence"][name]
        low, high = info["rate_ci95"]
        table.add_row(plain(name), str(info["count"]), f"{info['rate']:.4g}",
                      f"{low:.3g}–{high:.3g}", _num(occ["poisson"]["dispersion_index"]),
                      _num(occ["markov"]["burstiness"]), plain(occ["choice"]["model"]))
    console.print(table)
    details = document["selectivity_details"]
    if details:
        sel = Table(title="selectivities")
        for name in ("pattern", "predicate", "kind", "value", "95% CI", "n"):
            sel.add_column(name, justify="right" if name in ("value", "n") else "left")
        for pattern, entries in details.items():
            for text, entry in entries.items():
                if entry["value"] is None:
                    sel.add_row(plain(pattern), plain(text), plain(entry["kind"]), "—",
                                plain(entry["reason"]), "")
                    continue
                low, high = entry["ci95"]
                sel.add_row(plain(pattern), plain(text), plain(entry["kind"]),
                            f"{entry['value']:.3f}",
                            f"{low:.3f}–{high:.3f}", str(entry["n"]))
        console.print(sel)


def _num(value: Any) -> str:
    return "—" if value is None or value != value else f"{value:.3g}"
