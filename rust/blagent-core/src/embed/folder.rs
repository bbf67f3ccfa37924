//! Reading a model folder's configuration: architecture, pooling, normalization, maximum
//! sequence length and the query/document prompts, as sentence-transformers would.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::repo::read::{kind_name, read_bounded, ReadFailure, MAX_SMALL_FILE_BYTES};

/// The transformer family of a model folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Architecture {
    /// BERT and its distillations (all-MiniLM, bge, e5, …).
    Bert,
    /// Nomic BERT (nomic-embed-text), rotary positions and `SwiGLU`.
    NomicBert,
}

/// How token embeddings become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Mean over real (unpadded) tokens.
    Mean,
    /// The first token's embedding.
    Cls,
    /// Element-wise maximum over real tokens.
    Max,
}

/// A model folder's configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelFolder {
    /// The folder.
    pub dir: PathBuf,
    /// The transformer family.
    pub architecture: Architecture,
    /// The raw `config.json`, handed to the model loader.
    pub config: Value,
    /// Pooling from `1_Pooling/config.json` (mean when absent).
    pub pooling: Pooling,
    /// Whether `modules.json` lists a `Normalize` module.
    pub normalize: bool,
    /// Longest input in tokens (`sentence_bert_config.json`, else the model's positions, at most 512).
    pub max_seq_length: usize,
    /// Prefix for queries (`search_query: ` for nomic-embed-text).
    pub query_prefix: String,
    /// Prefix for documents (`search_document: ` for nomic-embed-text).
    pub document_prefix: String,
    /// Embedding width.
    pub dimension: usize,
    /// Identifies the weights: name, shape and the safetensors file's size.
    pub identity: String,
}

/// A configuration file of the folder (`None` when absent), read bounded: a FIFO or device in
/// its place is refused, not read.
fn read_json(path: &Path) -> Result<Option<Value>> {
    match read_bounded(path, MAX_SMALL_FILE_BYTES) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Model(format!("{}: {e}", path.display()))),
        Err(failure) if failure.is_not_found() => Ok(None),
        Err(failure) => Err(failure.into_error(path, "model file")),
    }
}

fn usize_field(value: &Value, keys: &[&str]) -> Option<usize> {
    keys.iter()
        .find_map(|k| value.get(*k).and_then(Value::as_u64))
        .map(|v| v as usize)
}

impl ModelFolder {
    /// Truncates inputs at `max_tokens` when that is below the folder's own limit. The identity
    /// names the limit, since truncation changes the vectors (and so the cache keys).
    pub fn cap_max_seq_length(&mut self, max_tokens: usize) {
        if max_tokens == 0 || max_tokens >= self.max_seq_length {
            return;
        }
        let suffix = format!("/t{}", self.max_seq_length);
        if let Some(stem) = self.identity.strip_suffix(&suffix) {
            self.identity = format!("{stem}/t{max_tokens}");
        }
        self.max_seq_length = max_tokens;
    }

