"""Text reports of `blagent eval`, `blagent compare` and `blagent calibrate`. Names a dataset
or a run file gives (repositories, runs, instance ids, warnings) are escaped where they are
put in a line, so a newline in one cannot start a line of its own."""

from __future__ import annotations

from typing import Any

from ._io import printable as _p


def _header(width: int = 28) -> str:
    return f"{'':<{width}} {'n':>4}  {'MRR':<5}  {'Acc@1 @3    @5    @10':<23}  {'any@1 @3    @5    @10':<23}  MAP@1 @5    @10"


HEADER = _header()
READINGS = (
    "Acc@k: every gold item in the top k (LocAgent's reading); any@k: some gold item in the top k "
    "(SWE-bench papers' reading)"
)


def _metrics_row(name: str, m: dict[str, Any], width: int = 28) -> str:
    acc = " ".join(f"{v:.3f}" for v in m["acc"])
    any_ = " ".join(f"{v:.3f}" for v in m["acc_any"])
    maps = " ".join(f"{v:.3f}" for v in m["map"])
    return f"{_p(name):<{width}} {m['instances']:>4}  {m['mrr']:.3f}  {acc}  {any_}  {maps}"


def _llm_line(llm: dict[str, Any]) -> str:
    total, mean = llm["total"], llm["mean"]
    return (
        f"llm ({llm['pipeline']}, {llm['model']}): {llm['llm_ranked']}/{llm['instances']} ranked by the model; "
        f"prompt tokens {total['prompt_tokens']} (mean {mean['prompt_tokens']:.0f}), "
        f"completion tokens {total['completion_tokens']} (mean {mean['completion_tokens']:.0f}), "
        f"calls {total['calls']}, parse failures {total['parse_failures']}, retries {total['retries']}, "
        f"fallbacks {total['fallbacks']}, mean model weight {mean.get('model_weight', 0.0):.2f}, "
        f"mean wall {mean['wall_ms']:.0f} ms"
    )


def format_report(report: dict[str, Any]) -> str:
    """The evaluation report as a table (MRR, Acc@1/3/5/10, MAP@1/5/10)."""
    lines = [HEADER, _metrics_row("overall", report["overall"])]
    lines += [
        _metrics_row(f"language {lang}", m) for lang, m in report.get("per_language", {}).items()
    ]
    lines += [_metrics_row(repo or "(no repo)", m) for repo, m in report["per_repo"].items()]
    functions = report.get("functions")
    if functions:
        unknown = len(functions.get("functions_not_known", []))
        parsed = (
            f", {unknown} whose gold patch does not parse or whose patched file took too long to parse"
            if unknown
            else ""
        )
        lines.append(
            f"function level ({len(functions['no_gold_functions'])} instances without a gold "
            f"function{parsed} left out):"
        )
        lines.append(_metrics_row("  overall", functions["overall"]))
        lines += [
            _metrics_row(f"  language {lang}", m)
            for lang, m in functions.get("per_language", {}).items()
        ]
        lines += [
            _metrics_row(f"  {repo or '(no repo)'}", m) for repo, m in functions["per_repo"].items()
        ]
    lines.append(READINGS)
    if report["missing_trees"]:
        lines.append(f"instances without a tree: {len(report['missing_trees'])}")
    if report.get("no_gold_files"):
        lines.append(
            f"instances whose gold patch names no file (left out): {len(report['no_gold_files'])}"
        )
    for iid, err in report["failures"]:
        lines.append(f"failed: {_p(iid)}: {_p(err)}")
    rewrites = report.get("rewrites")
    if rewrites:
        lines.append(f"with the given rewrites ({rewrites['instances']} instances):")
        lines.append(_metrics_row("  dense, structural (T0)", rewrites["dense_structural"]))
        lines.append(_metrics_row("  dense, behavioral (T1)", rewrites["dense_behavioral"]))
        lines.append(
            f"  pool unique(T0[:8]+T1[:8]) <= 15: recall {rewrites['pool_recall']:.3f}, "
            f"mean size {rewrites['pool_mean_size']:.1f}; fused top-15 recall {rewrites['fused_recall_at_cap']:.3f}; "
            f"pool unique(T0[:8]+T1[:8]+fused[:8]) <= 15: recall {rewrites['hybrid_pool_recall']:.3f}, "
            f"mean size {rewrites['hybrid_pool_mean_size']:.1f}"
        )
    dense = report.get("dense")
    if dense:
        lines.append(
            f"dense: {dense['embedded']} chunks embedded, {dense['cached']} from cache, "
            f"{dense['indexes_loaded']} vector indexes loaded, {dense['seconds']:.1f} s"
        )
    if report.get("llm"):
        lines.append(_llm_line(report["llm"]))
    lines.append(f"seconds: {report['seconds']:.1f}")
    return "\n".join(lines)


def _interval(i: dict[str, float]) -> str:
    return f"{i['delta']:+.3f} [{i['low']:+.3f}, {i['high']:+.3f}]"


