//! Approximate dense search for large collections: an inverted-file index (IVF-flat).
//!
//! The vectors are partitioned into lists by nearest centroid (seeded spherical k-means,
//! [`crate::kmeans`]); a query scores the centroids, then computes exact dot products on
//! the rows of the best lists only, probing lists best first until it has seen a target
//! number of candidates. Lists hold row numbers into the snapshot's vector matrix: the
//! index keeps no second copy of the vectors (4 bytes per chunk plus the centroids).
//!
//! On disk, under `ann/` next to `segments/`, all named and checksummed (BLAKE3) by the
//! manifest's [`AnnMeta`]:
//!
//! ```text
//! ann/cNNNNNNNNNN.ivf                "EXIVF001", dim, lists (u32 LE), centroids (f32 LE)
//! ann/<segment>.cNNNNNNNNNN.asg      "EXASG001", rows, lists (u32 LE), a list per row (u32 LE)
//! ```
//!
//! `cNNNNNNNNNN` is the generation whose commit trained the centroids. Segments are
//! immutable, so each one's assignment is written once, by the commit that wrote the
//! segment; the snapshot maps segment rows to its own rows when it opens, skipping
//! deleted documents. A commit therefore assigns only its new rows to the existing
//! centroids, and retrains (reading every segment) only when the collection has grown
//! past [`AnnOptions::retrain_growth`] times the rows the centroids were trained on, or
//! when the files it needs are missing or corrupt.
//!
//! A snapshot whose ANN files are missing, stale or corrupt searches exactly: slower,
//! never wrong, and [`AnnStatus::Unavailable`] says why.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::in_place::read_checked_segment;
use crate::kmeans::{self, Assigner, Rng};
use crate::manifest::{write_durably, AnnMeta};
use crate::{IndexError, Manifest};

const IVF_MAGIC: &[u8; 8] = b"EXIVF001";
const ASG_MAGIC: &[u8; 8] = b"EXASG001";
/// Subdirectory of the index holding the ANN files.
pub(crate) const ANN_DIR: &str = "ann";
/// Seed of the k-means generator (sampling and initial centroids).
const SEED: u64 = 0x4558_4345_5250_5401;
/// Training rows per list (the sample is at most this many times the list count).
const SAMPLE_PER_LIST: usize = 32;
/// Lloyd iterations.
const ITERATIONS: usize = 8;

/// Default of [`AnnOptions::min_chunks`].
pub const DEFAULT_ANN_MIN_CHUNKS: usize = 50_000;

/// Lists from which [`IvfIndex::candidates`] scores the centroids on rayon's threads.
const PARALLEL_LISTS: usize = 512;

/// Default of the probe depth: a query scans about this many average lists' worth of
/// rows (chosen for recall@10 ≥ 0.95 on clustered collections; see docs/BENCHMARKS.md).
pub const DEFAULT_PROBE: f64 = 24.0;

/// When and how the writer builds the ANN index.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnOptions {
    /// Stored chunks (vector rows in live segments, rows of replaced documents included)
    /// from which commits build and maintain the index; below it, searches are exact and
    /// no ANN files exist. `usize::MAX` turns the index off.
    pub min_chunks: usize,
    /// Lists per square root of the number of rows when training (4: 1,265 lists at 100k
    /// rows, 4,000 at 1M).
    pub lists_per_sqrt: f64,
    /// Retrain when the stored rows exceed this multiple of the rows the centroids were
    /// trained on; below it, new rows are assigned to the existing centroids.
    pub retrain_growth: f64,
}

impl Default for AnnOptions {
    fn default() -> Self {
        AnnOptions {
            min_chunks: DEFAULT_ANN_MIN_CHUNKS,
            lists_per_sqrt: 4.0,
            retrain_growth: 2.0,
        }
    }
}

