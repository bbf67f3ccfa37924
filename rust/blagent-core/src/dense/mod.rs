//! Dense retrieval: path-augmented chunks embedded by a sentence-transformers model, stored in a
//! Faiss index (exact by default, HNSW on request) persisted with a manifest, and searched per
//! query; a file's score is the best of its chunks.

mod index;
mod layout;
mod store;
mod vectors;

pub use self::index::{
    default_cache_dir, merge_candidates, DenseIndex, DenseModel, DenseOptions, DenseStats, FileHit,
    DEFAULT_CHUNKS_PER_QUERY, DEFAULT_MAX_TOKENS,
};
pub use self::store::{expected_manifest, fingerprint, IndexStore, Manifest, StoreMiss};
pub use self::vectors::{FaissIndex, VectorIndex, VectorIndexKind, DEFAULT_HNSW_M};
