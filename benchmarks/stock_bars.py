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
import pyarrow as pa
import pyarrow.csv as pa_csv

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
    prices a random walk per ticker, the peak a little above the open (jittered, so peaks
    rise and fall), volume uniform in [0, 10000). Written in blocks with Arrow's CSV writer."""
    rng = np.random.default_rng(seed)
    minutes = -(-rows // len(TICKERS))
    level = np.full(len(TICKERS), 100.0)
    options = pa_csv.WriteOptions(include_header=False, quoting_style="none")
    with pa_csv.CSVWriter(path, _SCHEMA, write_options=options) as writer:
        for start in range(0, minutes, _BLOCK_MINUTES):
            count = min(_BLOCK_MINUTES, minutes - start)
            walk = level + np.cumsum(rng.normal(0, 0.2, (count, len(TICKERS))), axis=0)
            level = walk[-1]
            stamps = (np.datetime64("2020-01-01T00:00")
                      + np.arange(start, start + count).astype("timedelta64[m]"))
            text = np.char.replace(np.datetime_as_string(stamps, unit="m"), "-", "")
            dates = np.char.replace(np.char.replace(text, "T", ""), ":", "")
            size = min(count * len(TICKERS), rows - start * len(TICKERS))
            opened = walk.ravel()[:size]
            writer.write_table(pa.table({
                "ticker": np.tile(np.array(TICKERS), count)[:size],
                "date": np.repeat(dates, len(TICKERS))[:size],
                "open": np.round(opened, 2),
                "peak": np.round(opened + 0.3 + rng.uniform(0, 0.5, size), 2),
                "low": np.round(opened - 0.3, 2),
                "close": np.round(opened + 0.1, 2),
                "volume": rng.integers(0, 10_000, size)}, schema=_SCHEMA))


_BLOCK_MINUTES = 100_000
_SCHEMA = pa.schema([("ticker", pa.string()), ("date", pa.string()), ("open", pa.float64()),
                     ("peak", pa.float64()), ("low", pa.float64()), ("close", pa.float64()),
                     ("volume", pa.int64())])


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
