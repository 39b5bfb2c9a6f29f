"""``python -m faircl.cli ...`` = ``faircl ...``."""

import sys

from faircl.cli.command import main

sys.exit(main())