/// Whether a snapshot searches with the ANN index, and if not, why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AnnStatus {
    /// No ANN index: the collection is below the writer's threshold. Exact search.
    Absent,
    /// The ANN index is in use for unfiltered and broadly filtered dense searches.
    Ready {
        /// Number of lists.
        lists: usize,
        /// Stored rows when the centroids were trained.
        trained_rows: usize,
    },
    /// The manifest names ANN files that are missing, stale or corrupt. Exact search.
    Unavailable {
        /// What is wrong.
        reason: String,
    },
}

impl std::fmt::Display for AnnStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnnStatus::Absent => write!(f, "none (exact search)"),
            AnnStatus::Ready {
                lists,
                trained_rows,
            } => write!(f, "IVF, {lists} lists trained on {trained_rows} rows"),
            AnnStatus::Unavailable { reason } => {
                write!(f, "unavailable, exact search ({reason})")
            }
        }
    }
}

fn ivf_path(dir: &Path, stem: &str) -> std::path::PathBuf {
    dir.join(ANN_DIR).join(format!("{stem}.ivf"))
}

fn asg_path(dir: &Path, segment: &str, centroids: &str) -> std::path::PathBuf {
    dir.join(ANN_DIR).join(format!("{segment}.{centroids}.asg"))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Reads a checksummed ANN file; `Err` says what is wrong in words.
fn read_checked(path: &Path, hash: &str) -> Result<Vec<u8>, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    if blake3::hash(&bytes).to_hex().as_str() != hash {
        return Err(format!("{name}: checksum mismatch"));
    }
    Ok(bytes)
}

/// Decodes a centroids file: the centroids, row-major.
fn decode_centroids(bytes: &[u8], dim: usize, lists: usize) -> Result<Vec<f32>, String> {
    if bytes.len() < 16 || &bytes[..8] != IVF_MAGIC {
        return Err("centroids file has no valid header".into());
    }
    let (d, l) = (u32_at(bytes, 8), u32_at(bytes, 12));
    if d != Some(dim as u32) || l != Some(lists as u32) {
        let shown = |n: Option<u32>| n.map_or_else(|| "?".to_string(), |n| n.to_string());
        return Err(format!(
            "centroids file is {} x {}, the manifest says {dim} x {lists}",
            shown(d),
            shown(l)
        ));
    }
    let body = &bytes[16..];
    if body.len() != dim * lists * 4 {
        return Err("centroids file has the wrong length".into());
    }
    Ok(body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Decodes an assignment file of a segment with `rows` rows.
fn decode_assignment(bytes: &[u8], rows: usize, lists: usize) -> Result<Vec<u32>, String> {
    if bytes.len() < 16 || &bytes[..8] != ASG_MAGIC {
        return Err("assignment file has no valid header".into());
    }
    if u32_at(bytes, 8) != Some(rows as u32) || u32_at(bytes, 12) != Some(lists as u32) {
        return Err("assignment file does not match its segment".into());
    }
    let body = &bytes[16..];
    if body.len() != rows * 4 {
        return Err("assignment file has the wrong length".into());
    }
    let out: Vec<u32> = body
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if out.iter().any(|&c| c as usize >= lists) {
        return Err("assignment file names a list that does not exist".into());
    }
    Ok(out)
}

fn encode(magic: &[u8; 8], a: u32, b: u32, body: impl Iterator<Item = [u8; 4]>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(magic);
    out.extend_from_slice(&a.to_le_bytes());
    out.extend_from_slice(&b.to_le_bytes());
    body.for_each(|x| out.extend_from_slice(&x));
    out
}

/// Writes a file durably under `ann/` and returns its BLAKE3.
fn write_ann_file(path: &Path, bytes: &[u8]) -> Result<String, IndexError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(IndexError::io("creating", parent))?;
    }
    write_durably(path, bytes)?;
    Ok(blake3::hash(bytes).to_hex().to_string())
}

