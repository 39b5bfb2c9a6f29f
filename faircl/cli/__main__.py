"""``python -m faircl.cli ...`` = ``faircl ...``."""

import sys

from faircl.cli.app import main

sys.exit(main())
