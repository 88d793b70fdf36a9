"""The metrics of a run (`metrics.json`) as the table `cepplan run` prints."""

from __future__ import annotations

from typing import Any


def metrics_lines(metrics: dict[str, Any], time_unit: str = "") -> list[str]:
    """Rows read and rejected, rows sent to matchers (the measured transmission factor),
    matches and predicted cost per pattern, and time per stage."""
    read = metrics["rows_read"]
    rejected = sum(metrics.get("rows_rejected", {}).values())
    sent = metrics["rows_to_matchers"]
    factor = sent / (read - rejected) if read - rejected else 0.0
    lines = [f"rows read            {read:>12,}",
             f"rows rejected        {rejected:>12,}"]
    for reason, count in sorted(metrics.get("rows_rejected", {}).items()):
        lines.append(f"  {reason:<18} {count:>12,}")
    lines += [f"rows to matchers     {sent:>12,}   transmission factor {factor:.3f}",
              f"rows shuffled        {metrics.get('rows_shuffled', 0):>12,}   "
              "(with the copies time ranges share)", ""]
    predicted = metrics.get("plan", {}).get("predicted", {})
    unit = f"/{time_unit}" if time_unit else ""
    width = max([24, *map(len, metrics["matches"])])
    lines.append(f"{'pattern':<{width}} {'matches':>10} {'rows in':>10} {'cap cuts':>9} "
                 f"{'model cost' + unit:>16} {'naive' + unit:>12}")
    for name, count in metrics["matches"].items():
        model = predicted.get(name, {})
        lines.append(f"{name:<{width}} {count:>10,} "
                     f"{metrics['rows_to_matchers_by_pattern'].get(name, 0):>10,} "
                     f"{metrics.get('kleene_cap_hits', {}).get(name, 0):>9,} "
                     f"{_number(model.get('expected_cost')):>16} "
                     f"{_number(model.get('naive_cost')):>12}")
    stage_width = max([32, *map(len, metrics["seconds"])])
    lines += ["", f"{'stage':<{stage_width}} {'seconds':>9}"]
    for stage, seconds in metrics["seconds"].items():
        lines.append(f"{stage:<{stage_width}} {seconds:>9.2f}")
    return lines


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"
