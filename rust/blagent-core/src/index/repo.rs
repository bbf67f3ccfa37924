//! Everything retrieval needs about one repository, built once and queried many times.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::bm25::{Bm25, Bm25Params};
use super::history::CommitIndex;
use super::paths::{Declared, PathResolver};
use crate::chunk::{parse_file, ChunkOptions, ParsedFile};
use crate::error::Result;
use crate::repo::history::{read_history, DEFAULT_MAX_COMMITS};
use crate::repo::{walk, SkipReason, Skipped, WalkOptions};
use crate::timing::elapsed_ms;

/// Options for indexing a repository.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexOptions {
    /// Which files to index.
    pub walk: WalkOptions,
    /// How to chunk them.
    pub chunk: ChunkOptions,
    /// BM25 parameters for both the file and the chunk index.
    pub bm25: Bm25Params,
    /// Recent commits read from the repository's `.git` folder, at most (0: none).
    pub history_commits: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            walk: WalkOptions::default(),
            chunk: ChunkOptions::default(),
            bm25: Bm25Params::default(),
            history_commits: DEFAULT_MAX_COMMITS,
        }
    }
}

/// One indexed source file.
#[derive(Debug)]
pub struct IndexedFile {
    /// Its text.
    pub text: String,
    /// Whether it was decoded lossily.
    pub lossy: bool,
    /// Its chunks, symbols and skeleton.
    pub parsed: ParsedFile,
}

impl IndexedFile {
    /// Repository-relative path.
    pub fn path(&self) -> &str {
        &self.parsed.path
    }
}

/// The top-level names a file of a language with packages declares: its top-level classes
/// and functions, and the file's own name (Java's public class; Kotlin's file facade
/// `ShopKt` for `Shop.kt`).
fn declared_names(file: &IndexedFile) -> Vec<String> {
    if file.parsed.package.is_none() {
        return Vec::new();
    }
    let mut names: Vec<String> = file
        .parsed
        .symbols
        .iter()
        .filter(|s| s.depth == 0)
        .map(|s| s.name.clone())
        .collect();
    let basename = file.path().rsplit('/').next().unwrap_or("");
    if let Some(stem) = basename.strip_suffix(".kt") {
        names.push(format!("{stem}Kt"));
    }
    names
}

/// The names of every class, function and method `file` defines, one per line: the document
/// of [`RepoIndex::names_bm25`].
fn defined_names(file: &IndexedFile) -> String {
    let mut doc = String::new();
    for symbol in &file.parsed.symbols {
        doc.push_str(&symbol.name);
        doc.push('\n');
    }
    doc
}

/// Milliseconds spent in each indexing stage.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct IndexTimings {
    /// Listing and reading files (the commit history is read alongside).
    pub walk_ms: f64,
    /// Parsing and chunking.
    pub parse_ms: f64,
    /// Building BM25 and symbol tables.
    pub index_ms: f64,
}

/// A repository's files, chunks, symbols and lexical indexes.
#[derive(Debug)]
pub struct RepoIndex {
    /// Canonical repository root.
    pub root: PathBuf,
    /// Indexed files, sorted by path.
    pub files: Vec<IndexedFile>,
    /// What the walk left out.
    pub skipped: Vec<Skipped>,
    /// Gradle and Maven modules (folders with a build file), sorted.
    pub modules: Vec<String>,
    /// BM25 over whole files (path-augmented).
    pub file_bm25: Bm25,
    /// BM25 over chunks (path-augmented).
    pub chunk_bm25: Bm25,
    /// BM25 over the names each file defines: its classes, functions and methods, nested
    /// ones too (one document per file, in file order).
    pub names_bm25: Bm25,
    /// The recent commits of the repository's `.git` folder, searchable by message (empty
    /// where there is none).
    pub history: CommitIndex,
    /// (file, chunk) of each chunk document.
    pub chunk_refs: Vec<(u32, u32)>,
    /// Bare symbol name → (file, symbol) of every definition.
    pub definitions: HashMap<String, Vec<(u32, u32)>>,
    /// Per file, its functions and methods and how many of them are declared without a body,
    /// where that counts ([`ParsedFile::bodiless`]): what the `unimplemented` signal reads,
    /// the same for every query.
    pub bodiless: Vec<Option<(usize, usize)>>,
    /// Maps mentioned paths and modules to files.
    pub resolver: PathResolver,
    /// Time spent building.
    pub timings: IndexTimings,
}

