//! A content-addressed embedding cache on disk: one file per (model identity, exact text)
//! key, so indexing another commit of a repository embeds only the chunks it has not seen.
//!
//! An entry is `MAGIC`, its key (32 bytes: the BLAKE3 hash of the model's folder name and the
//! entry's file name, so that an entry moved to another text's or model's place is no entry
//! there), the vector's length (u32), the vector (f32, little-endian) and the first 8 bytes of
//! the BLAKE3 hash of everything before them. Writes go to a temporary file
//! in the same folder and are renamed into place, so readers never see half an entry and
//! concurrent writers of the same key are harmless. A truncated or corrupt entry is removed
//! and reported as a miss.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::encoder::{Encoder, TextKind};
use crate::error::{Error, Result};
use crate::repo::read::{read_own_bounded, MAX_SMALL_FILE_BYTES};
use crate::repo::{fs_is_link, refuse_linked_folders};

/// `BLE1` entries (before keys) are misses, replaced as they are met.
const MAGIC: &[u8; 4] = b"BLE2";
const KEY_BYTES: usize = 32;
const CHECKSUM_BYTES: usize = 8;
/// Misses embedded (and stored) per encoder call.
const EMBED_SLICE: usize = 512;

/// Hits and misses of one [`EmbeddingCache::embed`] call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Vectors read from the cache.
    pub hits: usize,
    /// Vectors computed (and stored).
    pub misses: usize,
    /// Entries found corrupt and discarded (counted in `misses` too).
    pub discarded: usize,
    /// Why the vectors computed were not stored, where the cache could not be written (a
    /// read-only or full disk): the run goes on without storing them.
    pub unstored_because: Option<String>,
}

/// The embedding cache of one model.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    dir: PathBuf,
    /// The model's folder name (its identity's hash), part of every entry's key.
    model: String,
}

impl EmbeddingCache {
    /// The cache for the model `identity` in blagent's cache folder `cache_dir` (its
    /// `embeddings/` part, beside the vector indexes), created if needed.
    pub fn in_cache_dir(cache_dir: &Path, identity: &str) -> Result<Self> {
        // An empty path is the current folder, which may be the user's repository (a review:
        // `Localizer(dense=True, cache_dir='')` wrote the cache there).
        if cache_dir.as_os_str().is_empty() {
            return Err(Error::InvalidInput(
                "the cache folder is an empty path: name a folder".to_owned(),
            ));
        }
        if fs::metadata(cache_dir).is_ok_and(|m| !m.is_dir()) {
            return Err(Error::InvalidInput(format!(
                "the cache folder {} is not a folder",
                cache_dir.display()
            )));
        }
        Self::open(&cache_dir.join("embeddings"), identity)
    }

    /// The cache for the model `identity` under `root`. `root` and the model's folder are
    /// blagent's own: a link in their place is refused. Nothing is created until a vector is
    /// stored, so that a run refused after its worker was made (an output that is an input)
    /// leaves no folder behind.
    pub fn open(root: &Path, identity: &str) -> Result<Self> {
        let model = blake3::hash(identity.as_bytes()).to_hex()[..16].to_owned();
        let dir = root.join(&model);
        refuse_linked_folders(&[root, &dir], "embedding cache")?;
        Ok(EmbeddingCache { dir, model })
    }

    /// The model's folder, where its entries are written.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    #[cfg(test)]
    fn path(&self, text: &str, kind: TextKind) -> PathBuf {
        self.place(text, kind).0
    }

    /// Where the entry of `text` lies, and its key.
    fn place(&self, text: &str, kind: TextKind) -> (PathBuf, [u8; KEY_BYTES]) {
        let tag: &[u8] = match kind {
            TextKind::Query => b"q\0",
            TextKind::Document => b"d\0",
        };
        let mut hasher = blake3::Hasher::new();
        hasher.update(tag);
        hasher.update(text.as_bytes());
        let name = hasher.finalize().to_hex();
        let key = blake3::Hasher::new()
            .update(self.model.as_bytes())
            .update(b"\0")
            .update(name.as_bytes())
            .finalize();
        (self.dir.join(&name[..2]).join(&name[2..]), *key.as_bytes())
    }

    /// The cached vector for `text`, if a sound entry of `dimension` floats exists. A corrupt
    /// entry (or a sound one of another size) is removed; the second value says whether that
    /// happened.
    pub fn get(&self, text: &str, kind: TextKind, dimension: usize) -> (Option<Vec<f32>>, bool) {
        let (path, key) = self.place(text, kind);
        if path.parent().is_some_and(fs_is_link) {
            return (None, false); // a linked shard folder is not the cache's: neither read nor cleaned
        }
        // An entry is a few kilobytes; anything else in its place (a FIFO, a huge file) is
        // a miss, read no further.
        let Ok(bytes) = read_own_bounded(&path, MAX_SMALL_FILE_BYTES) else {
            return (None, false);
        };
        if let Some(vector) = decode(&bytes, &key).filter(|v| v.len() == dimension) {
            (Some(vector), false)
        } else {
            let _ = fs::remove_file(&path);
            (None, true)
        }
    }

