//! The request of the standardized localizer interface (`schemas/localize-request.schema.json`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::SCHEMA_VERSION;
use crate::agent::Pipeline;
use crate::error::{Error, Result};
use crate::retrieve::{Ask, Granularity, Rewrites, DEFAULT_TOP_K};

/// What the caller already suspects.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    /// Repository-relative paths the caller suspects. Each indexed one gets `hint` evidence and
    /// the boost described in [`crate::interface`]; the others are reported as warnings.
    #[serde(default)]
    pub files: Vec<String>,
    /// The repository's main language (`python`); an unsupported one is reported as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// One localization request: which issue, in which tree, how much back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalizeRequest {
    /// The interface version the request was written for ([`SCHEMA_VERSION`] when absent).
    #[serde(default = "current_version")]
    pub schema_version: String,
    /// The caller's id of the task (a SWE-bench `instance_id`), echoed in the result.
    #[serde(default)]
    pub instance_id: String,
    /// The repository checkout to search.
    pub repo_path: PathBuf,
    /// The issue text (bug report).
    pub issue: String,
    /// What the caller already suspects.
    #[serde(default)]
    pub hints: Hints,
    /// How many files to return.
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    /// Files only, or files and entities.
    #[serde(default)]
    pub granularity: Granularity,
    /// Which pipeline ranks the files: `fused` (LLM-free, the default), `blagent` or `rrl`.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// Structural (T0) and behavioral (T1) rewrites of the issue written elsewhere (by an LLM,
    /// or recorded), for the fused pipeline's dense views; the rule-based ones when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrites: Option<Rewrites>,
}

/// The longest issue a quick request holds ([`LocalizeRequest::is_quick`]): 256 KiB, some
/// hundred times a long report, queried in tens of milliseconds.
const QUICK_ISSUE_BYTES: usize = 256 << 10;
/// The most hints a quick request holds.
const QUICK_HINTS: usize = 1000;

fn current_version() -> String {
    SCHEMA_VERSION.to_owned()
}

fn default_top_k() -> usize {
    DEFAULT_TOP_K
}

/// The major part of a `major.minor` version.
fn major(version: &str) -> &str {
    version.split('.').next().unwrap_or_default()
}

impl LocalizeRequest {
    /// A request with the default hints, `top_k` and granularity.
    pub fn new(
        instance_id: impl Into<String>,
        repo_path: impl Into<PathBuf>,
        issue: impl Into<String>,
    ) -> Self {
        LocalizeRequest {
            schema_version: current_version(),
            instance_id: instance_id.into(),
            repo_path: repo_path.into(),
            issue: issue.into(),
            hints: Hints::default(),
            top_k: DEFAULT_TOP_K,
            granularity: Granularity::File,
            pipeline: Pipeline::Fused,
            rewrites: None,
        }
    }

    /// Parses and validates a request from JSON text. The request, its `hints` and its
    /// `rewrites` are JSON objects, as the schema has them (serde would read a struct from a
    /// list of its fields' values as well).
    pub fn from_json(text: &str) -> Result<Self> {
        let request: LocalizeRequest = crate::json::from_object(text)
            .map_err(|e| Error::InvalidInput(format!("invalid request: {e}")))?;
        request.validate()?;
        Ok(request)
    }

    /// Whether the request is answered in milliseconds once its repository is indexed (the
    /// LLM-free pipeline): a caller may answer it on its own thread, where a request of an LLM
    /// pipeline waits on a model and is worth running where it can be interrupted.
    pub fn is_quick(&self) -> bool {
        // A long issue takes seconds to query (a review: 15 MiB, 3 to 7.5 s), and so do many
        // hints: those run where a Ctrl-C is heard.
        self.pipeline == Pipeline::Fused
            && self.issue.len() + self.rewrites_len() <= QUICK_ISSUE_BYTES
            && self.hints.files.len() <= QUICK_HINTS
    }

    /// The bytes of the request's rewrites (0 without them): queried as the issue is.
    fn rewrites_len(&self) -> usize {
        self.rewrites
            .as_ref()
            .map_or(0, |r| r.structural.len() + r.behavioral.len())
    }

    /// What the request asks of the ranking: `top_k` files at its granularity.
    pub fn ask(&self) -> Result<Ask> {
        Ask::new(self.top_k, self.granularity)
    }

