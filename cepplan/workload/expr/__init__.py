"""The predicate expression language: parser, printer, type checker and two evaluators."""
