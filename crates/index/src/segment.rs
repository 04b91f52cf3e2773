//! Segment files: `<name>.docs` (postcard-encoded documents) and `<name>.vec` (a
//! header `EXVEC001`, dimension and row count as little-endian u32, then rows of
//! little-endian f32).

use std::fs;
use std::path::Path;

use excerpt_core::Document;

use crate::manifest::write_durably;
use crate::{IndexError, SegmentMeta};

const VEC_MAGIC: &[u8; 8] = b"EXVEC001";

/// Writes a segment's two files durably and returns its manifest entry.
pub(crate) fn write_segment(
    dir: &Path,
    name: &str,
    docs: &[Document],
    vectors: &[f32],
    dimension: usize,
) -> Result<SegmentMeta, IndexError> {
    let seg_dir = dir.join("segments");
    fs::create_dir_all(&seg_dir).map_err(IndexError::io("creating", &seg_dir))?;
    let chunks: usize = docs.iter().map(|d| d.chunks.len()).sum();
    debug_assert_eq!(chunks * dimension, vectors.len());
    let doc_bytes = postcard::to_stdvec(docs).map_err(|e| IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("encoding segment {name}: {e}"),
    })?;
    let mut vec_bytes = Vec::with_capacity(16 + vectors.len() * 4);
    vec_bytes.extend_from_slice(VEC_MAGIC);
    vec_bytes.extend_from_slice(&(dimension as u32).to_le_bytes());
    vec_bytes.extend_from_slice(&(chunks as u32).to_le_bytes());
    for x in vectors {
        vec_bytes.extend_from_slice(&x.to_le_bytes());
    }
    write_durably(&seg_dir.join(format!("{name}.docs")), &doc_bytes)?;
    write_durably(&seg_dir.join(format!("{name}.vec")), &vec_bytes)?;
    Ok(SegmentMeta {
        name: name.to_string(),
        docs: docs.len(),
        chunks,
        docs_hash: blake3::hash(&doc_bytes).to_hex().to_string(),
        vec_hash: blake3::hash(&vec_bytes).to_hex().to_string(),
        deleted: Vec::new(),
    })
}

/// Reads and verifies a segment: its documents and its vector rows.
pub(crate) fn read_segment(
    dir: &Path,
    meta: &SegmentMeta,
    dimension: usize,
) -> Result<(Vec<Document>, Vec<f32>), IndexError> {
    let corrupt = |detail: String| IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("segment {}: {detail}", meta.name),
    };
    let seg_dir = dir.join("segments");
    let docs_path = seg_dir.join(format!("{}.docs", meta.name));
    let vec_path = seg_dir.join(format!("{}.vec", meta.name));
    let doc_bytes = fs::read(&docs_path).map_err(IndexError::io("reading", &docs_path))?;
    let vec_bytes = fs::read(&vec_path).map_err(IndexError::io("reading", &vec_path))?;
    if blake3::hash(&doc_bytes).to_hex().as_str() != meta.docs_hash {
        return Err(corrupt("documents file checksum mismatch".into()));
    }
    if blake3::hash(&vec_bytes).to_hex().as_str() != meta.vec_hash {
        return Err(corrupt("vectors file checksum mismatch".into()));
    }
    let docs: Vec<Document> = postcard::from_bytes(&doc_bytes)
        .map_err(|e| corrupt(format!("decoding documents: {e}")))?;
    if vec_bytes.len() < 16 || &vec_bytes[..8] != VEC_MAGIC {
        return Err(corrupt("vectors file has no valid header".into()));
    }
    let dim =
        u32::from_le_bytes([vec_bytes[8], vec_bytes[9], vec_bytes[10], vec_bytes[11]]) as usize;
    let rows =
        u32::from_le_bytes([vec_bytes[12], vec_bytes[13], vec_bytes[14], vec_bytes[15]]) as usize;
    let chunks: usize = docs.iter().map(|d| d.chunks.len()).sum();
    if dim != dimension || rows != chunks || vec_bytes.len() != 16 + rows * dim * 4 {
        return Err(corrupt(format!(
            "vectors file holds {rows}x{dim}, expected {chunks}x{dimension}"
        )));
    }
    let vectors = vec_bytes[16..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok((docs, vectors))
}
