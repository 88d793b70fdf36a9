"""`cepplan replay EVENTS... -w WORKLOAD --to DIR|-`: feed event files as a live stream, for
`cepplan run --follow`, demos, tests and the streaming benchmark."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.errors import InputError
from cepplan.terminal import echo


def replay_command(
    events: list[str] = options.events_argument(),
    workload: Path = typer.Option(..., "-w", "--workload", metavar="FILE",
                                  help="The workload.json whose source reads the events."),
    to: str = typer.Option(..., "--to", metavar="DIR|-|tcp://HOST:PORT",
                           help="A directory to drop files into (each renamed into place, "
                           "_END last), '-' (standard output) or tcp://HOST:PORT (served to "
                           "the first client)."),
    rate: float | None = typer.Option(None, "--rate", min=0.001, metavar="ROWS",
                                      help="Rows per second (default: as fast as written)."),
    speed: float | None = typer.Option(None, "--speed", min=1e-6, metavar="X",
                                       help="Event time sped up X times (1: real time)."),
    shuffle_within: str = typer.Option("0", "--shuffle-within", metavar="DURATION",
                                       help="Shuffle arrivals: each row later by a random "
                                       "amount below this (e.g. 2s; bare: the time unit)."),
    seed: int = options.seed("Random seed of --shuffle-within."),
    quiet: bool = options.quiet(),
) -> None:
    """Feed event files as a live stream, in ts order (optionally shuffled within a delay)."""
    from cepplan.engine_adapter.inputs import event_paths
    from cepplan.engine_adapter.local.replay import arrival_order, replay, replay_rows
    from cepplan.workload.durations import DurationError, parse_duration
    from cepplan.workload.loader import load_workload
    from cepplan.workload.source_spec import reader_arguments

    if rate and speed:
        raise InputError.single("--rate", "", "give --rate or --speed, not both")
    loaded = load_workload(workload)
    reader = reader_arguments(loaded)
    try:
        within = (0.0 if shuffle_within.strip() in ("0", "0.0") else
                  parse_duration(shuffle_within, loaded.time_unit))
    except DurationError as err:
        raise InputError.single("--shuffle-within", "", str(err)) from None
    files = event_paths(events)
    header, lines, ts = replay_rows(files, reader)
    order = arrival_order(ts, within, seed)
    suffix = "." + reader["source"]["format"]
    sent = replay(header, lines, ts, order, to, rate=rate, speed=speed,
                  time_unit=loaded.time_unit, suffix=suffix)
    if not quiet:
        echo(f"{sent} rows replayed to {'standard output' if to == '-' else to}", err=True)
