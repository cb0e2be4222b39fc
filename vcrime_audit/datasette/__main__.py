"""``python -m vcrime_audit.datasette [--database NAME]``: print the Datasette metadata."""

import argparse

from . import DEFAULT_DATABASE, render

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--database", default=DEFAULT_DATABASE,
                    help="Datasette database name: the store's file name without .sqlite.")
print(render(parser.parse_args().database), end="")
