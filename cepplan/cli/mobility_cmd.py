"""`cepplan synth-mobile -o DIR`: cars on a road grid emitting speed events, a share of them
consumers whose square interest follows the car; writes events.jsonl and workload.json (whose
queries carry the consumers' known trajectories as their `track`) into DIR."""

from __future__ import annotations

from pathlib import Path

import typer

from cepplan.cli import options
from cepplan.terminal import echo

STEP_SECONDS = 0.5  # the simulation step of cepplan.stats.mobility.simulate_cars
MAX_CARS = 1_000_000


def synth_mobile(
    out: Path = options.output("Directory to write events.jsonl and workload.json into."),
    cars: int = typer.Option(100, "--cars", help="Cars on the road grid."),
    consumers: int = typer.Option(25, "--consumers", help="Cars registered as consumers."),
    interest: float = typer.Option(800.0, "--interest", help="Side of a consumer's square "
                                   "interest (m)."),
    duration: float = typer.Option(120.0, "--duration", help="Simulated seconds."),
    side: float = typer.Option(2000.0, "--side", help="Side of the square area (m)."),
    threshold: float = typer.Option(0.7, "--threshold", help="Precision and recall each "
                                    "consumer requires."),
    window: float = typer.Option(2.0, "--window", help="Time window of the queries (s)."),
    batch: float = typer.Option(10.0, "--batch", help="Batch length (s)."),
    seed: int = options.seed("Random seed (same seed, same files)."),
    quiet: bool = options.quiet(),
) -> None:
    """Simulate mobile consumers whose interests overlap, for `cepplan optimize` and `cover`."""
    from cepplan.cli.synth_cmd import MAX_EVENTS
    from cepplan.fileio import write_bytes_atomic, write_json_atomic
    from cepplan.limits import at_least, bounded
    from cepplan.outputs import check_directory_output, written_directory
    from cepplan.stats.mobility import MobilitySpec, mobility_workload, simulate_cars
    from cepplan.workload.durations import MAX_DURATION

    target = check_directory_output(out, "synth-mobile", [])
    if not cars > 0:
        raise options.option_error("--cars", f"must be positive, got {cars}")
    at_least("--cars", cars, 1, MAX_CARS)
    for flag, value in (("--interest", interest), ("--duration", duration), ("--side", side),
                        ("--window", window), ("--batch", batch)):
        if not value > 0:
            raise options.option_error(flag, f"must be positive, got {value}")
        bounded(flag, value, low=0, high=MAX_DURATION)
    if cars * duration / STEP_SECONDS > MAX_EVENTS:  # checked before allocating the positions
        raise options.option_error("--duration", f"{cars} cars for {duration:g} s make "
                                   f"{cars * duration / STEP_SECONDS:,.0f} car positions; the "
                                   f"most synth-mobile simulates is {MAX_EVENTS:,}")
    if not 0 <= threshold <= 1:
        raise options.option_error("--threshold", f"must be in [0, 1], got {threshold}")
    if not 0 <= consumers <= cars:
        raise options.option_error("--consumers", f"must be between 0 and --cars ({cars})")
    spec = MobilitySpec(side=side, cars=cars, duration=duration, consumers=consumers,
                        interest=interest, window_time=window, precision=threshold,
                        recall=threshold, batch=batch, track_step=batch)
    sim = simulate_cars(spec, seed)
    with written_directory(target) as staged:  # replaces an earlier output only on success
        staged.mkdir()
        write_bytes_atomic(staged / "events.jsonl",
                           sim.events.to_json(orient="records", lines=True).encode())
        write_json_atomic(staged / "workload.json", mobility_workload(sim, spec))
    if not quiet:
        echo(f"wrote {len(sim.events)} speed events of {cars} cars, {consumers} consumers "
                   f"with {interest:g} m interests, to {out}")
