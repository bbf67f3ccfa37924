//! Running the encoder: tokenize, sort by length, batch under a token budget so that padding
//! stays small, run the batches on the CPU, pool and normalize as the folder says.

use std::path::Path;

use candle_core::{DType, Device, IndexOp, Tensor, D};
use candle_nn::VarBuilder;
use candle_transformers::models::{bert, nomic_bert};

use super::bert::Bert;
use super::blas::Precision;
use rayon::prelude::*;
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use super::folder::{Architecture, ModelFolder, Pooling};
use crate::error::{Error, Result};
use crate::repo::read::{read_bounded, MAX_DATA_FILE_BYTES};

/// The largest weights file read (a model of about a billion f32 parameters).
const MAX_MODEL_BYTES: u64 = 4 << 30;

/// Padded tokens per batch at most (rows × longest row). Small batches keep each layer's
/// activations in cache: on 256 django chunks (2 threads), 1024 gave 25.7 chunks per CPU
/// second, 512 the same, 2048 23.8, 4096 20.3 and 8192 17.2 (`examples/encode_bench.rs`).
const BATCH_TOKENS: usize = 1024;
/// What bf16 vectors add to the model's identity in the caches. The `.2` marks the second bf16
/// arithmetic (attention on AMX tiles as well): its vectors differ from the first's in the
/// fifth decimal, and a cache never mixes the two.
const BF16_IDENTITY: &str = "/bf16.2";
/// What bf16 vectors of the AVX-512 dot products add to the model's identity in the caches:
/// their sums run in another order than the tiles', so their vectors are neither f32's nor
/// AMX's. The `.2` marks attention in bf16 as well (`.1` kept it in f32).
const BF16_AVX512_IDENTITY: &str = "/bf16-avx512.2";
/// What int8 vectors (AVX-512 VNNI, [`Precision::Int8Avx512`]) add to the model's identity in
/// the caches; `.1` is the first calibration of `int8_ranges.json`.
const INT8_AVX512_IDENTITY: &str = "/int8-avx512.1";
/// The same where the layers int8 does not run, and attention, run in f32
/// ([`Precision::int8_with_f32`]: CPUs whose bf16 dot products do not outrun f32).
const INT8_F32_IDENTITY: &str = "/int8-avx512-f32.1";
/// Rows per batch at most.
const BATCH_ROWS: usize = 64;

/// Whether a text is a query or a document (models with task prefixes embed them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A search query (an issue, a rewritten query).
    Query,
    /// A document (a code chunk).
    Document,
}

impl TextKind {
    /// The kind named `document` or `query`; another name is an input error.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "document" => Ok(TextKind::Document),
            "query" => Ok(TextKind::Query),
            other => Err(Error::InvalidInput(format!(
                "kind must be 'document' or 'query', not {other:?}"
            ))),
        }
    }
}

enum Model {
    Bert(Bert),
    NomicBert(nomic_bert::NomicBertModel),
}

/// A loaded sentence encoder.
pub struct Encoder {
    folder: ModelFolder,
    tokenizer: Tokenizer,
    model: Model,
    device: Device,
    precision: Precision,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("folder", &self.folder)
            .field("precision", &self.precision)
            .finish_non_exhaustive()
    }
}

/// A model error from a library's error: its first line (candle appends a backtrace when
/// `RUST_BACKTRACE` is set, which does not belong in a one-line error).
fn model_err(e: impl std::fmt::Display) -> Error {
    let text = e.to_string();
    Error::Model(text.lines().next().unwrap_or_default().to_owned())
}

/// The most bytes of a text handed to the tokenizer, cut at a character boundary: its first
/// 512 tokens (the longest input of a BERT model) never reach this far but in text made to,
/// and a 16 MiB issue tokenized whole (`--dense`) took 1,975 MB and 11.5 s before the first
/// 128 tokens were kept.
const MAX_TEXT_BYTES: usize = 64 << 10;

impl Encoder {
    /// Loads the model folder at `dir` onto the CPU, in the fastest [`Precision`] it has.
    pub fn load(dir: &Path) -> Result<Self> {
        Self::load_with_max_tokens(dir, None)
    }