    /// Stores `vector` for `text` atomically.
    pub fn put(&self, text: &str, kind: TextKind, vector: &[f32]) -> Result<()> {
        let (path, key) = self.place(text, kind);
        let parent = path.parent().expect("entries live in a shard folder");
        // Something else where the shard folder belongs (a file, a FIFO, a dangling link) is
        // not blagent's either (a review: it failed the run, "File exists").
        if fs::symlink_metadata(parent).is_ok_and(|m| !m.is_dir()) && !parent.is_dir() {
            return Ok(());
        }
        fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let in_place = fs::symlink_metadata(&path);
        if in_place.is_ok_and(|m| !m.is_file()) || fs_is_link(parent) {
            // Not an entry (a folder, a FIFO, a link), and not blagent's to remove: this
            // vector is just not stored.
            return Ok(());
        }
        let mut file = tempfile::NamedTempFile::new_in(parent).map_err(|e| Error::io(parent, e))?;
        file.write_all(&encode(vector, &key))
            .map_err(|e| Error::io(file.path(), e))?;
        file.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }

    /// Embeds `texts`, reading what the cache has and computing (and storing) the rest.
    pub fn embed(
        &self,
        encoder: &Encoder,
        texts: &[&str],
        kind: TextKind,
    ) -> Result<(Vec<Vec<f32>>, CacheStats)> {
        self.embed_with_progress(encoder, texts, kind, &|_| {})
    }

    /// [`EmbeddingCache::embed`], calling `progress` with the number of texts embedded after
    /// each slice of misses (hits are not reported: they cost nothing).
    pub fn embed_with_progress(
        &self,
        encoder: &Encoder,
        texts: &[&str],
        kind: TextKind,
        progress: &dyn Fn(usize),
    ) -> Result<(Vec<Vec<f32>>, CacheStats)> {
        let mut stats = CacheStats::default();
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        let mut missing = Vec::new();
        let dimension = encoder.folder().dimension;
        for (i, text) in texts.iter().enumerate() {
            if i % EMBED_SLICE == 0 {
                crate::cancel::check()?; // a large cache is read for seconds
            }
            let (vector, discarded) = self.get(text, kind, dimension);
            stats.discarded += usize::from(discarded);
            if vector.is_none() {
                missing.push(i);
            }
            out.push(vector);
        }
        stats.hits = texts.len() - missing.len();
        stats.misses = missing.len();
        // Slices keep the work done so far in the cache if the run is interrupted, and pace
        // the progress callback.
        for slice in missing.chunks(EMBED_SLICE) {
            let to_embed: Vec<&str> = slice.iter().map(|&i| texts[i]).collect();
            for (&i, vector) in slice.iter().zip(encoder.embed(&to_embed, kind)?) {
                // A cache that cannot be written does not stop the run (nor is it tried again).
                if stats.unstored_because.is_none() {
                    if let Err(e) = self.put(texts[i], kind, &vector) {
                        stats.unstored_because = Some(e.to_string());
                    }
                }
                out[i] = Some(vector);
            }
            progress(slice.len());
        }
        Ok((
            out.into_iter().map(Option::unwrap_or_default).collect(),
            stats,
        ))
    }
}

