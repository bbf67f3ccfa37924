"""Bounded reads of the streams the command line is given, and safe terminal text.

Files the command line names are read by the core (`_core.read_user_file`: a regular file only,
a FIFO, device or socket refused before anything could block on it, at most a stated size);
standard input is read here up to the same bound. A missing, special or oversized input is an
`InputError` naming it, so the CLI exits 1 instead of hanging or running out of memory (a file that
exists but cannot be read is the core's I/O error, exit 3, as for every file the core reads).
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from typing import Any, BinaryIO

from . import _core

#: The most bytes read from an issue or a request (the core's `MAX_ISSUE_BYTES`).
MAX_ISSUE_BYTES: int = _core.DEFAULTS["max_issue_bytes"]
#: The most bytes read from an ids file.
MAX_IDS_BYTES = 64 << 20


def _mib(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def read_stdin(limit: int, what: str) -> bytes:
    """Standard input, at most `limit` bytes (a directory is refused)."""
    stream: BinaryIO | None = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise _core.InputError(f"no {what} on standard input")
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        mode = 0
    if stat.S_ISDIR(mode):
        raise _core.InputError(f"standard input is a directory, not a {what}")
    return _bounded(stream, limit, f"{what} on standard input")


def _bounded(stream: BinaryIO, limit: int, what: str) -> bytes:
    try:
        data = stream.read(limit + 1)
    except OSError as err:
        raise _core.InputError(f"cannot read {what}: {err.strerror}") from err
    if data is None:  # a non-blocking stream with nothing yet
        data = b""
    if len(data) > limit:
        raise _core.InputError(f"{what} is larger than {_mib(limit)} (the most blagent reads)")
    return data


def decode_strict(data: bytes, what: str) -> str:
    """UTF-8 text, or an `InputError` naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _core.InputError(f"{what} is not UTF-8 (byte {err.start})") from err


def check_encodable(text: str, what: str) -> None:
    """Refuses text that cannot be UTF-8 encoded: a byte that is not UTF-8 (a file name or
    argument the system decoded with `surrogateescape`), or a lone surrogate (as JSON's
    "\\ud800" gives)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        code = ord(text[err.start])
        if 0xDC80 <= code <= 0xDCFF:
            raise _core.InputError(
                f"{what} is not UTF-8 (byte 0x{code & 0xFF:02x}); blagent reads paths, "
                "options and text as UTF-8 (a file so named: rename it or link to it)"
            ) from err
        raise _core.InputError(
            f"{what} holds a lone surrogate (U+{code:04X} at character {err.start}), "
            "which is not valid Unicode text"
        ) from err


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, refusing a key given twice (`json.loads` keeps the last),
    as the core refuses one in the files it reads."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key `{key}`")
        obj[key] = value
    return obj


def json_value(text: str, what: str) -> Any:
    """`text` read as JSON, or an `InputError` naming `what`: not JSON, an object that repeats
    a key, nested too deeply, or an integer of more digits than Python converts (4,300 by
    default)."""
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_keys)
    except RecursionError as err:
        raise _core.InputError(f"{what} is nested too deeply") from err
    except ValueError as err:  # json.JSONDecodeError, or an integer too long to convert
        raise _core.InputError(f"{what} is not JSON blagent can read: {err}") from err


def print_json(value: Any) -> None:
    """`value` on stdout as indented JSON and a newline, in one write: `json.dump` to a stream
    writes each token apart, which took 6-22 s for a result of 100,000 names."""
    sys.stdout.write(json.dumps(value, indent=2) + "\n")


def json_text(value: Any, what: str) -> str:
    """`value` as JSON, or an `InputError` naming `what`: nested too deeply, holding what JSON
    cannot carry (a set, bytes, an integer too long to write), or text that is not UTF-8 (a
    lone surrogate, in a key or a value)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except RecursionError as err:
        raise _core.InputError(f"{what} is nested too deeply") from err
    except ValueError as err:
        try:
            where = _not_finite(value)
        except RecursionError:  # nested past Python's limit, which json.dumps also met
            where = None
        if where is None:  # an integer too long to write, a structure that holds itself
            raise _core.InputError(f"{what} holds a value JSON cannot carry: {err}") from err
        # Python would write NaN or Infinity, which is not JSON: the core read it as a
        # syntax error placed in this text, which the caller never saw.
        raise _core.InputError(f"{what}: {where[0]} is {where[1]!r}, not a finite number") from err
    except TypeError as err:
        raise _core.InputError(f"{what} holds a value JSON cannot carry: {err}") from err
    check_encodable(text, what)
    return text


def _not_finite(
    value: Any, path: str = "", seen: frozenset[int] = frozenset()
) -> tuple[str, float] | None:
    """The key path (`weights.definition`, `items[2]`) and value of the first NaN or infinity
    in `value`, a structure `json.dumps` writes; `None` where there is none (a structure that
    holds itself is followed once)."""
    if isinstance(value, float) and not math.isfinite(value):
        return (path or "the value", value)
    if id(value) in seen:
        return None
    if isinstance(value, dict):
        children: Any = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        children = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for child_path, child in children:
        found = _not_finite(child, child_path, seen | {id(value)})
        if found is not None:
            return found
    return None


def printable_lines(text: str) -> str:
    """`text` line by line through `printable`: its newlines kept, every other control
    character escaped (tables name repositories and ids a dataset gives)."""
    return "\n".join(printable(line) for line in text.split("\n"))


MAX_ERROR_CHARS = 2000


def error_text(text: str) -> str:
    """An error for one line of stderr: `printable`, and cut to `MAX_ERROR_CHARS` characters
    (an error may quote a value of the input, which can be megabytes)."""
    text = printable(text)
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}… ({len(text) - MAX_ERROR_CHARS} more characters)"


def printable(text: str) -> str:
    """`text` with control characters (and other unprintable ones) escaped as `\\xNN`,
    `\\uNNNN`, so a file name cannot drive the terminal."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
        elif ord(ch) > 0xFFFF:
            out.append(f"\\U{ord(ch):08x}")
        elif ord(ch) > 0xFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\x{ord(ch):02x}")
    return "".join(out)
