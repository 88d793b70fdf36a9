"""Synthetic minute bars in OpenCEP's NASDAQ file format, and the cepplan workload reading it.

OpenCEP's Metastock-7 formatter reads `TICKER,YYYYMMDDhhmm,open,peak,low,close,volume`
(plugin/stocks/Stocks.py: "Opening Price", "Peak Price", "Lowest Price", "Close Price",
"Volume"); the workload maps the same columns through its `source` with a Spark datetime
pattern, so both systems read the very same file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TICKERS = ("AAPL", "AMZN", "DRIV", "FB", "GOOG", "INTC", "MSFT", "NVDA", "ORCL", "TSLA")
COLUMNS = ["ticker", "date", "open", "peak", "low", "close", "volume"]
PATTERNS = {
    "goog": {"name": "goog", "structure": ["SEQ", "a:GOOG", "b:GOOG", "c:GOOG"],
             "where": ["a.peak < b.peak", "b.peak < c.peak"], "within": 3},
    "msft": {"name": "msft", "structure": ["SEQ", "a:MSFT", "b:DRIV", "c:MSFT"],
             "where": ["a.peak < c.peak", "b.volume > 1000"], "within": 10},
}


def write_bars(path: Path, rows: int, seed: int = 0) -> None:
    """`rows` bars: every ticker once a minute from 2020-01-01 00:00 (rows / 10 minutes),
    prices a random walk per ticker, volume uniform in [0, 10000)."""
    rng = np.random.default_rng(seed)
    minutes = -(-rows // len(TICKERS))
    stamps = np.datetime64("2020-01-01T00:00") + np.arange(minutes).astype("timedelta64[m]")
    text = np.datetime_as_string(stamps, unit="m")
    dates = np.char.replace(np.char.replace(np.char.replace(text, "-", ""), "T", ""), ":", "")
    walk = 100 + np.cumsum(rng.normal(0, 0.2, (minutes, len(TICKERS))), axis=0)
    with open(path, "w", encoding="ascii") as handle:
        written = 0
        block = 20_000
        for start in range(0, minutes, block):
            stop = min(minutes, start + block)
            lines = []
            for m in range(start, stop):
                for t, ticker in enumerate(TICKERS):
                    if written == rows:
                        break
                    base = walk[m, t]
                    lines.append(f"{ticker},{dates[m]},{base:.2f},{base + 0.3:.2f},"
                                 f"{base - 0.3:.2f},{base + 0.1:.2f},")
                    written += 1
            volumes = rng.integers(0, 10_000, len(lines))
            peaks = rng.uniform(0, 0.5, len(lines))
            handle.write("".join(
                _with(line, peak, volume) for line, peak, volume in zip(lines, peaks, volumes,
                                                                        strict=True)))


def _with(line: str, jitter: float, volume: int) -> str:
    """A bar line with its peak jittered (so peaks rise and fall) and its volume appended."""
    parts = line.split(",")
    parts[3] = f"{float(parts[3]) + jitter:.2f}"
    parts[6] = str(volume)
    return ",".join(parts) + "\n"


def workload(patterns: list[str], *, tickers=TICKERS, seq_ties: str = "allow") -> dict:
    """The cepplan workload over the bar file (OpenCEP compares timestamps non-strictly)."""
    attrs = {c: "double" for c in COLUMNS[2:]}
    return {"format": "cepplan.workload/1", "name": "minute-bars", "time_unit": "min",
            "source": {"format": "csv", "header": False, "columns": COLUMNS,
                       "type_column": "ticker", "time_column": "date",
                       "time_format": "yyyyMMddHHmm"},
            "event_types": {t: {"attributes": attrs} for t in tickers},
            "options": {"seq_ties": seq_ties},
            "patterns": [PATTERNS[p] for p in patterns],
            "statistics": {"rates": dict.fromkeys(tickers, 1.0)}}


def write_workload(path: Path, patterns: list[str], **kwargs) -> None:
    path.write_text(json.dumps(workload(patterns, **kwargs), indent=1))
