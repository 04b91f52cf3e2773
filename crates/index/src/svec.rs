//! Sentence vectors (`excerpt ingest --sentence-vectors` or `--late-chunking`): the
//! optional `<name>.svec` file of a segment, and the compact rows readers keep in memory.
//!
//! A sentence vector is kept at 8 bits a component: per row one scale (the largest
//! magnitude of its components over 127) and the components divided by it, rounded. A
//! row reads back as `q · scale`; for unit vectors of dimension 384 a cosine moves by
//! about 1e-3, far below what separates two sentences, and a row takes 388 bytes instead
//! of 1536 (on disk and in memory).
//!
//! File layout, all little-endian: a header `EXSVEC02`, dimension and document count as
//! u32, one u32 per document (its number of rows: 0, or one per sentence), then every
//! row of every document in segment order, each as its f32 scale followed by `dimension`
//! i8 components. Files written before (header `EXSVEC01`, rows of f32) are still read,
//! and their rows are quantised as they are read.

use std::borrow::Borrow;
use std::fs;
use std::path::Path;

use excerpt_core::Document;

use crate::manifest::write_new_durably;
use crate::segment::segment_file;
use crate::{IndexError, SegmentMeta};

/// Header of files of f32 rows (read only).
const MAGIC_F32: &[u8; 8] = b"EXSVEC01";
/// Header of files of 8-bit rows (written).
const MAGIC_I8: &[u8; 8] = b"EXSVEC02";

/// Rows of sentence vectors of one dimension, 8 bits a component (see the module).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SentenceRows {
    dim: usize,
    scales: Vec<f32>,
    values: Vec<i8>,
}

impl SentenceRows {
    /// No rows, of dimension `dim`.
    pub fn new(dim: usize) -> Self {
        SentenceRows {
            dim,
            ..Default::default()
        }
    }

    /// Rows quantised from `vectors`, rows of `dim` f32 one after another.
    pub fn from_f32(dim: usize, vectors: &[f32]) -> Self {
        let mut rows = SentenceRows::new(dim);
        for v in vectors.chunks_exact(dim.max(1)) {
            rows.push(v);
        }
        rows
    }

    /// Quantises `v` (of this dimension) and appends it.
    pub fn push(&mut self, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim);
        let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let scale = if max.is_finite() && max > 0.0 {
            max / 127.0
        } else {
            0.0
        };
        self.scales.push(scale);
        self.values.extend(v.iter().map(|&x| {
            if scale > 0.0 {
                // `as` saturates (and maps NaN to 0).
                (x / scale).round().clamp(-127.0, 127.0) as i8
            } else {
                0
            }
        }));
    }

    /// Appends every row of `other` (of the same dimension).
    pub fn append(&mut self, other: &SentenceRows) {
        debug_assert_eq!(other.dim, self.dim);
        self.scales.extend_from_slice(&other.scales);
        self.values.extend_from_slice(&other.values);
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    /// Row `i` read back as f32.
    pub fn row(&self, i: usize) -> Option<Vec<f32>> {
        let scale = *self.scales.get(i)?;
        let q = self.values.get(i * self.dim..(i + 1) * self.dim)?;
        Some(q.iter().map(|&x| f32::from(x) * scale).collect())
    }
}

/// Writes the sentence-vector file of a segment durably when any document has sentence
/// vectors (`sentences[i]` belongs to `docs[i]`: one f32 row per sentence, or `None`),
/// and returns its checksum for [`SegmentMeta::svec_hash`].
pub(crate) fn write_sentence_vectors(
    dir: &Path,
    name: &str,
    docs: &[Document],
    sentences: &[Option<Vec<f32>>],
    dimension: usize,
) -> Result<Option<String>, IndexError> {
    let rows: Vec<Option<SentenceRows>> = sentences
        .iter()
        .map(|s| s.as_ref().map(|v| SentenceRows::from_f32(dimension, v)))
        .collect();
    let rows: Vec<Option<&SentenceRows>> = rows.iter().map(Option::as_ref).collect();
    write_sentence_rows(dir, name, docs, &rows, dimension)
}

/// [`write_sentence_vectors`] with rows already quantised (a merge copies them as they
/// were read: quantising again could move a component by one step).
pub(crate) fn write_sentence_rows<D: Borrow<Document>>(
    dir: &Path,
    name: &str,
    docs: &[D],
    sentences: &[Option<&SentenceRows>],
    dimension: usize,
) -> Result<Option<String>, IndexError> {
    if sentences.iter().all(Option::is_none) {
        return Ok(None);
    }
    let rows: usize = sentences.iter().flatten().map(|r| r.len()).sum();
    let mut bytes = Vec::with_capacity(16 + docs.len() * 4 + rows * (4 + dimension));
    bytes.extend_from_slice(MAGIC_I8);
    bytes.extend_from_slice(&(dimension as u32).to_le_bytes());
    bytes.extend_from_slice(&(docs.len() as u32).to_le_bytes());
    for (d, s) in docs.iter().zip(sentences) {
        let n = if s.is_some() {
            d.borrow().sentences.len()
        } else {
            0
        };
        bytes.extend_from_slice(&(n as u32).to_le_bytes());
    }
    for rows in sentences.iter().flatten() {
        debug_assert_eq!(rows.dim, dimension);
        for (i, scale) in rows.scales.iter().enumerate() {
            bytes.extend_from_slice(&scale.to_le_bytes());
            bytes.extend(
                rows.values[i * dimension..(i + 1) * dimension]
                    .iter()
                    .map(|&q| q as u8),
            );
        }
    }
    write_new_durably(dir, &segment_file(dir, name, "svec"), &bytes)?;
    Ok(Some(blake3::hash(&bytes).to_hex().to_string()))
}

