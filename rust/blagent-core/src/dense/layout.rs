//! Checks a stored Faiss file against the layout blagent writes before Faiss reads it. Faiss
//! allocates every array a file declares before it reads the array (up to 2^40 elements), so a
//! crafted file of a few kilobytes could ask for gigabytes; here each declared length must fit
//! in the bytes that follow it and match the vectors the manifest names.
//!
//! The layouts (Faiss `index_write.cpp`): a flat inner-product index is `IxFI`, the index header
//! and its vectors as one array of `u32` words; an HNSW index is `IHNf`, the header, the graph
//! (five arrays and five `i32`), then its flat storage.

use super::vectors::VectorIndexKind;

/// Faiss's `METRIC_INNER_PRODUCT`, the only metric blagent builds.
const METRIC_INNER_PRODUCT: i32 = 0;

/// A reader over the file's bytes that fails, with what it was reading, where they run out.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], String> {
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(format!(
                "{what} declares {n} bytes where {left} are left in the file"
            ));
        }
        let n = n as usize;
        let taken = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        Ok(self
            .take(N as u64, what)?
            .try_into()
            .expect("take returns N bytes"))
    }

    fn i32(&mut self, what: &str) -> Result<i32, String> {
        self.array(what).map(i32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A length-prefixed array of `element`-byte items: its length and its bytes.
    fn vector(&mut self, element: u64, what: &str) -> Result<(u64, &'a [u8]), String> {
        let count = self.u64(what)?;
        let bytes = count
            .checked_mul(element)
            .ok_or_else(|| format!("{what} declares {count} elements"))?;
        Ok((count, self.take(bytes, what)?))
    }

    /// A length-prefixed array of `i32`.
    fn i32s(&mut self, what: &str) -> Result<Vec<i32>, String> {
        let (_, bytes) = self.vector(4, what)?;
        Ok(words(bytes).map(i32::from_le_bytes).collect())
    }

    /// A length-prefixed array of `u64`.
    fn u64s(&mut self, what: &str) -> Result<Vec<u64>, String> {
        let (_, bytes) = self.vector(8, what)?;
        Ok(words(bytes).map(u64::from_le_bytes).collect())
    }

    fn fourcc(&mut self, expected: [u8; 4]) -> Result<(), String> {
        let found = self.array::<4>("the index type")?;
        if found == expected {
            Ok(())
        } else {
            Err(format!(
                "index type {:?} where {:?} was written",
                String::from_utf8_lossy(&found),
                String::from_utf8_lossy(&expected)
            ))
        }
    }

    /// Faiss's index header: dimension, count, two unused words, trained flag, metric.
    fn header(&mut self, dim: usize, len: usize) -> Result<(), String> {
        let d = self.i32("the dimension")?;
        let n = self.u64("the vector count")?;
        self.take(16, "the header")?;
        self.take(1, "the header")?;
        let metric = self.i32("the metric")?;
        if usize::try_from(d).ok() != Some(dim) || n != len as u64 {
            return Err(format!(
                "the file holds {n} vectors of dimension {d}, its manifest {len} of {dim}"
            ));
        }
        if metric != METRIC_INNER_PRODUCT {
            return Err(format!("metric {metric} where inner product was written"));
        }
        Ok(())
    }

    /// A flat index: the header, then `len × dim` floats.
    fn flat(&mut self, dim: usize, len: usize) -> Result<(), String> {
        self.fourcc(*b"IxFI")?;
        self.header(dim, len)?;
        let (floats, bytes) = self.vector(4, "the vectors")?;
        if floats != (dim as u64).saturating_mul(len as u64) {
            return Err(format!(
                "{floats} floats where {len} vectors of dimension {dim} were written"
            ));
        }
        // blagent writes finite vectors only (a review: NaN or infinite ones, with the
        // manifest's checksum made to match, silently took the dense signals away).
        if !words::<4>(bytes).all(|word| f32::from_le_bytes(word).is_finite()) {
            return Err("a vector holds a number that is not finite".to_owned());
        }
        Ok(())
    }
}

/// Whether `index` is an index into `len` items.
fn is_below(index: i32, len: usize) -> bool {
    usize::try_from(index).is_ok_and(|i| i < len)
}

fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes
        .chunks_exact(N)
        .map(|word| word.try_into().expect("chunks of N bytes"))
}

