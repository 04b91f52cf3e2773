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
//! decoding does not touch the mapping either.
//!
//! A vectors file's header and length are checked at open, its BLAKE3 lazily
//! ([`VectorsCheck`]): hashing the vectors was most of a large index's open (1.5 GB at a
//! million chunks). A thread of the snapshot checks its segments one after the other
//! from the open on, and the first reader of a segment's rows waits for that segment's
//! check (or runs it), so no row is read before its file is found sound, and a segment
//! whose file fails is left out of every dense search from then on. A file found sound
//! is remembered for the process (by device, inode, length and modification time), so
//! the snapshots opened after each commit check only the new segments' files. Segment files are never rewritten in
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

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

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

    /// Opens and maps the vectors file of the segment `meta`, which must hold `rows`
    /// rows of `dimension` floats, checking its header and length now and its BLAKE3
    /// through the returned [`VectorsCheck`] (already done when the file could not be
    /// mapped and was read instead).
    pub(crate) fn open(
        dir: &Path,
        meta: &SegmentMeta,
        dimension: usize,
        rows: usize,
    ) -> Result<(SegmentVectors, VectorsCheck), IndexError> {
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
        let len = file.metadata().map_err(io)?.len() as usize;
        let mut header = [0u8; HEADER];
        if len >= HEADER {
            file.read_exact(&mut header).map_err(io)?;
        }
        check_header(&header, len, dimension, rows).map_err(corrupt)?;
        match map_file(&file, len).filter(|m| rows_of(m).is_some()) {
            Some(mapped) => {
                // Searches read rows all over the mapping: ask for huge pages, as heap
                // memory of this size gets (fewer TLB misses); a hint only.
                #[cfg(target_os = "linux")]
                let _ = mapped.advise(memmap2::Advice::HugePage);
                let check = VectorsCheck::pending(file, meta);
                Ok((SegmentVectors::Mapped(mapped), check))
            }
            None => {
                // Read into memory: checked as it is read.
                let bytes = std::fs::read(&path).map_err(io)?;
                if blake3::hash(&bytes).to_hex().as_str() != meta.vec_hash {
                    return Err(corrupt(format!("{}.vec: checksum mismatch", meta.name)));
                }
                check_header(&bytes, bytes.len(), dimension, rows).map_err(corrupt)?;
                let rows = bytes[HEADER..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                Ok((SegmentVectors::Owned(rows), VectorsCheck::sound()))
            }
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

/// Reads `file` to its end in blocks of 1 MiB; returns the BLAKE3 of the whole.
fn hash_in_blocks(file: &mut File) -> std::io::Result<blake3::Hash> {
    let mut hasher = blake3::Hasher::new();
    let mut block = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut block) {
            Ok(0) => return Ok(hasher.finalize()),
            Ok(n) => {
                hasher.update(&block[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A segment's live and deleted documents, in the segment's order, as this process
/// decoded them from its checked `.docs` file (texts left in the mapped file, as
/// the snapshot reads them).
///
/// Shared: while any snapshot (or other reader) holds a segment's documents, a reader of
/// the same file gets the same ones (`segment_documents`) instead of reading, hashing
/// and decoding the file again. Segment files are never rewritten in place, so the file
/// a reader finds under the segment's name with the same identity (device, inode,
/// length, modification time) and the manifest's same BLAKE3 is the file that was
/// checked. That keeps a commit's cost in the new segment rather than the whole index:
/// a server reopens its snapshot, and an ingest opens a writer, after every write.
#[derive(Debug)]
pub struct SegmentDocs(Vec<Arc<Document>>);

impl SegmentDocs {
    /// The documents, in the segment's order (its rows follow the same order).
    pub fn documents(&self) -> &[Arc<Document>] {
        &self.0
    }

    /// The segment's vector rows: its documents' chunks.
    pub(crate) fn rows(&self) -> usize {
        self.0.iter().map(|d| d.chunks.len()).sum()
    }
}

/// What identifies a checked `.docs` file's documents: the file's identity, the BLAKE3
/// it matched, and whether mapping was allowed when they were read ([`mapping_allowed`]:
/// documents read with it off have their texts in memory).
type DocsKey = (FileKey, String, bool);

/// The segment documents read by this process that something still holds.
static DOCS: Mutex<Option<std::collections::HashMap<DocsKey, std::sync::Weak<SegmentDocs>>>> =
    Mutex::new(None);

/// A segment's documents ([`SegmentDocs`]): those this process already holds for the
/// same file, else read, checked and decoded by [`read_documents`].
pub(crate) fn segment_documents(
    dir: &Path,
    meta: &SegmentMeta,
) -> Result<Arc<SegmentDocs>, IndexError> {
    let path = segment_file(dir, &meta.name, "docs");
    let mapped = mapping_allowed();
    let now = File::open(&path)
        .ok()
        .and_then(|f| file_key(&f))
        .map(|k| (k, meta.docs_hash.clone(), mapped));
    if let Some(key) = &now {
        let guard = DOCS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = guard.as_ref().and_then(|m| m.get(key)?.upgrade()) {
            return Ok(held);
        }
    }
    let (docs, read) = read_documents(dir, meta)?;
    let shared = Arc::new(SegmentDocs(docs.into_iter().map(Arc::new).collect()));
    if let Some(read) = read {
        let mut guard = DOCS.lock().unwrap_or_else(|e| e.into_inner());
        let map = guard.get_or_insert_with(Default::default);
        map.retain(|_, held| held.strong_count() > 0);
        map.insert(
            (read, meta.docs_hash.clone(), mapped),
            Arc::downgrade(&shared),
        );
    }
    Ok(shared)
}

/// Reads and verifies a segment's documents, leaving each text in the mapped file
/// (copied into memory for segments of an older format, or if the file cannot be
/// mapped); with the identity of the file read.
fn read_documents(
    dir: &Path,
    meta: &SegmentMeta,
) -> Result<(Vec<Document>, Option<FileKey>), IndexError> {
    let (bytes, file) = crate::segment::read_checked_documents(dir, meta)?;
    let key = file_key(&file);
    let mapped = (meta.format == FORMAT_VERSION)
        .then(|| map_file(&file, bytes.len()))
        .flatten();
    let Some(map) = mapped else {
        return Ok((decode_documents(dir, meta, &bytes)?, key));
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
    Ok((docs, key))
}

/// A segment's checked documents ([`segment_documents`]: shared with the snapshots
/// that hold them) after a check of its vectors file without decoding it: header and
/// length, then its BLAKE3 read in blocks (once per file and process,
/// [`VectorsCheck`]). What a writer reads of every segment before it changes anything:
/// the rows themselves are not needed, and decoding them held a copy of every vector on
/// the heap (1.5 GB at a million chunks).
pub(crate) fn read_checked_segment_documents(
    dir: &Path,
    meta: &SegmentMeta,
    dimension: usize,
) -> Result<Arc<SegmentDocs>, IndexError> {
    read_checked_segment(dir, meta, dimension).map(|(docs, _)| docs)
}

/// [`read_checked_segment_documents`], with the vectors mapped (read in place: the
/// ANN lists are trained and assigned from them without a copy on the heap).
pub(crate) fn read_checked_segment(
    dir: &Path,
    meta: &SegmentMeta,
    dimension: usize,
) -> Result<(Arc<SegmentDocs>, SegmentVectors), IndexError> {
    let docs = segment_documents(dir, meta)?;
    let (vectors, check) = SegmentVectors::open(dir, meta, dimension, docs.rows())?;
    check
        .result()
        .clone()
        .map_err(|detail| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: format!("segment {}: {detail}", meta.name),
        })?;
    Ok((docs, vectors))
}

/// The check of one segment's vectors file against the manifest's BLAKE3, run once, by
/// the first to ask for its result.
pub(crate) struct VectorsCheck {
    /// The file opened (and mapped) at open, read again from its start to hash it, so
    /// the file checked is the file mapped; `None` when the check was done at open.
    file: Option<(File, String, String)>,
    result: OnceLock<Result<(), String>>,
}

impl std::fmt::Debug for VectorsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorsCheck")
            .field("result", &self.result.get())
            .finish_non_exhaustive()
    }
}

/// A file's identity while it exists: device, inode, length, modification time.
type FileKey = (u64, u64, u64, i128);

/// Vectors files found sound by this process. Segment files are never rewritten in
/// place (a file of the same name is a new file), so a file's identity stands for its
/// contents.
static SOUND: Mutex<Option<HashSet<FileKey>>> = Mutex::new(None);

fn file_key(file: &File) -> Option<FileKey> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata().ok()?;
        Some((
            m.dev(),
            m.ino(),
            m.len(),
            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

impl VectorsCheck {
    /// A check already passed (rows read and hashed at open, or no rows).
    pub(crate) fn sound() -> VectorsCheck {
        VectorsCheck {
            file: None,
            result: OnceLock::from(Ok(())),
        }
    }

    /// The check of `file`, the vectors file of `meta`, still to run.
    fn pending(file: File, meta: &SegmentMeta) -> VectorsCheck {
        VectorsCheck {
            file: Some((file, meta.name.clone(), meta.vec_hash.clone())),
            result: OnceLock::new(),
        }
    }

    /// The result: `Err` with what is wrong when the file does not match the
    /// manifest's BLAKE3. Runs the check if no one has yet; waits while another thread
    /// runs it.
    pub(crate) fn result(&self) -> &Result<(), String> {
        self.result.get_or_init(|| self.run())
    }

    /// The result if the check has run.
    pub(crate) fn found(&self) -> Option<&Result<(), String>> {
        self.result.get()
    }

    fn run(&self) -> Result<(), String> {
        let Some((file, name, expected)) = &self.file else {
            return Ok(());
        };
        let key = file_key(file);
        let sound = |key: &FileKey| {
            let guard = SOUND.lock().unwrap_or_else(|e| e.into_inner());
            guard.as_ref().is_some_and(|set| set.contains(key))
        };
        if key.as_ref().is_some_and(sound) {
            return Ok(());
        }
        let hash = (|| {
            let mut reader = file.try_clone()?;
            reader.rewind()?;
            hash_in_blocks(&mut reader)
        })()
        .map_err(|e| format!("{name}.vec: {e}"))?;
        if hash.to_hex().as_str() != expected {
            return Err(format!("{name}.vec: checksum mismatch"));
        }
        if let Some(key) = key {
            let mut guard = SOUND.lock().unwrap_or_else(|e| e.into_inner());
            guard.get_or_insert_with(HashSet::new).insert(key);
        }
        Ok(())
    }
}
