//! Which pipeline ranks the files: the LLM-free fusion or one of the two LLM pipelines.

use serde::{Deserialize, Serialize};

/// Which pipeline ranks the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pipeline {
    /// The LLM-free ranking: every signal fused.
    #[default]
    Fused,
    /// T0/T1 rewrites, retrieval, phase-1 skeleton scoring agent, phase-2 evidence rerank.
    Blagent,
    /// Schema extraction, BM25 tool-using agent, fresh-context self-check.
    Rrl,
}

impl Pipeline {
    /// Every pipeline, in the order of the CLI's choices.
    pub const ALL: [Pipeline; 3] = [Pipeline::Fused, Pipeline::Blagent, Pipeline::Rrl];

    /// The name requests, results and the CLI use.
    pub fn name(self) -> &'static str {
        match self {
            Pipeline::Fused => "fused",
            Pipeline::Blagent => "blagent",
            Pipeline::Rrl => "rrl",
        }
    }

    /// The pipeline of that name.
    pub fn from_name(name: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                crate::Error::InvalidInput(format!(
                    "invalid pipeline {name:?}: use \"fused\", \"blagent\" or \"rrl\""
                ))
            })
    }
}
