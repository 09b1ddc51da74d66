"""`python -m replay.cli ...`: the `rmreplay` command from a source tree."""

import sys

from replay.cli.process import main

sys.exit(main())
