"""A Ctrl-C while the `blagent` command is still starting (Python importing the package and
its native core, a tenth of a second) ends it as a Ctrl-C later does: `blagent: interrupted`
and exit 130, not a traceback. A program that imports blagent keeps its own handling.

Importing this module (the package does, first) installs the handler; `cli.main` removes it."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

#: 128 + SIGINT, the core's exit code for an interrupted run (`_core.EXIT_CODES`, not loaded yet).
EXIT_INTERRUPTED = 130


def is_command() -> bool:
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
    if is_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def started() -> None:
    """Gives Ctrl-C back to Python's default handling once the command runs."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: The signals that stop the command as Ctrl-C does, where they have their default action.
STOPS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """A stop by `signum` (SIGTERM, SIGHUP): it unwinds as Ctrl-C does (a core call is
    cancelled, outputs being replaced keep what they held, every batch line is whole, the
    workers of a run on Ray are killed), and the command then ends by that signal (`cli.main`),
    with the status of a process the signal killed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop(signum: int, _frame: FrameType | None) -> None:
    """The command's handler of `STOPS`."""
    raise Stopped(signum)


def stop_on_signals() -> dict[int, Any]:
    """When this process is the command, makes `STOPS` raise `Stopped` where they have their
    default action (one the caller ignores, as `nohup` does for SIGHUP, stays ignored); returns
    the handlers it replaced, for `restore`. A program that calls `cli.main` keeps its own."""
    if not is_command() or threading.current_thread() is not threading.main_thread():
        return {}
    replaced = {}
    for signum in STOPS:
        if signal.getsignal(signum) == signal.SIG_DFL:
            replaced[signum] = signal.signal(signum, stop)
    return replaced


def restore(handlers: dict[int, Any]) -> None:
    """Gives back the handlers `stop_on_signals` replaced."""
    for signum, handler in handlers.items():
        signal.signal(signum, handler)


quiet_interrupts_while_starting()
