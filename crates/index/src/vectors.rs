//! Chunk vectors read in place: a snapshot maps each segment's `.vec` file into memory
//! instead of reading it. Opening then reads no row; the rows a search touches are paged
//! in by the operating system and can be dropped again under memory pressure, so the
//! vectors of a large index cost page cache rather than the process's heap (1.5 GB at a
//! million chunks of dimension 384).
//!
//! A file is checked before it is mapped: its header and length against the manifest's
//! row count and the index's dimension, and its BLAKE3 against the manifest's. The hash
//! is computed by reading the file in blocks, not through the mapping, so that checking
//! does not make the whole mapping resident. Segment files are never rewritten in place:
//! a writer creates a segment's files under a new name (and a file of the same name
//! left by a failed commit is removed first, so the new one is a new file), and removes
//! old ones only when no manifest names them; a removed file stays readable through a
//! mapping made before. What was checked is therefore what stays mapped. (A program
//! other than Excerpt truncating a mapped file would make reads of it fault: the same
//! contract as tantivy's memory-mapped directory, which the BM25 index already uses.)
//!
//! Rows are little-endian f32 starting at byte 16, so in a page-aligned mapping they
//! are aligned for `f32`. On a big-endian machine, or if the mapping cannot be made,
//! the rows are decoded into memory as before.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::segment::{check_header, segment_file};
use crate::{IndexError, SegmentMeta};

/// Bytes before the first row of a `.vec` file: magic, dimension, row count.
const HEADER: usize = crate::segment::VEC_HEADER;

/// The rows of one segment's vectors file, mapped or (where mapping is not possible)
/// decoded into memory.
pub(crate) enum SegmentVectors {
    Mapped(memmap2::Mmap),
    Owned(Vec<f32>),
}

impl std::fmt::Debug for SegmentVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SegmentVectors::Mapped(m) => write!(f, "Mapped({} bytes)", m.len()),
            SegmentVectors::Owned(v) => write!(f, "Owned({} floats)", v.len()),
        }
    }
}

impl SegmentVectors {
    /// No rows (a segment that could not be read).
    pub(crate) fn empty() -> SegmentVectors {
        SegmentVectors::Owned(Vec::new())
    }

    /// Opens, checks and maps the vectors file of the segment `meta`, which must hold
    /// `rows` rows of `dimension` floats.
    pub(crate) fn open(
        dir: &Path,
        meta: &SegmentMeta,
        dimension: usize,
        rows: usize,
    ) -> Result<SegmentVectors, IndexError> {
        let corrupt = |detail: String| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: format!("segment {}: {detail}", meta.name),
        };
        let path = segment_file(dir, &meta.name, "vec");
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => corrupt(format!("{}.vec: missing", meta.name)),
            _ => corrupt(format!("{}.vec: {e}", meta.name)),
        };
        let mut file = File::open(&path).map_err(io)?;
        let mut hasher = blake3::Hasher::new();
        let mut header = [0u8; HEADER];
        let mut block = vec![0u8; 1 << 20];
        let mut len = 0usize;
        loop {
            let n = match file.read(&mut block) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            };
            if len < HEADER {
                let take = (HEADER - len).min(n);
                header[len..len + take].copy_from_slice(&block[..take]);
            }
            hasher.update(&block[..n]);
            len += n;
        }
        if hasher.finalize().to_hex().as_str() != meta.vec_hash {
            return Err(corrupt(format!("{}.vec: checksum mismatch", meta.name)));
        }
        check_header(&header, len, dimension, rows).map_err(corrupt)?;
        match map_rows(&file, len) {
            Some(mapped) => Ok(mapped),
            // Read again, from the checked file: it is never rewritten in place.
            None => read_rows(&path, len)
                .map(SegmentVectors::Owned)
                .ok_or_else(|| corrupt(format!("{}.vec: changed while read", meta.name))),
        }
    }

    /// The rows, row-major.
    pub(crate) fn rows(&self) -> &[f32] {
        match self {
            // `map_rows` made sure the cast succeeds.
            SegmentVectors::Mapped(m) => bytemuck::try_cast_slice(&m[HEADER..]).unwrap_or_default(),
            SegmentVectors::Owned(v) => v,
        }
    }
}

/// Maps the file's rows when this machine reads little-endian f32 in place.
#[cfg(target_endian = "little")]
#[allow(unsafe_code)]
fn map_rows(file: &File, len: usize) -> Option<SegmentVectors> {
    // SAFETY: the mapping is read-only, and segment files are never written after their
    // commit (see the module documentation): a new file of the same name is a new inode,
    // and a removed file stays mapped.
    let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
    // The rows start 16 bytes into a page-aligned mapping: aligned for f32.
    bytemuck::try_cast_slice::<u8, f32>(&map[HEADER..]).ok()?;
    Some(SegmentVectors::Mapped(map))
}

#[cfg(not(target_endian = "little"))]
fn map_rows(_file: &File, _len: usize) -> Option<SegmentVectors> {
    None
}

/// The rows of a checked vectors file decoded into memory.
fn read_rows(path: &Path, len: usize) -> Option<Vec<f32>> {
    let bytes = std::fs::read(path).ok()?;
    (bytes.len() == len).then(|| {
        bytes[HEADER..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    })
}