/// The HNSW graph as the file declares it.
struct Graph {
    /// Neighbour slots of the levels below each level, cumulated (`cum_nneighbor_per_level`).
    per_level: Vec<i32>,
    /// Each vector's number of levels (its top level + 1).
    levels: Vec<i32>,
    /// Where each vector's slots start in `neighbours`, and where the last ends.
    offsets: Vec<u64>,
    neighbours: Vec<i32>,
    entry_point: i32,
    max_level: i32,
}

/// The HNSW graph's arrays index one another, and Faiss trusts them when it searches: from the
/// entry point on the top level down, it reads a vector's slots of a level at its offset plus
/// `per_level[level]`, up to `per_level[level + 1]`, for every vector it reaches on that level.
/// So every vector is on level 0 at least and on no level `per_level` has no end for; its slots
/// lie inside the neighbour array; the entry point is a vector on the top level, and the top
/// level is one `per_level` ends; and each neighbour in a slot of level L is a vector on level
/// L (or -1, an empty slot). A review forged a top level above the entry point's, and an entry
/// point on no level, with the checksum made to match: Faiss read past its arrays and the
/// process died.
fn check_graph(len: usize, graph: &Graph) -> Result<(), String> {
    let Graph {
        per_level,
        levels,
        offsets,
        neighbours,
        entry_point,
        max_level,
    } = graph;
    if levels.len() != len || offsets.len() != len + 1 {
        return Err(format!(
            "{} levels and {} offsets for {len} vectors",
            levels.len(),
            offsets.len()
        ));
    }
    let cumulative_ok =
        per_level.first() == Some(&0) && per_level.windows(2).all(|pair| pair[0] <= pair[1]);
    if !cumulative_ok {
        return Err("the neighbours per level do not add up".to_owned());
    }
    if offsets[0] != 0 {
        return Err("the neighbour slots do not start at 0".to_owned());
    }
    // Levels 0..top, each with an end in `per_level`.
    let top_ok = |count: i32| count >= 1 && is_below(count, per_level.len());
    for (i, &count) in levels.iter().enumerate() {
        if !top_ok(count) {
            return Err(format!("vector {i} is on {count} levels"));
        }
        let (start, end) = (offsets[i], offsets[i + 1]);
        let wanted = per_level[count as usize] as u64;
        if start > end || end - start != wanted || end > neighbours.len() as u64 {
            return Err(format!("vector {i}'s neighbour slots are out of place"));
        }
    }
    let entry_ok = if len == 0 {
        *entry_point == -1 && *max_level == -1
    } else {
        is_below(*entry_point, len) && levels[*entry_point as usize] == max_level.saturating_add(1)
    };
    if !entry_ok {
        return Err(format!(
            "entry point {entry_point} at level {max_level} is outside the graph"
        ));
    }
    for (i, &count) in levels.iter().enumerate() {
        for level in 0..count as usize {
            let from = offsets[i] + per_level[level] as u64;
            let to = offsets[i] + per_level[level + 1] as u64;
            for &n in &neighbours[from as usize..to as usize] {
                if n == -1 {
                    continue;
                }
                if !is_below(n, len) || (levels[n as usize] as usize) <= level {
                    return Err(format!(
                        "neighbour {n} of vector {i} is not on level {level}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Whether `bytes` is a Faiss index of `kind` as blagent writes it, holding `len` vectors of
/// dimension `dim`, with no array longer than the file; the reason when it is not.
pub fn check(bytes: &[u8], kind: VectorIndexKind, dim: usize, len: usize) -> Result<(), String> {
    let mut cursor = Cursor { bytes, at: 0 };
    match kind {
        VectorIndexKind::Exact => cursor.flat(dim, len)?,
        VectorIndexKind::Hnsw { .. } => {
            cursor.fourcc(*b"IHNf")?;
            cursor.header(dim, len)?;
            cursor.vector(8, "the level probabilities")?;
            let graph = Graph {
                per_level: cursor.i32s("the neighbours per level")?,
                levels: cursor.i32s("the levels")?,
                offsets: cursor.u64s("the offsets")?,
                neighbours: cursor.i32s("the neighbours")?,
                entry_point: cursor.i32("the entry point")?,
                max_level: cursor.i32("the top level")?,
            };
            cursor.take(3 * 4, "the graph's parameters")?;
            check_graph(len, &graph)?;
            cursor.flat(dim, len)?;
        }
    }
    let extra = bytes.len() - cursor.at;
    if extra > 0 {
        return Err(format!("{extra} bytes after the index"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::vectors::{FaissIndex, VectorIndex};
    use super::*;

    fn written(kind: VectorIndexKind) -> Vec<u8> {
        let data: Vec<f32> = (0..64).map(|i| (i % 5) as f32).collect();
        let index = FaissIndex::build(kind, 4, &data).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.faiss");
        index.save(&path).unwrap();
        std::fs::read(path).unwrap()
    }

    const KINDS: [VectorIndexKind; 2] = [VectorIndexKind::Exact, VectorIndexKind::Hnsw { m: 8 }];

    #[test]
    fn what_faiss_writes_passes() {
        for kind in KINDS {
            assert_eq!(check(&written(kind), kind, 4, 16), Ok(()), "{kind:?}");
        }
    }

    /// An HNSW file of 3,000 vectors of dimension 8, a graph of several levels (one vector in
    /// m is on level 1 or above).
    fn larger_graph() -> (VectorIndexKind, Vec<u8>) {
        let kind = VectorIndexKind::Hnsw { m: 4 };
        let data: Vec<f32> = (0..3000 * 8)
            .map(|i: u32| (i.wrapping_mul(2_654_435_761) % 1000) as f32 / 1000.0)
            .collect();
        let index = FaissIndex::build(kind, 8, &data).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.faiss");
        index.save(&path).unwrap();
        (kind, std::fs::read(path).unwrap())
    }

    #[test]
    fn a_larger_graph_passes() {
        let (kind, bytes) = larger_graph();
        assert_eq!(check(&bytes, kind, 8, 3000), Ok(()));
    }

    #[test]
    fn other_sizes_kinds_and_lengths_are_refused() {
        for kind in KINDS {
            let bytes = written(kind);
            assert!(check(&bytes, kind, 8, 16).is_err());
            assert!(check(&bytes, kind, 4, 15).is_err());
            assert!(check(&bytes[..bytes.len() - 1], kind, 4, 16).is_err());
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(check(&longer, kind, 4, 16).is_err());
        }
        let exact = written(VectorIndexKind::Exact);
        assert!(check(&exact, VectorIndexKind::Hnsw { m: 8 }, 4, 16).is_err());
    }

    /// The graph's entry point, levels and neighbour ids index arrays Faiss reads unchecked.
    /// Found by a review: NaN or infinite vectors, the manifest's checksum made to match,
    /// passed the check and silently took the dense signals away.
    #[test]
    fn vectors_that_are_not_finite_are_refused() {
        for kind in KINDS {
            for bad in [f32::NAN, f32::INFINITY] {
                let mut bytes = written(kind);
                let four = 4.0f32.to_le_bytes();
                let at = bytes.windows(4).position(|w| w == four).expect("a 4.0");
                bytes[at..at + 4].copy_from_slice(&bad.to_le_bytes());
                let err = check(&bytes, kind, 4, 16).unwrap_err();
                assert!(err.contains("not finite"), "{kind:?} {bad}: {err}");
            }
        }
    }

    #[test]
    fn a_graph_pointing_outside_itself_is_refused() {
        let kind = VectorIndexKind::Hnsw { m: 8 };
        let bytes = written(kind);
        let flat_start = bytes.len() - (4 + 4 + 8 + 16 + 1 + 4 + 8 + 16 * 4 * 4);
        // The five i32 before the flat storage: entry point, top level, three parameters.
        let entry = flat_start - 5 * 4;
        for (at, value) in [(entry, 16i32), (entry, -2), (entry + 4, 99)] {
            let mut crafted = bytes.clone();
            crafted[at..at + 4].copy_from_slice(&value.to_le_bytes());
            let err = check(&crafted, kind, 4, 16).expect_err("refused");
            assert!(err.contains("outside the graph"), "{err}");
        }
        // Every neighbour id past the vectors.
        let mut refused = 0;
        for at in (0..entry).step_by(4) {
            let word = i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            if (0..16).contains(&word) {
                let mut crafted = bytes.clone();
                crafted[at..at + 4].copy_from_slice(&16i32.to_le_bytes());
                refused += usize::from(check(&crafted, kind, 4, 16).is_err());
            }
        }
        assert!(refused > 16, "{refused}");
    }

    /// Where the levels array's values start in an HNSW file, and the entry point's index.
    fn levels_at(bytes: &[u8]) -> (usize, usize) {
        let mut cursor = Cursor { bytes, at: 0 };
        cursor.fourcc(*b"IHNf").unwrap();
        cursor.take(4 + 8 + 16 + 1 + 4, "header").unwrap();
        cursor.vector(8, "probabilities").unwrap();
        cursor.i32s("per level").unwrap();
        let at = cursor.at + 8;
        let levels = cursor.i32s("levels").unwrap();
        cursor.u64s("offsets").unwrap();
        cursor.i32s("neighbours").unwrap();
        let entry = cursor.i32("entry").unwrap() as usize;
        assert!(levels.len() > entry);
        (at, entry)
    }

    /// From a review, each of which made Faiss read past its arrays and end the process: a top
    /// level above the entry point's, an entry point (or any vector) on no level, and a
    /// neighbour listed on a level its vector is not on.
    #[test]
    fn a_graph_whose_levels_disagree_is_refused() {
        let (kind, bytes) = larger_graph();
        let (levels, entry) = levels_at(&bytes);
        let level_of = |i: usize| {
            i32::from_le_bytes(
                bytes[levels + 4 * i..levels + 4 * i + 4]
                    .try_into()
                    .unwrap(),
            )
        };
        let set = |at: usize, value: i32| {
            let mut crafted = bytes.clone();
            crafted[at..at + 4].copy_from_slice(&value.to_le_bytes());
            check(&crafted, kind, 8, 3000)
        };
        let top = level_of(entry);
        assert!(top >= 2, "a graph of several levels");
        // The top level, right after the entry point, one higher than the entry point's.
        let flat_start = bytes.len() - (4 + 4 + 8 + 16 + 1 + 4 + 8 + 3000 * 8 * 4);
        let max_level = flat_start - 4 * 4;
        assert!(set(max_level, top).is_err());
        assert!(set(levels + 4 * entry, 0).is_err());
        let low = (0..3000).find(|&i| level_of(i) == 1).unwrap();
        assert!(set(levels + 4 * low, 0).is_err());
        // A vector of level 0 only, listed where the entry point's level-1 neighbours are:
        // found as the entry point's first slot above level 0 holding a neighbour.
        let mut refused = 0;
        let other = (0..3000i32)
            .find(|&i| level_of(i as usize) == 1 && i as usize != entry)
            .unwrap();
        for at in (levels..flat_start).step_by(4) {
            let word = i32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
            if word >= 0 && (word as usize) < 3000 && level_of(word as usize) >= 2 {
                refused += usize::from(set(at, other).is_err());
            }
        }
        assert!(refused > 0);
    }

    /// Every length field set to 2^39 (which Faiss would allocate before reading) is refused.
    #[test]
    fn a_declared_length_past_the_file_is_refused() {
        for kind in KINDS {
            let bytes = written(kind);
            let mut refused = 0;
            // Any 8-byte word that holds a small count is a candidate length field.
            for at in 0..bytes.len() - 8 {
                let word = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                if !(1..=4096).contains(&word) {
                    continue;
                }
                let mut crafted = bytes.clone();
                crafted[at..at + 8].copy_from_slice(&(1u64 << 39).to_le_bytes());
                if let Err(err) = check(&crafted, kind, 4, 16) {
                    refused += usize::from(err.contains("are left in the file"));
                }
            }
            // The flat vectors' length; with HNSW, the graph's five arrays' too.
            let fields = if kind == VectorIndexKind::Exact { 1 } else { 6 };
            assert!(refused >= fields, "{kind:?}: {refused}");
        }
    }
}
