"""``python -m faircl.cli ...`` = ``faircl ...``."""

import sys

from faircl.cli.dispatch import main

sys.exit(main())
