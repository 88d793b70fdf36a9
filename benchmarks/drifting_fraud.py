"""The fraud workload's events with rates that change at given points (seed 004 §6.2.3's
adaptive experiment, as a replayable file): each phase synthesized with its own rates over
the workload's inline ones, one after another in event time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from cepplan.stats.synth import synthesize
from cepplan.workload import load_workload
from cepplan.workload.columns import EVENT_ID, EVENT_TS
from cepplan.workload.model import Workload

ROOT = Path(__file__).resolve().parent.parent
FRAUD = ROOT / "examples" / "fraud" / "workload.json"
# the rare trigger (PasswordReset) becomes frequent and Withdrawal rare
DRIFTED = {"PasswordReset": 20.0, "Withdrawal": 0.01}
# a fraud wave: the trigger and withdrawals frequent, logins rare (a plan starting from the
# trigger then joins two frequent types; the re-plan starts from the logins)
WAVE = {"PasswordReset": 80.0, "Withdrawal": 80.0, "Login": 0.01}
RANGES = {"amount": (0.0, 1500.0)}  # as the example's events (a tenth of the amounts > 1000)


def fraud_workload() -> Workload:
    return load_workload(FRAUD)


def drifting_events(workload: Workload, phases: Sequence[tuple[float, Mapping[str, float]]],
                    seed: int) -> pd.DataFrame:
    """Each phase (duration, rates overriding the workload's) synthesized after the one
    before: the canonical frame, ids in time order."""
    parts, start = [], 0.0
    for number, (duration, rates) in enumerate(phases):
        events = synthesize(workload, duration=duration, seed=seed * 1000 + number,
                            rates={**workload.statistics.rates, **rates},
                            ranges=RANGES, truth_draws=1).events
        events[EVENT_TS] = events[EVENT_TS] + start
        parts.append(events)
        start += duration
    out = pd.concat(parts, ignore_index=True).sort_values(EVENT_TS, kind="stable")
    out[EVENT_ID] = np.arange(len(out))
    return out.reset_index(drop=True)
