#!/usr/bin/env python3
"""How far to trust a model: the LLM pipeline's final ranking at several model weights, by replay.

    python bench/llm_weight_sweep.py --repos TREES --ids-file DEV_IDS --replay RUN.cassette.jsonl
                                     [--model NAME] [--pipeline blagent] [--weights auto,0,0.25,1]

The final ranking adds `w/(1 + a)` for a file's rank `a` in the model's order to `1/(1 + r)` for
its retrieval rank `r` (`rust/blagent-core/src/agent/rank.rs`). By default `w` is the share of
the model's replies that were valid. This script replays a recorded run (`bench/llm_eval.py
--record`, or any `blagent eval --llm-record`) once per weight, so no model is called, and
prints MRR and Acc@1/3/5/10 per weight next to `w = 0` (retrieval's ranking). Pick the weight on
instances you do not report on, then pass it as `--llm-option model_weight=W`.
Benchmark tooling only: not part of the wheel nor of its dependencies.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_eval import DATA, ROOT, blagent_eval, row


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--repos", required=True, type=Path, help="one tree per instance: DIR/<instance_id>"
    )
    ap.add_argument("--replay", required=True, type=Path, help="the recorded run's cassette")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b-instruct", help="as recorded")
    ap.add_argument("--dataset", type=Path, default=DATA / "swebench_lite.jsonl")
    ap.add_argument("--ids-file", type=Path, default=DATA / "lite_sample30.txt")
    ap.add_argument("--pipeline", choices=["blagent", "rrl"], default="blagent")
    ap.add_argument("--weights", default="auto,0,0.1,0.25,0.5,1,2")
    ap.add_argument("--out-dir", type=Path, default=Path("llm-weight-sweep"))
    ap.add_argument("--blagent", default=str(ROOT / ".venv" / "bin" / "blagent"))
    args = ap.parse_args()
    if not args.replay.is_file():
        sys.exit(f"no cassette at {args.replay}")
    args.out_dir.mkdir(parents=True, exist_ok=True)

    replay = ["--pipeline", args.pipeline, "--llm-replay", str(args.replay)]
    replay += ["--llm-model", args.model]
    print(f"{'model weight':<26} {'n':>3}  MRR    Acc@1  Acc@3  Acc@5  Acc@10  s/inst")
    for weight in args.weights.split(","):
        extra = list(replay)
        if weight != "auto":
            extra += ["--llm-option", f"model_weight={float(weight)}"]
        report, seconds = blagent_eval(args, args.out_dir / f"w_{weight}.jsonl", extra)
        label = "auto (valid-reply share)" if weight == "auto" else f"w = {weight}"
        print(row(label, report["overall"], seconds), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
