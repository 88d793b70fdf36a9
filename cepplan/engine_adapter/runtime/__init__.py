"""The matcher runtime carried by the generated Spark job (seed 001: recomputation-based CEP).

Standalone: imports only NumPy, pandas, the standard library, its sibling modules and the
standalone foundation modules `cepplan.workload.expr.vectorized` and `cepplan.workload.columns`,
so the job ships it in a zip and runs where cepplan is not installed.
"""
