//! End-to-end failure-stage analysis over a generated-patch set with known answers: a small
//! shop repository, gold patches, and generated patches that fail at every stage.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use blagent_core::analysis::{
    analyze_failures, write_outputs, AnalysisConfig, AnalysisReport, FunctionRule, LineVerdict,
    Stage,
};

use serde_json::json;

const INIT: &str = include_str!("../fixtures/analysis_shop/shop/__init__.py");

const PRICING: &str = include_str!("../fixtures/analysis_shop/shop/pricing.py");

const INVENTORY: &str = include_str!("../fixtures/analysis_shop/shop/inventory.py");

const CART: &str = include_str!("../fixtures/analysis_shop/shop/cart.py");

const FILES: [(&str, &str); 4] = [
    ("shop/__init__.py", INIT),
    ("shop/pricing.py", PRICING),
    ("shop/inventory.py", INVENTORY),
    ("shop/cart.py", CART),
];

/// A git patch applying each `(path, from, to)` replacement; a path not in the repository is
/// created with `to` as its content.
fn patch(edits: &[(&str, &str, &str)]) -> String {
    let mut out = String::new();
    for &(path, from, to) in edits {
        let old = FILES.iter().find(|f| f.0 == path).map_or("", |f| f.1);
        let new = if old.is_empty() {
            to.to_owned()
        } else {
            old.replacen(from, to, 1)
        };
        assert_ne!(old, new, "edit of {path} changes nothing");
        let a = if old.is_empty() {
            "/dev/null".to_owned()
        } else {
            format!("a/{path}")
        };
        let diff = similar::TextDiff::from_lines(old, &new);
        let _ = write!(
            out,
            "diff --git a/{path} b/{path}\n{}",
            diff.unified_diff().header(&a, &format!("b/{path}"))
        );
    }
    out
}

const DISCOUNT_FIX: [(&str, &str, &str); 1] = [(
    "shop/pricing.py",
    "        # percent is 0..100\n        factor = 1 - percent / 100",
    "        # percent is clamped to 0..100\n        factor = 1 - min(percent, 100) / 100",
)];
const AVERAGE_FIX: [(&str, &str, &str); 1] = [(
    "shop/pricing.py",
    "average = total / count\n",
    "average = total / count if count else 0\n",
)];

