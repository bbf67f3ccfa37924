"""A Ctrl-C while the `blagent` command is still starting (Python importing the package and
its native core, a tenth of a second) ends it as a Ctrl-C later does: `blagent: interrupted`
and exit 130, not a traceback. A program that imports blagent keeps its own handling.

Importing this module (the package does, first) installs the handler; `cli.main` removes it."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

#: 128 + SIGINT, the core's exit code for an interrupted run (`_core.EXIT_CODES`, not loaded yet).
EXIT_INTERRUPTED = 130


def _started_as_command() -> bool:
    """Whether this process is the `blagent` script or `python -m blagent`."""
    if os.path.basename(sys.argv[0]) == "blagent":
        return True
    return getattr(sys, "orig_argv", [])[1:3] == ["-m", "blagent"]


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    print("blagent: interrupted", file=sys.stderr)
    raise SystemExit(EXIT_INTERRUPTED)


def quiet_interrupts_while_starting() -> None:
    """Takes Ctrl-C until [`started`] when this process is the command and Ctrl-C has Python's
    default handling (one started in the background, where SIGINT is ignored, keeps ignoring)."""
    if _started_as_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def started() -> None:
    """Gives Ctrl-C back to Python's default handling once the command runs."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


quiet_interrupts_while_starting()
