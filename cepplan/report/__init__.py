"""Plan comparison reports."""
