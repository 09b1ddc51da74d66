"""The `rmreplay` command line: one registry of commands (replay.cli.registry), each in its own module.

    from replay.cli import main
    main(["audit", "rm.log"])    # the exit code: 0, 1 (divergences), 2 (bad input), 130 (interrupted)
"""

from replay.cli.process import main
from replay.cli.registry import Command

__all__ = ["Command", "main"]