fn encode(vector: &[f32], key: &[u8; KEY_BYTES]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(8 + KEY_BYTES + vector.len() * 4 + CHECKSUM_BYTES);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(&(vector.len() as u32).to_le_bytes());
    for x in vector {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    let checksum = blake3::hash(&bytes);
    bytes.extend_from_slice(&checksum.as_bytes()[..CHECKSUM_BYTES]);
    bytes
}

/// The vector of an entry whose key is `key`; `None` for a damaged entry or another's.
fn decode(bytes: &[u8], key: &[u8; KEY_BYTES]) -> Option<Vec<f32>> {
    const HEAD: usize = 4 + KEY_BYTES + 4;
    let body_len = bytes.len().checked_sub(CHECKSUM_BYTES)?;
    let (body, checksum) = bytes.split_at(body_len);
    if body.len() < HEAD
        || &body[..4] != MAGIC
        || body[4..4 + KEY_BYTES] != *key
        || blake3::hash(body).as_bytes()[..CHECKSUM_BYTES] != *checksum
    {
        return None;
    }
    let len = u32::from_le_bytes(body[HEAD - 4..HEAD].try_into().ok()?) as usize;
    let payload = &body[HEAD..];
    if payload.len() != len * 4 {
        return None;
    }
    let vector: Vec<f32> = payload
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    // A vector that is not finite is no embedding (the checksum is no seal: anyone who can
    // write the cache can write a matching one); it is recomputed, as a damaged entry is.
    vector.iter().all(|x| x.is_finite()).then_some(vector)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by a review: the cache wrote through links in its folders into someone else's.
    #[cfg(unix)]
    #[test]
    fn linked_folders_are_neither_written_through_nor_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).unwrap();
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(&victim, &linked).unwrap();
        let err = EmbeddingCache::open(&linked, "model").unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        let file = dir.path().join("file");
        fs::write(&file, "x").unwrap();
        let err = EmbeddingCache::in_cache_dir(&file, "model").unwrap_err();
        assert!(
            err.is_input_error() && err.to_string().contains("is not a folder"),
            "{err}"
        );

        let cache = EmbeddingCache::open(&dir.path().join("own"), "model").unwrap();
        let entry = cache.path("text", TextKind::Document);
        let shard = entry.parent().unwrap();
        fs::create_dir_all(shard.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&victim, shard).unwrap();
        fs::write(victim.join(entry.file_name().unwrap()), "not a vector").unwrap();
        cache.put("text", TextKind::Document, &[1.0, 2.0]).unwrap();
        assert_eq!(cache.get("text", TextKind::Document, 2), (None, false));
        let names: Vec<_> = fs::read_dir(&victim)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [entry.file_name().unwrap()]);
        let kept = fs::read_to_string(victim.join(entry.file_name().unwrap())).unwrap();
        assert_eq!(kept, "not a vector");
    }

    /// Found by a review: entries of NaN or infinite numbers, their checksum made to match,
    /// were served (the dense signals vanished, or one file got them all); and an empty cache
    /// path put the cache in the current folder.
    #[test]
    fn an_entry_that_is_not_finite_is_a_miss_and_an_empty_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::open(&dir.path().join("own"), "model").unwrap();
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            cache.put("text", TextKind::Document, &[1.0, bad]).unwrap();
            assert_eq!(cache.get("text", TextKind::Document, 2).0, None, "{bad}");
        }
        cache.put("text", TextKind::Document, &[1.0, 2.0]).unwrap();
        assert_eq!(
            cache.get("text", TextKind::Document, 2).0,
            Some(vec![1.0, 2.0])
        );
        // A file or a dangling link where a shard folder belongs: the vector is not stored.
        let other = (0..100)
            .map(|i| format!("other {i}"))
            .find(|t| !cache.path(t, TextKind::Document).parent().unwrap().exists())
            .unwrap();
        let entry = cache.path(&other, TextKind::Document);
        let shard = entry.parent().unwrap();
        fs::write(shard, "mine").unwrap();
        cache.put(&other, TextKind::Document, &[1.0]).unwrap();
        assert_eq!(fs::read_to_string(shard).unwrap(), "mine");
        assert_eq!(cache.get(&other, TextKind::Document, 1).0, None);
        let err = EmbeddingCache::in_cache_dir(Path::new(""), "model").unwrap_err();
        assert!(
            err.is_input_error() && err.to_string().contains("empty path"),
            "{err}"
        );
    }

    #[test]
    fn opening_creates_nothing_until_a_vector_is_stored() {
        let root = tempfile::tempdir().unwrap();
        let cache_dir = root.path().join("cache");
        let cache = EmbeddingCache::in_cache_dir(&cache_dir, "model").unwrap();
        assert!(!cache_dir.exists());
        cache.put("x", TextKind::Query, &[1.0]).unwrap();
        assert_eq!(cache.get("x", TextKind::Query, 1).0, Some(vec![1.0]));
    }

    #[test]
    fn round_trips_and_separates_models_and_kinds() {
        let root = tempfile::tempdir().unwrap();
        let a = EmbeddingCache::open(root.path(), "model-a").unwrap();
        let b = EmbeddingCache::open(root.path(), "model-b").unwrap();
        a.put(
            "# x.py\ndef f(): pass",
            TextKind::Document,
            &[1.0, -2.5, 3.25],
        )
        .unwrap();
        assert_eq!(
            a.get("# x.py\ndef f(): pass", TextKind::Document, 3).0,
            Some(vec![1.0, -2.5, 3.25])
        );
        assert_eq!(a.get("# x.py\ndef f(): pass", TextKind::Query, 3).0, None);
        assert_eq!(
            b.get("# x.py\ndef f(): pass", TextKind::Document, 3).0,
            None
        );
        assert_eq!(
            a.get("# y.py\ndef f(): pass", TextKind::Document, 3).0,
            None,
            "the path header is part of the key"
        );
    }

    #[test]
    fn truncated_or_corrupt_entries_are_discarded() {
        let root = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::open(root.path(), "m").unwrap();
        for (text, damage) in [("truncated", 0usize), ("flipped", 1)] {
            cache.put(text, TextKind::Document, &[0.5; 8]).unwrap();
            let path = cache.path(text, TextKind::Document);
            let mut bytes = fs::read(&path).unwrap();
            if damage == 0 {
                bytes.truncate(bytes.len() - 5);
            } else {
                bytes[12] ^= 0x40;
            }
            fs::write(&path, bytes).unwrap();
            assert_eq!(cache.get(text, TextKind::Document, 8), (None, true));
            assert!(!path.exists(), "a corrupt entry is removed");
        }
        // Sound, but of another model's size: it failed every run until the cache was cleared.
        cache.put("short", TextKind::Document, &[0.5; 4]).unwrap();
        assert_eq!(cache.get("short", TextKind::Document, 8), (None, true));
        assert!(!cache.path("short", TextKind::Document).exists());
        // A folder in an entry's place is not removed, and the vector is just not stored.
        let folder = cache.path("folder", TextKind::Document);
        fs::create_dir_all(folder.join("inside")).unwrap();
        cache.put("folder", TextKind::Document, &[0.5; 8]).unwrap();
        assert_eq!(cache.get("folder", TextKind::Document, 8), (None, false));
        assert!(folder.join("inside").is_dir());
    }

    /// A FIFO or a device in an entry's place once blocked (or filled memory): it is a miss,
    /// and left where it is.
    #[cfg(unix)]
    #[test]
    fn a_special_file_in_an_entrys_place_is_a_miss() {
        let root = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::open(root.path(), "m").unwrap();
        let zero = crate::repo::read::has_dev_zero();
        for (text, fifo) in [("fifo", true), ("zero", false)] {
            if !fifo && !zero {
                continue;
            }
            let path = cache.path(text, TextKind::Document);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            if fifo {
                crate::repo::read::mkfifo(&path);
            } else {
                std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
            }
            assert_eq!(cache.get(text, TextKind::Document, 8), (None, false));
            cache.put(text, TextKind::Document, &[0.5; 8]).unwrap();
            let left = fs::symlink_metadata(&path).unwrap();
            assert!(!left.is_file(), "left where it is, not replaced");
        }
    }

    /// Found by a review: entries swapped between two texts' places, or copied from another
    /// model's folder (of the same width), were served as theirs, and the ranking moved.
    #[test]
    fn an_entry_in_another_texts_or_models_place_is_a_miss() {
        let root = tempfile::tempdir().unwrap();
        let a = EmbeddingCache::open(root.path(), "model-a").unwrap();
        let b = EmbeddingCache::open(root.path(), "model-b").unwrap();
        a.put("one", TextKind::Document, &[1.0, 0.0]).unwrap();
        a.put("two", TextKind::Document, &[0.0, 1.0]).unwrap();
        let (one, two) = (
            a.path("one", TextKind::Document),
            a.path("two", TextKind::Document),
        );
        let bytes = fs::read(&one).unwrap();
        fs::write(&two, &bytes).unwrap();
        assert_eq!(a.get("two", TextKind::Document, 2), (None, true));
        assert_eq!(a.get("one", TextKind::Query, 2).0, None);
        let theirs = b.path("one", TextKind::Document);
        fs::create_dir_all(theirs.parent().unwrap()).unwrap();
        fs::write(&theirs, &bytes).unwrap();
        assert_eq!(b.get("one", TextKind::Document, 2), (None, true));
        assert_eq!(a.get("one", TextKind::Document, 2).0, Some(vec![1.0, 0.0]));
        // An entry of the format before keys is a miss, replaced when stored again.
        let mut old = b"BLE1".to_vec();
        old.extend_from_slice(&2u32.to_le_bytes());
        old.extend_from_slice(&[0u8; 8]);
        old.extend_from_slice(&blake3::hash(&old).as_bytes()[..CHECKSUM_BYTES]);
        fs::write(&one, &old).unwrap();
        assert_eq!(a.get("one", TextKind::Document, 2).0, None);
    }

    #[test]
    fn concurrent_writers_of_one_key_leave_a_sound_entry() {
        let root = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::open(root.path(), "m").unwrap();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..20 {
                        cache.put("same", TextKind::Document, &[1.0, 2.0]).unwrap();
                        if let (Some(v), _) = cache.get("same", TextKind::Document, 2) {
                            assert_eq!(v, vec![1.0, 2.0]);
                        }
                    }
                });
            }
        });
        assert_eq!(
            cache.get("same", TextKind::Document, 2).0,
            Some(vec![1.0, 2.0])
        );
    }
}
