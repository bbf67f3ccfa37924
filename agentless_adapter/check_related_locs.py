"""Checks related-level lines (`blagent batch --related-locs`) with Agentless's own code: for
each line, the top files are parsed with Agentless's `parse_python_file` and every location
string goes through `transfer_arb_locs_to_locs`, the function its edit-location stage uses to
turn `found_related_locs` into the code it shows the model. A location resolves when Agentless
finds a class or function span for it.

    python -m agentless_adapter.check_related_locs --agentless-src DIR --locs loc_outputs.jsonl --repos TREES

Needs an Agentless checkout (not part of this repository) and its parsing dependencies
(`libcst`, `pandas`, `tqdm`) in the running interpreter. Prints one line per instance and the
totals; exits 1 when a location does not resolve, and on bad input (a `--locs` that is not a
regular file of JSON object lines, an instance id that is not a file name, locations that are
not `{path: [text]}`), with a one-line error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .loc_format import read_loc_outputs
from .offline import MAX_SOURCE_BYTES, BadInput, file_name_id, read_regular


def source_text(tree: Path, rel: str) -> str | None:
    """The text of `rel` in `tree`, or None where it is not a regular file inside the tree of
    at most `MAX_SOURCE_BYTES` (an absolute path, `..` or a link leading out, a link loop, a
    FIFO, a device): the paths come from the loc line, and nothing outside the tree is read."""
    try:
        root = tree.resolve()
        file = (tree / rel).resolve()
    except (RuntimeError, OSError, ValueError):  # a link loop (RuntimeError before 3.13), a NUL
        return None
    if file == root or not file.is_relative_to(root):
        return None
    try:
        data = read_regular(file, MAX_SOURCE_BYTES, "source")
    except BadInput:
        return None
    return data.decode("utf-8", errors="replace")


def structure_of(tree: Path, paths: list[str], parse_python_file: Any) -> dict[str, Any]:
    """Agentless's nested repository structure, holding only `paths`."""
    root: dict[str, Any] = {}
    for rel in paths:
        text = source_text(tree, rel)
        if text is None:
            continue
        classes, functions, lines = parse_python_file(None, text)
        node = root
        *dirs, name = rel.split("/")
        for part in dirs:
            node = node.setdefault(part, {})
        node[name] = {"classes": classes, "functions": functions, "text": lines}
    return root


def _check_line(line: dict[str, Any], where: str) -> None:
    """`BadInput` unless `line` names its instance by a file name and its related locations
    are `{path: [text]}`: what `main` reads of it."""
    try:
        file_name_id(line.get("instance_id"))
    except BadInput as err:
        raise BadInput(f"{where}: {err}") from None
    related = line.get("found_related_locs") or {}
    if not isinstance(related, dict) or not all(
        isinstance(locs, list) and all(isinstance(text, str) for text in locs)
        for locs in related.values()
    ):
        raise BadInput(f"{where}: found_related_locs is not {{path: [locations]}}")


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except RuntimeError as err:  # Path.resolve on a link loop (a tree, --repos, --agentless-src)
        print(f"check_related_locs: {err}", file=sys.stderr)
        return 1


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--agentless-src", required=True, type=Path)
    ap.add_argument("--locs", required=True, type=Path)
    ap.add_argument("--repos", required=True, type=Path)
    args = ap.parse_args(argv)
    try:
        lines = read_loc_outputs(args.locs)
        for number, line in enumerate(lines, 1):
            _check_line(line, f"{args.locs} line {number}")
    except BadInput as err:
        print(f"check_related_locs: {err}", file=sys.stderr)
        return 1
    sys.path.insert(0, str(args.agentless_src.resolve()))
    try:
        from agentless.util.preprocess_data import transfer_arb_locs_to_locs  # type: ignore[import-not-found]
        from get_repo_structure.get_repo_structure import parse_python_file  # type: ignore[import-not-found]
    except ImportError as err:
        print(
            f"check_related_locs: cannot import Agentless from {args.agentless_src} ({err}); run "
            "with a Python that has its requirements and --agentless-src its checkout",
            file=sys.stderr,
        )
        return 1

    total = resolved = 0
    for line in lines:
        related: dict[str, list[str]] = line.get("found_related_locs") or {}
        tree = args.repos / line["instance_id"]
        if not tree.resolve().is_relative_to(args.repos.resolve()):
            print(f"{line['instance_id']}: not a tree inside {args.repos}; skipped")
            continue
        structure = structure_of(tree, list(related), parse_python_file)
        counts = []
        for path, locs in related.items():
            wanted = [loc for text in locs for loc in text.splitlines() if loc.strip()]
            spans, _ = transfer_arb_locs_to_locs(
                locs, structure, path, file_content=source_text(tree, path) or ""
            )
            total += len(wanted)
            resolved += min(len(spans), len(wanted))
            counts.append(f"{path} {min(len(spans), len(wanted))}/{len(wanted)}")
        print(f"{line['instance_id']}: " + "; ".join(counts))
    print(f"resolved {resolved} of {total} locations")
    return 0 if resolved == total else 1


if __name__ == "__main__":
    sys.exit(main())