def format_comparison(report: dict[str, Any]) -> str:
    """`blagent compare`: each run's metrics (overall, then per repository), then each run
    against the baseline with its paired tests."""
    items = "functions" if report.get("granularity") == "function" else "files"
    # Runs are told apart by their whole names: the column is as wide as the longest needs.
    width = max([28] + [len(_p(run["name"])) + 2 for run in report["runs"]])
    lines = [
        f"{report['instances']} instances, {items}; baseline: {_p(report['baseline'])}",
        _header(width),
    ]
    for run in report["runs"]:
        missing = f" ({run['missing']} without a line)" if run["missing"] else ""
        lines.append(_metrics_row(run["name"], run["overall"], width) + missing)
    repos = sorted(report["runs"][0]["per_repo"])
    for repo in repos:
        lines.append(f"{_p(repo)}:")
        lines += [
            _metrics_row(f"  {run['name']}", run["per_repo"][repo], width) for run in report["runs"]
        ]
    lines.append(READINGS)
    lines.append(
        f"against the baseline: Δ with a paired bootstrap 95% interval ({report['resamples']} "
        f"resamples, seed {report['seed']}), in both readings; McNemar's exact test on Acc@1 and "
        "any@1 (b: only the baseline right, c: only the run); Wilcoxon's signed-rank test on "
        "reciprocal ranks (normal approximation)"
    )
    for d in report["differences"]:
        m, m_any, w = d["mcnemar_acc1"], d["mcnemar_acc1_any"], d["wilcoxon_rr"]
        acc = "  ".join(f"ΔAcc@{k} {_interval(i)}" for k, i in zip((1, 5, 10), d["acc"]))
        any_ = "  ".join(f"Δany@{k} {_interval(i)}" for k, i in zip((1, 5, 10), d["acc_any"]))
        lines.append(
            f"{_p(d['run']):<{width}} {_p(d['scope']):<22} n={d['instances']:<4} "
            f"ΔMRR {_interval(d['mrr'])}  {acc}  {any_}  "
            f"McNemar b={m['baseline_only']} c={m['run_only']} p={m['p']:.3g}  "
            f"McNemar any b={m_any['baseline_only']} c={m_any['run_only']} p={m_any['p']:.3g}  "
            f"Wilcoxon p={w['p']:.3g}"
        )
    for warning in report["warnings"]:
        lines.append(f"warning: {_p(warning)}")
    return "\n".join(lines)


def format_calibration(report: dict[str, Any]) -> str:
    """The calibration report: each candidate scale's training score, the choice, and what it
    is worth on instances the fit did not see."""
    profile = report["profile"]
    fit = profile["fit"]
    lines = [
        f"calibrated {profile['model']!r} ({profile['pipeline']}) on {fit['instances']} instances, "
        f"{fit['folds']}-fold cross-validation",
        f"{'weight scale':>12}  {'MRR':<5}  Acc@1   (training: all instances)",
    ]
    for s in fit["scales"]:
        mark = "  <- chosen" if s["scale"] == fit["chosen"]["scale"] else ""
        lines.append(f"{s['scale']:>12g}  {s['mrr']:.3f}  {s['acc1']:.3f}{mark}")
    cv, free, default = fit["cross_validated"], fit["retrieval_only"], fit["default"]
    lines.append(
        f"cross-validated (each fold at the scale this procedure gives without it): "
        f"MRR {cv['mrr']:.3f}, Acc@1 {cv['acc1']:.3f}"
    )
    lines.append(f"retrieval alone (scale 0): MRR {free['mrr']:.3f}, Acc@1 {free['acc1']:.3f}")
    lines.append(f"default (scale 1): MRR {default['mrr']:.3f}, Acc@1 {default['acc1']:.3f}")
    gain, chosen = report["gain_over_default"], fit["chosen"]["scale"]
    sign = report["sign_test"]
    lines.append(
        f"gain of scale {chosen:g} over the default: MRR {gain['delta']:+.3f} "
        f"[{gain['low']:+.3f}, {gain['high']:+.3f}] (paired bootstrap 95%); "
        f"better on {sign['run_only']}, worse on {sign['baseline_only']}, "
        f"sign test p {sign['p']:.3g}"
    )
    if profile["weight_scale"] != chosen:
        lines.append(
            "  not significant on these instances (a raised scale needs the interval above 0 "
            "and p < 0.05): the default scale is written"
        )
    lines.append(f"weight_scale {profile['weight_scale']:g} written to {report['out']}")
    if report["missing_trees"]:
        lines.append(f"instances without a tree: {len(report['missing_trees'])}")
    if report["no_gold"]:
        lines.append(
            f"instances without a gold file in the index (left out): {len(report['no_gold'])}"
        )
    for iid, err in report["failures"]:
        lines.append(f"failed: {_p(iid)}: {_p(err)}")
    lines.append(_llm_line(report["llm"]))
    lines.append(f"seconds: {report['seconds']:.1f}")
    return "\n".join(lines)