    /// [`Encoder::load`], truncating inputs at `max_tokens` when that is below the folder's limit.
    /// The precision is [`Precision::from_environment`]'s.
    pub fn load_with_max_tokens(dir: &Path, max_tokens: Option<usize>) -> Result<Self> {
        let precision = Precision::from_environment().map_err(Error::InvalidInput)?;
        Self::load_with(dir, max_tokens, precision)
    }

    /// [`Encoder::load_with_max_tokens`] in `precision`. Vectors of another precision are
    /// another model to the caches: [`Precision::Bf16Amx`] adds [`BF16_IDENTITY`] to the
    /// identity, [`Precision::Bf16Avx512`] [`BF16_AVX512_IDENTITY`], [`Precision::Int8Avx512`]
    /// [`INT8_AVX512_IDENTITY`].
    /// Models other than BERT (Nomic BERT) run in f32 whatever is asked.
    pub fn load_with(dir: &Path, max_tokens: Option<usize>, precision: Precision) -> Result<Self> {
        super::fit_candle_threads();
        let mut folder = ModelFolder::read(dir)?;
        if let Some(cap) = max_tokens {
            folder.cap_max_seq_length(cap);
        }
        let precision = match folder.architecture {
            Architecture::Bert => precision,
            Architecture::NomicBert => Precision::F32,
        };
        let precision = precision.runnable().map_err(Error::InvalidInput)?;
        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_bytes = read_bounded(&tokenizer_path, MAX_DATA_FILE_BYTES)
            .map_err(|f| f.into_error(&tokenizer_path, "model file"))?;
        // The caches key vectors by what makes them: two folders alike in name and sizes (a
        // fine-tune of the same size) must not share them.
        let mut contents = blake3::Hasher::new();
        contents.update(&tokenizer_bytes);
        let mut tokenizer = Tokenizer::from_bytes(tokenizer_bytes)
            .map_err(|e| Error::Model(format!("{}: {e}", tokenizer_path.display())))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: folder.max_seq_length,
                ..TruncationParams::default()
            }))
            .map_err(model_err)?;
        tokenizer.with_padding(None);
        let device = Device::Cpu;
        let weights_path = dir.join("model.safetensors");
        let weights = read_bounded(&weights_path, MAX_MODEL_BYTES)
            .map_err(|f| f.into_error(&weights_path, "model file"))?;
        contents.update(&weights);
        // And what else makes the vectors: the configuration (activation, heads, the layer
        // norm's epsilon, …), pooling, normalization and prefixes (a review: a folder switched
        // to CLS pooling was served the mean-pooled vectors of its cache).
        let settings = serde_json::json!({
            "config": folder.config,
            "pooling": folder.pooling,
            "normalize": folder.normalize,
            "query_prefix": folder.query_prefix,
            "document_prefix": folder.document_prefix,
        });
        contents.update(settings.to_string().as_bytes());
        folder.identity.push_str("/c");
        folder
            .identity
            .push_str(&contents.finalize().to_hex()[..16]);
        match precision {
            Precision::Bf16Amx => folder.identity.push_str(BF16_IDENTITY),
            Precision::Bf16Avx512 => folder.identity.push_str(BF16_AVX512_IDENTITY),
            Precision::Int8Avx512 if precision.int8_with_f32() => {
                folder.identity.push_str(INT8_F32_IDENTITY);
            }
            Precision::Int8Avx512 => folder.identity.push_str(INT8_AVX512_IDENTITY),
            Precision::F32 => {}
        }
        // Errors of reading the weights name their file (a review: "header too large" alone).
        let weights_err =
            |e: candle_core::Error| model_err(format!("{}: {e}", weights_path.display()));
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(weights_err)?;
        let model = match folder.architecture {
            Architecture::Bert => {
                let config: bert::Config = serde_json::from_value(folder.config.clone())
                    .map_err(|e| Error::Model(format!("config.json: {e}")))?;
                check_sizes(&[
                    (
                        "num_attention_heads",
                        config.num_attention_heads,
                        1,
                        MAX_WIDTH,
                    ),
                    ("hidden_size", config.hidden_size, 1, MAX_WIDTH),
                    ("num_hidden_layers", config.num_hidden_layers, 1, MAX_LAYERS),
                    (
                        "max_position_embeddings",
                        config.max_position_embeddings,
                        1,
                        MAX_POSITIONS,
                    ),
                ])?;
                check_heads(config.hidden_size, config.num_attention_heads)?;
                Model::Bert(Bert::load(&vb, &config, precision).map_err(weights_err)?)
            }
            Architecture::NomicBert => {
                let config: nomic_bert::Config = serde_json::from_value(folder.config.clone())
                    .map_err(|e| Error::Model(format!("config.json: {e}")))?;
                check_sizes(&[
                    ("n_head", config.n_head, 1, MAX_WIDTH),
                    ("n_embd", config.n_embd, 1, MAX_WIDTH),
                    ("n_layer", config.n_layer, 1, MAX_LAYERS),
                    ("n_positions", config.n_positions, 1, MAX_POSITIONS),
                ])?;
                check_heads(config.n_embd, config.n_head)?;
                // The rotary tables (positions × rotated dimensions) are built from these alone.
                let fraction = config.rotary_emb_fraction;
                if !(fraction > 0.0 && fraction <= 1.0) {
                    return Err(Error::Model(format!(
                        "config.json: rotary_emb_fraction must be above 0 and at most 1, \
                         not {fraction}"
                    )));
                }
                Model::NomicBert(
                    nomic_bert::NomicBertModel::load(vb, &config).map_err(weights_err)?,
                )
            }
        };
        Ok(Encoder {
            folder,
            tokenizer,
            model,
            device,
            precision,
        })
    }

    /// The precision the linear layers run in.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The folder's configuration (dimension, pooling, identity, …).
    pub fn folder(&self) -> &ModelFolder {
        &self.folder
    }

    /// Embeds `texts`, one vector per text in the same order.
    pub fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>> {
        let prefix = match kind {
            TextKind::Query => &self.folder.query_prefix,
            TextKind::Document => &self.folder.document_prefix,
        };
        let inputs: Vec<String> = texts
            .iter()
            .map(|t| format!("{prefix}{}", crate::text::head(t, MAX_TEXT_BYTES)))
            .collect();
        let encodings = crate::error::tokenize_or_refuse(&self.folder.dir, || {
            self.tokenizer.encode_batch(inputs, true).map_err(model_err)
        })?;
        let batches = length_batches(&encodings);
        let embedded: Vec<Vec<(usize, Vec<f32>)>> = batches
            .par_iter()
            .map(|batch| {
                crate::cancel::check()?;
                let rows: Vec<&Encoding> = batch.iter().map(|&i| &encodings[i]).collect();
                let vectors = self.embed_batch(&rows)?;
                Ok(batch.iter().copied().zip(vectors).collect())
            })
            .collect::<Result<_>>()?;
        let mut out = vec![Vec::new(); texts.len()];
        for (i, vector) in embedded.into_iter().flatten() {
            out[i] = vector;
        }
        // What the index and the cache would take silently: vectors of another width than
        // the folder's, or with NaN or infinite values (Faiss finds nothing for them).
        let dimension = self.folder.dimension;
        if let Some(vector) = out.iter().find(|v| v.len() != dimension) {
            return Err(Error::Model(format!(
                "{}: the model gives vectors of {} values, its config.json says {dimension}",
                self.folder.dir.display(),
                vector.len()
            )));
        }
        if out.iter().flatten().any(|x| !x.is_finite()) {
            return Err(Error::Model(format!(
                "{}: the model gives vectors with NaN or infinite values (its weights or \
                 layer_norm_eps?)",
                self.folder.dir.display()
            )));
        }
        Ok(out)
    }

    fn embed_batch(&self, rows: &[&Encoding]) -> Result<Vec<Vec<f32>>> {
        let width = rows
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = Vec::with_capacity(rows.len() * width);
        let mut mask = Vec::with_capacity(rows.len() * width);
        for row in rows {
            let n = row.get_ids().len();
            ids.extend_from_slice(row.get_ids());
            ids.extend(std::iter::repeat_n(0u32, width - n));
            mask.extend(std::iter::repeat_n(1u32, n));
            mask.extend(std::iter::repeat_n(0u32, width - n));
        }
        let shape = (rows.len(), width);
        let ids = Tensor::from_vec(ids, shape, &self.device).map_err(model_err)?;
        let hidden = match &self.model {
            Model::Bert(model) => model.forward(&ids, &mask),
            Model::NomicBert(model) => {
                let mask = Tensor::new(mask.as_slice(), &self.device)
                    .and_then(|m| m.reshape(shape))
                    .map_err(model_err)?;
                model.forward(&ids, None, Some(&mask))
            }
        }
        .map_err(model_err)?;
        let mask = Tensor::from_vec(mask, shape, &self.device).map_err(model_err)?;
        let pooled = pool(&hidden, &mask, self.folder.pooling).map_err(model_err)?;
        let pooled = if self.folder.normalize {
            l2_normalize(&pooled).map_err(model_err)?
        } else {
            pooled
        };
        pooled.to_vec2::<f32>().map_err(model_err)
    }
}

