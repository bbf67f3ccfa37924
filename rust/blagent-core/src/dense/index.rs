//! A repository's chunks embedded and searchable: chunk-level k-NN per query, a file's score is
//! the best of its chunks (BLAgent's rule).

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::store::{expected_manifest, fingerprint, IndexStore, StoreMiss};
use super::vectors::{FaissIndex, VectorIndex, VectorIndexKind};
use crate::embed::{EmbeddingCache, Encoder, TextKind};
use crate::error::{Error, Result};
use crate::index::RepoIndex;
use crate::timing::elapsed_ms;

/// Nearest chunks looked at per query, by default.
pub const DEFAULT_CHUNKS_PER_QUERY: usize = 200;

/// How to build and search a dense index.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenseOptions {
    /// Folder of the embedding model.
    pub model_dir: PathBuf,
    /// Where embeddings and vector indexes are cached ([`default_cache_dir`] when absent from
    /// the JSON); `None`: no cache.
    #[serde(default = "default_cache_dir")]
    pub cache_dir: Option<PathBuf>,
    /// Which vector index to build: an object (`{"kind": "hnsw", "m": 16}`); serde reads a
    /// tagged enum from a list too.
    #[serde(default, deserialize_with = "crate::json::object")]
    pub kind: VectorIndexKind,
    /// Nearest chunks looked at per query.
    #[serde(default = "default_chunks_per_query")]
    pub chunks_per_query: usize,
    /// Show a progress bar while embedding (only on a terminal).
    #[serde(default)]
    pub progress: bool,
    /// Truncate texts at this many tokens when below the model's own limit: by default
    /// [`DEFAULT_MAX_TOKENS`], `Some(0)` for the model's own limit.
    #[serde(default)]
    pub max_tokens: Option<usize>,
}

/// Tokens a text is truncated at unless [`DenseOptions::max_tokens`] says otherwise.
/// all-MiniLM-L6-v2 was trained on 128-token inputs (its folder allows 256), the dense fusion
/// weights were tuned and every dense figure measured at 128, and embedding costs grow faster
/// than linearly with length.
pub const DEFAULT_MAX_TOKENS: usize = 128;

fn default_chunks_per_query() -> usize {
    DEFAULT_CHUNKS_PER_QUERY
}

/// The embedding and vector-index cache: `$BLAGENT_CACHE_DIR`, else `~/.cache/blagent` (none
/// when neither the variable nor a home folder is set; an empty one counts as unset, since an
/// empty `HOME` put the cache under the current folder).
pub fn default_cache_dir() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    set("BLAGENT_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".cache/blagent")))
}

/// What building a dense index cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DenseStats {
    /// Chunk vectors read from the embedding cache.
    pub cached: usize,
    /// Chunk vectors computed.
    pub embedded: usize,
    /// Whether the vector index came from disk.
    pub index_loaded: bool,
    /// Why a stored index was rebuilt (`absent`, `stale`, `corrupt: …`), if one was looked for.
    pub rebuilt_because: Option<String>,
    /// What could not be written to the cache (vectors or the index), for the result's
    /// warnings: the run goes on without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_cached: Option<String>,
    /// Milliseconds embedding.
    pub embed_ms: f64,
    /// Milliseconds building or loading the vector index.
    pub index_ms: f64,
}

/// The embedding model with its cache, shared by every repository indexed with it.
#[derive(Debug, Clone)]
pub struct DenseModel {
    encoder: Arc<Encoder>,
    cache: Option<EmbeddingCache>,
    options: DenseOptions,
}

/// One file's dense score: the best of its chunks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileHit {
    /// File index in the [`RepoIndex`].
    pub file: usize,
    /// Cosine of its best chunk.
    pub score: f32,
    /// Chunk index (into `RepoIndex::chunk_refs`) of that chunk.
    pub chunk: usize,
}

