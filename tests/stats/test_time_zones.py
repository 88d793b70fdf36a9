"""Times with a zone offset (`XXX`, `X`, `xx`, `Z`, ...) read in-process, against Python's own
arithmetic: the instant is the local date and time less the offset; each offset spelling is
read only by the pattern letters Java (Spark's parser) reads it with."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.sources import local_source
from cepplan.sources.time_format import parse_times
from tests.hostile.conftest import EXAMPLES


def _spell(seconds: int, style: str) -> str:
    """An offset of `seconds` east of UTC as `style` writes it: Z, HH, HHMM, HH:MM,
    HHMMSS or HH:MM:SS (with its sign)."""
    if style == "Z":
        return "Z"
    sign = "-" if seconds < 0 else "+"
    hours, rest = divmod(abs(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = {"HH": [hours], "HHMM": [hours, minutes], "HH:MM": [hours, minutes],
             "HHMMSS": [hours, minutes, secs], "HH:MM:SS": [hours, minutes, secs]}[style]
    joiner = ":" if ":" in style else ""
    return sign + joiner.join(f"{p:02d}" for p in parts)


# which spellings each pattern letter reads (Java's DateTimeFormatter, parsing)
READS = {"X": {"Z", "HH", "HHMM"}, "XX": {"Z", "HHMM"}, "XXX": {"Z", "HH:MM"},
         "XXXX": {"Z", "HHMM", "HHMMSS"}, "XXXXX": {"Z", "HH:MM", "HH:MM:SS"},
         "x": {"HH", "HHMM"}, "xx": {"HHMM"}, "xxx": {"HH:MM"}, "Z": {"HHMM"},
         "ZZZZZ": {"Z", "HH:MM", "HH:MM:SS"}}
STYLES = ["Z", "HH", "HHMM", "HH:MM", "HHMMSS", "HH:MM:SS"]


def _spelled_whole(seconds: int, style: str) -> int:
    """The offset cut to what the spelling holds (Z: none, HH: hours, HHMM: minutes)."""
    unit = {"Z": None, "HH": 3600, "HHMM": 60, "HH:MM": 60}.get(style, 1)
    return 0 if unit is None else int(seconds / unit) * unit


@settings(max_examples=400)
@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)),
       st.integers(-18 * 3600, 18 * 3600),
       st.sampled_from(STYLES), st.sampled_from(sorted(READS)), st.booleans())
def test_zoned_times_are_the_local_time_less_the_offset(local, offset, style, letters,
                                                        lower_z):
    offset = _spelled_whole(offset, style)
    spelled = _spell(offset, style)
    if spelled == "Z" and lower_z:
        spelled = "z"  # Spark's parser reads letters without case
    millis = local.microsecond // 1000
    text = f"{local:%Y-%m-%dT%H:%M:%S}.{millis:03d}{spelled}"
    got = parse_times([text], f"yyyy-MM-dd'T'HH:mm:ss.SSS{letters}", "s")[0]
    naive = local.replace(microsecond=millis * 1000, tzinfo=UTC)
    instant = (naive - timedelta(seconds=offset)).timestamp()
    if style in READS[letters]:
        assert got == pytest.approx(instant, abs=1e-6), (text, letters)
    else:
        assert got != got, (text, letters)  # NaN: not this letter's spelling


@pytest.mark.parametrize("offset", ["+19:00", "+18:01", "+01:60", "-25:00"])
def test_offsets_beyond_eighteen_hours_or_sixty_minutes_are_no_time(offset):
    assert math.isnan(parse_times([f"2024-01-01T10:00:00{offset}"],
                                  "yyyy-MM-dd'T'HH:mm:ssXXX", "s")[0])


def test_run_reads_a_clickstream_with_zones(tmp_path):
    """Formerly "use --engine spark"; now read in-process, each row's instant the one
    `datetime.fromisoformat` gives."""
    stamps = ["2024-03-01T10:00:00.000Z", "2024-03-01T11:00:00.250+01:00",
              "2024-03-01T04:30:00.500-05:30", "2024-03-01T10:00:01.000+00:00",
              "2024-03-01T10:00:02.000z"]
    frame = pd.read_csv(EXAMPLES / "fraud" / "events.csv").head(len(stamps))
    frame.assign(ts=stamps).to_csv(tmp_path / "events.csv", index=False)
    doc = json.loads((EXAMPLES / "fraud" / "workload.json").read_text())
    source = {**doc["source"], "time_format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"}
    attributes = {name: t["attributes"] for name, t in doc["event_types"].items()}
    read = pd.concat(local_source.read_batches([str(tmp_path / "events.csv")], source,
                                               attributes, "min"))
    expected = [datetime.fromisoformat(s.upper()).timestamp() / 60 for s in stamps]
    assert read["__reject"].isna().all()
    assert read["__ts"].tolist() == pytest.approx(expected, abs=1e-9)


def test_synth_writes_zoned_times_the_reader_reads(tmp_path):
    """synth refused zone letters; it writes its UTC times with the offset spelled as the
    pattern asks (`Z`, `+0000`, `+00:00`), and the reader takes them back unchanged."""
    from cepplan.cli.app import app
    from cepplan.workload import load_workload
    from cepplan.workload.source_spec import reader_arguments

    doc = json.loads((EXAMPLES / "fraud" / "workload.json").read_text())
    for letters in ("XXX", "xx", "Z"):
        doc["source"]["time_format"] = f"yyyy-MM-dd'T'HH:mm:ss.SSS{letters}"
        workload = tmp_path / "workload.json"
        workload.write_text(json.dumps(doc))
        events = tmp_path / "events.csv"
        app(["synth", str(workload), "-o", str(events), "--duration", "20", "-q"],
            standalone_mode=False)
        written = pd.read_csv(events)
        read = pd.concat(local_source.read_batches(
            [str(events)], **reader_arguments(load_workload(workload))))
        assert len(read) == len(written) > 10 and read["__reject"].isna().all(), letters
        first = written["ts"].iloc[0]
        assert datetime.fromisoformat(first[:23] + "+00:00").timestamp() / 60 == \
            pytest.approx(read["__ts"].iloc[0], abs=1e-9)
