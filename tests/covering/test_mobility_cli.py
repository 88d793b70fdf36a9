"""The mobility generator and the `synth-mobile` -> `optimize` -> `cover` walk-through."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from cepplan.cli.app import app
from cepplan.errors import InputError
from cepplan.stats.mobility import MobilitySpec, simulate_cars


def run(*args: str):
    """The command in-process (faster than a subprocess; exit codes are checked elsewhere)."""
    result = CliRunner().invoke(app, list(args))
    result.returncode = result.exit_code
    return result


def test_cars_stay_on_the_roads_and_move_no_faster_than_their_speed():
    spec = MobilitySpec(cars=30, consumers=10, duration=60.0, track_step=5.0)
    sim = simulate_cars(spec, seed=4)
    xs, ys = sim.events["x"].to_numpy(), sim.events["y"].to_numpy()
    on_road = (np.isclose(xs % spec.spacing, 0) | np.isclose(ys % spec.spacing, 0)
               | np.isclose(xs % spec.spacing, spec.spacing)
               | np.isclose(ys % spec.spacing, spec.spacing))
    assert on_road.all() and xs.min() >= 0 and xs.max() <= spec.side
    assert len(sim.tracks) == 10
    for track in sim.tracks.values():
        points = np.array(track)
        moved = np.abs(np.diff(points[:, 1:], axis=0)).sum(axis=1)  # Manhattan, on a grid
        assert (moved <= spec.speed[1] * spec.track_step + 1e-6).all()
    rate = len(sim.events) / (spec.cars * spec.duration)
    assert abs(rate - spec.event_rate) < 0.05


def test_walk_through_saves_executions_and_keeps_every_threshold(tmp_path):
    data = tmp_path / "mobile"
    done = run("synth-mobile", "-o", str(data), "--cars", "60", "--consumers", "15", "--duration",
               "40", "--seed", "2")
    assert done.returncode == 0, done.output
    plan = tmp_path / "plan.json"
    done = run("optimize", str(data / "workload.json"), "-o", str(plan))
    assert done.returncode == 0, done.output
    assert "consumer queries: 15" in done.stdout
    outputs = {}
    for solver in ("auto", "none"):
        out = tmp_path / solver
        done = run("cover", str(plan), str(data / "events.jsonl"), "-o", str(out),
                   "--solver", solver)
        assert done.returncode == 0, done.output
        metrics = json.loads((out / "metrics.json").read_text())["covering"]
        lines = (out / "results" / "part-00000.jsonl").read_text().splitlines()
        assert len(lines) == metrics["selections"]
        outputs[solver] = (metrics, [json.loads(line) for line in lines])
    reuse, alone = outputs["auto"][0], outputs["none"][0]
    assert reuse["selections"] == alone["selections"] == alone["executions_with_reuse"]
    assert reuse["executions_with_reuse"] < alone["executions_with_reuse"]
    assert reuse["threshold_violations"] == 0
    assert all(r["precision"] >= 0.7 and r["recall"] >= 0.7 for r in outputs["auto"][1])
    exact = {(r["query"], r["batch"], r["window"]): r["value"] for r in outputs["none"][1]}
    for r in outputs["auto"][1]:  # a served query receives exactly its server's own result
        assert r["value"] == exact[(r["served_by"], r["batch"], r["served_window"])]


def test_cover_refuses_a_plan_without_consumers(tmp_path):
    plan = tmp_path / "plan.json"
    run("optimize", "examples/stocks/workload.json", "-o", str(plan))
    done = run("cover", str(plan), "examples/stocks/workload.json", "-o",
               str(tmp_path / "out"))
    assert isinstance(done.exception, InputError) and "no consumer queries" in str(
        done.exception)