/// Indices grouped into batches of similar length, longest first.
fn length_batches(encodings: &[Encoding]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..encodings.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].get_ids().len()));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut width = 0;
    for i in order {
        let len = encodings[i].get_ids().len().max(1);
        let new_width = width.max(len);
        if !current.is_empty()
            && (current.len() >= BATCH_ROWS || new_width * (current.len() + 1) > BATCH_TOKENS)
        {
            batches.push(std::mem::take(&mut current));
            width = 0;
        }
        width = width.max(len);
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

fn pool(hidden: &Tensor, mask: &Tensor, pooling: Pooling) -> candle_core::Result<Tensor> {
    match pooling {
        Pooling::Mean => nomic_bert::mean_pooling(hidden, mask),
        Pooling::Cls => hidden.i((.., 0)),
        Pooling::Max => {
            // Padded positions get a large negative value so they never win the maximum.
            let mask = mask.to_dtype(hidden.dtype())?.unsqueeze(2)?;
            let penalty = ((mask.ones_like()? - &mask)? * -1e9)?;
            hidden.broadcast_add(&penalty)?.max(1)
        }
    }
}

fn l2_normalize(x: &Tensor) -> candle_core::Result<Tensor> {
    let norm = x
        .sqr()?
        .sum_keepdim(D::Minus1)?
        .sqrt()?
        .clamp(1e-12, f64::MAX)?;
    x.broadcast_div(&norm)
}

/// The widest hidden layer a model folder may declare (the largest encoders have 4,096).
const MAX_WIDTH: usize = 16_384;
/// The most layers a model folder may declare.
const MAX_LAYERS: usize = 256;
/// The most positions a model folder may declare: tables of this length are built before any
/// weight is read, so a lying `config.json` could ask for any amount of memory.
const MAX_POSITIONS: usize = 65_536;

/// Each `(name, value, least, most)` of `config.json` within its range, else a model error
/// naming it (a zero head count divided by zero; huge sizes asked for unbounded memory).
fn check_sizes(sizes: &[(&str, usize, usize, usize)]) -> Result<()> {
    for &(name, value, least, most) in sizes {
        if !(least..=most).contains(&value) {
            return Err(Error::Model(format!(
                "config.json: {name} must be from {least} to {most}, not {value}"
            )));
        }
    }
    Ok(())
}

/// The hidden width splits evenly over the attention heads.
fn check_heads(width: usize, heads: usize) -> Result<()> {
    if !width.is_multiple_of(heads) {
        return Err(Error::Model(format!(
            "config.json: the hidden width {width} does not split over {heads} attention heads"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_kinds_are_read_by_name() {
        assert_eq!(TextKind::from_name("query").ok(), Some(TextKind::Query));
        assert_eq!(
            TextKind::from_name("document").ok(),
            Some(TextKind::Document)
        );
        let err = TextKind::from_name("chunk").expect_err("not a kind");
        assert_eq!(err.kind(), crate::ErrorKind::Input);
        assert!(err.to_string().contains("\"chunk\""), "{err}");
    }
}
