//! Segment files read in place: a snapshot maps each segment's `.vec` file into memory
//! instead of reading it, and leaves each document's text in its mapped `.docs` file.
//! Opening then copies no vector row and no text; the rows and texts a query touches are
//! paged in by the operating system and can be dropped again under memory pressure, so
//! a large index costs page cache rather than the process's heap (at a million chunks of
//! dimension 384, 1.5 GB of vectors and the texts).
//!
//! A file is checked before it is used: its BLAKE3 against the manifest's, computed by
//! reading the file in blocks, not through the mapping, so that checking does not make
//! the whole mapping resident; a vectors file's header and length against the
//! manifest's row count and the index's dimension. Documents are decoded from the block
//! read (their texts borrowed, then pointed into the mapping at the same offsets), so
//! decoding does not touch the mapping either. Segment files are never rewritten in
//! place: a writer creates a segment's files under a new name (and a file of the same
//! name left by a failed commit is removed first, so the new one is a new file), and
//! removes old ones only when no manifest names them; a removed file stays readable
//! through a mapping made before. What was checked is therefore what stays mapped. (A
//! program other than Excerpt truncating a mapped file would make reads of it fault: the
//! same contract as tantivy's memory-mapped directory, which the BM25 index already
//! uses.)
//!
//! The vectors mapping asks the kernel for huge pages (`MADV_HUGEPAGE`): searches read
//! rows all over it, and with 4 KB pages they paid 15-20 % in TLB misses against the same
//! rows on the heap, which the kernel backs with huge pages (docs/BENCHMARKS.md).
//!
//! Rows are little-endian f32 starting at byte 16, so in a page-aligned mapping they
//! are aligned for `f32`. On a big-endian machine, or if a mapping cannot be made, the
//! rows and texts are copied into memory as before; `EXCERPT_NO_MMAP=1` asks for that
//! everywhere.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use excerpt_core::{Document, DocumentInPlace, Text};

use crate::segment::{check_header, decode_documents, segment_file};
use crate::{IndexError, SegmentMeta, FORMAT_VERSION};

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
        let mut header = [0u8; HEADER];
        let mut len = 0usize;
        let hash = hash_in_blocks(&mut file, |block| {
            if len < HEADER {
                let take = (HEADER - len).min(block.len());
                header[len..len + take].copy_from_slice(&block[..take]);
            }
            len += block.len();
        })
        .map_err(io)?;
        if hash.to_hex().as_str() != meta.vec_hash {
            return Err(corrupt(format!("{}.vec: checksum mismatch", meta.name)));
        }
        check_header(&header, len, dimension, rows).map_err(corrupt)?;
        match map_file(&file, len).filter(|m| rows_of(m).is_some()) {
            Some(mapped) => {
                // Searches read rows all over the mapping: ask for huge pages, as heap
                // memory of this size gets (fewer TLB misses); a hint only.
                #[cfg(target_os = "linux")]
                let _ = mapped.advise(memmap2::Advice::HugePage);
                Ok(SegmentVectors::Mapped(mapped))
            }
            // Read again, from the checked file: it is never rewritten in place.
            None => read_rows(&path, len)
                .map(SegmentVectors::Owned)
                .ok_or_else(|| corrupt(format!("{}.vec: changed while read", meta.name))),
        }
    }

    /// The rows, row-major.
    pub(crate) fn rows(&self) -> &[f32] {
        match self {
            // `open` made sure the cast succeeds.
            SegmentVectors::Mapped(m) => rows_of(m).unwrap_or_default(),
            SegmentVectors::Owned(v) => v,
        }
    }
}

/// The rows of a mapped vectors file, when this machine reads little-endian f32 in
/// place (they start 16 bytes into a page-aligned mapping: aligned for f32).
fn rows_of(map: &memmap2::Mmap) -> Option<&[f32]> {
    if cfg!(target_endian = "big") {
        return None;
    }
    bytemuck::try_cast_slice::<u8, f32>(map.get(HEADER..)?).ok()
}

/// Whether segment files may be mapped: not when `EXCERPT_NO_MMAP` is set (to anything
/// but `0`), for file systems where mapping is unwise (some network file systems) or to
/// compare the two ways of reading.
fn mapping_allowed() -> bool {
    std::env::var_os("EXCERPT_NO_MMAP").is_none_or(|v| v.is_empty() || v == "0")
}

/// Maps the first `len` bytes of `file` read-only (`None` if it cannot be mapped or
/// mapping is turned off).
#[allow(unsafe_code)]
fn map_file(file: &File, len: usize) -> Option<memmap2::Mmap> {
    if !mapping_allowed() {
        return None;
    }
    // SAFETY: the mapping is read-only, and segment files are never written after their
    // commit (see the module documentation): a new file of the same name is a new inode,
    // and a removed file stays mapped.
    let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
    (map.len() == len).then_some(map)
}

/// Reads `file` to its end in blocks of 1 MiB, handing each to `each`; returns the
/// BLAKE3 of the whole.
fn hash_in_blocks(file: &mut File, mut each: impl FnMut(&[u8])) -> std::io::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut block) {
            Ok(0) => return Ok(hasher.finalize()),
            Ok(n) => {
                hasher.update(&block[..n]);
                each(&block[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads and verifies a segment's documents, leaving each text in the mapped file
/// (copied into memory for segments of an older format, or if the file cannot be
/// mapped).
pub(crate) fn read_documents(dir: &Path, meta: &SegmentMeta) -> Result<Vec<Document>, IndexError> {
    let (bytes, file) = crate::segment::read_checked_documents(dir, meta)?;
    let mapped = (meta.format == FORMAT_VERSION)
        .then(|| map_file(&file, bytes.len()))
        .flatten();
    let Some(map) = mapped else {
        return decode_documents(dir, meta, &bytes);
    };
    let corrupt = |detail: String| IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("segment {}: decoding documents: {detail}", meta.name),
    };
    let parts: Vec<DocumentInPlace> =
        postcard::from_bytes(&bytes).map_err(|e| corrupt(e.to_string()))?;
    let buffer: excerpt_core::SharedBytes = Arc::new(map);
    let base = bytes.as_ptr() as usize;
    let docs = parts
        .into_iter()
        .map(|p| {
            // The text's place in the block read is its place in the file.
            let start = p.text.as_ptr() as usize - base;
            let text = Text::in_place(buffer.clone(), start..start + p.text.len())
                .ok_or_else(|| corrupt(format!("the text of {} is outside the file", p.id)))?;
            Ok(p.into_document(text))
        })
        .collect::<Result<Vec<_>, IndexError>>()?;
    drop(bytes);
    Ok(docs)
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
