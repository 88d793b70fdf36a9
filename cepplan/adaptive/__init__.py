"""Re-planning a live stream (`cepplan run --follow --adaptive`): statistics measured online by
the statistics package's own code, the drift rule checked against the plan's invariants, the
planner's re-plan and the switch of the in-process stream to the new plan. It sits above the
statistics, the planner and the engine it joins (docs/engine.md, "Adaptive re-planning")."""
