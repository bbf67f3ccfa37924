//! A vector index persisted on disk with a manifest that says what it was built from, so a stale
//! index (other model, other chunks, other kind) or a corrupt one (checksum mismatch, unreadable)
//! is detected and rebuilt, never trusted.
//!
//! Layout of one stored index: `<dir>/manifest.json` and `<dir>/vectors.faiss`. The manifest is
//! written last, after the index file has been renamed into place, so a crash in between leaves a
//! manifest that does not match and the next run rebuilds.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::vectors::{FaissIndex, VectorIndex, VectorIndexKind};
use crate::error::{Error, Result};
use crate::repo::read::{read_own_bounded, MAX_SMALL_FILE_BYTES};

/// Bumped when the stored layout changes; older stores are rebuilt.
const FORMAT: u32 = 1;
const MANIFEST: &str = "manifest.json";
const VECTORS: &str = "vectors.faiss";

/// What a stored index was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The store format of the writer; an index stored in another format is stale.
    pub format: u32,
    /// Identity of the embedding model.
    pub model: String,
    /// Index kind.
    pub kind: VectorIndexKind,
    /// Vector dimension.
    pub dim: usize,
    /// Number of vectors.
    pub len: usize,
    /// BLAKE3 over every embedded text in order: the index content is a function of it.
    pub fingerprint: String,
    /// BLAKE3 of the index file.
    pub checksum: String,
}

/// Why a stored index was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreMiss {
    /// Nothing stored yet.
    Absent,
    /// Built from other texts, another model, kind or format.
    Stale,
    /// Unreadable, or its bytes do not match the manifest.
    Corrupt(String),
}