/// Assigns every row of `vectors` to its list and writes the segment's assignment file;
/// returns its BLAKE3.
fn write_assignment(
    dir: &Path,
    segment: &str,
    centroids_stem: &str,
    centroids: &[f32],
    dim: usize,
    vectors: &[f32],
) -> Result<String, IndexError> {
    let lists = centroids.len() / dim;
    let asg = Assigner::for_rows(centroids, dim, vectors.len() / dim.max(1)).nearest_all(vectors);
    let bytes = encode(
        ASG_MAGIC,
        asg.len() as u32,
        lists as u32,
        asg.iter().map(|&(c, _)| c.to_le_bytes()),
    );
    write_ann_file(&asg_path(dir, segment, centroids_stem), &bytes)
}

/// The ANN files for `next` (a manifest about to be committed as `generation`, whose
/// segments are already on disk), given the previous generation's. Writes what is
/// missing; returns the entry for the new manifest (`None` below the threshold).
pub(crate) fn update(
    dir: &Path,
    next: &Manifest,
    generation: u64,
    opts: &AnnOptions,
) -> Result<Option<AnnMeta>, IndexError> {
    let dim = next.config.dimension;
    let stored: usize = next.segments.iter().map(|s| s.chunks).sum();
    if stored < opts.min_chunks || stored == 0 || dim == 0 {
        return Ok(None);
    }
    if let Some(prev) = &next.ann {
        let fresh_enough = (stored as f64) <= prev.trained_rows as f64 * opts.retrain_growth;
        let centroids = read_checked(&ivf_path(dir, &prev.centroids), &prev.centroids_hash)
            .and_then(|b| decode_centroids(&b, dim, prev.lists));
        if let (true, Ok(centroids)) = (fresh_enough, centroids) {
            let mut meta = prev.clone();
            meta.assignments
                .retain(|name, _| next.segments.iter().any(|s| &s.name == name));
            for seg in &next.segments {
                if meta.assignments.contains_key(&seg.name) {
                    continue;
                }
                let (_, vectors) = read_checked_segment(dir, seg, dim)?;
                let hash = write_assignment(
                    dir,
                    &seg.name,
                    &meta.centroids,
                    &centroids,
                    dim,
                    vectors.rows(),
                )?;
                meta.assignments.insert(seg.name.clone(), hash);
            }
            return Ok(Some(meta));
        }
    }
    train_all(dir, next, generation, opts)
}

/// Trains new centroids on the live rows of every segment and assigns every row.
fn train_all(
    dir: &Path,
    next: &Manifest,
    generation: u64,
    opts: &AnnOptions,
) -> Result<Option<AnnMeta>, IndexError> {
    let dim = next.config.dimension;
    let mut seg_vectors = Vec::with_capacity(next.segments.len());
    // Live rows as (segment, row in segment).
    let mut live: Vec<(u32, u32)> = Vec::new();
    for (si, seg) in next.segments.iter().enumerate() {
        // Mapped, not copied: at millions of rows, a copy of every vector on the heap
        // was most of a large ingest's memory while it retrained.
        let (docs, vectors) = read_checked_segment(dir, seg, dim)?;
        let mut row = 0u32;
        for d in docs.documents() {
            let n = d.chunks.len() as u32;
            if seg.deleted.binary_search(&d.id).is_err() {
                live.extend((row..row + n).map(|r| (si as u32, r)));
            }
            row += n;
        }
        seg_vectors.push(vectors);
    }
    let n = live.len();
    if n == 0 {
        return Ok(None);
    }
    let lists = ((opts.lists_per_sqrt * (n as f64).sqrt()).round() as usize).clamp(1, n.max(1));
    let mut rng = Rng::new(SEED);
    let picks = kmeans::sample_indices(n, lists.saturating_mul(SAMPLE_PER_LIST), &mut rng);
    let mut sample = Vec::with_capacity(picks.len() * dim);
    for i in picks {
        let (s, r) = live[i];
        let r = r as usize;
        sample.extend_from_slice(&seg_vectors[s as usize].rows()[r * dim..(r + 1) * dim]);
    }
    let centroids = kmeans::train(&sample, dim, lists, ITERATIONS, SEED, None);
    drop(sample);
    let lists = centroids.len() / dim;
    let stem = format!("c{generation:010}");
    let bytes = encode(
        IVF_MAGIC,
        dim as u32,
        lists as u32,
        centroids.iter().map(|x| x.to_le_bytes()),
    );
    let centroids_hash = write_ann_file(&ivf_path(dir, &stem), &bytes)?;
    let mut assignments = BTreeMap::new();
    for (seg, vectors) in next.segments.iter().zip(&seg_vectors) {
        let hash = write_assignment(dir, &seg.name, &stem, &centroids, dim, vectors.rows())?;
        assignments.insert(seg.name.clone(), hash);
    }
    Ok(Some(AnnMeta {
        centroids: stem,
        centroids_hash,
        lists,
        trained_rows: next.segments.iter().map(|s| s.chunks).sum(),
        assignments,
    }))
}