    /// Reads the folder's configuration; errors name the missing or malformed file. A folder
    /// that does not exist is bad input (the caller named it); one that lacks a model's files
    /// is a model error.
    pub fn read(dir: &Path) -> Result<Self> {
        crate::repo::read::user_folder(dir, "model folder")?;
        for required in ["config.json", "tokenizer.json", "model.safetensors"] {
            let path = dir.join(required);
            match fs::metadata(&path) {
                Err(_) => {
                    return Err(Error::Model(format!(
                        "model folder {} lacks {required}",
                        dir.display()
                    )))
                }
                // A FIFO, device or folder where a file belongs is refused as the optional
                // files are: bad input, named for what it is.
                Ok(meta) if !meta.is_file() => {
                    let kind = kind_name(meta.file_type());
                    return Err(ReadFailure::NotRegular(kind).into_error(&path, "model file"));
                }
                Ok(_) => {}
            }
        }
        let config = read_json(&dir.join("config.json"))?.unwrap_or(Value::Null);
        let model_type = config
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or("bert");
        let architecture = match model_type {
            "nomic_bert" => Architecture::NomicBert,
            "bert" => Architecture::Bert,
            other => {
                return Err(Error::Model(format!(
                    "unsupported model_type {other:?} in {}",
                    dir.display()
                )))
            }
        };
        let modules = read_json(&dir.join("modules.json"))?;
        let module_types: Vec<&str> = modules
            .as_ref()
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(|x| x.get("type").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let pooling_config = read_json(&dir.join("1_Pooling/config.json"))?.unwrap_or(Value::Null);
        let flag = |key: &str| {
            pooling_config
                .get(key)
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        let pooling = if flag("pooling_mode_cls_token") {
            Pooling::Cls
        } else if flag("pooling_mode_max_tokens") {
            Pooling::Max
        } else {
            Pooling::Mean
        };
        let positions =
            usize_field(&config, &["max_position_embeddings", "n_positions"]).unwrap_or(512);
        let max_seq_length = read_json(&dir.join("sentence_bert_config.json"))?
            .and_then(|c| usize_field(&c, &["max_seq_length"]))
            .unwrap_or(positions)
            .min(positions)
            .min(512);
        let prompts = read_json(&dir.join("config_sentence_transformers.json"))?
            .and_then(|c| c.get("prompts").cloned())
            .unwrap_or(Value::Null);
        let prompt = |key: &str| {
            prompts
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (mut query_prefix, mut document_prefix) = (prompt("query"), prompt("document"));
        if architecture == Architecture::NomicBert && query_prefix.is_empty() {
            // nomic-embed-text is trained with task prefixes; its folders do not always say so.
            "search_query: ".clone_into(&mut query_prefix);
            "search_document: ".clone_into(&mut document_prefix);
        }
        // Nomic BERT's width is `n_embd` (what candle's model reads), whatever else the
        // config says.
        let widths: &[&str] = if architecture == Architecture::NomicBert {
            &["n_embd", "hidden_size"]
        } else {
            &["hidden_size", "n_embd"]
        };
        let dimension = usize_field(&config, widths).ok_or_else(|| {
            Error::Model(format!("{}: config.json has no hidden size", dir.display()))
        })?;
        let weights_len = fs::metadata(dir.join("model.safetensors"))
            .map_err(|e| Error::io(dir, e))?
            .len();
        let name = config
            .get("_name_or_path")
            .and_then(Value::as_str)
            .unwrap_or(model_type);
        let layers = usize_field(&config, &["num_hidden_layers", "n_layer"]).unwrap_or(0);
        Ok(ModelFolder {
            dir: dir.to_path_buf(),
            architecture,
            normalize: module_types.iter().any(|t| t.ends_with("Normalize")),
            identity: format!(
                "{name}/{model_type}/d{dimension}/l{layers}/{weights_len}/t{max_seq_length}"
            ),
            config,
            pooling,
            max_seq_length,
            query_prefix,
            document_prefix,
            dimension,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    const BASE: [(&str, &str); 2] = [("tokenizer.json", "{}"), ("model.safetensors", "x")];

    #[test]
    fn reads_sentence_transformers_settings() {
        let mut files = BASE.to_vec();
        files.push(("config.json", r#"{"model_type": "bert", "hidden_size": 384, "max_position_embeddings": 512, "num_hidden_layers": 6}"#));
        files.push(("modules.json", r#"[{"type": "sentence_transformers.models.Transformer"}, {"type": "sentence_transformers.models.Normalize"}]"#));
        files.push((
            "1_Pooling/config.json",
            r#"{"pooling_mode_mean_tokens": true}"#,
        ));
        files.push(("sentence_bert_config.json", r#"{"max_seq_length": 256}"#));
        let dir = folder(&files);
        let f = ModelFolder::read(dir.path()).unwrap();
        assert_eq!(
            (
                f.architecture,
                f.pooling,
                f.normalize,
                f.max_seq_length,
                f.dimension
            ),
            (Architecture::Bert, Pooling::Mean, true, 256, 384)
        );
        assert!(f.query_prefix.is_empty());
    }

    #[test]
    fn nomic_gets_its_task_prefixes_and_cls_pooling_is_honoured() {
        let mut files = BASE.to_vec();
        files.push((
            "config.json",
            r#"{"model_type": "nomic_bert", "n_embd": 768, "n_positions": 8192}"#,
        ));
        files.push((
            "1_Pooling/config.json",
            r#"{"pooling_mode_cls_token": true}"#,
        ));
        let dir = folder(&files);
        let f = ModelFolder::read(dir.path()).unwrap();
        assert_eq!(
            (f.architecture, f.pooling, f.normalize, f.max_seq_length),
            (Architecture::NomicBert, Pooling::Cls, false, 512)
        );
        assert_eq!(
            (f.query_prefix.as_str(), f.document_prefix.as_str()),
            ("search_query: ", "search_document: ")
        );
    }

    /// Found by a review: a config with `hidden_size` beside `n_embd` made the index of the one
    /// width and the vectors of the other (an internal error after a wrong index was cached).
    #[test]
    fn nomic_is_as_wide_as_its_n_embd() {
        let mut files = BASE.to_vec();
        files.push((
            "config.json",
            r#"{"model_type": "nomic_bert", "n_embd": 8, "hidden_size": 4}"#,
        ));
        let dir = folder(&files);
        assert_eq!(ModelFolder::read(dir.path()).unwrap().dimension, 8);
    }

    /// Found by a review: a FIFO or folder in place of a required file was "lacks config.json"
    /// (a model error) while the same in place of an optional one is bad input.
    #[cfg(unix)]
    #[test]
    fn a_special_file_in_place_of_a_required_file_is_bad_input() {
        let config = ("config.json", r#"{"model_type": "bert", "hidden_size": 8}"#);
        for name in ["config.json", "tokenizer.json", "model.safetensors"] {
            let files: Vec<(&str, &str)> = BASE
                .iter()
                .copied()
                .chain([config])
                .filter(|(n, _)| *n != name)
                .collect();
            let dir = folder(&files);
            crate::repo::read::mkfifo(&dir.path().join(name));
            let err = ModelFolder::read(dir.path()).unwrap_err();
            assert!(
                err.is_input_error() && err.to_string().contains("FIFO"),
                "{name}: {err}"
            );
        }
    }

    /// A FIFO in place of an optional settings file once hung the load (Ctrl-C unheard) and
    /// `/dev/zero` there read until memory ran out: both are refused as not regular files.
    #[cfg(unix)]
    #[test]
    fn a_special_file_in_place_of_a_settings_file_is_refused() {
        let mut files = BASE.to_vec();
        files.push(("config.json", r#"{"model_type": "bert", "hidden_size": 8}"#));
        for name in [
            "modules.json",
            "sentence_bert_config.json",
            "1_Pooling/config.json",
        ] {
            let dir = folder(&files);
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            crate::repo::read::mkfifo(&path);
            let err = ModelFolder::read(dir.path()).unwrap_err();
            assert!(
                matches!(err, Error::InvalidInput(_)) && err.to_string().contains("FIFO"),
                "{name}: {err}"
            );
            if crate::repo::read::has_dev_zero() {
                fs::remove_file(&path).unwrap();
                std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
                let err = ModelFolder::read(dir.path()).unwrap_err().to_string();
                assert!(err.contains("not a regular file"), "{name}: {err}");
            }
        }
    }

    #[test]
    fn missing_files_and_unknown_models_are_clear_errors() {
        let dir = folder(&BASE);
        let err = ModelFolder::read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("lacks config.json"), "{err}");
        let mut files = BASE.to_vec();
        files.push(("config.json", r#"{"model_type": "gpt2", "hidden_size": 8}"#));
        let dir = folder(&files);
        assert!(ModelFolder::read(dir.path())
            .unwrap_err()
            .to_string()
            .contains("unsupported model_type"));
        assert!(ModelFolder::read(Path::new("/nonexistent/model")).is_err());
    }
}