/// The dense index of one repository.
pub struct DenseIndex {
    model: DenseModel,
    vectors: Box<dyn VectorIndex>,
    chunk_file: Vec<u32>,
    /// What building it cost.
    pub stats: DenseStats,
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("chunks", &self.chunk_file.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl DenseModel {
    /// Loads the model and opens its cache.
    pub fn load(options: DenseOptions) -> Result<Self> {
        if options.chunks_per_query == 0 {
            return Err(Error::InvalidInput(
                "chunks_per_query must be at least 1".to_owned(),
            ));
        }
        // A path that is not UTF-8 (`BLAGENT_CACHE_DIR` too) cannot be written in the results.
        if let Some(dir) = options.cache_dir.as_ref().filter(|d| d.to_str().is_none()) {
            return Err(Error::InvalidInput(format!(
                "the cache folder {} (--cache-dir or BLAGENT_CACHE_DIR) is not a UTF-8 path",
                dir.display()
            )));
        }
        let max_tokens = options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let encoder = Encoder::load_with_max_tokens(&options.model_dir, Some(max_tokens))?;
        let cache = match &options.cache_dir {
            Some(dir) => Some(EmbeddingCache::in_cache_dir(
                dir,
                &encoder.folder().identity,
            )?),
            None => None,
        };
        Ok(DenseModel {
            encoder: Arc::new(encoder),
            cache,
            options,
        })
    }

    /// Embeds every chunk of `repo` (through the cache) and builds, or loads when a sound stored
    /// one matches, its vector index.
    pub fn index(&self, repo: &RepoIndex) -> Result<DenseIndex> {
        let texts: Vec<String> = (0..repo.num_chunks()).map(|i| repo.chunk_text(i)).collect();
        let identity = &self.encoder.folder().identity;
        let dim = self.encoder.folder().dimension;
        let manifest = expected_manifest(
            identity,
            self.options.kind,
            dim,
            texts.len(),
            fingerprint(texts.iter().map(String::as_str)),
        );
        // One folder per chunk texts, model and index kind: two runs that differ in either
        // keep an index each instead of rebuilding each other's.
        let folder = fingerprint([
            manifest.fingerprint.as_str(),
            identity.as_str(),
            self.options.kind.name(),
        ]);
        let store = self
            .options
            .cache_dir
            .as_ref()
            .map(|dir| IndexStore::new(dir.join("indexes").join(&folder[..32])));
        self.check_cache_place(&repo.root, store.as_ref().map(IndexStore::dir))?;
        let mut stats = DenseStats::default();
        if let Some(store) = &store {
            store.check_folders()?;
            let start = Instant::now();
            match store.load(&manifest) {
                Ok(index) => {
                    stats.index_loaded = true;
                    stats.index_ms = elapsed_ms(start);
                    return Ok(self.wrap(Box::new(index), repo, stats));
                }
                Err(miss) => {
                    stats.rebuilt_because = Some(match miss {
                        StoreMiss::Absent => "absent".to_owned(),
                        StoreMiss::Stale => "stale".to_owned(),
                        StoreMiss::Corrupt(why) => format!("corrupt: {why}"),
                    });
                }
            }
        }
        let start = Instant::now();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = self.embed_documents(&refs, repo.files.len(), &mut stats)?;
        stats.embed_ms = elapsed_ms(start);
        let start = Instant::now();
        let flat: Vec<f32> = vectors.into_iter().flatten().collect();
        let index = FaissIndex::build(self.options.kind, dim, &flat)?;
        crate::cancel::check()?;
        if let Some(store) = &store {
            // A cache that cannot be written (read-only, full, something else in the index's
            // place) costs the next run the build, not this run its result.
            if let Err(e) = store.save(&index, &manifest) {
                stats.not_cached.get_or_insert(format!(
                    "the vector index was not stored in the cache ({e}); the next run builds it again"
                ));
            }
        }
        stats.index_ms = elapsed_ms(start);
        Ok(self.wrap(Box::new(index), repo, stats))
    }

    /// The vectors of `texts`, the chunks of `files` files, through the cache where there is
    /// one, with a progress bar.
    fn embed_documents(
        &self,
        texts: &[&str],
        files: usize,
        stats: &mut DenseStats,
    ) -> Result<Vec<Vec<f32>>> {
        let bar = self.progress_bar(texts.len(), files);
        let vectors = if let Some(cache) = &self.cache {
            let (vectors, cache_stats) =
                cache.embed_with_progress(&self.encoder, texts, TextKind::Document, &|n| {
                    bar.inc(n as u64);
                })?;
            stats.cached = cache_stats.hits;
            stats.embedded = cache_stats.misses;
            if let Some(why) = cache_stats.unstored_because {
                stats.not_cached = Some(format!(
                    "the embedding cache could not be written ({why}); vectors computed in this \
                     run were not stored"
                ));
            }
            vectors
        } else {
            let mut vectors = Vec::with_capacity(texts.len());
            for slice in texts.chunks(512) {
                vectors.extend(self.encoder.embed(slice, TextKind::Document)?);
                bar.inc(slice.len() as u64);
            }
            stats.embedded = texts.len();
            vectors
        };
        bar.finish_and_clear();
        Ok(vectors)
    }

    /// A bar on stderr (files, chunks done of all, chunks per second, time left), hidden
    /// with `--quiet` or where stderr is not a terminal.
    fn progress_bar(&self, len: usize, files: usize) -> ProgressBar {
        if !self.options.progress || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "embedding {msg}: {bar:30} {pos}/{len} chunks · {per_sec} · ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(format!("{files} files"));
        bar
    }

    fn wrap(
        &self,
        vectors: Box<dyn VectorIndex>,
        repo: &RepoIndex,
        stats: DenseStats,
    ) -> DenseIndex {
        DenseIndex {
            model: self.clone(),
            vectors,
            chunk_file: repo.chunk_refs.iter().map(|&(f, _)| f).collect(),
            stats,
        }
    }
}

impl DenseModel {
    /// Refuses a cache that would write inside the repository at `root` (a review found
    /// `--cache-dir repo/.cache` filled the user's tree), as a cassette may not be. The
    /// folders it writes in are checked (the embeddings' and `index`, the vector index's, both
    /// inside the cache folder): so a repository that is one of them (`CACHE/embeddings` took
    /// the model's folder) is refused too.
    pub fn check_cache_place(
        &self,
        root: &std::path::Path,
        index: Option<&std::path::Path>,
    ) -> Result<()> {
        let repository = crate::repo::Inputs::new().folder(Some(root));
        for folder in [self.cache.as_ref().map(EmbeddingCache::dir), index]
            .into_iter()
            .flatten()
        {
            crate::repo::check_folder_place(
                folder,
                &repository,
                "the cache folder (--cache-dir, BLAGENT_CACHE_DIR or ~/.cache/blagent)",
            )?;
        }
        Ok(())
    }

    /// The options it was loaded with.
    pub fn options(&self) -> &DenseOptions {
        &self.options
    }

    /// The vectors of `texts` as `kind`, through the cache when there is one (no progress bar:
    /// for the few texts of one query).
    pub fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>> {
        match &self.cache {
            Some(cache) => Ok(cache.embed(&self.encoder, texts, kind)?.0),
            None => self.encoder.embed(texts, kind),
        }
    }

    /// Embeds a query (through the cache when there is one).
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed(&[query], TextKind::Query)?
            .pop()
            .ok_or_else(|| Error::Internal("the encoder returned no vector".to_owned()))
    }
}

impl DenseIndex {
    /// Embeds a query (through the cache when there is one).
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.model.embed_query(query)
    }

