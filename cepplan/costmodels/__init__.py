"""Pure cost-latency models of detection plans (seed 002 §4)."""
