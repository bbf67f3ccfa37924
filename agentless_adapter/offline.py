"""Running Agentless's later stages on local trees, with no network: its inputs, prepared.

Agentless loads the benchmark with `datasets.load_dataset(args.dataset, split="test")` and each
repository's structure with `get_repo_structure`, which clones from GitHub unless
`PROJECT_FILE_LOC` names a folder of `<instance_id>.json` structures. Three subcommands:

- `dataset`: writes `WORK/princeton-nlp/SWE-bench_Lite/test.jsonl` from a local JSONL;
  `load_dataset` reads a local folder of that name before trying the hub, so Agentless run
  from `WORK` (with `HF_DATASETS_OFFLINE=1`) loads it.
- `structures`: writes `<instance_id>.json` for each local tree as Agentless's
  `create_structure` would, each Python file parsed by Agentless's own `parse_python_file`
  (imported from `--agentless-src`, not copied), the tree seen under its repository's folder
  name as Agentless's clone would be; run it with Agentless's Python. Only regular files
  inside the tree are read, each up to `MAX_SOURCE_BYTES`: a link leading out of the tree, a
  FIFO or device, or a larger file named `*.py` is left out of the structure, with a note.
- `align`: keeps the `found_files` Agentless can open (present in the structure as a Python file
  and not under a `test*` component, the filters Agentless applies), and the
  `found_related_locs` of those files only (for a blagent related-level line, the first
  `--top-n` kept files, with the locations blagent wrote for its top 10), recording dropped paths under
  `blagent.dropped_for_agentless`. Agentless asserts on a file missing from its
  structure; its structures put top-level files under the repository's folder name.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Agentless's `repo_to_top_folder`: the folder its clone of each repository gets.
TOP_FOLDER = {
    "django/django": "django",
    "sphinx-doc/sphinx": "sphinx",
    "scikit-learn/scikit-learn": "scikit-learn",
    "sympy/sympy": "sympy",
    "pytest-dev/pytest": "pytest",
    "matplotlib/matplotlib": "matplotlib",
    "astropy/astropy": "astropy",
    "pydata/xarray": "xarray",
    "mwaskom/seaborn": "seaborn",
    "psf/requests": "requests",
    "pylint-dev/pylint": "pylint",
    "pallets/flask": "flask",
}
DATASET_DIR = Path("princeton-nlp") / "SWE-bench_Lite"
#: Written beside that dataset: the SHA-256 of the text `dataset` wrote there. A dataset's rows
#: are the user's own, so nothing in them tells this command's file from one put there by other
#: means; the digest does, and only a file that matches it is replaced.
DATASET_DIGEST = ".blagent-dataset.sha256"
#: The most bytes read from a dataset, a start file, a structure or an output being replaced.
MAX_INPUT_BYTES = 1 << 30
#: The most bytes read from one Python file of a tree (`structures`).
MAX_SOURCE_BYTES = 16 << 20


class OutputRefused(ValueError):
    """An output that would overwrite an input, lie inside one, or replace a file this module
    did not write, or one another run is writing."""


#: What `align` adds under each line's `blagent` field: the mark that tells its output apart
#: from a batch output or Agentless's own.
ALIGNED_MARK = "aligned_for_agentless"


def _is_aligned(row: dict[str, Any]) -> bool:
    return isinstance(row.get("blagent"), dict) and row["blagent"].get(ALIGNED_MARK) is True


def read_regular(path: Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them. A FIFO, device or folder
    is refused (`BadInput`) before anything could block on it, and so is a larger file, before
    it is read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise BadInput(f"cannot read {what} {path}: {err.strerror}") from err
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{what} {path} is not a regular file")
        data = b"" if info.st_size > limit else f.read(limit + 1)
    if info.st_size > limit or len(data) > limit:
        raise BadInput(f"{what} {path} is larger than {limit >> 20} MiB")
    return data


def _read_lines(path: Path, what: str) -> list[str]:
    """The lines of the regular file `path` (UTF-8, at most `MAX_INPUT_BYTES`, read by
    `read_regular`), split as a file opened as text splits them."""
    data = read_regular(path, MAX_INPUT_BYTES, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"{what} {path} is not UTF-8 (byte {err.start})") from err
    return list(io.StringIO(text, newline=None))


def _holds_lines_with(path: Path, fields: tuple[str, ...], aligned: bool = False) -> bool:
    """Whether every non-blank line of `path` is a JSON object with all of `fields` (and, with
    `aligned`, `align`'s mark)."""
    try:
        return holds_lines_with(read_regular(path, MAX_INPUT_BYTES, "output"), fields, aligned)
    except BadInput:
        return False


def holds_lines_with(
    data: bytes, fields: tuple[str, ...], aligned: bool = False, cut_prefix: str | None = None
) -> bool:
    """Whether `data` is UTF-8 JSON lines, each non-blank one an object with all of `fields`
    (and, with `aligned`, `align`'s mark). With `cut_prefix`, its last line may instead be one
    an interrupted append cut short (`cut_short_start`)."""
    return rows_with(data, fields, aligned, cut_prefix) is not None


def rows_with(
    data: bytes, fields: tuple[str, ...], aligned: bool = False, cut_prefix: str | None = None
) -> list[dict[str, Any]] | None:
    """The rows of `data` where `holds_lines_with` holds (a last line cut short left out),
    else `None`."""
    cut = None if cut_prefix is None else cut_short_start(data, cut_prefix)
    try:
        text = data[:cut].decode("utf-8")
        rows = [json.loads(line) for line in io.StringIO(text, newline=None) if line.strip()]
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or too long an int
        return None
    fits = all(
        isinstance(r, dict) and all(k in r for k in fields) and (not aligned or _is_aligned(r))
        for r in rows
    )
    return rows if fits else None


def cut_short_start(data: bytes, prefix: str) -> int | None:
    """Where the last line of the JSON lines `data` starts if an interrupted write cut it short,
    as `blagent batch` tells one: the text after the last newline is JSON that ends too early
    (`ends_too_early`, a character's bytes cut too) and starts with `prefix`, or is cut inside
    it. `None` when there is no such line."""
    end = data.rfind(b"\n") + 1
    tail = data[end:].decode("utf-8", "surrogateescape").strip()
    starts = tail.startswith(prefix) or prefix.startswith(tail)
    return end if tail and starts and ends_too_early(tail) else None


#: What may complete a number or `\uXXXX` escape, or a literal, that a write cut short.
_DIGITS = ("", "0", "00", "000", "0000", "00000")
_COMPLETIONS = (*_DIGITS, "rue", "ue", "e", "alse", "lse", "se", "ull", "ll", "l")


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # Python's NaN and Infinity: not blagent's JSON


def ends_too_early(text: str) -> bool:
    """Whether `text` is JSON cut short by an interrupted write: the parser runs out of text,
    perhaps inside a literal, number or escape (tried with each of `_COMPLETIONS`). Text it
    cannot read before its end (a stray character, Python's `NaN`) is not."""
    for rest in _COMPLETIONS:
        whole = text + rest
        try:
            json.loads(whole, parse_constant=_no_constant)
        except json.JSONDecodeError as err:
            if err.pos >= len(whole) or err.msg.startswith("Unterminated string"):
                return True
        except (ValueError, RecursionError):
            return False
        else:
            if not rest:
                return False  # whole JSON
    return False


#: The stops `main` turns into an unwinding exit; held back while a step must finish whole.
_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """Holds Ctrl-C, SIGTERM and SIGHUP back (on this thread) until the block is done, so that
    a stop never lands between creating a file and the `try` that removes it, nor between an
    output and its digest."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _write_whole(out: Path, text: str) -> None:
    """Writes `text` to `out` in one step (a new file beside it, created exclusively so that
    nothing already there is written through, then renamed over it): an error half way leaves
    `out` as it was and removes the new file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    name = out.with_name(f".{out.name}.{os.getpid()}-{secrets.token_hex(4)}.blagent-part")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with _uninterrupted():
        fd = os.open(name, flags, 0o666)  # the umask's mode, as any file this command writes
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as part:
                part.write(text)
            os.replace(name, out)
        except BaseException:
            os.unlink(name)
            raise


def _lock_path(out: Path) -> Path:
    """`.NAME.blagent-lock` beside `out`, found from `out`'s folder resolved (a last component
    that is a link is not followed; `.` and `..` are resolved first, so that the lock is named
    after the folder they are). The root folder has no name, so no lock: it is refused."""
    where = out.resolve() if out.name in ("", ".", "..") else out.parent.resolve() / out.name
    if not where.name:
        raise OutputRefused(f"{out} is the root folder; name a folder for the output")
    return where.with_name(f".{where.name}.blagent-lock")


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Holds the lock of the output `out` (a file, or `structures`' folder) while a run writes
    it: `.NAME.blagent-lock` beside it, created exclusively (so that it is this run's own, never
    a file already there) and removed when done. A second run on the same output finds it there
    and is refused (`OutputRefused`, naming it) instead of the two replacing each other's files;
    so is a run after one that was killed (a stale lock, to be removed by hand) and any file or
    link of that name, which is left as it is."""
    lock = _lock_path(out)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputRefused(f"{out}: {lock.parent} is not a folder") from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with _uninterrupted():  # a stop between creating the lock and the `try` would leave it
        try:
            fd = os.open(lock, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            raise OutputRefused(
                f"{out} is locked by {lock}: another run is writing it, or a stale lock: "
                "remove it if no run is going"
            ) from None
        mine = os.fstat(fd)
    try:
        yield
    finally:
        with _uninterrupted(), contextlib.suppress(OSError):
            now = os.lstat(lock)
            if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                os.unlink(lock)
        os.close(fd)


class BadInput(ValueError):
    """A line or structure that is not what this command reads."""


def file_name_id(iid: object) -> str:
    """`iid` when it can name a file in a folder (`<id>.json`, `<id>.log`), else `BadInput`:
    no file is written or read outside that folder (`/`, `.`, `..`, empty, NUL refused)."""
    if not isinstance(iid, str) or not iid or Path(iid).name != iid or iid in (".", ".."):
        raise BadInput(f"instance id {iid!r} is not a file name")
    if "\0" in iid:
        raise BadInput(f"instance id {iid!r} holds a NUL")
    return iid


def _json_object(text: str, what: str) -> dict[str, Any]:
    """`text` parsed as a JSON object, else `BadInput` naming `what`."""
    try:
        value = json.loads(text)
    except RecursionError as err:
        raise BadInput(f"{what} is nested too deeply") from err
    except ValueError as err:  # json.JSONDecodeError, or an integer too long to convert
        raise BadInput(f"{what} is not JSON: {err}") from err
    if not isinstance(value, dict):
        raise BadInput(f"{what} is not a JSON object")
    return value


def json_lines(path: Path, what: str) -> list[dict[str, Any]]:
    """The non-blank lines of the JSONL file `path`, each a JSON object, read by `_read_lines`
    (a regular file of at most `MAX_INPUT_BYTES`), else `BadInput` naming `what`, the file
    and the line."""
    return [
        _json_object(line, f"{what} {path} line {n}")
        for n, line in enumerate(_read_lines(path, what), 1)
        if line.strip()
    ]


def check_output(
    out: Path,
    fields: tuple[str, ...],
    inputs: tuple[Path, ...] = (),
    folders: tuple[Path, ...] = (),
    aligned: bool = False,
) -> None:
    """Refuses (`OutputRefused`) to write `out` where it is one of `inputs` (under any name),
    lies inside one of `folders`, is a link or not a regular file, or holds anything but JSON
    lines with `fields` (and, with `aligned`, `align`'s mark): what this module writes there."""
    if out.is_symlink():
        raise OutputRefused(f"{out} is a symbolic link; outputs are not written through one")
    resolved = out.resolve()
    for folder in folders:
        if resolved.is_relative_to(folder.resolve()):
            raise OutputRefused(f"{out} is inside {folder}, which this command reads")
    if not out.exists():
        return
    if not out.is_file():
        raise OutputRefused(f"{out} is not a regular file")
    for source in inputs:
        if source.exists() and out.samefile(source):
            raise OutputRefused(f"{out} is {source}, an input of this command")
    if not _holds_lines_with(out, fields, aligned):
        mark = f" and blagent.{ALIGNED_MARK}" if aligned else ""
        raise OutputRefused(
            f"{out} exists and does not hold what this command writes (JSON lines with "
            f"{', '.join(fields)}{mark}); remove it or choose another file"
        )


def _rows(dataset: Path, ids: set[str] | None) -> list[dict[str, Any]]:
    """The dataset's rows that `ids` selects (all when `None`); an id it lacks is `BadInput`."""
    rows = json_lines(dataset, "dataset")
    for number, row in enumerate(rows, 1):
        if not isinstance(row.get("instance_id"), str):
            raise BadInput(f"{dataset} row {number}: instance_id is not a string")
    unknown = sorted((ids or set()) - {r["instance_id"] for r in rows})
    if unknown:
        raise BadInput(f"{len(unknown)} selected id(s) not in {dataset}: {', '.join(unknown[:5])}")
    return [r for r in rows if ids is None or r.get("instance_id") in ids]


def write_dataset(dataset: Path, work: Path, ids: set[str] | None) -> Path:
    """Writes the selected rows where `load_dataset("princeton-nlp/SWE-bench_Lite")` finds them."""
    out = work / DATASET_DIR / "test.jsonl"
    digest = out.with_name(DATASET_DIGEST)
    check_output(out, ("instance_id",), inputs=(dataset,))
    recorded = _recorded(digest)
    if out.exists() and _sha256(read_regular(out, MAX_INPUT_BYTES, "output")) != recorded:
        raise OutputRefused(
            f"{out} exists and this command did not write it (its digest is not the one in "
            f"{digest.name} beside it); remove it or choose another --work"
        )
    if os.path.lexists(digest) and recorded is None:
        raise OutputRefused(
            f"{digest} exists and this command did not write it (it is not a regular file "
            "of its own holding one SHA-256); remove it or choose another --work"
        )
    rows = _rows(dataset, ids)
    text = "".join(json.dumps(row) + "\n" for row in rows)
    with _locked(out):
        with _uninterrupted():  # the dataset and its digest change together
            _write_whole(out, text)
            _write_whole(digest, _sha256(text.encode()) + "\n")
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _recorded(digest: Path) -> str | None:
    """The digest `write_dataset` recorded in `digest`; `None` where that is not a file it
    wrote: a regular file, not a link of either kind, holding one SHA-256 in hex and a
    newline."""
    try:
        info = digest.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1 or info.st_size > 1024:
        return None
    text = read_regular(digest, 1024, "digest").decode("ascii", "replace")
    return text.strip() if re.fullmatch(r"[0-9a-f]{64}\n", text) else None


def _parser(agentless_src: Path) -> Any:
    """Agentless's `parse_python_file`, imported from the checkout `agentless_src`."""
    if not agentless_src.is_dir():
        raise BadInput(f"--agentless-src {agentless_src} is not a folder (an Agentless checkout)")
    sys.path.insert(0, str(agentless_src))
    try:
        from get_repo_structure.get_repo_structure import parse_python_file  # Agentless's code
    except ImportError as err:
        raise BadInput(
            f"cannot import Agentless's get_repo_structure from {agentless_src} ({err}); run "
            "with Agentless's Python and --agentless-src its checkout"
        ) from err
    return parse_python_file


def _top_folder(row: dict[str, Any], where: str) -> str:
    """The folder Agentless's clone of the row's repository gets (`TOP_FOLDER`, else the
    repository's name), or `BadInput`."""
    repo = row.get("repo")
    name = TOP_FOLDER.get(repo, repo.split("/")[-1]) if isinstance(repo, str) else ""
    if not name or name in (".", ".."):
        raise BadInput(f"{where}: repo {repo!r} is not a repository name (owner/name)")
    return name


def structure_of(tree: Path, top: str, parse_python_file: Any) -> dict[str, Any]:
    """Agentless's structure of `tree` seen as the folder `top`: the walk of its
    `create_structure` (no link to a folder followed; top-level files under `top`, each
    subfolder by its path from the tree), each `.py` file read here and parsed by
    `parse_python_file`. A `.py` file that is not a regular file inside the tree of at most
    `MAX_SOURCE_BYTES` (a link leading out, a link loop, a FIFO, a device) is left out, with a
    note."""
    root = tree.resolve()
    structure: dict[str, Any] = {}
    for folder, _, files in os.walk(root):
        relative = os.path.relpath(folder, root)
        node = structure
        for part in (top if relative == "." else relative).split(os.sep):
            node = node.setdefault(part, {})
        for name in files:
            if not name.endswith(".py"):
                node[name] = {}
                continue
            path = Path(folder) / name
            shown = f"{top}/{name}" if relative == "." else f"{relative}/{name}"
            try:
                target = path.resolve()  # read by this name: no link is followed once checked
            except (RuntimeError, OSError):  # a link loop (RuntimeError before Python 3.13)
                print(f"offline: {tree}: {shown} is a link loop; left out", file=sys.stderr)
                continue
            if not target.is_relative_to(root):
                print(f"offline: {tree}: {shown} leads out of the tree; left out", file=sys.stderr)
                continue
            try:
                data = read_regular(target, MAX_SOURCE_BYTES, "source")
            except BadInput as err:
                print(f"offline: {tree}: {err}; left out", file=sys.stderr)
                continue
            try:  # read as Agentless's `open(path, "r")` reads it: newlines translated
                text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
            except UnicodeDecodeError:
                node[name] = {"classes": [], "functions": [], "text": ""}  # as Agentless's
                continue
            classes, functions, lines = parse_python_file(str(path), text)
            node[name] = {"classes": classes, "functions": functions, "text": lines}
    return structure


def write_structures(
    dataset: Path, repos: Path, out: Path, agentless_src: Path, ids: set[str] | None
) -> int:
    """Writes Agentless's structure JSON of each selected instance's tree; returns how many.
    Every row and output is checked before anything is created, and a folder `out` this run
    created is removed if it is still empty when the run fails."""
    parse_python_file = _parser(agentless_src)
    rows = _rows(dataset, ids)
    tops, trees = [], []
    for row in rows:
        try:
            iid = file_name_id(row.get("instance_id"))
        except BadInput as err:
            raise OutputRefused(f"{err}; no structure written") from err
        tops.append(_top_folder(row, f"{dataset}: instance {iid}"))
        trees.append(repos / iid)
    # Each tree is read where it leads (a tree linked from `repos` to a checkout elsewhere), so
    # no structure, nor the lock beside `out`, may land in one: it would join its structure.
    # Every structure lies in `out`, so `out` is what is checked against the trees, each tree
    # resolved once (checking each structure against every tree took N² resolutions: 18 s
    # for 800 instances).
    resolved = out.resolve()
    for folder in (repos, *trees):
        if resolved.is_relative_to(folder.resolve()):
            raise OutputRefused(f"{out} is inside {folder}, which this command reads")
    for tree in trees:
        check_output(out / f"{tree.name}.json", ("structure",), (dataset,))
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise OutputRefused(f"--out {out} is not a folder; give the folder for the structures")
    with _locked(out):
        created = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
        try:
            return _write_each_structure(rows, tops, repos, out, parse_python_file)
        except BaseException:
            if created and not any(out.iterdir()):
                out.rmdir()
            raise


def _write_each_structure(
    rows: list[dict[str, Any]], tops: list[str], repos: Path, out: Path, parse_python_file: Any
) -> int:
    count = 0
    for row, top in zip(rows, tops, strict=True):
        tree = repos / row["instance_id"]
        if not tree.is_dir():
            print(f"offline: no tree at {tree}; skipped", file=sys.stderr)
            continue
        record = {
            "repo": row["repo"],
            "base_commit": row.get("base_commit"),
            "structure": structure_of(tree, top, parse_python_file),
            "instance_id": row["instance_id"],
        }
        _write_whole(out / f"{row['instance_id']}.json", json.dumps(record))
        count += 1
    return count


def is_file_node(value: dict[str, Any]) -> bool:
    """Agentless's test (`get_full_file_paths_and_classes_and_functions`): a file's node has
    exactly three keys, among them `classes`, `functions` or `text`; anything else is a folder,
    one that holds a subfolder named `text` (matplotlib's `tutorials/text`) included."""
    return len(value) == 3 and any(k in value for k in ("classes", "functions", "text"))


def python_files(structure: dict[str, Any], prefix: str = "") -> set[str]:
    """Paths of the Python files of an Agentless structure that survive its test filter."""
    found = set()
    for name, value in structure.items():
        if name.startswith("test") or not isinstance(value, dict):
            continue
        path = f"{prefix}{name}"
        if not is_file_node(value):
            found |= python_files(value, path + "/")
        elif name.endswith(".py"):
            found.add(path)
    return found


def align(start_file: Path, structures: Path, out: Path, top_n: int = 3) -> tuple[int, int]:
    """Writes `start_file` with each `found_files` cut to what Agentless can open; returns
    (lines, paths dropped). A related-level line names the first `top_n` files kept (the
    `--top_n` of Agentless's edit-location stage)."""
    check_output(
        out, ("instance_id", "found_files"), (start_file,), folders=(structures,), aligned=True
    )
    if top_n < 1:
        raise BadInput(f"--top-n must be at least 1, not {top_n}")
    lines, dropped_total = 0, 0
    written: list[str] = []
    for number, text in enumerate(_read_lines(start_file, "start file"), 1):
        if not text.strip():
            continue
        where = f"{start_file} line {number}"
        line = _json_object(text, where)
        found = line.get("found_files")
        if not isinstance(found, list) or not all(isinstance(f, str) for f in found):
            raise BadInput(f"{where}: found_files is not a list of paths")
        if not isinstance(line.get("blagent", {}), dict):
            raise BadInput(f"{where}: blagent is not a JSON object")
        iid = file_name_id(line.get("instance_id"))
        structure_file = structures / f"{iid}.json"
        structure_text = "".join(_read_lines(structure_file, "structure"))
        record = _json_object(structure_text, str(structure_file))
        if not isinstance(record.get("structure"), dict):
            raise BadInput(f"{structure_file} has no structure object")
        known = python_files(record["structure"])
        kept = [f for f in found if f in known]
        dropped = [f for f in found if f not in known]
        line["found_files"] = kept
        related = line.get("found_related_locs")
        more = line.get("blagent_related_locs")
        if isinstance(related, dict) and isinstance(more, dict):
            # Agentless's edit location reads the first `--top_n` files and opens every
            # file named here: the first `top_n` kept ones, each with its locations from
            # blagent's longer list (a dropped file leaves room for the next).
            line["found_related_locs"] = {
                f: more.get(f, related.get(f, [""])) for f in kept[:top_n]
            }
        elif isinstance(related, dict):
            line["found_related_locs"] = {f: v for f, v in related.items() if f in known}
        extra = line.setdefault("blagent", {})
        extra[ALIGNED_MARK] = True
        if dropped:
            extra["dropped_for_agentless"] = dropped
            dropped_total += len(dropped)
        written.append(json.dumps(line) + "\n")
        lines += 1
    with _locked(out):
        _write_whole(out, "".join(written))
    return lines, dropped_total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentless_adapter.offline",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("dataset", "structures"):
        p = sub.add_parser(name)
        p.add_argument("--dataset", type=Path, required=True, help="local SWE-bench-style JSONL")
        p.add_argument("--ids", help="comma-separated instance ids (all when absent)")
    sub.choices["dataset"].add_argument(
        "--work", type=Path, required=True, help="the folder Agentless runs from"
    )
    st = sub.choices["structures"]
    st.add_argument("--repos", type=Path, required=True, help="trees at REPOS/<instance_id>")
    st.add_argument("--out", type=Path, required=True, help="the PROJECT_FILE_LOC folder")
    st.add_argument("--agentless-src", type=Path, required=True, help="an Agentless checkout")
    al = sub.add_parser("align")
    al.add_argument("--start-file", type=Path, required=True)
    al.add_argument("--structures", type=Path, required=True, help="the PROJECT_FILE_LOC folder")
    al.add_argument("--out", required=True, help="the aligned file (not a folder)")
    al.add_argument("--top-n", type=int, default=3, help="Agentless's --top_n (default 3)")
    args = parser.parse_args(argv)
    ids = set(args.ids.split(",")) if getattr(args, "ids", None) else None
    # A stop by SIGTERM or SIGHUP unwinds as Ctrl-C does, so that an output's lock is removed
    # (only `kill -9` leaves one behind); one the caller ignores (`nohup`) stays ignored, and
    # the caller's handlers are back when `main` returns.
    stops = (signal.SIGTERM, signal.SIGHUP)
    main_thread = threading.current_thread() is threading.main_thread()  # handlers live there
    before = {stop: signal.getsignal(stop) for stop in stops} if main_thread else {}
    for stop, handler in before.items():
        if handler == signal.SIG_DFL:
            signal.signal(stop, _exit_on)
    try:
        return _run(args, ids)
    except (OutputRefused, BadInput, UnicodeDecodeError) as e:
        print(f"offline: {e}", file=sys.stderr)
        return 1
    except RecursionError:
        print("offline: an input is nested too deeply", file=sys.stderr)
        return 1
    except RuntimeError as e:  # Path.resolve on a link loop (an output, --repos, --work)
        print(f"offline: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("offline: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # a write that failed (a full disk, a file size limit): an I/O error
        where = f"{e.filename}: " if e.filename else ""
        print(f"offline: {where}{e.strerror or e}", file=sys.stderr)
        return 3
    finally:
        for stop, handler in before.items():
            signal.signal(stop, handler)


def _exit_on(signum: int, _frame: object) -> None:
    """Ends the run with the shell's status for `signum` (128 + it), running every `finally`."""
    raise SystemExit(128 + signum)


def _run(args: argparse.Namespace, ids: set[str] | None) -> int:
    if args.command == "dataset":
        print(f"offline: wrote {write_dataset(args.dataset, args.work, ids)}", file=sys.stderr)
    elif args.command == "structures":
        count = write_structures(args.dataset, args.repos, args.out, args.agentless_src, ids)
        print(f"offline: wrote {count} structures to {args.out}", file=sys.stderr)
    else:
        if args.out.endswith(os.sep):  # Path() would drop the slash and write a file there
            raise OutputRefused(f"--out {args.out} names a folder; give a file name")
        lines, dropped = align(args.start_file, args.structures, Path(args.out), args.top_n)
        print(
            f"offline: {lines} lines to {args.out}; {dropped} paths Agentless cannot open dropped",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