/// `(instance id, gold edits, generated edits, found files, function entries, expected stage)`.
type Case = (
    &'static str,
    Vec<(&'static str, &'static str, &'static str)>,
    Vec<(&'static str, &'static str, &'static str)>,
    Vec<&'static str>,
    serde_json::Value,
    Stage,
);

fn cases() -> Vec<Case> {
    let errors = (
        "shop/errors.py",
        "",
        "class PricingError(ValueError):\n    \"\"\"Bad price.\"\"\"\n",
    );
    let shipping = ("shop/pricing.py", "taxed < 50", "taxed <= 50");
    vec![
        (
            "shop-resolved",
            vec![shipping, errors],
            vec![shipping, errors],
            vec!["shop/pricing.py", "shop/errors.py"],
            json!(null),
            Stage::Resolved,
        ),
        (
            "shop-file",
            vec![(
                "shop/inventory.py",
                "if quantity > available:",
                "if quantity <= 0 or quantity > available:",
            )],
            vec![(
                "shop/cart.py",
                "self.items.append(item)",
                "self.items.append(item.copy())",
            )],
            vec![
                "shop/cart.py",
                "shop/pricing.py",
                "shop/__init__.py",
                "shop/inventory.py",
            ],
            json!(null),
            Stage::File,
        ),
        (
            "shop-function",
            DISCOUNT_FIX.to_vec(),
            vec![(
                "shop/pricing.py",
                "return round_price(taxed + shipping)",
                "return round_price(taxed) + shipping",
            )],
            vec!["shop/pricing.py", "shop/cart.py"],
            json!([
                ["function: Pricer.total\nclass: Cart"],
                ["function: Cart.total"]
            ]),
            Stage::Function,
        ),
        (
            "shop-line",
            AVERAGE_FIX.to_vec(),
            vec![(
                "shop/pricing.py",
                "lines = [\"orders\"]",
                "lines = [\"orders:\"]",
            )],
            vec!["shop/pricing.py"],
            json!(null),
            Stage::Line,
        ),
        (
            "shop-approx",
            AVERAGE_FIX.to_vec(),
            vec![(
                "shop/pricing.py",
                "first = total / count\n",
                "first = total / count if count else 0\n",
            )],
            vec!["shop/pricing.py"],
            json!(["shop/pricing.py::Pricer.report"]),
            Stage::PatchGeneration,
        ),
        (
            "shop-patchgen",
            DISCOUNT_FIX.to_vec(),
            vec![(
                "shop/pricing.py",
                "factor = 1 - percent / 100",
                "factor = 1 - percent / 1000",
            )],
            vec!["shop/cart.py", "shop/pricing.py"],
            json!(null),
            Stage::PatchGeneration,
        ),
        (
            "shop-empty",
            DISCOUNT_FIX.to_vec(),
            vec![],
            vec!["shop/pricing.py"],
            json!(null),
            Stage::EmptyPatch,
        ),
    ]
}

struct Inputs {
    dir: tempfile::TempDir,
    config: AnalysisConfig,
}

fn write_jsonl(path: &Path, rows: &[serde_json::Value]) {
    let text: Vec<String> = rows.iter().map(ToString::to_string).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
}

fn inputs() -> Inputs {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (mut dataset, mut locs, mut preds) = (Vec::new(), Vec::new(), Vec::new());
    let (mut resolved, mut unresolved, mut empty) = (Vec::new(), Vec::new(), Vec::new());
    for (id, gold, generated, found, functions, stage) in cases() {
        for (path, text) in FILES {
            let file = root.join("trees").join(id).join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        dataset.push(json!({"instance_id": id, "repo": "acme/shop", "patch": patch(&gold), "problem_statement": "..."}));
        let mut loc = json!({"instance_id": id, "found_files": found});
        let key = if functions.get(0).is_some_and(serde_json::Value::is_array) {
            "found_related_locs"
        } else {
            "found_functions"
        };
        loc[key] = functions;
        locs.push(loc);
        preds.push(json!({"instance_id": id, "model_name_or_path": "fake", "model_patch": patch(&generated)}));
        match stage {
            Stage::Resolved => resolved.push(id),
            Stage::EmptyPatch => empty.push(id),
            _ => unresolved.push(id),
        }
    }
    write_jsonl(&root.join("lite.jsonl"), &dataset);
    write_jsonl(&root.join("locs.jsonl"), &locs);
    write_jsonl(&root.join("preds.jsonl"), &preds);
    let report = json!({"resolved_ids": resolved, "unresolved_ids": unresolved, "empty_patch_ids": empty, "error_ids": []});
    std::fs::write(root.join("report.json"), report.to_string()).unwrap();
    let config = AnalysisConfig {
        dataset: root.join("lite.jsonl"),
        locs: root.join("locs.jsonl"),
        predictions: root.join("preds.jsonl"),
        report: Some(root.join("report.json")),
        repos: Some(root.join("trees")),
        top_k: 3,
        function_top_k: 3,
        function_rule: FunctionRule::Any,
        out_dir: None,
    };
    Inputs { dir, config }
}

fn stage_of<'a>(
    report: &'a AnalysisReport,
    id: &str,
) -> &'a blagent_core::analysis::InstanceAnalysis {
    report
        .instances
        .iter()
        .find(|i| i.instance_id == id)
        .unwrap()
}

#[test]
fn every_stage_of_the_known_answer_set() {
    let Inputs { dir, config } = inputs();
    let report = analyze_failures(&config).unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    for (id, .., expected) in cases() {
        let got = stage_of(&report, id);
        assert_eq!(got.stage, expected, "{id}: {got:#?}");
        assert!(
            got.notes.is_empty() || id == "shop-resolved",
            "{id}: {:?}",
            got.notes
        );
    }
    assert_eq!(
        stage_of(&report, "shop-approx").line.verdict,
        LineVerdict::Approximate
    );
    assert_eq!(
        stage_of(&report, "shop-patchgen").line.verdict,
        LineVerdict::Correct
    );
    let function = &stage_of(&report, "shop-function").function;
    assert_eq!(function.missing, ["shop/pricing.py::Pricer.discount"]);
    assert_eq!(
        stage_of(&report, "shop-file").file.missing,
        ["shop/inventory.py"]
    );
    let resolved = stage_of(&report, "shop-resolved");
    assert_eq!(
        resolved.function.gold_added,
        ["shop/errors.py::PricingError"],
        "a class of a new file is added, not a gold function: {resolved:#?}"
    );

    let (written, no_chart) = write_outputs(
        &report,
        &dir.path().join("out"),
        &blagent_core::repo::Inputs::new(),
    )
    .unwrap();
    assert!(no_chart.is_none(), "{no_chart:?}");
    let names: Vec<PathBuf> = written
        .iter()
        .map(|p| PathBuf::from(p.file_name().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            PathBuf::from("summary.md"),
            "summary.json".into(),
            "chart.svg".into(),
            "chart.png".into()
        ]
    );
    assert!(std::fs::read_to_string(&written[2])
        .unwrap()
        .starts_with("<svg"));
    assert!(std::fs::read(&written[3]).unwrap().starts_with(b"\x89PNG"));
    let one: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("out/instances/shop-line.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(one["stage"], "line");
    insta::assert_snapshot!(report.summary.to_markdown());
}

#[test]
fn bad_input_is_an_error_or_a_warning_never_a_panic() {
    let Inputs { dir, mut config } = inputs();
    let mut preds = std::fs::read_to_string(&config.predictions).unwrap();
    preds += "{\"instance_id\": \"nobody-1\", \"model_patch\": \"\"}\n";
    std::fs::write(&config.predictions, &preds).unwrap();
    let report = analyze_failures(&config).unwrap();
    assert_eq!(
        report.warnings,
        ["prediction for unknown instance nobody-1 (not in the dataset); ignored"]
    );

    std::fs::write(
        &config.predictions,
        preds.replace("shop-line\"", "shop-line\"}{"),
    )
    .unwrap();
    let err = analyze_failures(&config).unwrap_err();
    assert!(
        err.is_input_error() && err.to_string().contains("preds.jsonl:4"),
        "{err}"
    );

    let garbled: String =
        preds.lines().map(|l| if l.contains("shop-approx") { l.replace("@@ -", "@@ -x") } else { l.to_owned() } + "\n").collect();
    std::fs::write(&config.predictions, garbled).unwrap();
    let report = analyze_failures(&config).unwrap();
    let approx = stage_of(&report, "shop-approx");
    assert_eq!(
        approx.stage,
        Stage::PatchGeneration,
        "functions localized, the patch unusable"
    );
    assert!(
        approx.notes[0].contains("malformed hunk header"),
        "{:?}",
        approx.notes
    );
    assert_eq!(stage_of(&report, "shop-line").stage, Stage::Line);

    let report_path = config.report.clone().unwrap();
    std::fs::write(&report_path, "{\"resolved\": [\"other\"]}").unwrap();
    assert!(analyze_failures(&config)
        .unwrap_err()
        .to_string()
        .contains("no instance of the report"));
    config.top_k = 0;
    assert!(analyze_failures(&config).is_err());
    config.top_k = 3;
    std::fs::remove_dir_all(dir.path().join("trees/shop-patchgen")).unwrap();
    std::fs::write(&report_path, "{\"unresolved\": [\"shop-patchgen\"]}").unwrap();
    let report = analyze_failures(&config).unwrap();
    assert_eq!(report.instances[0].stage, Stage::PatchGeneration);
    assert!(!report.instances[0].tree_found && report.summary.missing_trees == 1);

    // Function-level entries that are not text are ignored with a warning, not silently (a
    // review found the function stage then judged on the patch's edits without a word).
    let mut locs = std::fs::read_to_string(&config.locs).unwrap();
    locs = locs.replacen(
        "\"found_files\"",
        "\"found_edit_locs\": {\"shop/pricing.py\": [5, null]}, \"found_files\"",
        1,
    );
    locs += "{\"instance_id\": \"shop-extra\", \"found_files\": [], \"blagent\": {\"entities\": [1, 2]}}\n";
    std::fs::write(&config.locs, locs).unwrap();
    let report = analyze_failures(&config).unwrap();
    let warning = report
        .warnings
        .iter()
        .find(|w| w.contains("function-level entries that are not text"))
        .unwrap_or_else(|| panic!("{:?}", report.warnings));
    assert!(warning.contains("2 record(s)"), "{warning}");
}

#[test]
fn without_a_report_every_instance_gets_its_localization_stages() {
    let Inputs {
        dir: _dir,
        mut config,
    } = inputs();
    let evaluated = analyze_failures(&config).unwrap();
    config.report = None;
    let report = analyze_failures(&config).unwrap();
    assert!(!report.summary.evaluated && report.summary.resolved == 0);
    assert!(report
        .summary
        .to_markdown()
        .contains("no evaluation report: the localization stages of every instance"));
    for (before, after) in evaluated.instances.iter().zip(&report.instances) {
        assert_eq!(before.instance_id, after.instance_id);
        match before.stage {
            // Past the localization stages: localized, or a patch that does not parse.
            Stage::Resolved | Stage::PatchGeneration => assert!(
                matches!(after.stage, Stage::Localized | Stage::PatchGeneration),
                "{}: {:?}",
                after.instance_id,
                after.stage
            ),
            // An empty patch is judged at the localization stages first.
            Stage::EmptyPatch => assert!(
                after.patch_empty
                    && matches!(
                        after.stage,
                        Stage::File | Stage::Function | Stage::EmptyPatch
                    ),
                "{}: {:?}",
                after.instance_id,
                after.stage
            ),
            stage => assert_eq!(after.stage, stage, "{}", after.instance_id),
        }
    }
    assert!(report.instances.iter().any(|i| i.stage == Stage::Localized));
    // Every stage is a share of all instances.
    let all = report.instances.len() as f64;
    for s in &report.summary.stages {
        assert!(
            (s.percent - 100.0 * s.count as f64 / all).abs() < 1e-9,
            "{s:?}"
        );
    }
}
