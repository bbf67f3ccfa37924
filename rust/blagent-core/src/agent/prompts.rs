//! The prompts: one file each under `prompts/` at the repository root, embedded at build time,
//! overridable at run time by a folder holding files of the same names. Rendering replaces
//! `{{name}}` placeholders and fails loudly on a placeholder without a value or a value without
//! a placeholder, so a prompt and the code that fills it cannot drift apart silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Error, Result};

/// Every prompt: its file stem and the embedded default text.
pub const PROMPTS: [(&str, &str); 9] = [
    (
        "t0_structural",
        include_str!("../../../../prompts/t0_structural.md"),
    ),
    (
        "t1_behavioral",
        include_str!("../../../../prompts/t1_behavioral.md"),
    ),
    (
        "rrl_extract",
        include_str!("../../../../prompts/rrl_extract.md"),
    ),
    (
        "phase1_scoring",
        include_str!("../../../../prompts/phase1_scoring.md"),
    ),
    (
        "phase2_rerank",
        include_str!("../../../../prompts/phase2_rerank.md"),
    ),
    (
        "phase2_rerank_functions",
        include_str!("../../../../prompts/phase2_rerank_functions.md"),
    ),
    (
        "rrl_agent",
        include_str!("../../../../prompts/rrl_agent.md"),
    ),
    (
        "self_check",
        include_str!("../../../../prompts/self_check.md"),
    ),
    ("repair", include_str!("../../../../prompts/repair.md")),
];

/// The prompt set in force: the embedded defaults, some possibly replaced from a folder.
#[derive(Debug, Clone)]
pub struct Prompts {
    texts: BTreeMap<&'static str, String>,
}

impl Default for Prompts {
    fn default() -> Self {
        Prompts {
            texts: PROMPTS
                .iter()
                .map(|&(name, text)| (name, text.to_owned()))
                .collect(),
        }
    }
}

/// The `{{name}}` placeholders of a template, in order of first use.
fn placeholders(template: &str) -> Result<Vec<&str>> {
    let mut out: Vec<&str> = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| {
            Error::InvalidInput(format!(
                "unclosed `{{{{` in prompt near {:?}",
                &after[..after.len().min(30)]
            ))
        })?;
        let name = &after[..close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Error::InvalidInput(format!(
                "bad placeholder `{{{{{name}}}}}` in prompt"
            )));
        }
        if !out.contains(&name) {
            out.push(name);
        }
        rest = &after[close + 2..];
    }
    Ok(out)
}

impl Prompts {
    /// The embedded prompts, with every `<name>.md` of `dir` (when given) replacing the prompt of
    /// that name. A file that names no prompt, or an override whose placeholders differ from
    /// the default's, is an error: either would otherwise be ignored or fail mid-run.
    pub fn load(dir: Option<&Path>) -> Result<Self> {
        let mut prompts = Prompts::default();
        let Some(dir) = dir else {
            return Ok(prompts);
        };
        crate::repo::read::user_folder(dir, "prompts folder")?;
        let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::io(dir, e))?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("md") {
                continue;
            }
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let Some(&(name, default)) = PROMPTS.iter().find(|(n, _)| *n == stem) else {
                let known: Vec<&str> = PROMPTS.iter().map(|p| p.0).collect();
                return Err(Error::InvalidInput(format!(
                    "prompt override {} names no prompt (known: {})",
                    path.display(),
                    known.join(", ")
                )));
            };
            let text = crate::repo::read::read_user_text(
                &path,
                crate::repo::read::MAX_SMALL_FILE_BYTES,
                "prompt override",
            )?;
            let wanted: BTreeSet<&str> = placeholders(default)?.into_iter().collect();
            let given: BTreeSet<&str> = placeholders(&text)?.into_iter().collect();
            if wanted != given {
                return Err(Error::InvalidInput(format!(
                    "prompt override {} has placeholders {given:?}; {name} needs {wanted:?}",
                    path.display()
                )));
            }
            prompts.texts.insert(name, text);
        }
        Ok(prompts)
    }

    /// The raw template of prompt `name`.
    pub fn template(&self, name: &str) -> Result<&str> {
        self.texts
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| Error::Internal(format!("no prompt named {name}")))
    }

    /// Prompt `name` with every `{{key}}` replaced by its value. Every placeholder must have a
    /// value and every value a placeholder.
    pub fn render(&self, name: &str, values: &[(&str, &str)]) -> Result<String> {
        let template = self.template(name)?;
        let used = placeholders(template)?;
        for key in &used {
            if !values.iter().any(|(k, _)| k == key) {
                return Err(Error::Internal(format!(
                    "prompt {name}: no value for `{{{{{key}}}}}`"
                )));
            }
        }
        if let Some((key, _)) = values.iter().find(|(k, _)| !used.contains(k)) {
            return Err(Error::Internal(format!(
                "prompt {name}: `{key}` has no placeholder"
            )));
        }
        // One left-to-right pass, so a value containing `{{x}}` is never expanded again.
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let close = after.find("}}").unwrap_or(after.len());
            let key = &after[..close];
            let value = values.iter().find(|(k, _)| *k == key).map_or("", |v| v.1);
            out.push_str(value);
            rest = &after[(close + 2).min(after.len())..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_once_and_fails_loudly_on_missing_or_extra_values() {
        let prompts = Prompts::default();
        let text = prompts
            .render("t0_structural", &[("issue", "uses {{issue}} literally")])
            .unwrap();
        assert!(text.contains("uses {{issue}} literally"));
        assert!(!text.contains("{{issue}}\n\nReply"));
        let missing = prompts.render("t0_structural", &[]).unwrap_err();
        assert!(missing.to_string().contains("no value for `{{issue}}`"));
        let extra = prompts
            .render("t0_structural", &[("issue", "x"), ("typo", "y")])
            .unwrap_err();
        assert!(extra.to_string().contains("`typo` has no placeholder"));
        assert!(prompts.render("nope", &[]).is_err());
    }

    #[test]
    fn overrides_come_from_a_folder_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t0_structural.md"), "Q: {{issue}}").unwrap();
        let prompts = Prompts::load(Some(dir.path())).unwrap();
        assert_eq!(
            prompts.render("t0_structural", &[("issue", "x")]).unwrap(),
            "Q: x"
        );
        assert!(prompts
            .template("t1_behavioral")
            .unwrap()
            .contains("BEHAVIOUR"));

        std::fs::write(dir.path().join("t1_behavioral.md"), "no placeholder").unwrap();
        let err = Prompts::load(Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains("needs"), "{err}");
        std::fs::remove_file(dir.path().join("t1_behavioral.md")).unwrap();
        std::fs::write(dir.path().join("t9.md"), "{{issue}}").unwrap();
        let err = Prompts::load(Some(dir.path())).unwrap_err().to_string();
        assert!(err.contains("names no prompt"), "{err}");
        let absent = Prompts::load(Some(&dir.path().join("absent"))).unwrap_err();
        assert!(absent.is_input_error(), "{absent:?}");
        assert!(absent.to_string().contains("does not exist"), "{absent}");
        let file = Prompts::load(Some(&dir.path().join("t9.md"))).unwrap_err();
        assert!(
            file.is_input_error() && file.to_string().contains("is a file"),
            "{file}"
        );
    }

    #[test]
    fn every_embedded_prompt_has_well_formed_placeholders() {
        for (name, text) in PROMPTS {
            let names = placeholders(text).unwrap();
            assert!(!names.is_empty(), "{name} takes no input");
        }
        assert!(placeholders("{{a").is_err());
        assert!(placeholders("{{a b}}").is_err());
    }
}
