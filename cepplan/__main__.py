"""`python -m cepplan` runs the command line."""

from cepplan.cli.app import main

main()
