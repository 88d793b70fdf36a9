"""`cepplan synth WORKLOAD -o events.parquet`: a synthetic event file with known parameters.

Writes the events in the workload's `source` format and, next to them, `<name>.truth.json`: the
ground truth (rates, models, selectivities) in the `stats.json` format.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer

from cepplan.errors import InputError
from cepplan.limits import bounded, check_output_file
from cepplan.stats.stats_file import write_stats
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import load_workload
from cepplan.workload.durations import MAX_DURATION
from cepplan.workload.loader import MAX_RATE
from cepplan.workload.model import OccurrenceModel, Workload

MAX_EVENTS = 50_000_000  # what one machine generates and writes comfortably in memory
MAX_GROUPS = 1_000_000
MAX_DRAWS = 10_000_000


def synth(
    workload: Path = typer.Argument(..., help="The workload.json whose types to generate."),
    output: Path = typer.Option(..., "--output", "-o", help="The event file to write."),
    duration: float = typer.Option(1000.0, "--duration", help="Length, in the time unit."),
    seed: int = typer.Option(0, "--seed", help="Random seed (same seed, same file)."),
    skew: float = typer.Option(0.255, "--skew", help="Zipf skew of the per-type rates."),
    total_rate: float = typer.Option(10.0, "--total-rate",
                                     help="Events per time unit over all Poisson types."),
    rate: list[str] = typer.Option([], "--rate", help="TYPE=RATE: fix one type's rate."),
    markov: list[str] = typer.Option([], "--markov",
                                     help="TYPE=P1,P2,...: a bursty type whose chain gives "
                                     "P(event | state) per state (2^m values for order m)."),
    time_step: float = typer.Option(1.0, "--time-step", help="Step of --markov chains."),
    value_range: list[str] = typer.Option([], "--range",
                                          help="ATTR=LOW:HIGH: uniform range of an attribute "
                                          "(default 0:100)."),
    keys: int = typer.Option(4, "--keys", help="Distinct values of each key column."),
    regions: int = typer.Option(4, "--regions", help="Distinct values of region attributes."),
    truth_draws: int = typer.Option(1_000_000, "--truth-draws",
                                    help="Monte Carlo draws per predicate selectivity."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing."),
) -> None:
    """Generate events with Zipf rates, optional Markov bursts and known selectivities."""
    truth_path = output.with_name(output.name.split(".")[0] + ".truth.json")
    check_output_file(output, "--output")
    if truth_path.resolve() == output.resolve():
        raise InputError.single("--output", "", f"{output} is where the ground truth goes "
                                "(NAME.truth.json beside NAME.EXT): give the events another name")
    check_output_file(truth_path, "--output")
    loaded = load_workload(workload)
    duration = bounded("--duration", duration, low=0, high=MAX_DURATION)
    time_step = bounded("--time-step", time_step, low=0, high=MAX_DURATION)
    total_rate = bounded("--total-rate", total_rate, low=0, high=MAX_RATE, inclusive=True)
    skew = bounded("--skew", skew, low=0, high=100, inclusive=True)
    rates = {name: bounded("--rate", _number(value, "--rate"), low=0, high=MAX_RATE,
                           inclusive=True)
             for name, value in _pairs(rate, "--rate", loaded)}
    models = dict(loaded.statistics.models)
    for name, value in _pairs(markov, "--markov", loaded):
        models[name] = _chain(value, time_step)
    for option, value in (("--keys", keys), ("--regions", regions)):
        if not 1 <= value <= MAX_GROUPS:
            raise InputError.single(option, "", f"must be from 1 to {MAX_GROUPS}, got {value}")
    if not 1 <= truth_draws <= MAX_DRAWS:
        raise InputError.single("--truth-draws", "", f"must be from 1 to {MAX_DRAWS:g}, got "
                                f"{truth_draws}")
    ranges = {}
    for item in value_range:
        attr, _, bounds = item.partition("=")
        low, _, high = bounds.partition(":")
        ranges[attr] = (_number(low, "--range"), _number(high, "--range"))
        if not (math.isfinite(ranges[attr][0]) and math.isfinite(ranges[attr][1])
                and ranges[attr][0] < ranges[attr][1]):
            raise InputError.single("--range", "", f"{item!r}: LOW must be below HIGH, "
                                    "both finite")
    _check_size(loaded, duration, total_rate, rates, models)
    result = synthesize(loaded, duration=duration, seed=seed, zipf_skew=skew,
                        total_rate=total_rate, rates=rates, models=models, ranges=ranges,
                        n_keys=keys, n_regions=regions, truth_draws=truth_draws)
    write_events(result.events, loaded, output)
    write_stats(result.truth, truth_path, loaded)
    if not quiet:
        counts = ", ".join(f"{k}: {v}" for k, v in result.truth["counts"].items())
        typer.echo(f"wrote {len(result.events)} events to {output} ({counts})")
        typer.echo(f"wrote ground truth to {truth_path}")


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
        raise InputError.single("--duration", "", f"about {expected:.3g} events (or time "
                                f"steps) would be generated; the most synth writes is "
                                f"{MAX_EVENTS:,}: shorten --duration or lower the rates")


def _pairs(items: list[str], option: str, workload: Workload) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise InputError.single(option, "", f"{item!r}: write TYPE=VALUE")
        if name not in workload.event_types:
            known = ", ".join(workload.event_types)
            raise InputError.single(option, "", f"unknown event type {name!r} ({known})")
        pairs.append((name, value))
    return pairs


def _number(text: str, option: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError.single(option, "", f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError.single(option, "", f"{text!r} is not a finite number")
    return value


def _chain(text: str, step: float) -> OccurrenceModel:
    """`P1,P2,...` = P(event next | state) for each of the 2^m states."""
    probs = [_number(p, "--markov") for p in text.split(",")]
    order = len(probs).bit_length() - 1
    if len(probs) < 2 or 2 ** order != len(probs) or not all(0 <= p <= 1 for p in probs):
        raise InputError.single("--markov", "", f"{text!r}: give 2, 4, 8, ... probabilities "
                                "in [0, 1], one per state of the last m steps")
    return OccurrenceModel("markov", order=order, time_step=step,
                           transition=tuple((1 - p, p) for p in probs))
