#!/usr/bin/env python3
"""How blagent holds against hostile inputs: the deepest nesting that indexes, and the time to
localize a megabyte of hostile issue text.

    python bench/hostile_bench.py [--repo TREE] [--max-depth 1000000]

Nesting: for Python (parentheses, brackets, classes), Java (blocks, parentheses) and Kotlin
(parentheses, lambdas), files nested 1k, 10k, 100k, … levels deep are localized in a child
process each; prints the seconds, the files ranked, the regions listed as `nested_too_deep`,
or how the child died. Issue text: `'a.' * 500_000` and three other one-megabyte texts against
TREE (default: a small generated repository), each in a child process, with the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

NESTINGS = {
    "python-parens": ("gen.py", lambda n: "x = " + "(" * n + "1" + ")" * n + "\n"),
    "python-brackets": ("gen.py", lambda n: "x = " + "[" * n + "1" + "]" * n + "\n"),
    "python-classes": (
        "gen.py",
        lambda n: "".join(" " * i + f"class C{i}:\n" for i in range(n)) + " " * n + "pass\n",
    ),
    "java-blocks": (
        "Gen.java",
        lambda n: "class Gen { void f() { " + "{" * n + "g();" + "}" * n + " } }\n",
    ),
    "java-parens": (
        "Gen.java",
        lambda n: "class Gen { int x = " + "(" * n + "1" + ")" * n + "; }\n",
    ),
    "kotlin-parens": ("Gen.kt", lambda n: "fun f() = " + "(" * n + "1" + ")" * n + "\n"),
    "kotlin-lambdas": ("Gen.kt", lambda n: "fun f() { " + "run {" * n + "g()" + "}" * n + " }\n"),
}

ISSUES = {
    "'a.' * 500k": "a." * 500_000,
    "'a/' * 500k": "a/" * 500_000,
    "'a_b ' * 250k": "a_b " * 250_000,
    "'f(' * 500k": "f(" * 500_000,
}

CHILD = """
import json, sys, time
from blagent import Localizer
started = time.monotonic()
result = Localizer(progress=False).localize(sys.argv[1], open(sys.argv[2]).read())
deep = [s for s in result.skipped if s.reason == "nested_too_deep"]
print(json.dumps({"seconds": time.monotonic() - started, "files": len(result.files), "deep": len(deep)}))
"""


def localize_in_child(repo: str, issue: str, timeout: float) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as fh:
        fh.write(issue)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, repo, fh.name],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"still running after {timeout:.0f} s"
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        return f"died: exit {proc.returncode} {proc.stderr.strip()[-200:]}"
    out = json.loads(proc.stdout)
    return f"{out['seconds']:.2f} s, {out['files']} files ranked, {out['deep']} deep regions listed"


def small_repo(root: str) -> str:
    os.makedirs(os.path.join(root, "pkg"), exist_ok=True)
    for name in ("a", "b", "c"):
        with open(os.path.join(root, "pkg", f"{name}.py"), "w") as fh:
            fh.write(f"def {name}_function(x):\n    return x\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repo", help="tree for the issue-text cases (default: a small generated one)"
    )
    parser.add_argument("--max-depth", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("\n## Nesting")
    with tempfile.TemporaryDirectory() as tmp:
        for name, (file_name, make) in NESTINGS.items():
            depth = 1000
            # Classes nest by indentation: the file grows with the square of the depth.
            limit = min(args.max_depth, 1000 if name == "python-classes" else args.max_depth)
            while depth <= limit:
                repo = os.path.join(tmp, f"{name}-{depth}")
                os.makedirs(repo)
                with open(os.path.join(repo, file_name), "w") as fh:
                    fh.write(make(depth))
                print(
                    f"{name:16} depth {depth:>9,}: {localize_in_child(repo, 'f is wrong', args.timeout)}",
                    flush=True,
                )
                depth *= 10
        print("\n## One megabyte of hostile issue text")
        repo = args.repo or small_repo(os.path.join(tmp, "small"))
        for name, text in ISSUES.items():
            started = time.monotonic()
            outcome = localize_in_child(repo, text, args.timeout)
            print(
                f"{name:14} ({len(text) / 1e6:.1f} MB) on {os.path.basename(repo)}: {outcome} (child wall {time.monotonic() - started:.2f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