    /// The nearest chunks to `query`: `(chunk, cosine)`, best first.
    pub fn search_chunks(&self, query: &str, k: usize) -> Result<Vec<(usize, f32)>> {
        let vector = self.embed_query(query)?;
        self.vectors.search(&vector, k)
    }

    /// Files by their best chunk among the `chunks_per_query` nearest chunks, best first.
    pub fn search_files(&self, query: &str) -> Result<Vec<FileHit>> {
        let chunks = self.search_chunks(query, self.model.options.chunks_per_query)?;
        Ok(files_from_chunks(&chunks, &self.chunk_file))
    }
}

/// File hits from chunk hits (best first): each file keeps its best chunk.
fn files_from_chunks(chunks: &[(usize, f32)], chunk_file: &[u32]) -> Vec<FileHit> {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut hits = Vec::new();
    for &(chunk, score) in chunks {
        let file = chunk_file[chunk] as usize;
        if seen.insert(file) {
            hits.push(FileHit { file, score, chunk });
        }
    }
    hits
}

/// BLAgent's candidate pool: the set `unique(list₁[:m] ∪ list₂[:m] ∪ …)`, at most `cap` files,
/// taken round-robin (every list's first file, then every list's second, …), so the pool's order
/// alternates between the lists, each list's best files come before any list's weaker ones, and
/// when `cap` cuts the pool it cuts the lists' tails evenly.
pub fn merge_candidates(lists: &[&[usize]], m: usize, cap: usize) -> Vec<usize> {
    let mut pool: Vec<usize> = Vec::with_capacity(cap);
    for depth in 0..m {
        for &file in lists.iter().filter_map(|list| list.get(depth)) {
            if pool.len() == cap {
                return pool;
            }
            if !pool.contains(&file) {
                pool.push(file);
            }
        }
    }
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_scores_its_best_chunk() {
        let chunk_file = [0, 0, 1, 2, 1];
        let hits = files_from_chunks(&[(1, 0.9), (4, 0.8), (0, 0.7), (2, 0.6)], &chunk_file);
        assert_eq!(
            hits.iter().map(|h| (h.file, h.chunk)).collect::<Vec<_>>(),
            vec![(0, 1), (1, 4)]
        );
        assert!((hits[0].score - 0.9).abs() < 1e-6);
    }

    #[test]
    fn candidates_alternate_dedup_and_cap() {
        assert_eq!(
            merge_candidates(&[&[1, 2, 3], &[3, 4, 5]], 2, 15),
            vec![1, 3, 2, 4]
        );
        assert_eq!(merge_candidates(&[&[1, 2], &[2, 1]], 2, 15), vec![1, 2]);
        assert_eq!(
            merge_candidates(&[&[1, 2, 3], &[3, 4, 5]], 3, 15),
            vec![1, 3, 2, 4, 5]
        );
        // A short list drops out; the others go on.
        assert_eq!(
            merge_candidates(&[&[7], &[1, 2, 3]], 3, 15),
            vec![7, 1, 2, 3]
        );
        // The cap cuts both lists' tails, not the second list.
        let a: Vec<usize> = (0..10).collect();
        let b: Vec<usize> = (10..20).collect();
        let pool = merge_candidates(&[&a, &b], 10, 15);
        assert_eq!(pool.len(), 15);
        assert_eq!(pool[..4], [0, 10, 1, 11]);
        assert!(pool.contains(&16) && !pool.contains(&8));
        assert!(merge_candidates(&[&a, &b], 0, 15).is_empty());
    }
}
