//! Vector search behind one trait, so retrieval does not know which index answers: an exact
//! inner-product index by default, HNSW for large corpora, both from Faiss.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use faiss::index::autotune::ParameterSpace;
use faiss::index::{io, IndexImpl};
use faiss::{index_factory, Index, MetricType};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// HNSW graph degree when none is given.
pub const DEFAULT_HNSW_M: u32 = 32;
/// HNSW search breadth: larger is slower and closer to exact.
const HNSW_EF_SEARCH: f64 = 128.0;
/// Vectors added to an index per Faiss call (a cancellation check between calls).
const ADD_SLICE: usize = 1024;

/// Which vector index to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum VectorIndexKind {
    /// Exact inner product over every vector (Faiss `Flat`).
    #[default]
    Exact,
    /// Approximate search on a hierarchical navigable small-world graph (Faiss `HNSW<m>`).
    Hnsw {
        /// Neighbours per node.
        #[serde(default = "default_hnsw_m")]
        m: u32,
    },
}

fn default_hnsw_m() -> u32 {
    DEFAULT_HNSW_M
}

impl VectorIndexKind {
    /// The kinds' names (`kind` in the JSON), default first.
    pub const NAMES: [&'static str; 2] = ["exact", "hnsw"];

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            VectorIndexKind::Exact => Self::NAMES[0],
            VectorIndexKind::Hnsw { .. } => Self::NAMES[1],
        }
    }

    /// The Faiss factory string.
    fn description(self) -> String {
        match self {
            VectorIndexKind::Exact => "Flat".to_owned(),
            VectorIndexKind::Hnsw { m } => format!("HNSW{m},Flat"),
        }
    }
}

