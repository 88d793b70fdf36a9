"""The workload language: `workload.json` loading and validation, predicates, detection graph."""

from cepplan.workload.loader import build_workload, load_workload
from cepplan.workload.model import Pattern, Workload

__all__ = ["Pattern", "Workload", "build_workload", "load_workload"]
