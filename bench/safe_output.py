"""Where a benchmark script may write: never over one of its inputs (under any name), inside a
folder it reads, through a link, or over a file it did not write, which `is_ours` tells from
what the file holds. `check` refuses in one line (`SystemExit`, exit 1) before the script does
any work; `write` replaces a file whole (a new file beside it, renamed over it), so that a
failure half way leaves the old one as it was. Python standard library only.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: The most bytes of an existing output read to tell whether it is ours.
MAX_CHECK_BYTES = 1 << 30


def check(
    path: Path,
    is_ours: Callable[[bytes], bool],
    holds: str,
    inputs: Iterable[Path | None] = (),
    folders: Iterable[Path | None] = (),
) -> None:
    """Exits with one line unless `path` may be written: it is not a link, not inside one of
    `folders`, and either absent or a regular file that is none of `inputs` and holds what
    `is_ours` accepts (`holds` says what that is, for the message)."""
    if path.is_symlink():
        raise SystemExit(f"{path} is a symbolic link; outputs are not written through one")
    resolved = path.resolve()
    for folder in folders:
        if folder is not None and resolved.is_relative_to(folder.resolve()):
            raise SystemExit(f"{path} is inside {folder}, which this script reads")
    if not path.exists():
        return
    if not path.is_file():
        raise SystemExit(f"{path} is not a regular file")
    for source in inputs:
        if source is not None and source.exists() and path.samefile(source):
            raise SystemExit(f"{path} is {source}, an input of this script")
    if path.stat().st_size > MAX_CHECK_BYTES or not is_ours(path.read_bytes()):
        raise SystemExit(
            f"{path} exists and does not hold what this script writes ({holds}); "
            "remove it or choose another file"
        )


def write(path: Path, text: str) -> None:
    """Replaces `path` with `text` in one step (a new file created exclusively beside it, so
    that nothing already there is written through, then renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def json_object_with(*keys: str) -> Callable[[bytes], bool]:
    """`is_ours` for a JSON object holding all of `keys`."""
    return lambda data: isinstance(obj := _json(data), dict) and all(k in obj for k in keys)


def json_lines_with(*keys: str) -> Callable[[bytes], bool]:
    """`is_ours` for JSON lines, each non-blank one an object holding all of `keys`."""

    def ours(data: bytes) -> bool:
        rows = [_json(line) for line in data.splitlines() if line.strip()]
        return all(isinstance(r, dict) and all(k in r for k in keys) for r in rows)

    return ours


def starts_with(mark: str) -> Callable[[bytes], bool]:
    """`is_ours` for a text file that starts with `mark` (a line the script writes first)."""
    return lambda data: data.startswith(mark.encode())