/// Writes the assignment file of segment `merged`, made by a merge of `sources`, from
/// their own files: `rows` lists the merged segment's rows in order, as runs (source,
/// first row there, length). The rows keep the lists they were assigned (assigning
/// them again would give the same ones, at the cost of a pass over the centroids).
/// Returns `false`, writing nothing, when a source has no sound assignment file: the
/// next [`update`] assigns the merged segment's rows then.
pub(crate) fn carry_assignments(
    dir: &Path,
    meta: &mut AnnMeta,
    merged: &str,
    sources: &[&crate::SegmentMeta],
    rows: &[(usize, usize, usize)],
) -> Result<bool, IndexError> {
    let mut lists_of = Vec::with_capacity(sources.len());
    for seg in sources {
        let Some(hash) = meta.assignments.get(&seg.name) else {
            return Ok(false);
        };
        let read = read_checked(&asg_path(dir, &seg.name, &meta.centroids), hash)
            .and_then(|b| decode_assignment(&b, seg.chunks, meta.lists));
        match read {
            Ok(lists) => lists_of.push(lists),
            Err(_) => return Ok(false),
        }
    }
    let mut out = Vec::with_capacity(rows.iter().map(|r| r.2).sum());
    for &(source, first, len) in rows {
        let Some(run) = lists_of.get(source).and_then(|l| l.get(first..first + len)) else {
            return Ok(false);
        };
        out.extend_from_slice(run);
    }
    let bytes = encode(
        ASG_MAGIC,
        out.len() as u32,
        meta.lists as u32,
        out.iter().map(|c| c.to_le_bytes()),
    );
    let hash = write_ann_file(&asg_path(dir, merged, &meta.centroids), &bytes)?;
    meta.assignments.insert(merged.to_string(), hash);
    Ok(true)
}

/// Every ANN file `manifest` names (paths relative to the index), and what is wrong
/// with it (`None`: sound): missing, checksum, header, or no assignment for a segment.
pub(crate) fn check_files(dir: &Path, manifest: &Manifest) -> Vec<(String, Option<String>)> {
    let Some(meta) = &manifest.ann else {
        return Vec::new();
    };
    let dim = manifest.config.dimension;
    let read = |path: &Path, hash: &str| -> Result<Vec<u8>, String> {
        let bytes = fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "missing".to_string(),
            _ => e.to_string(),
        })?;
        if blake3::hash(&bytes).to_hex().as_str() != hash {
            return Err("checksum mismatch".into());
        }
        Ok(bytes)
    };
    let mut out = Vec::with_capacity(manifest.segments.len() + 1);
    let centroids = read(&ivf_path(dir, &meta.centroids), &meta.centroids_hash)
        .and_then(|b| decode_centroids(&b, dim, meta.lists).map(|_| ()));
    out.push((format!("{ANN_DIR}/{}.ivf", meta.centroids), centroids.err()));
    for seg in &manifest.segments {
        let file = format!("{ANN_DIR}/{}.{}.asg", seg.name, meta.centroids);
        let problem = match meta.assignments.get(&seg.name) {
            None => Some("not named by the manifest (stale)".into()),
            Some(h) => read(&asg_path(dir, &seg.name, &meta.centroids), h)
                .and_then(|b| decode_assignment(&b, seg.chunks, meta.lists).map(|_| ()))
                .err(),
        };
        out.push((file, problem));
    }
    out
}

