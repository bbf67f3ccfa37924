"""Checks related-level lines (`blagent batch --related-locs`) with Agentless's own code: for
each line, the top files are parsed with Agentless's `parse_python_file` and every location
goes through `transfer_arb_locs_to_locs`, the function its edit-location stage uses to turn
`found_related_locs` into the code it shows the model. A location is a `class:`/`function:`
line, or a run of `line: N` lines (how blagent writes an entity Agentless would not find by its
name). It resolves when Agentless finds code for it, and it is right when that code lies within
the entity of blagent's result (`blagent.entities`) that the location names; a name Agentless
resolves to other code (another class's method of that name, the first of two definitions) is
wrong.

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


def agentless_name(entity: dict[str, Any]) -> str:
    """The location blagent writes for `entity` by name: `class: C`, `function: f` or
    `function: C.m`, with only the innermost class."""
    parts = str(entity.get("name", "")).rsplit(".", 2)
    if entity.get("kind") == "class":
        return "class: " + parts[-1]
    if len(parts) == 1:
        return "function: " + parts[0]
    return f"function: {parts[-2]}.{parts[-1]}"


def location_groups(text: str) -> list[str]:
    """The locations of one file's text: each `class:`/`function:` line alone, each run of
    `line: N` lines together."""
    groups: list[str] = []
    lines_run = False
    for loc in (line.strip() for line in text.splitlines()):
        if not loc:
            continue
        is_line = loc.startswith("line: ")
        if is_line and lines_run:
            groups[-1] += "\n" + loc
        else:
            groups.append(loc)
        lines_run = is_line
    return groups


def lands_right(group: str, spans: list[tuple[int, int]], entities: list[dict[str, Any]]) -> bool:
    """Whether the code Agentless shows for a location (`spans`) is the entity's it names: for
    a name, within an entity of that name; for `line:` lines (one entity's, or the adjacent
    runs of several), each within an entity of the file."""
    holders = [
        (e["lines"][0], e["lines"][1])
        for e in entities
        if isinstance(e.get("lines"), list)
        and len(e["lines"]) == 2
        and (group.startswith("line: ") or agentless_name(e) == group)
    ]
    if group.startswith("line: "):
        return all(any(s <= a and b <= e for s, e in holders) for a, b in spans)
    return any(all(s <= a and b <= e for a, b in spans) for s, e in holders)


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

    total = resolved = wrong = 0
    for line in lines:
        related: dict[str, list[str]] = line.get("found_related_locs") or {}
        tree = args.repos / line["instance_id"]
        if not tree.resolve().is_relative_to(args.repos.resolve()):
            print(f"{line['instance_id']}: not a tree inside {args.repos}; skipped")
            continue
        result = line.get("blagent")
        entities = result.get("entities") if isinstance(result, dict) else None
        structure = structure_of(tree, list(related), parse_python_file)
        counts = []
        for path, locs in related.items():
            content = source_text(tree, path) or ""
            mine = [e for e in entities or [] if isinstance(e, dict) and e.get("path") == path]
            found = bad = 0
            groups = [group for text in locs for group in location_groups(text)]
            for group in groups:
                spans, _ = transfer_arb_locs_to_locs([group], structure, path, file_content=content)
                found += bool(spans)
                if spans and entities is not None and not lands_right(group, spans, mine):
                    bad += 1
                    print(
                        f"  {line['instance_id']} {path}: {group.splitlines()[0]!r} shows {spans}"
                    )
            total += len(groups)
            resolved += found
            wrong += bad
            counts.append(f"{path} {found}/{len(groups)}" + (f" ({bad} wrong)" if bad else ""))
        print(f"{line['instance_id']}: " + "; ".join(counts))
    print(f"resolved {resolved} of {total} locations, {wrong} of them to other code")
    return 0 if resolved == total and wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