impl RepoIndex {
    /// Walks, parses and indexes the repository at `root`.
    pub fn build(root: &Path, options: &IndexOptions) -> Result<Self> {
        // Git reads the commit history on its own thread while the files are walked and parsed.
        let (mut walked, history, files, walk_ms, parse_ms) = std::thread::scope(|scope| {
            let history = scope.spawn(|| read_history(root, options.history_commits));
            let start = Instant::now();
            let mut walked = walk(root, &options.walk)?;
            let walk_ms = elapsed_ms(start);
            let start = Instant::now();
            let files: Vec<IndexedFile> = std::mem::take(&mut walked.files)
                .into_par_iter()
                .map(|source| IndexedFile {
                    parsed: parse_file(&source, &options.chunk),
                    lossy: source.lossy,
                    text: source.text,
                })
                .collect();
            let parse_ms = elapsed_ms(start);
            // A reader that panicked leaves no history, as a failing git does.
            let history = history.join().unwrap_or_default();
            Ok::<_, crate::Error>((walked, history, files, walk_ms, parse_ms))
        })?;
        // A stop asked for while parsing cuts the parses short: the index would be partial.
        crate::cancel::check()?;
        let mut skipped = std::mem::take(&mut walked.skipped);
        skipped.extend(
            files
                .iter()
                .filter(|f| f.parsed.parse_too_slow)
                .map(|f| Skipped {
                    path: f.path().to_owned(),
                    reason: SkipReason::ParseTooSlow,
                }),
        );
        skipped.extend(files.iter().flat_map(|f| {
            f.parsed
                .too_deep
                .iter()
                .map(|&(start_line, end_line)| Skipped {
                    path: f.path().to_owned(),
                    reason: SkipReason::NestedTooDeep {
                        start_line,
                        end_line,
                    },
                })
        }));

        let start = Instant::now();
        let chunk_refs: Vec<(u32, u32)> = files
            .iter()
            .enumerate()
            .flat_map(|(f, file)| (0..file.parsed.chunks.len()).map(move |c| (f as u32, c as u32)))
            .collect();
        let (file_bm25, chunk_bm25) = rayon::join(
            || {
                let docs = files.iter().map(|f| format!("{}\n{}", f.path(), f.text));
                Bm25::build(docs, options.bm25)
            },
            || {
                // Each chunk's text made as it is indexed, not all at once: a text carries its
                // path, and a long path over many chunks would take that many copies.
                let docs = chunk_refs.iter().map(|&(f, c)| {
                    let file = &files[f as usize];
                    file.parsed.chunks[c as usize].text(&file.text)
                });
                Bm25::build(docs, options.bm25)
            },
        );
        let names_bm25 = {
            let docs: Vec<String> = files.iter().map(defined_names).collect();
            Bm25::build(docs.iter().map(String::as_str), options.bm25)
        };
        let history =
            CommitIndex::build(history, files.iter().map(IndexedFile::path), options.bm25);
        let mut definitions: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        for (f, file) in files.iter().enumerate() {
            for (s, symbol) in file.parsed.symbols.iter().enumerate() {
                definitions
                    .entry(symbol.name.clone())
                    .or_default()
                    .push((f as u32, s as u32));
            }
        }
        let declared_names: Vec<Vec<String>> = files.iter().map(declared_names).collect();
        let resolver = PathResolver::new(files.iter().map(IndexedFile::path)).with_packages(
            files
                .iter()
                .zip(&declared_names)
                .enumerate()
                .filter_map(|(f, (file, names))| {
                    Some(Declared {
                        file: f as u32,
                        package: file.parsed.package.as_deref()?,
                        names,
                    })
                }),
        );
        let index_ms = elapsed_ms(start);

        let bodiless = files.iter().map(|f| f.parsed.bodiless()).collect();
        Ok(RepoIndex {
            root: walked.root,
            files,
            skipped,
            modules: walked.modules,
            file_bm25,
            chunk_bm25,
            names_bm25,
            history,
            chunk_refs,
            bodiless,
            definitions,
            resolver,
            timings: IndexTimings {
                walk_ms,
                parse_ms,
                index_ms,
            },
        })
    }

    /// Total number of chunks.
    pub fn num_chunks(&self) -> usize {
        self.chunk_refs.len()
    }

    /// The chunk documents of file `file` (ids into `chunk_refs` and the chunk BM25), which
    /// are contiguous since chunks are indexed file by file.
    pub fn chunk_docs(&self, file: usize) -> std::ops::Range<u32> {
        let file = file as u32;
        let lo = self.chunk_refs.partition_point(|&(f, _)| f < file);
        let hi = self.chunk_refs.partition_point(|&(f, _)| f <= file);
        lo as u32..hi as u32
    }

    /// The path-augmented text of chunk `i` (an index into `chunk_refs`), as BM25 and the
    /// dense index see it.
    pub fn chunk_text(&self, i: usize) -> String {
        let (f, c) = self.chunk_refs[i];
        let file = &self.files[f as usize];
        file.parsed.chunks[c as usize].text(&file.text)
    }
}