/// The fingerprint of the texts an index is built over.
pub fn fingerprint<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let mut hasher = blake3::Hasher::new();
    for text in texts {
        hasher.update(&(text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    hasher.finalize().to_hex().to_string()
}

/// One stored index folder.
#[derive(Debug, Clone)]
pub struct IndexStore {
    dir: PathBuf,
}

impl IndexStore {
    /// The store in `dir` (created when saving).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        IndexStore { dir: dir.into() }
    }

    /// The store's folder.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Refuses a store whose folder, or the folder of stores above it, is a symbolic link:
    /// saving would replace the files of wherever it points.
    pub fn check_folders(&self) -> Result<()> {
        let parent = self.dir.parent().unwrap_or(&self.dir);
        crate::repo::refuse_linked_folders(&[parent, &self.dir], "index cache")
    }

    /// Loads the stored index if it was built exactly as `expected` says (checksum aside).
    pub fn load(&self, expected: &Manifest) -> std::result::Result<FaissIndex, StoreMiss> {
        let manifest_path = self.dir.join(MANIFEST);
        let text = match read_own_bounded(&manifest_path, MAX_SMALL_FILE_BYTES) {
            Ok(text) => text,
            Err(failure) if failure.is_not_found() => return Err(StoreMiss::Absent),
            Err(failure) => {
                let error = failure.into_error(&manifest_path, "index manifest");
                return Err(StoreMiss::Corrupt(error.to_string()));
            }
        };
        let manifest: Manifest = serde_json::from_slice(&text)
            .map_err(|e| StoreMiss::Corrupt(format!("manifest: {e}")))?;
        let same_source = manifest.format == FORMAT
            && manifest.model == expected.model
            && manifest.kind == expected.kind
            && manifest.dim == expected.dim
            && manifest.len == expected.len
            && manifest.fingerprint == expected.fingerprint;
        if !same_source {
            return Err(StoreMiss::Stale);
        }
        let path = self.dir.join(VECTORS);
        // The manifest says how many vectors of what width: the file holds them and, for
        // HNSW, their links (under a kilobyte each at the graph's degree).
        let limit = (manifest.len as u64)
            .saturating_mul(manifest.dim as u64 * 4 + 1024)
            .saturating_add(64 << 20);
        let bytes = read_own_bounded(&path, limit)
            .map_err(|f| StoreMiss::Corrupt(f.into_error(&path, "index file").to_string()))?;
        if blake3::hash(&bytes).to_hex().as_str() != manifest.checksum {
            return Err(StoreMiss::Corrupt(
                "index file checksum mismatch".to_owned(),
            ));
        }
        // A checksum is no proof against a file crafted with its manifest: Faiss would
        // allocate whatever lengths the file declares.
        super::layout::check(&bytes, manifest.kind, manifest.dim, manifest.len)
            .map_err(|why| StoreMiss::Corrupt(format!("index file: {why}")))?;
        let index = FaissIndex::from_bytes(bytes, manifest.kind, &self.dir)
            .map_err(|e| StoreMiss::Corrupt(e.to_string()))?;
        if index.len() != manifest.len || index.dim() != manifest.dim {
            return Err(StoreMiss::Corrupt(
                "index size differs from its manifest".to_owned(),
            ));
        }
        Ok(index)
    }

    /// Writes `index` and its manifest (`manifest.checksum` is filled in here).
    pub fn save(&self, index: &dyn VectorIndex, manifest: &Manifest) -> Result<()> {
        // Something other than a file where the index or manifest belongs (a FIFO, a folder,
        // a link) is not blagent's to replace: the index is not stored.
        for name in [VECTORS, MANIFEST] {
            let path = self.dir.join(name);
            if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
                return Err(Error::InvalidInput(format!(
                    "{} is not a file blagent wrote; it is left as it is",
                    path.display()
                )));
            }
        }
        fs::create_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(".vectors")
            .tempfile_in(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        index.save(tmp.path())?;
        let bytes = fs::read(tmp.path()).map_err(|e| Error::io(tmp.path(), e))?;
        // Faiss does not report an error on closing the file it wrote (a full disk left an
        // index cut short): what it wrote is checked as a load would check it.
        super::layout::check(&bytes, manifest.kind, manifest.dim, manifest.len)
            .map_err(|why| Error::Internal(format!("the index written is not whole: {why}")))?;
        let path = self.dir.join(VECTORS);
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        let manifest = Manifest {
            format: FORMAT,
            checksum: blake3::hash(&bytes).to_hex().to_string(),
            ..manifest.clone()
        };
        let mut out =
            tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        out.write_all(serde_json::to_string_pretty(&manifest)?.as_bytes())
            .map_err(|e| Error::io(out.path(), e))?;
        let path = self.dir.join(MANIFEST);
        out.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }
}

/// A manifest for an index about to be built or looked up (checksum unknown yet).
pub fn expected_manifest(
    model: &str,
    kind: VectorIndexKind,
    dim: usize,
    len: usize,
    fingerprint: String,
) -> Manifest {
    Manifest {
        format: FORMAT,
        model: model.to_owned(),
        kind,
        dim,
        len,
        fingerprint,
        checksum: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by a review: a store folder linked to another folder had that folder's
    /// `manifest.json` and `vectors.faiss` replaced.
    #[cfg(unix)]
    #[test]
    fn a_linked_store_folder_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join(MANIFEST), "{}").unwrap();
        let indexes = dir.path().join("cache/indexes");
        fs::create_dir_all(&indexes).unwrap();
        std::os::unix::fs::symlink(&victim, indexes.join("fp")).unwrap();
        let err = IndexStore::new(indexes.join("fp"))
            .check_folders()
            .unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        let linked_parent = dir.path().join("other/indexes");
        fs::create_dir_all(linked_parent.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, &linked_parent).unwrap();
        let err = IndexStore::new(linked_parent.join("fp"))
            .check_folders()
            .unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        IndexStore::new(dir.path().join("cache/indexes/own"))
            .check_folders()
            .unwrap();
        assert_eq!(fs::read_to_string(victim.join(MANIFEST)).unwrap(), "{}");
    }

    fn index() -> (FaissIndex, Manifest) {
        let data: Vec<f32> = (0..64).map(|i| (i % 5) as f32).collect();
        let index = FaissIndex::build(VectorIndexKind::Exact, 4, &data).unwrap();
        let manifest =
            expected_manifest("m", VectorIndexKind::Exact, 4, 16, fingerprint(["a", "b"]));
        (index, manifest)
    }

    #[test]
    fn a_saved_index_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = IndexStore::new(dir.path().join("s"));
        let (index, manifest) = index();
        assert_eq!(store.load(&manifest).unwrap_err(), StoreMiss::Absent);
        store.save(&index, &manifest).unwrap();
        let loaded = store.load(&manifest).unwrap();
        assert_eq!(loaded.len(), 16);
    }

    #[test]
    fn another_model_or_other_texts_make_it_stale() {
        let dir = tempfile::tempdir().unwrap();
        let store = IndexStore::new(dir.path());
        let (index, manifest) = index();
        store.save(&index, &manifest).unwrap();
        let other_model = Manifest {
            model: "n".to_owned(),
            ..manifest.clone()
        };
        assert_eq!(store.load(&other_model).unwrap_err(), StoreMiss::Stale);
        let other_texts = Manifest {
            fingerprint: fingerprint(["a", "c"]),
            ..manifest.clone()
        };
        assert_eq!(store.load(&other_texts).unwrap_err(), StoreMiss::Stale);
        let hnsw = Manifest {
            kind: VectorIndexKind::Hnsw { m: 8 },
            ..manifest
        };
        assert_eq!(store.load(&hnsw).unwrap_err(), StoreMiss::Stale);
    }

    /// A store holding [`index`], its manifest, and the stored index file's path and bytes.
    fn stored() -> (tempfile::TempDir, IndexStore, Manifest, PathBuf, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let store = IndexStore::new(dir.path());
        let (index, manifest) = index();
        store.save(&index, &manifest).unwrap();
        let path = dir.path().join(VECTORS);
        let bytes = fs::read(&path).unwrap();
        (dir, store, manifest, path, bytes)
    }

    #[test]
    fn flipped_or_truncated_bytes_are_corrupt() {
        let (dir, store, manifest, path, mut bytes) = stored();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(store.load(&manifest), Err(StoreMiss::Corrupt(_))));
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        assert!(matches!(store.load(&manifest), Err(StoreMiss::Corrupt(_))));
        fs::write(dir.path().join(MANIFEST), b"{ not json").unwrap();
        assert!(matches!(store.load(&manifest), Err(StoreMiss::Corrupt(_))));
    }

    /// A file crafted with its manifest (checksum recomputed) once made Faiss allocate what
    /// the file declared: 2.4 GB from 21 KB.
    #[test]
    fn a_crafted_index_with_a_matching_checksum_is_corrupt() {
        let (dir, store, manifest, path, mut bytes) = stored();
        // The vectors' length, after the type and the header (4 + 4 + 8 + 16 + 1 + 4 bytes).
        bytes[37..45].copy_from_slice(&(1u64 << 39).to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        let forged = Manifest {
            checksum: blake3::hash(&bytes).to_hex().to_string(),
            ..manifest.clone()
        };
        fs::write(
            dir.path().join(MANIFEST),
            serde_json::to_string(&forged).unwrap(),
        )
        .unwrap();
        match store.load(&manifest) {
            Err(StoreMiss::Corrupt(why)) => assert!(why.contains("left in the file"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// A FIFO in place of the manifest or the vectors once blocked the load: each is corrupt.
    #[cfg(unix)]
    #[test]
    fn a_fifo_in_place_of_a_stored_file_is_corrupt() {
        for name in [MANIFEST, VECTORS] {
            let dir = tempfile::tempdir().unwrap();
            let store = IndexStore::new(dir.path());
            let (index, manifest) = index();
            store.save(&index, &manifest).unwrap();
            fs::remove_file(dir.path().join(name)).unwrap();
            crate::repo::read::mkfifo(&dir.path().join(name));
            assert!(
                matches!(store.load(&manifest), Err(StoreMiss::Corrupt(_))),
                "{name}"
            );
        }
    }

    #[test]
    fn fingerprints_separate_text_boundaries() {
        assert_ne!(fingerprint(["ab", "c"]), fingerprint(["a", "bc"]));
    }
}
