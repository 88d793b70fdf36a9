"""The stage code both engines run (seed 001: recomputation-based CEP): tagging, acquisition,
the matcher, Kleene+, contexts, sharing, covering, and matches rendered as records.

Standalone: besides NumPy, pandas and the standard library it imports only its siblings and
the few cepplan modules the generated job ships beside it (`spark/generate.py`'s `SHIPPED`:
the workload's columns and vectorised expressions, the cost models and the covering solver it
reads), so the job runs where cepplan is not installed; `tests/test_layering.py` holds it so.
It imports neither engine (`local/`, `spark/`).
"""
