"""The optimizer as a service: an HTTP JSON API over the same functions the CLI calls."""