    /// Checks what serde cannot: a compatible version, a non-empty issue, `top_k ≥ 1`; the
    /// issue and each rewrite at most an issue's size (a review: 600 MiB of rewrites were
    /// queried).
    pub fn validate(&self) -> Result<()> {
        let (major_part, minor_part) = self
            .schema_version
            .split_once('.')
            .map_or((self.schema_version.as_str(), None), |(a, b)| (a, Some(b)));
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !digits(major_part) || !minor_part.is_none_or(digits) {
            // What the schema says (a review: "1.x" and "1." were taken as 1).
            return Err(Error::InvalidInput(format!(
                "request schema_version {:?} is not major.minor, as {SCHEMA_VERSION:?}",
                self.schema_version
            )));
        }
        if major_part != major(SCHEMA_VERSION) {
            return Err(Error::InvalidInput(format!(
                "unsupported request schema_version {:?} (this blagent speaks {SCHEMA_VERSION})",
                self.schema_version
            )));
        }
        self.ask()?;
        if self.issue.trim().is_empty() {
            return Err(Error::InvalidInput("the issue text is empty".to_owned()));
        }
        let max = crate::repo::read::MAX_ISSUE_BYTES;
        let rewrites = self.rewrites.as_ref();
        let texts = [
            ("the issue text", Some(&self.issue)),
            ("the structural rewrite", rewrites.map(|r| &r.structural)),
            ("the behavioral rewrite", rewrites.map(|r| &r.behavioral)),
        ];
        for (what, text) in texts {
            let len = text.map_or(0, |t| t.len() as u64);
            if len > max {
                return Err(Error::InvalidInput(format!(
                    "{what} is {}, more than an issue may be ({})",
                    crate::repo::read::human_bytes(len),
                    crate::repo::read::human_bytes(max)
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_llm_free_pipeline_is_quick() {
        let mut request = LocalizeRequest::new("i", "repo", "bug");
        assert!(request.is_quick());
        for pipeline in [Pipeline::Blagent, Pipeline::Rrl] {
            request.pipeline = pipeline;
            assert!(!request.is_quick(), "{pipeline:?}");
        }
    }

    #[test]
    fn an_issue_past_the_bound_is_refused() {
        let long = "x".repeat((crate::repo::read::MAX_ISSUE_BYTES + 1) as usize);
        let err = LocalizeRequest::new("i", "repo", long)
            .validate()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("more than an issue may be (16 MiB)"),
            "{err}"
        );
        // A later review: rewrites had no bound, nor counted toward a quick request.
        let mut request = LocalizeRequest::new("i", "repo", "bug");
        let half = "x".repeat(QUICK_ISSUE_BYTES / 2 + 1);
        request.rewrites = Some(Rewrites {
            structural: half.clone(),
            behavioral: half,
        });
        assert!(request.validate().is_ok() && !request.is_quick());
        request.rewrites.as_mut().unwrap().behavioral =
            "x".repeat((crate::repo::read::MAX_ISSUE_BYTES + 1) as usize);
        let err = request.validate().unwrap_err().to_string();
        assert!(
            err.starts_with("invalid input: the behavioral rewrite is 16"),
            "{err}"
        );
    }

    /// Found by a review: serde read `hints` and `rewrites` (and the request itself) from
    /// lists of their fields' values, which the schema and the Python interface refuse.
    #[test]
    fn the_request_its_hints_and_its_rewrites_are_objects_only() {
        let lists = [
            r#"["1.0", "a", "/r", "x"]"#,
            r#"{"repo_path": "/r", "issue": "x", "hints": [["a.py"], "python"]}"#,
            r#"{"repo_path": "/r", "issue": "x", "rewrites": ["a", "b"]}"#,
        ];
        for text in lists {
            let err = LocalizeRequest::from_json(text).expect_err(text);
            assert!(err.to_string().contains("expected a JSON object"), "{err}");
        }
        let objects = r#"{"repo_path": "/r", "issue": "x", "hints": {"files": ["a.py"]},
            "rewrites": null}"#;
        let request = LocalizeRequest::from_json(objects).expect("objects");
        assert_eq!(request.hints.files, ["a.py"]);
    }

    #[test]
    fn defaults_fill_the_optional_fields() {
        let request = LocalizeRequest::from_json(
            r#"{"instance_id": "a-1", "repo_path": "/r", "issue": "boom"}"#,
        )
        .expect("valid");
        assert_eq!(request, LocalizeRequest::new("a-1", "/r", "boom"));
    }

    #[test]
    fn rejects_typos_bad_versions_and_empty_fields() {
        let bad = [
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "topk": 3}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "schema_version": "2.0"}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "top_k": 0}"#,
            // Found by a review: a request took up to 2^64 - 1 files, `--top-k` 2^32 - 1.
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "top_k": 4294967296}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "  "}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "pipeline": "gpt"}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "granularity": "line"}"#,
            // A later review: what the schema refuses, the core took as version 1.
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "schema_version": "1.x"}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "schema_version": "1."}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "schema_version": "1.9.a"}"#,
            r#"{"instance_id": "a", "repo_path": "/r", "issue": "x", "schema_version": ""}"#,
        ];
        for text in bad {
            let err = LocalizeRequest::from_json(text).expect_err(text);
            assert!(err.is_input_error(), "{text}: {err}");
        }
    }

    #[test]
    fn accepts_any_minor_version_of_the_same_major() {
        let text = r#"{"schema_version": "1.7", "instance_id": "a", "repo_path": "/r", "issue": "x",
                       "hints": {"files": ["a.py"], "language": "python"}, "granularity": "function"}"#;
        let request = LocalizeRequest::from_json(text).expect("valid");
        assert_eq!(request.granularity, Granularity::Function);
        assert_eq!(request.hints.files, ["a.py"]);
        let text = r#"{"schema_version": "1", "repo_path": "/r", "issue": "x", "rewrites": null}"#;
        assert!(LocalizeRequest::from_json(text).is_ok());
    }
}
