"""Planned read orchestration: planner, executors, evidence, calculations, synthesis."""
