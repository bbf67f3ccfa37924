//! Answering a [`LocalizeRequest`] with the LLM-free [`Localizer`].

use std::collections::HashSet;
use std::time::Instant;

use super::entities::entities;
use super::hints::{apply_hints, AppliedHints};
use super::request::{Granularity, LocalizeRequest};
use super::result::{
    EvidenceItem, FileHit, LocalizationResult, LocalizerInfo, StageTimings, TokenUsage,
};
use super::SCHEMA_VERSION;
use crate::elapsed_ms;
use crate::error::Result;
use crate::index::RepoIndex;
use crate::localizer::{signal_name, Localizer, Scored};
use crate::repo::LANGUAGES;
use crate::retrieve::Signal;

impl Localizer {
    /// Answers `request`: indexes its repository, ranks its issue, applies its hints.
    ///
    /// The request's `top_k` overrides the localizer's; its other options (walk, chunking,
    /// fusion weights) are the localizer's.
    pub fn localize_request(&self, request: &LocalizeRequest) -> Result<LocalizationResult> {
        let start = Instant::now();
        request.validate()?;
        let index = self.index(&request.repo_path)?;
        let mut result = self.localize_request_in(&index, request)?;
        result.timings.walk_ms = index.timings.walk_ms;
        result.timings.parse_ms = index.timings.parse_ms;
        result.timings.index_ms = index.timings.index_ms;
        result.timings.total_ms = elapsed_ms(start);
        Ok(result)
    }

    /// Answers `request` in an index already built for its repository (index timings are 0).
    pub fn localize_request_in(
        &self,
        index: &RepoIndex,
        request: &LocalizeRequest,
    ) -> Result<LocalizationResult> {
        let start = Instant::now();
        request.validate()?;
        let mut scored = self.score(index, &request.issue)?;
        let weights = &self.options().weights;
        let hints = apply_hints(
            index,
            &mut scored,
            weights,
            &request.hints.files,
            &request.repo_path,
        );
        let mut warnings = language_warning(request.hints.language.as_deref())
            .into_iter()
            .collect::<Vec<_>>();
        warnings.extend(hints.warnings.iter().cloned());

        let top: Vec<(usize, FileHit)> = scored
            .ranked
            .iter()
            .take(request.top_k)
            .enumerate()
            .map(|(rank, &(file, score))| {
                (
                    file,
                    file_hit(index, &scored, &hints, file, rank + 1, score),
                )
            })
            .collect();
        if top.is_empty() {
            warnings.push("no indexed file matches the issue; the ranking is empty".to_owned());
        }
        warnings.extend(file_warnings(index, top.iter().map(|&(file, _)| file)));
        let entities = (request.granularity == Granularity::Function).then(|| {
            let files: Vec<(usize, &FileHit)> =
                top.iter().map(|(file, hit)| (*file, hit)).collect();
            entities(index, &scored.signals, weights, &files)
        });
        let query_ms = elapsed_ms(start);
        Ok(LocalizationResult {
            schema_version: SCHEMA_VERSION.to_owned(),
            instance_id: request.instance_id.clone(),
            localizer: LocalizerInfo::blagent_llm_free(),
            granularity: request.granularity,
            files: top.into_iter().map(|(_, hit)| hit).collect(),
            entities,
            timings: StageTimings {
                query_ms,
                total_ms: query_ms,
                ..StageTimings::default()
            },
            usage: TokenUsage::default(),
            warnings,
        })
    }
}

fn file_hit(
    index: &RepoIndex,
    scored: &Scored,
    hints: &AppliedHints,
    file: usize,
    rank: usize,
    score: f32,
) -> FileHit {
    let signals = &scored.signals[file];
    let mut fired: std::collections::BTreeMap<String, f32> = Signal::ALL
        .iter()
        .filter(|&&s| signals.get(s) > 0.0)
        .map(|&s| (signal_name(s), signals.get(s)))
        .collect();
    let mut evidence: Vec<EvidenceItem> = Vec::new();
    let boost = hints.boost(file);
    if let Some(boost) = boost {
        fired.insert(super::hints::HINT_SIGNAL.to_owned(), boost);
        evidence.push(AppliedHints::evidence(boost));
    }
    evidence.extend(signals.evidence.iter().map(EvidenceItem::from));
    FileHit {
        rank,
        path: index.files[file].path().to_owned(),
        score,
        signals: fired,
        evidence,
        hinted: boost.is_some(),
    }
}

/// A warning when the caller names a language blagent does not index.
fn language_warning(language: Option<&str>) -> Option<String> {
    let language = language?.trim().to_lowercase();
    if LANGUAGES.iter().any(|l| l.name == language) {
        return None;
    }
    let supported: Vec<&str> = LANGUAGES.iter().map(|l| l.name).collect();
    Some(format!(
        "language hint `{language}` is not supported (supported: {}); indexed those instead",
        supported.join(", ")
    ))
}

/// Warnings about returned files that were read imperfectly.
fn file_warnings(index: &RepoIndex, files: impl Iterator<Item = usize>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for file in files.filter(|&f| seen.insert(f)) {
        let indexed = &index.files[file];
        if indexed.lossy {
            out.push(format!(
                "{} is not valid UTF-8; it was decoded lossily",
                indexed.path()
            ));
        }
        if indexed.parsed.syntax_errors {
            out.push(format!(
                "{} has syntax errors; its symbols were recovered approximately",
                indexed.path()
            ));
        }
    }
    out
}
