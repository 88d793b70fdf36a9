"""`python -m cepplan` runs the command line; an interruption while it is still importing is
already one line and exit code 130 / 143, like one during the command."""

import sys

from cepplan.interrupt import Interrupted, signals_interrupt

try:
    with signals_interrupt():
        from cepplan.cli.app import main
except Interrupted as stop:
    print(f"cepplan: {stop.describe()}", file=sys.stderr)
    sys.exit(stop.exit_code)

main()
