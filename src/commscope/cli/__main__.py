"""python -m commscope.cli: the command line, as the installed commscope."""

import sys

from . import main

sys.exit(main())
