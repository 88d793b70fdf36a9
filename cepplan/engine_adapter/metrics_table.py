"""The metrics of a run (`metrics.json`) as the table `cepplan run` prints."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cepplan.workload.timed_out import timed_out_name

NOT_USED = "unknown type"  # the reader's reason for rows of types the workload lacks


def metrics_lines(metrics: dict[str, Any], time_unit: str = "") -> list[str]:
    """Rows read, not used (types the workload does not declare) and rejected, rows sent to
    matchers (per event read: a row goes to each pattern that needs it), matches and
    predicted cost per pattern, and time per stage."""
    read = metrics["rows_read"]
    reasons = metrics.get("rows_rejected", {})
    unused = reasons.get(NOT_USED, 0)
    rejected = sum(reasons.values()) - unused
    sent = metrics["rows_to_matchers"]
    events = read - rejected - unused
    factor = sent / events if events else 0.0
    lines = [f"rows read            {read:>12,}"]
    if unused:
        lines.append(f"rows not used        {unused:>12,}   (of types the workload does not "
                     "declare)")
    lines.append(f"rows rejected        {rejected:>12,}")
    for reason, count in sorted(reasons.items()):
        if reason != NOT_USED:
            lines.append(f"  {reason:<18} {count:>12,}")
    lines.append(f"rows to matchers     {sent:>12,}   {factor:.3f} per event read (a copy per "
                 "matcher that reads it)")
    if factor > 1:
        again = (", and context derivation reads again the events where its steps overlap"
                 if metrics.get("contexts") else "")
        lines.append(f"  more rows than events: several matchers read the same events{again}")
    if metrics.get("engine") != "local":  # only Spark moves rows between machines
        lines.append(f"rows shuffled        {metrics.get('rows_shuffled', 0):>12,}   "
                     "(with the copies time ranges share)")
    lines.append("")
    predicted = metrics.get("plan", {}).get("predicted", {})
    unit = f"/{time_unit}" if time_unit else ""
    shown = shown_names(metrics)
    width = max([24, *map(len, shown.values())])
    lines.append(f"{'pattern':<{width}} {'matches':>10} {'rows in':>10} {'cap cuts':>9} "
                 f"{'model cost' + unit:>16} {'naive' + unit:>12}")
    for name, count in metrics["matches"].items():
        model = predicted.get(name, {})
        lines.append(f"{shown[name]:<{width}} {count:>10,} "
                     f"{metrics['rows_to_matchers_by_pattern'].get(name, 0):>10,} "
                     f"{metrics.get('kleene_cap_hits', {}).get(name, 0):>9,} "
                     f"{_number(model.get('expected_cost')):>16} "
                     f"{_number(model.get('naive_cost')):>12}")
    for name, dropped in metrics.get("after_match_skipped", {}).items():
        lines.append(f"  {name}: {dropped:,} of the matches above dropped by its after-match "
                     "skip")
    stages = {stage: " ".join(shown.get(word, word) for word in stage.split(" "))
              for stage in metrics["seconds"]}  # "match NAME": its pattern as shown
    stage_width = max([32, *map(len, stages.values())])
    lines += ["", f"{'stage':<{stage_width}} {'seconds':>9}"]
    for stage, seconds in metrics["seconds"].items():
        lines.append(f"{stages[stage]:<{stage_width}} {seconds:>9.2f}")
    if metrics.get("contexts"):
        lines += ["", *contexts_lines(metrics["contexts"])]
    if metrics.get("covering"):
        lines += ["", *covering_lines(metrics["covering"])]
    return lines


def run_warnings(metrics: dict[str, Any], kleene_cap: int,
                 time_text: Callable[[float], str] = "ts {:.15g}".format) -> list[str]:
    """What a run left out or settled for, one `warning:` line each (printed even under -q;
    rejected rows are said by `stats.rejected_rows.check_rejected`): Kleene enumerations cut
    by the cap, covering batches left to the greedy cover, matches held
    back because their NOT reaches past the input (its first and last time as `time_text`
    writes them: `sources.time_text.time_writer`)."""
    lines = []
    for name, hits in metrics.get("kleene_cap_hits", {}).items():
        if hits:
            lines.append(f"warning: pattern {name}: {hits:,} time(s) a Kleene variable had "
                         f"more than kleene_cap={kleene_cap} events to choose from (for one "
                         "choice of the other events and of its last): only its latest "
                         f"{kleene_cap} were combined, so matches with more of its events, or "
                         "with earlier ones, were not reported; raise options.kleene_cap in "
                         "the workload (at most 30) or shorten the window to find them all")
    fallbacks = (metrics.get("covering") or {}).get("solver", {}).get("fallbacks", 0)
    if fallbacks:
        lines.append(f"warning: {fallbacks:,} batch(es) of consumer queries used the greedy "
                     "cover: CP-SAT found none within the plan's covering time limit, so "
                     "operators may run more often than needed (optimize "
                     "--covering-time-limit)")
    span = metrics.get("input_span")
    hidden = timed_out_patterns(metrics)
    for name, held in metrics.get("negation_held_back", {}).items():
        if held and span and name in hidden:
            user, k = hidden[name]
            lines.append(f"warning: pattern {user}: {held:,} partial match(es) of {k} "
                         f"event(s) not timed out yet: their timeout lies past the events "
                         f"given ({time_text(span[0])} to {time_text(span[1])}), so they are "
                         "not reported (add the events after the input to decide them)")
        elif held and span:
            lines.append(f"warning: pattern {name}: {held:,} match(es) held back: their NOT "
                         f"window reaches beyond the events given ({time_text(span[0])} to "
                         f"{time_text(span[1])}), so nothing shows the NOT holds there; they "
                         "are not reported (add the events around the input to decide them)")
    return lines


def contexts_lines(section: dict[str, Any]) -> list[str]:
    """Per pattern in a context: the share of its events it saw and of the time it was
    suspended, beside the share of time the plan expected it active."""
    windows = _counted(section["windows"])
    lines = [f"context windows: {windows}",
             f"{'pattern':<24} {'events seen':>12} {'suspended':>10} {'planned active':>15}"]
    for name, values in section["patterns"].items():
        if not values["contexts"]:
            continue
        planned = values["expected_active_share"]
        lines.append(f"{name:<24} {values['events_seen_share']:>12.1%} "
                     f"{values['suspended_time_share']:>10.1%} "
                     f"{'-' if planned is None else f'{planned:.1%}':>15}")
    if any(v["events_seen_share"] > 1 for v in section["patterns"].values()):
        lines.append("(deriving patterns run in overlapping steps: an event may be seen twice)")
    return lines


def covering_lines(m: dict[str, Any]) -> list[str]:
    """The consumer queries: executions with and without reuse, the quality of the reused
    results, and how the covers were solved."""
    lines = [f"{m['selections']} query windows; operator executions: "
             f"{m['executions_without_reuse']} without reuse, {m['executions_with_reuse']} "
             f"with reuse (saving {100 * m['saved_share']:.0f}%)"]
    quality = m["qor_of_reused"]
    if quality:
        lines.append(f"reused results: {m['reused_results']}; lowest precision "
                     f"{quality['precision']['min']:.2f}, recall "
                     f"{quality['recall']['min']:.2f}, disparity "
                     f"{quality['disparity']['min']:.2f}; results below their thresholds: "
                     f"{m['threshold_violations']}")
    record = m["solver"]
    solvers = " and ".join(f"{name} ({count})" for name, count in record["solvers"].items())
    lines.append(f"covers solved: {_counted(record['statuses']) or 0}, by {solvers or 'none'}, in "
                 f"{record['seconds_total']:.2f} s; greedy fallbacks: {record['fallbacks']}")
    return lines


def _counted(counts: dict[str, int]) -> str:
    """`{"optimal": 10, "feasible": 2}` as `10 optimal, 2 feasible`."""
    return ", ".join(f"{count} {name}" for name, count in counts.items())


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def timed_out_patterns(metrics: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """Each hidden pattern finding timed-out partial matches -> (its user pattern, k), from
    metrics.json's `timed_out` (cepplan/workload/timed_out.py)."""
    return {timed_out_name(user, int(k)): (user, int(k))
            for user, by_k in metrics.get("timed_out", {}).items() for k in by_k}


def shown_names(metrics: dict[str, Any]) -> dict[str, str]:
    """Each pattern of `matches` as the run's table names it: a hidden timed-out pattern as
    its user pattern and k."""
    hidden = timed_out_patterns(metrics)
    return {name: (f"{hidden[name][0]} timed out k={hidden[name][1]}" if name in hidden
                   else name) for name in metrics["matches"]}
