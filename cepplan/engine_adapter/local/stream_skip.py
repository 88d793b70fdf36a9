"""After-match skips on a live stream (`cepplan run --follow`, in-process).

The stream matcher emits a pattern's matches by the time of their latest event: after each
micro-batch, every match whose latest event lies below the watermark reached (less the
pattern's look-ahead window) has been emitted. The matches of a pattern with a skip are held
here until then, and released in the skip's order (`runtime.after_match`), each partition
key's resume point kept between micro-batches, so the matches kept are the batch run's. The
held matches and the resume points are part of the checkpoint (`state`, `restore`).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from cepplan.engine_adapter.local.stream import StreamMatcher
from cepplan.engine_adapter.runtime.after_match import Bound, kept, skip_rules
from cepplan.engine_adapter.runtime.job import Job, PartitionOutput


class StreamSkips:
    """A stream matcher's writer: passes matches on to `output`, holding those of patterns
    with a skip until `release`."""

    def __init__(self, data: dict[str, Any], job: Job, output: Any):
        self.output = output
        self.rules = skip_rules(data)
        self.user = {spec.name: spec.output_name for spec in job.patterns}
        self.core = {}  # the name its released matches are counted under: its first core's
        for spec in job.patterns:
            self.core.setdefault(spec.output_name, spec.name)
        self.held: dict[str, list[tuple[float, str, float]]] = {n: [] for n in self.rules}
        self.bounds: dict[str, dict[tuple, Bound]] = {n: {} for n in self.rules}
        self.dropped = dict.fromkeys(self.rules, 0)

    def arrivals(self, ids: np.ndarray, times: np.ndarray) -> None:
        self.output.arrivals(ids, times)

    def write(self, pattern: str, out: PartitionOutput) -> None:
        """Write `out`, or hold it (with each match's completion time) if it has a skip."""
        name = self.user.get(pattern, pattern)
        if name not in self.rules:
            self.output.write(pattern, out)
            return
        texts = out.texts()
        completed = self.output.completed(out) if texts else []
        for text, done in zip(texts, completed, strict=True):
            latest = max(e["ts"] for bound in json.loads(text)["events"].values()
                         for e in (bound if isinstance(bound, list) else [bound]))
            self.held[name].append((latest, text, float(done)))

    def release(self, below: float) -> None:
        """Write the held matches whose latest event lies below `below` (every pattern has
        emitted all of those) that their skips keep."""
        for name, rule in self.rules.items():
            ready = [h for h in self.held[name] if h[0] < below]
            if not ready:
                continue
            self.held[name] = [h for h in self.held[name] if h[0] >= below]
            keep = kept([json.loads(text) for _, text, _ in ready], rule, self.bounds[name])
            chosen = [h for h, k in zip(ready, keep, strict=True) if k]
            self.dropped[name] += len(ready) - len(chosen)
            if chosen:
                text = "".join(t + "\n" for _, t, _ in chosen)
                self.output.write(self.core[name], PartitionOutput(text, len(chosen), None, 0),
                                  completed=np.array([c for _, _, c in chosen]))

    def state(self) -> dict[str, Any]:
        """The held matches, resume points and counts, as JSON values (for a checkpoint)."""
        return {"held": self.held, "dropped": self.dropped,
                "bounds": {n: [[list(k), [list(b[0]), b[1]]] for k, b in bounds.items()]
                           for n, bounds in self.bounds.items()}}

    def restore(self, state: dict[str, Any]) -> None:
        """Put back what `state` recorded."""
        self.held = {n: [tuple(h) for h in held] for n, held in state["held"].items()}
        self.dropped = dict(state["dropped"])
        self.bounds = {n: {tuple(k): (tuple(b[0]), b[1]) for k, b in bounds}
                       for n, bounds in state["bounds"].items()}


def decided_below(matcher: StreamMatcher) -> float:
    """The time below which every job of `matcher` has emitted each match whose latest
    event lies there: the watermark it evaluated to, less the widest look-ahead lag."""
    return matcher.evaluated - max(lag for phase in matcher.phases for lag, _ in phase.groups)
