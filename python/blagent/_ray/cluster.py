"""Ray itself: imported only when `--ray` asks for it (the core wheel does not depend on it),
and the cluster a run uses: a new local one on 127.0.0.1 without a dashboard, or an existing
one at an address."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from types import FrameType, ModuleType

from .. import _core
from .._start import STOPS, Stopped
from .._start import stop as command_stop

#: What to run when Ray is missing.
INSTALL_HINT = "pip install 'blagent[ray]' (or: pip install 'ray>=2.9')"

#: The namespace of blagent's actors on a cluster.
NAMESPACE = "blagent"

#: What Ray reads to authenticate a cluster's processes: where the user sets none of them, a
#: local cluster gets a token of its own in its environment (Ray would write one to
#: ~/.ray/auth_token, readable by every user, left after the run and reused by the next).
RAY_AUTH_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


@contextlib.contextmanager
def _own_token(local: bool) -> Iterator[None]:
    """A token for this run's local cluster only, in the environment its processes inherit;
    the `RAY_AUTH_*` variables are as they were afterwards (`ray.init` sets `RAY_AUTH_MODE`
    itself, which a later run then took for the user's: a review)."""
    if not local or any(name in os.environ for name in RAY_AUTH_VARIABLES):
        yield
        return
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    try:
        yield
    finally:
        for name in RAY_AUTH_VARIABLES:
            os.environ.pop(name, None)


def import_ray(local: bool) -> ModuleType:
    """Ray, or an `InputError` saying how to install it. For a local cluster Ray is told to
    keep to the loopback address (else it binds its services to the machine's public one)."""
    if local:
        # Read once, when ray is first imported: its non-cluster mode uses 127.0.0.1.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError as err:
        raise _core.InputError(
            f"--ray needs Ray, which is not installed: {INSTALL_HINT} ({err})"
        ) from err
    return ray


@contextlib.contextmanager
def connected(address: str | None) -> Iterator[ModuleType]:
    """Ray connected to the cluster at `address`, or to a new local cluster (all this machine's
    CPUs, no dashboard) when it is None; disconnected (the local cluster stopped) on exit.
    Meanwhile SIGTERM and SIGHUP, where they have their default action, raise `Stopped`, and
    one that was ignored (`nohup`) stays ignored (`ray.init` sets a SIGTERM handler of its own,
    which exits with status 15 or 1 after a stack dump).

    Raises:
        InputError: Ray is not installed.
        BlagentIOError: the cluster cannot be reached.
    """
    ray = import_ray(local=address is None)
    # Ray prints the cluster's error messages (a worker that died, ...) on the driver's stdout;
    # stdout is the command's JSON, so while connected they go to stderr with the logs.
    with (
        contextlib.redirect_stdout(sys.stderr),
        _own_token(address is None and not ray.is_initialized()),
    ):
        yield from _connected(ray, address)


def _connected(ray: ModuleType, address: str | None) -> Iterator[ModuleType]:
    if ray.is_initialized():
        # An embedding program connected already: use its cluster, leave it connected.
        yield ray
        return
    options = {"namespace": NAMESPACE, "log_to_driver": False, "logging_level": logging.WARNING}
    main = threading.current_thread() is threading.main_thread()  # where handlers live
    before = {signum: signal.getsignal(signum) for signum in STOPS} if main else {}
    received: list[int] = []

    def stop(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        raise Stopped(signum)

    where = "a local Ray cluster" if address is None else f"the Ray cluster at {address}"
    if address is not None:
        _reachable(address, where)
    # A stop while a local cluster starts waits until it has started, and then stops it: one
    # that lands in `ray.init` left its agents running and the driver ended by SIGSEGV (a
    # review). A cluster at an address has nothing of this run's to leave behind.
    deferred: list[int] = []
    held = {}
    if main and address is None:
        for signum in (signal.SIGINT, *STOPS):
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                held[signum] = signal.signal(signum, lambda signum, _frame: deferred.append(signum))
    # `ray.init` puts a SIGTERM handler of its own (`sys.exit`) in place of the one holding
    # the stop back: kept from doing so while it runs (a review: SIGTERM then ended the run
    # with Ray's agents left running).
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    set_sigterm = getattr(utils, "set_sigterm_handler", None) if held else None
    if set_sigterm is not None:
        utils.set_sigterm_handler = lambda _handler: None
    try:
        if address is None:
            ray.init(address="local", include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
    except ValueError as err:  # an address Ray cannot read
        raise _core.InputError(f"cannot reach {where}: {err}") from err
    except (ConnectionError, RuntimeError) as err:
        raise _core.BlagentIOError(f"cannot start or reach {where}: {err}") from err
    except SystemExit:  # a SIGTERM that reached a handler of Ray's all the same
        if not held:
            raise
        deferred.append(signal.SIGTERM)
    finally:
        if set_sigterm is not None:
            utils.set_sigterm_handler = set_sigterm
        for signum, handler in held.items():
            signal.signal(signum, handler)
        for signum, handler in before.items():
            default = handler in (signal.SIG_DFL, command_stop)
            signal.signal(signum, stop if default else handler)
    if deferred:
        try:
            ray.shutdown()
        finally:
            for signum, handler in before.items():
                signal.signal(signum, handler)
        raise KeyboardInterrupt if deferred[0] == signal.SIGINT else Stopped(deferred[0])
    try:
        yield ray
    except KeyboardInterrupt as err:
        if received and not isinstance(err, Stopped):  # Ray raises its own in a wait
            raise Stopped(received[0]) from err
        raise
    finally:
        try:
            ray.shutdown()
        finally:
            for signum, handler in before.items():
                signal.signal(signum, handler)


#: Seconds to wait for a cluster's address to answer before Ray is asked to connect (Ray
#: retries an address where nothing listens for minutes, and Ctrl-C is heard half a minute late).
CONNECT_TIMEOUT_S = 10.0


def _reachable(address: str, where: str) -> None:
    """Refuses `address` (`HOST:PORT` or `ray://HOST:PORT`) at once where nothing listens there;
    other forms (`auto`) are left to Ray."""
    if address == "auto":  # Ray reads the address it stands for from RAY_ADDRESS
        address = os.environ.get("RAY_ADDRESS", "")
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host:
        return
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise _core.InputError(f"{where}: the port {port!r} is not a port number (1 to 65535)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except (OSError, ValueError, OverflowError) as err:
        raise _core.BlagentIOError(f"cannot reach {where}: {err}") from err


def cluster_cpus(ray: ModuleType) -> int:
    """The CPUs of the cluster (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def largest_node_cpus(ray: ModuleType) -> int:
    """The CPUs of the cluster's largest live node: a worker reserves its CPUs on one node."""
    return max((int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n["Alive"]), default=0)
