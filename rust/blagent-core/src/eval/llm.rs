//! What LLM mode cost in an evaluation: per instance and in total.

use serde::{Deserialize, Serialize};

use crate::agent::LlmReport;

/// One instance's LLM cost, as its prediction line carries it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmInstanceStats {
    /// Calls made.
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Replies that failed parsing or validation.
    pub parse_failures: u64,
    /// Repair requests sent.
    pub retries: u64,
    /// Stages that fell back.
    pub fallbacks: u64,
    /// Whether valid model output shaped the ranking.
    pub llm_ranked: bool,
    /// The model order's weight in the final fusion (in totals, the sum).
    #[serde(default)]
    pub model_weight: f64,
    /// Wall-clock milliseconds of the pipeline.
    pub wall_ms: f64,
}

impl From<&LlmReport> for LlmInstanceStats {
    fn from(report: &LlmReport) -> Self {
        LlmInstanceStats {
            calls: report.stats.calls,
            prompt_tokens: report.prompt_tokens,
            completion_tokens: report.completion_tokens,
            parse_failures: report.stats.parse_failures,
            retries: report.stats.retries,
            fallbacks: report.stats.fallbacks.len() as u64,
            llm_ranked: report.llm_ranked,
            model_weight: f64::from(report.model_weight),
            wall_ms: report.stats.wall_ms,
        }
    }
}

/// Totals and per-instance means over an evaluation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmTotals {
    /// The pipeline run.
    pub pipeline: String,
    /// The model.
    pub model: String,
    /// Instances run.
    pub instances: u64,
    /// Instances whose ranking valid model output shaped.
    pub llm_ranked: u64,
    /// Sums over instances.
    pub total: LlmInstanceStats,
    /// Means per instance (`llm_ranked` false).
    pub mean: LlmMeans,
}

/// Means per instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmMeans {
    /// Calls.
    pub calls: f64,
    /// Prompt tokens.
    pub prompt_tokens: f64,
    /// Completion tokens.
    pub completion_tokens: f64,
    /// Parse failures.
    pub parse_failures: f64,
    /// Retries.
    pub retries: f64,
    /// Fallbacks.
    pub fallbacks: f64,
    /// Model weight.
    #[serde(default)]
    pub model_weight: f64,
    /// Wall-clock milliseconds.
    pub wall_ms: f64,
}

impl LlmTotals {
    /// Adds one instance.
    pub fn add(&mut self, stats: &LlmInstanceStats) {
        self.instances += 1;
        self.llm_ranked += u64::from(stats.llm_ranked);
        let t = &mut self.total;
        t.calls = t.calls.saturating_add(stats.calls);
        t.prompt_tokens = t.prompt_tokens.saturating_add(stats.prompt_tokens);
        t.completion_tokens = t.completion_tokens.saturating_add(stats.completion_tokens);
        t.parse_failures = t.parse_failures.saturating_add(stats.parse_failures);
        t.retries = t.retries.saturating_add(stats.retries);
        t.fallbacks = t.fallbacks.saturating_add(stats.fallbacks);
        t.model_weight += stats.model_weight;
        t.wall_ms += stats.wall_ms;
        let n = self.instances as f64;
        self.mean = LlmMeans {
            calls: t.calls as f64 / n,
            prompt_tokens: t.prompt_tokens as f64 / n,
            completion_tokens: t.completion_tokens as f64 / n,
            parse_failures: t.parse_failures as f64 / n,
            retries: t.retries as f64 / n,
            fallbacks: t.fallbacks as f64 / n,
            model_weight: t.model_weight / n,
            wall_ms: t.wall_ms / n,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_means() {
        let mut totals = LlmTotals::default();
        let one = LlmInstanceStats {
            calls: 4,
            prompt_tokens: 1000,
            retries: 1,
            llm_ranked: true,
            model_weight: 0.5,
            wall_ms: 10.0,
            ..LlmInstanceStats::default()
        };
        totals.add(&one);
        totals.add(&LlmInstanceStats::default());
        assert_eq!((totals.instances, totals.llm_ranked), (2, 1));
        assert_eq!(totals.total.prompt_tokens, 1000);
        assert!((totals.mean.calls - 2.0).abs() < 1e-9 && (totals.mean.wall_ms - 5.0).abs() < 1e-9);
        assert!((totals.mean.model_weight - 0.25).abs() < 1e-9);
    }

    #[test]
    fn huge_counts_saturate() {
        let mut totals = LlmTotals::default();
        let huge = LlmInstanceStats {
            prompt_tokens: u64::MAX - 1,
            completion_tokens: u64::MAX,
            ..LlmInstanceStats::default()
        };
        totals.add(&huge);
        totals.add(&huge);
        assert_eq!(totals.total.prompt_tokens, u64::MAX);
        assert_eq!(totals.total.completion_tokens, u64::MAX);
    }
}
