//! Dense encoders: a sentence-transformers / Hugging Face model folder (`config.json`,
//! `model.safetensors`, `tokenizer.json`, pooling config) loaded with candle and run on the CPU,
//! with length-bucketed batches so that padding wastes little work.

mod amx;
mod avx512;
mod bert;
mod blas;
mod cache;
mod encoder;
mod folder;
mod int8_ranges;
mod kernels;
mod threads;
mod vnni;

pub use self::blas::{core_name as blas_core, Precision, PRECISION_VARIABLE};
pub use self::cache::{CacheStats, EmbeddingCache};
pub use self::encoder::{Encoder, TextKind};
pub use self::folder::{Architecture, ModelFolder, Pooling};
pub use self::threads::{fit_candle_threads, thread_counts};