/// Reads and verifies a segment's sentence vectors: per document of the segment (in
/// segment order, as read from its `.docs`) its rows, or `None` when it has none (or
/// the segment has no sentence file).
pub(crate) fn read_sentence_vectors(
    dir: &Path,
    meta: &SegmentMeta,
    docs: &[impl Borrow<Document>],
    dimension: usize,
) -> Result<Vec<Option<SentenceRows>>, IndexError> {
    let Some(hash) = &meta.svec_hash else {
        return Ok(vec![None; docs.len()]);
    };
    let corrupt = |detail: String| IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("segment {}: sentence vectors: {detail}", meta.name),
    };
    let path = segment_file(dir, &meta.name, "svec");
    let bytes = fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => corrupt(format!("{}.svec: missing", meta.name)),
        _ => corrupt(format!("{}.svec: {e}", meta.name)),
    })?;
    if blake3::hash(&bytes).to_hex().as_str() != hash {
        return Err(corrupt("checksum mismatch".into()));
    }
    let u32_at = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let quantised = match bytes.get(..8) {
        Some(m) if m == MAGIC_I8 => true,
        Some(m) if m == MAGIC_F32 => false,
        _ => return Err(corrupt("no valid header".into())),
    };
    let (dim, n_docs) = (u32_at(8).unwrap_or(0), u32_at(12).unwrap_or(0));
    if dim != dimension || n_docs != docs.len() {
        return Err(corrupt(format!(
            "holds {n_docs} documents of dimension {dim}, expected {} of {dimension}",
            docs.len()
        )));
    }
    let mut counts = Vec::with_capacity(n_docs);
    for (i, d) in docs.iter().enumerate() {
        let d: &Document = d.borrow();
        let n = u32_at(16 + 4 * i).ok_or_else(|| corrupt("truncated".into()))?;
        if n != 0 && n != d.sentences.len() {
            return Err(corrupt(format!(
                "{n} rows for document {} of {} sentences",
                d.id,
                d.sentences.len()
            )));
        }
        counts.push(n);
    }
    let row_bytes = if quantised { 4 + dim } else { 4 * dim };
    let mut at = 16 + 4 * n_docs;
    let total: usize = counts.iter().sum();
    if bytes.len() != at + total * row_bytes {
        return Err(corrupt(format!("size does not match {total} rows")));
    }
    let f32_at = |b: &[u8]| f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mut out = Vec::with_capacity(n_docs);
    for n in counts {
        if n == 0 {
            out.push(None);
            continue;
        }
        let mut rows = SentenceRows::new(dim);
        for row in bytes[at..at + n * row_bytes].chunks_exact(row_bytes) {
            if quantised {
                rows.scales.push(f32_at(&row[..4]));
                rows.values.extend(row[4..].iter().map(|&b| b as i8));
            } else {
                let v: Vec<f32> = row.chunks_exact(4).map(f32_at).collect();
                rows.push(&v);
            }
        }
        at += n * row_bytes;
        out.push(Some(rows));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_within_one_step_of_their_scale() {
        let v = [0.5f32, -0.25, 0.0, 0.125, -0.5];
        let rows = SentenceRows::from_f32(5, &v);
        let back = rows.row(0).unwrap();
        let step = 0.5 / 127.0;
        for (a, b) in v.iter().zip(&back) {
            assert!((a - b).abs() <= step / 2.0 + 1e-7, "{a} read back as {b}");
        }
        // The largest component is exact, zero stays zero.
        assert_eq!(back[0], 0.5);
        assert_eq!(back[4], -0.5);
        assert_eq!(back[2], 0.0);
        assert_eq!(rows.row(1), None);
    }

    #[test]
    fn zero_rows_and_non_finite_components_read_back_as_zeros() {
        let rows = SentenceRows::from_f32(2, &[0.0, 0.0, f32::NAN, 1.0, f32::INFINITY, 0.5]);
        assert_eq!(rows.row(0).unwrap(), vec![0.0, 0.0]);
        assert_eq!(rows.row(1).unwrap(), vec![0.0, 1.0]);
        assert_eq!(rows.row(2).unwrap(), vec![0.0, 0.0]);
    }

    #[test]
    fn appending_keeps_rows_in_order() {
        let mut a = SentenceRows::from_f32(2, &[1.0, 0.0]);
        a.append(&SentenceRows::from_f32(2, &[0.0, -1.0, 0.6, 0.8]));
        assert_eq!(a.len(), 3);
        assert_eq!(a.row(1).unwrap(), vec![0.0, -1.0]);
        let r = a.row(2).unwrap();
        assert!((r[0] - 0.6).abs() < 0.004 && r[1] == 0.8);
    }
}