/// Nearest vectors by inner product (cosine for normalized vectors).
pub trait VectorIndex: Send + Sync {
    /// Number of vectors.
    fn len(&self) -> usize;
    /// Whether the index holds no vector.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Vector dimension.
    fn dim(&self) -> usize;
    /// The `k` best `(vector id, inner product)` for `query`, best first.
    fn search(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>>;
    /// Writes the index to `path`.
    fn save(&self, path: &Path) -> Result<()>;
}

fn faiss_err(e: &faiss::error::Error) -> Error {
    Error::Internal(format!("faiss: {e}"))
}

/// A Faiss index (exact or HNSW). Faiss searches need exclusive access through its Rust API, so
/// searches take a lock; they are short.
pub struct FaissIndex {
    inner: Mutex<IndexImpl>,
    dim: usize,
    len: usize,
}

impl std::fmt::Debug for FaissIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaissIndex")
            .field("dim", &self.dim)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl FaissIndex {
    /// Builds an index of `kind` over `vectors` (row-major, `dim` columns).
    pub fn build(kind: VectorIndexKind, dim: usize, vectors: &[f32]) -> Result<Self> {
        if dim == 0 || !vectors.len().is_multiple_of(dim) {
            return Err(Error::Internal(format!(
                "{} floats do not make vectors of dimension {dim}",
                vectors.len()
            )));
        }
        let mut index = index_factory(dim as u32, kind.description(), MetricType::InnerProduct)
            .map_err(|e| faiss_err(&e))?;
        // Added a slice at a time, so that Ctrl-C is heard while an HNSW graph is built (a
        // review: 30,000 vectors in one call took 55 s to stop). A flat index is the same
        // however its vectors come; a graph's links depend on the order of insertion, which
        // Faiss sorts by level within each call, so graphs of more vectors than a slice differ
        // from those built before in one call (each as good).
        for slice in vectors.chunks(ADD_SLICE * dim) {
            crate::cancel::check()?;
            index.add(slice).map_err(|e| faiss_err(&e))?;
        }
        Self::wrap(index, kind)
    }

    /// Reads the index in `bytes` (as [`VectorIndex::save`] wrote them, checked by the caller):
    /// Faiss reads a private copy of exactly these bytes, never the file they came from, which
    /// may have changed since they were read (a review swapped in a forged file between the
    /// check and Faiss's read).
    /// The copy is made in the system's temporary folder, else in `beside` (the index's own
    /// folder: a `TMPDIR` that cannot be written made every run rebuild its index).
    pub fn from_bytes(bytes: Vec<u8>, kind: VectorIndexKind, beside: &Path) -> Result<Self> {
        let copy = tempfile::NamedTempFile::new()
            .ok()
            .filter(|copy| copy.path().to_str().is_some())
            .map_or_else(|| tempfile::NamedTempFile::new_in(beside), Ok)
            .map_err(|e| Error::io(beside, e))?;
        let mut file = copy.as_file();
        file.write_all(&bytes)
            .and_then(|()| file.flush())
            .map_err(|e| Error::io(copy.path(), e))?;
        drop(bytes); // Faiss's reading is a copy of its own
        Self::load(copy.path(), kind)
    }

    /// Reads an index written by [`VectorIndex::save`]; any failure is an error (never a panic).
    pub fn load(path: &Path, kind: VectorIndexKind) -> Result<Self> {
        let name = path
            .to_str()
            .ok_or_else(|| Error::InvalidInput(format!("non-UTF-8 path {}", path.display())))?;
        let index = io::read_index(name).map_err(|e| faiss_err(&e))?;
        Self::wrap(index, kind)
    }

    fn wrap(index: IndexImpl, kind: VectorIndexKind) -> Result<Self> {
        if let VectorIndexKind::Hnsw { .. } = kind {
            ParameterSpace::new()
                .and_then(|space| space.set_index_parameter(&index, "efSearch", HNSW_EF_SEARCH))
                .map_err(|e| faiss_err(&e))?;
        }
        let dim = index.d() as usize;
        let len = index.ntotal() as usize;
        Ok(FaissIndex {
            inner: Mutex::new(index),
            dim,
            len,
        })
    }
}

impl VectorIndex for FaissIndex {
    fn len(&self) -> usize {
        self.len
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn search(&self, query: &[f32], k: usize) -> Result<Vec<(usize, f32)>> {
        if query.len() != self.dim {
            return Err(Error::Internal(format!(
                "query of dimension {} for an index of {}",
                query.len(),
                self.dim
            )));
        }
        let k = k.min(self.len);
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut index = self
            .inner
            .lock()
            .map_err(|_| Error::Internal("faiss index lock poisoned".to_owned()))?;
        let found = index.search(query, k).map_err(|e| faiss_err(&e))?;
        Ok(found
            .labels
            .iter()
            .zip(&found.distances)
            .filter_map(|(label, &score)| label.get().map(|id| (id as usize, score)))
            .collect())
    }

    fn save(&self, path: &Path) -> Result<()> {
        let name = path
            .to_str()
            .ok_or_else(|| Error::InvalidInput(format!("non-UTF-8 path {}", path.display())))?;
        let index = self
            .inner
            .lock()
            .map_err(|_| Error::Internal("faiss index lock poisoned".to_owned()))?;
        io::write_index(&*index, name).map_err(|e| faiss_err(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn corpus() -> Vec<f32> {
        // 200 distinct unit vectors in 8 dimensions.
        (0..200u32)
            .flat_map(|i| {
                unit(
                    &(0..8u32)
                        .map(|j| ((i * 7 + j * 13) % 17) as f32 + 0.5)
                        .collect::<Vec<_>>(),
                )
            })
            .collect()
    }

    #[test]
    fn exact_search_finds_the_vector_itself_first() {
        let data = corpus();
        let index = FaissIndex::build(VectorIndexKind::Exact, 8, &data).unwrap();
        assert_eq!(index.len(), 200);
        let hits = index.search(&data[8 * 42..8 * 43], 3).unwrap();
        assert_eq!(hits.len(), 3);
        assert!((hits[0].1 - 1.0).abs() < 1e-5);
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        let best = hits[0].0;
        assert_eq!(&data[8 * best..8 * best + 8], &data[8 * 42..8 * 43]);
    }

    #[test]
    fn hnsw_agrees_with_exact_on_the_best_hit() {
        let data = corpus();
        let exact = FaissIndex::build(VectorIndexKind::Exact, 8, &data).unwrap();
        let hnsw = FaissIndex::build(VectorIndexKind::Hnsw { m: 16 }, 8, &data).unwrap();
        for q in [3usize, 77, 150] {
            let query = &data[8 * q..8 * q + 8];
            assert!(
                (exact.search(query, 1).unwrap()[0].1 - hnsw.search(query, 1).unwrap()[0].1).abs()
                    < 1e-5
            );
        }
    }

    #[test]
    fn save_and_load_round_trip_and_garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let data = corpus();
        let index = FaissIndex::build(VectorIndexKind::Exact, 8, &data).unwrap();
        let path = dir.path().join("v.faiss");
        index.save(&path).unwrap();
        let loaded = FaissIndex::load(&path, VectorIndexKind::Exact).unwrap();
        assert_eq!(
            loaded.search(&data[..8], 5).unwrap(),
            index.search(&data[..8], 5).unwrap()
        );
        std::fs::write(&path, b"not an index").unwrap();
        assert!(FaissIndex::load(&path, VectorIndexKind::Exact).is_err());
    }

    #[test]
    fn bad_shapes_are_errors_and_empty_searches_are_empty() {
        assert!(FaissIndex::build(VectorIndexKind::Exact, 8, &[1.0; 12]).is_err());
        let empty = FaissIndex::build(VectorIndexKind::Exact, 8, &[]).unwrap();
        assert!(empty.search(&[0.0; 8], 5).unwrap().is_empty());
        assert!(empty.search(&[0.0; 3], 5).is_err());
    }
}
