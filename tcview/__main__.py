"""`python -m tcview`: the same as the `tcview` command."""

import sys

from tcview.commands.cli import main

if __name__ == "__main__":
    sys.exit(main())
