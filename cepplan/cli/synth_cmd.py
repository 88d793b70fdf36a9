"""`cepplan synth WORKLOAD -o events.parquet`: a synthetic event file with known parameters.

Writes the events in the workload's `source` format and, next to them, `<name>.truth.json`: the
ground truth (rates, models, selectivities) in the `stats.json` format.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from cepplan.cli import options
from cepplan.cli.options import option_error
from cepplan.terminal import echo

MAX_EVENTS = 50_000_000  # what one machine generates and writes comfortably in memory
LINEAR_ROAD_REPORTS = 12 / 30  # per segment and time unit: linear_road's 12 cars, every 30
MAX_GROUPS = 1_000_000
MAX_DRAWS = 10_000_000

if TYPE_CHECKING:
    from cepplan.workload.model import OccurrenceModel, Workload


def synth(
    workload: Path = typer.Argument(..., metavar="WORKLOAD",
                                    help="The workload.json whose event types to generate."),
    output: Path = options.output("The event file to write (in the workload's source "
                                  "format)."),
    duration: str = typer.Option("1000", "--duration", metavar="DURATION",
                                 help="Length of the stream: e.g. 2h, or a bare number in the "
                                 "workload's time unit."),
    seed: int = options.seed("Random seed (same seed, same file)."),
    skew: float = typer.Option(0.255, "--skew", help="Zipf skew of the per-type rates."),
    total_rate: float = typer.Option(10.0, "--total-rate",
                                     help="Events per time unit over all Poisson types."),
    rate: list[str] = typer.Option([], "--rate", help="TYPE=RATE: fix one type's rate."),
    markov: list[str] = typer.Option([], "--markov",
                                     help="TYPE=P1,P2,...: a bursty type whose chain gives "
                                     "P(event | state) per state (2^m values for order m)."),
    time_step: str = options.time_step("Step of the --markov chains.", "1"),
    value_range: list[str] = typer.Option([], "--range",
                                          help="ATTR=LOW:HIGH: uniform range of an attribute "
                                          "(default 0:100)."),
    keys: int = typer.Option(4, "--keys", help="Distinct values of each key column."),
    regions: int = typer.Option(4, "--regions", help="Distinct values of region attributes."),
    truth_draws: int = typer.Option(1_000_000, "--truth-draws",
                                    help="Monte Carlo draws per predicate selectivity."),
    quiet: bool = options.quiet(),
    linear_road: bool = typer.Option(False, "--linear-road",
                                     help="Position reports per road segment with congestion "
                                     "and accident episodes at known times (docs/contexts.md)."),
    segments: int = typer.Option(4, "--segments", help="Road segments (--linear-road)."),
    congestion_share: float = typer.Option(0.3, "--congestion-share",
                                           help="Share of each segment's time congested "
                                           "(--linear-road)."),
) -> None:
    """Generate events with known rates and selectivities, and their ground truth beside them.

    Rates are Zipf-distributed unless --rate fixes them; --markov makes a type bursty. The
    ground truth (NAME.truth.json) has the stats.json format.
    """
    from cepplan.fileio import written_together
    from cepplan.limits import bounded
    from cepplan.outputs import check_file_outputs
    from cepplan.stats.stats_file import write_stats
    from cepplan.stats.synth import synthesize
    from cepplan.stats.synth_write import write_events
    from cepplan.workload import load_workload
    from cepplan.workload.durations import MAX_DURATION
    from cepplan.workload.statistics_section import MAX_RATE

    inputs = [("workload", workload)]
    check_file_outputs([output], inputs)
    truth_path = output.with_name(output.name.split(".")[0] + ".truth.json")
    if truth_path.resolve() == output.resolve():
        raise option_error("--output", f"{output} is where the ground truth goes "
                           "(NAME.truth.json beside NAME.EXT): give the events another name")
    check_file_outputs([truth_path], inputs)
    loaded = load_workload(workload)
    length = bounded("--duration", options.duration_value("--duration", duration,
                                                          loaded.time_unit),
                     low=0, high=MAX_DURATION)
    if linear_road:
        _linear_road(loaded, output, length, seed, segments, congestion_share, quiet)
        return
    step = bounded("--time-step", options.duration_value("--time-step", time_step,
                                                        loaded.time_unit),
                   low=0, high=MAX_DURATION)
    total_rate = bounded("--total-rate", total_rate, low=0, high=MAX_RATE, inclusive=True)
    skew = bounded("--skew", skew, low=0, high=100, inclusive=True)
    rates = {name: bounded("--rate", _number(value, "--rate"), low=0, high=MAX_RATE,
                           inclusive=True)
             for name, value in _pairs(rate, "--rate", loaded)}
    models = dict(loaded.statistics.models)
    for name, value in _pairs(markov, "--markov", loaded):
        models[name] = _chain(value, step)
    for option, value in (("--keys", keys), ("--regions", regions)):
        if not 1 <= value <= MAX_GROUPS:
            raise option_error(option, f"must be from 1 to {MAX_GROUPS}, got {value}")
    if not 1 <= truth_draws <= MAX_DRAWS:
        raise option_error("--truth-draws", f"must be from 1 to {MAX_DRAWS:g}, got "
                           f"{truth_draws}")
    ranges = {}
    for item in value_range:
        attr, _, bounds = item.partition("=")
        low, _, high = bounds.partition(":")
        ranges[attr] = (_number(low, "--range"), _number(high, "--range"))
        if not ranges[attr][0] < ranges[attr][1]:
            raise option_error("--range", f"{item!r}: LOW must be below HIGH")
    _check_size(loaded, length, total_rate, rates, models)
    result = synthesize(loaded, duration=length, seed=seed, zipf_skew=skew,
                        total_rate=total_rate, rates=rates, models=models, ranges=ranges,
                        n_keys=keys, n_regions=regions, truth_draws=truth_draws)
    with written_together():  # the events and their ground truth, or neither
        write_events(result.events, loaded, output)
        write_stats(result.truth, truth_path, loaded)
    if not quiet:
        counts = ", ".join(f"{k}: {v}" for k, v in result.truth["counts"].items())
        echo(f"wrote {len(result.events):,} events to {output} ({counts})")
        echo(f"wrote ground truth to {truth_path}")


def _check_size(workload: Workload, duration: float, total_rate: float,
                rates: dict[str, float], models: dict[str, OccurrenceModel]) -> None:
    """Refuse, before any allocation, a file of more than `MAX_EVENTS` expected events (a
    stepped type holds one slot per time step)."""
    expected = (total_rate + sum(rates.values())) * duration
    for name in workload.event_types:
        model = models.get(name)
        if model is not None and model.kind != "poisson":
            expected += duration / (model.time_step or 1.0)
    if expected > MAX_EVENTS:
        raise option_error("--duration", f"about {expected:.3g} events (or time steps) would "
                           f"be generated; the most synth writes is {MAX_EVENTS:,}: shorten "
                           "--duration or lower the rates")


def _linear_road(loaded: Workload, output: Path, duration: float, seed: int, segments: int,
                 congestion_share: float, quiet: bool) -> None:
    """Write a Linear-Road-like stream and its episodes (the true context windows)."""
    from cepplan.errors import InputError
    from cepplan.fileio import write_json_atomic, written_together
    from cepplan.stats.linear_road import ATTRIBUTES, REPORT
    from cepplan.stats.linear_road import linear_road as generate_linear_road
    from cepplan.stats.synth_write import write_events

    declared = loaded.event_types.get(REPORT)
    if declared is None or any(declared.attributes.get(a) != t for a, t in ATTRIBUTES.items()):
        wanted = ", ".join(f"{a}: {t}" for a, t in ATTRIBUTES.items())
        raise InputError.single(loaded.path, "event_types", f"--linear-road writes {REPORT} "
                                f"events with {wanted}; declare that type")
    if segments < 1:
        raise option_error("--segments", f"must be at least 1, got {segments}")
    reports = segments * duration * LINEAR_ROAD_REPORTS  # checked before any allocation
    if reports > MAX_EVENTS:
        raise option_error("--duration", f"about {reports:.3g} position reports would be "
                           f"generated; the most synth writes is {MAX_EVENTS:,}: shorten "
                           "--duration or use fewer --segments")
    try:
        result = generate_linear_road(segments=segments, duration=duration, seed=seed,
                                      congestion_share=congestion_share)
    except ValueError as err:
        raise option_error("--linear-road", str(err)) from None
    truth_path = output.with_name(output.name.split(".")[0] + ".truth.json")
    with written_together():
        write_events(result.events, loaded, output)
        write_json_atomic(truth_path, result.truth)
    if not quiet:
        echo(f"wrote {len(result.events):,} position reports on {segments} segments to "
                   f"{output} (congested {congestion_share:.0%} of the time)")
        echo(f"wrote the true context episodes to {truth_path}")


def _pairs(items: list[str], option: str, workload: Workload) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise option_error(option, f"{item!r}: write TYPE=VALUE")
        if name not in workload.event_types:
            known = ", ".join(workload.event_types)
            raise option_error(option, f"unknown event type {name!r} ({known})")
        pairs.append((name, value))
    return pairs


def _number(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise option_error(option, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise option_error(option, f"{text!r} is not a finite number")
    return value


def _chain(text: str, step: float) -> OccurrenceModel:
    """`P1,P2,...` = P(event next | state) for each of the 2^m states."""
    from cepplan.workload.model import OccurrenceModel

    probs = [_number(p, "--markov") for p in text.split(",")]
    order = len(probs).bit_length() - 1
    if len(probs) < 2 or 2 ** order != len(probs) or not all(0 <= p <= 1 for p in probs):
        raise option_error("--markov", f"{text!r}: give 2, 4, 8, ... probabilities "
                                "in [0, 1], one per state of the last m steps")
    return OccurrenceModel("markov", order=order, time_step=step,
                           transition=tuple((1 - p, p) for p in probs))
