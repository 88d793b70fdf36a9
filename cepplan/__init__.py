"""cepplan: optimizer-as-a-service for complex event processing workloads."""

__version__ = "0.1.0"