/// Names of the files under `ann/` that `meta` uses (for garbage collection).
pub(crate) fn file_names(meta: Option<&AnnMeta>) -> Vec<String> {
    let Some(m) = meta else {
        return Vec::new();
    };
    let mut out = vec![format!("{}.ivf", m.centroids)];
    out.extend(
        m.assignments
            .keys()
            .map(|s| format!("{s}.{}.asg", m.centroids)),
    );
    out
}

/// The in-memory IVF index of a snapshot.
#[derive(Debug)]
pub(crate) struct IvfIndex {
    dim: usize,
    centroids: Vec<f32>,
    /// `rows[offsets[l]..offsets[l + 1]]` are list `l`'s snapshot rows, ascending.
    offsets: Vec<usize>,
    rows: Vec<u32>,
}

/// Where a snapshot's rows come from: for each run of rows in snapshot order, the
/// segment (index into the manifest's segments), its first row there, and its length.
pub(crate) type RowSpans = [(usize, usize, usize)];

impl IvfIndex {
    /// Loads the ANN files `manifest` names and maps them to the snapshot's rows.
    pub(crate) fn load(
        dir: &Path,
        manifest: &Manifest,
        spans: &RowSpans,
    ) -> (Option<IvfIndex>, AnnStatus) {
        let Some(meta) = &manifest.ann else {
            return (None, AnnStatus::Absent);
        };
        match Self::load_meta(dir, manifest, meta, spans) {
            Ok(ivf) => (
                Some(ivf),
                AnnStatus::Ready {
                    lists: meta.lists,
                    trained_rows: meta.trained_rows,
                },
            ),
            Err(reason) => (None, AnnStatus::Unavailable { reason }),
        }
    }

