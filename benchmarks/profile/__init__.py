"""Profiling scripts: where one benchmark's time goes, run one at a time
(`python -m benchmarks.profile.NAME`); `python -m benchmarks` does not run them."""
