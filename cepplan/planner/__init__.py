"""Planners and the plan model: detection plans, Pareto DP, heuristics (seed 002 §3, §5)."""