    fn load_meta(
        dir: &Path,
        manifest: &Manifest,
        meta: &AnnMeta,
        spans: &RowSpans,
    ) -> Result<IvfIndex, String> {
        let dim = manifest.config.dimension;
        let bytes = read_checked(&ivf_path(dir, &meta.centroids), &meta.centroids_hash)?;
        let centroids = decode_centroids(&bytes, dim, meta.lists)?;
        let mut per_segment = Vec::with_capacity(manifest.segments.len());
        for seg in &manifest.segments {
            let hash = meta
                .assignments
                .get(&seg.name)
                .ok_or_else(|| format!("segment {} has no list assignment (stale)", seg.name))?;
            let bytes = read_checked(&asg_path(dir, &seg.name, &meta.centroids), hash)?;
            per_segment.push(decode_assignment(&bytes, seg.chunks, meta.lists)?);
        }
        // List of every snapshot row, then a counting sort into lists (rows ascending).
        let total: usize = spans.iter().map(|s| s.2).sum();
        let mut list_of = Vec::with_capacity(total);
        for &(si, start, n) in spans {
            let asg = per_segment
                .get(si)
                .and_then(|a| a.get(start..start + n))
                .ok_or("assignment shorter than its segment")?;
            list_of.extend_from_slice(asg);
        }
        let mut offsets = vec![0usize; meta.lists + 1];
        for &l in &list_of {
            offsets[l as usize + 1] += 1;
        }
        for i in 0..meta.lists {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut rows = vec![0u32; total];
        for (row, &l) in list_of.iter().enumerate() {
            rows[fill[l as usize]] = row as u32;
            fill[l as usize] += 1;
        }
        Ok(IvfIndex {
            dim,
            centroids,
            offsets,
            rows,
        })
    }

    /// Number of lists.
    pub(crate) fn lists(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Rows to score for `query`: whole lists, best centroid first (ties by list), until
    /// at least `target` rows that `allowed` accepts have been taken (or every list).
    pub(crate) fn candidates(
        &self,
        query: &[f32],
        target: usize,
        allowed: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<usize> {
        let score = |(l, c): (usize, &[f32])| (crate::dense::dot(query, c), l as u32);
        // The centroids are read from memory that the query's embedding has just swept
        // through the caches (1,265 of them, 1.9 MB, at 100k rows): with many lists,
        // both cores read a share, each dot product computed as alone, kept in order.
        let mut order: Vec<(f32, u32)> = if self.lists() >= PARALLEL_LISTS {
            use rayon::prelude::*;
            self.centroids
                .par_chunks_exact(self.dim)
                .enumerate()
                .map(score)
                .collect()
        } else {
            self.centroids
                .chunks_exact(self.dim)
                .enumerate()
                .map(score)
                .collect()
        };
        order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut out = Vec::with_capacity(target + target / 2);
        for (_, l) in order {
            let l = l as usize;
            let list = &self.rows[self.offsets[l]..self.offsets[l + 1]];
            match allowed {
                None => out.extend(list.iter().map(|&r| r as usize)),
                Some(f) => out.extend(list.iter().map(|&r| r as usize).filter(|&r| f(r))),
            }
            if out.len() >= target {
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 63, lesser note: the message printed `Some(384) x Some(980)`.
    #[test]
    fn a_centroids_file_of_other_dimensions_is_described_in_numbers() {
        let mut bytes = IVF_MAGIC.to_vec();
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&[0; 24]);
        let e = decode_centroids(&bytes, 4, 2).unwrap_err();
        assert_eq!(e, "centroids file is 3 x 2, the manifest says 4 x 2");
    }

    /// With enough lists to score the centroids on rayon's threads, and with too few,
    /// the lists come best centroid first, ties by list, their rows in order: what one
    /// pass over the centroids gives.
    #[test]
    fn candidates_come_best_list_first_either_way() {
        let dim = 16;
        for lists in [PARALLEL_LISTS / 4, PARALLEL_LISTS + 77] {
            // Centroids from a small generator; every third one repeats the one before,
            // so that ties between lists occur.
            let mut x = 0x9e37_79b9_u32;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 2001) as f32 / 1000.0 - 1.0
            };
            let mut centroids: Vec<f32> = Vec::with_capacity(lists * dim);
            for l in 0..lists {
                if l % 3 == 2 {
                    let before = centroids[(l - 1) * dim..l * dim].to_vec();
                    centroids.extend(before);
                } else {
                    centroids.extend((0..dim).map(|_| next()));
                }
            }
            let offsets: Vec<usize> = (0..=lists).map(|l| 2 * l).collect();
            let rows: Vec<u32> = (0..2 * lists as u32).collect();
            let ivf = IvfIndex {
                dim,
                centroids: centroids.clone(),
                offsets,
                rows,
            };
            let query: Vec<f32> = (0..dim).map(|_| next()).collect();
            let mut order: Vec<(f32, usize)> = centroids
                .chunks_exact(dim)
                .enumerate()
                .map(|(l, c)| (crate::dense::dot(&query, c), l))
                .collect();
            order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let want: Vec<usize> = order
                .iter()
                .flat_map(|&(_, l)| [2 * l, 2 * l + 1])
                .collect();
            assert_eq!(
                ivf.candidates(&query, 2 * lists, None),
                want,
                "{lists} lists"
            );
            // A target stops at the list that reaches it.
            assert_eq!(ivf.candidates(&query, 5, None), want[..6], "{lists} lists");
        }
    }
}
