//! Segment files: `<name>.docs` (postcard-encoded documents) and `<name>.vec` (a
//! header `EXVEC001`, dimension and row count as little-endian u32, then rows of
//! little-endian f32). Optionally `<name>.svec`, sentence vectors ([`crate::svec`]).
//!
//! Alongside, `<name>.ids`: the segment's document ids in segment order as a JSON array,
//! so that the documents of a segment whose other files are lost can still be named
//! (`excerpt verify`, `excerpt repair`, queries on a damaged index). Segments written
//! before it existed have none ([`SegmentMeta::ids_hash`] absent).
//!
//! Postcard is not self-describing, so a field added to [`Document`] or its parts changes
//! the encoding: each segment records the format it was written in
//! ([`SegmentMeta::format`]) and older encodings are decoded through frozen copies of
//! the old types ([`v1`]).

use std::borrow::Borrow;
use std::fs;
use std::io::Write;
use std::path::Path;

use excerpt_core::Document;

use crate::manifest::{create_new, write_durably, write_new_durably};
use crate::{IndexError, SegmentMeta, FORMAT_VERSION};

const VEC_MAGIC: &[u8; 8] = b"EXVEC001";
/// Bytes before the first row of a `.vec` file: magic, dimension, row count.
pub(crate) const VEC_HEADER: usize = 16;

/// Writes a segment's files durably and returns its manifest entry: `docs` in segment
/// order and `rows`, their chunks' vectors in the same order (one slice of `dimension`
/// values a chunk). Both files are streamed to disk as they are encoded and hashed, so a
/// merge of large segments holds no second copy of their vectors or texts.
pub(crate) fn write_segment<'a, D: Borrow<Document>>(
    dir: &Path,
    name: &str,
    docs: &[D],
    rows: impl Iterator<Item = &'a [f32]>,
    dimension: usize,
) -> Result<SegmentMeta, IndexError> {
    let seg_dir = dir.join("segments");
    fs::create_dir_all(&seg_dir).map_err(IndexError::io("creating", &seg_dir))?;
    let docs: Vec<&Document> = docs.iter().map(Borrow::borrow).collect();
    let chunks: usize = docs.iter().map(|d| d.chunks.len()).sum();
    // Every file is new (`O_EXCL`): readers map segment files (crate::in_place), and a
    // name already there belongs to a segment a manifest may name.
    let docs_path = seg_dir.join(format!("{name}.docs"));
    let mut out = HashingFile::create(dir, &docs_path)?;
    if let Err(e) = postcard::to_io(&docs, &mut out).map(|_| ()) {
        return Err(match out.failed.take() {
            Some(io) => IndexError::io("writing", &docs_path)(io),
            None => IndexError::Corrupt {
                dir: dir.to_path_buf(),
                detail: format!("encoding segment {name}: {e}"),
            },
        });
    }
    let docs_hash = out.finish(&docs_path)?;
    let vec_path = seg_dir.join(format!("{name}.vec"));
    let mut out = HashingFile::create(dir, &vec_path)?;
    let write = |out: &mut HashingFile, bytes: &[u8]| {
        out.write_all(bytes)
            .map_err(IndexError::io("writing", &vec_path))
    };
    write(&mut out, VEC_MAGIC)?;
    write(&mut out, &(dimension as u32).to_le_bytes())?;
    write(&mut out, &(chunks as u32).to_le_bytes())?;
    let mut written = 0usize;
    for row in rows {
        debug_assert_eq!(row.len(), dimension);
        for x in row {
            write(&mut out, &x.to_le_bytes())?;
        }
        written += 1;
    }
    debug_assert_eq!(written, chunks);
    let vec_hash = out.finish(&vec_path)?;
    let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
    let ids_hash = write_segment_ids(dir, name, &ids, false)?;
    Ok(SegmentMeta {
        name: name.to_string(),
        docs: docs.len(),
        chunks,
        docs_hash,
        vec_hash,
        deleted: Vec::new(),
        format: FORMAT_VERSION,
        svec_hash: None,
        ids_hash: Some(ids_hash),
    })
}

/// A new file written through a buffer and hashed (BLAKE3) as it is written.
struct HashingFile {
    out: std::io::BufWriter<fs::File>,
    hasher: blake3::Hasher,
    /// The last write's error (the encoder reports only that one happened).
    failed: Option<std::io::Error>,
}

impl HashingFile {
    /// Creates `path`, a file of the index in `dir`, as a new file
    /// ([`crate::manifest::create_new`]): one already there is a refusal, never
    /// truncated.
    fn create(dir: &Path, path: &Path) -> Result<HashingFile, IndexError> {
        let file = create_new(dir, path)?;
        Ok(HashingFile {
            out: std::io::BufWriter::with_capacity(1 << 16, file),
            hasher: blake3::Hasher::new(),
            failed: None,
        })
    }

    /// Flushes and fsyncs the file; its BLAKE3 in hex.
    fn finish(self, path: &Path) -> Result<String, IndexError> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| IndexError::io("writing", path)(e.into_error()))?;
        file.sync_all().map_err(IndexError::io("syncing", path))?;
        Ok(self.hasher.finalize().to_hex().to_string())
    }
}

impl Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.out.write(buf) {
            Ok(n) => {
                self.hasher.update(&buf[..n]);
                Ok(n)
            }
            Err(e) => {
                let again = std::io::Error::new(e.kind(), e.to_string());
                self.failed = Some(e);
                Err(again)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Path of a segment's file with extension `ext` (`docs`, `vec`, `svec`, `ids`).
pub(crate) fn segment_file(dir: &Path, name: &str, ext: &str) -> std::path::PathBuf {
    dir.join("segments").join(format!("{name}.{ext}"))
}

/// Writes a segment's id list (`<name>.ids`) durably; returns its BLAKE3. A new
/// segment's list is a new file ([`crate::manifest::create_new`]); with `replace` (repair
/// writing the list of an existing segment again) it goes through a temporary file and a
/// rename.
pub(crate) fn write_segment_ids(
    dir: &Path,
    name: &str,
    ids: &[&str],
    replace: bool,
) -> Result<String, IndexError> {
    let bytes = serde_json::to_vec(ids).map_err(|e| IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("encoding the ids of segment {name}: {e}"),
    })?;
    let path = segment_file(dir, name, "ids");
    if replace {
        let tmp = segment_file(dir, name, "ids.tmp");
        write_durably(&tmp, &bytes)?;
        fs::rename(&tmp, &path).map_err(IndexError::io("renaming", &path))?;
    } else {
        write_new_durably(dir, &path, &bytes)?;
    }
    Ok(blake3::hash(&bytes).to_hex().to_string())
}

/// Reads a segment's id list, checked against [`SegmentMeta::ids_hash`]; `Err` says in
/// words what is wrong (no list kept for this segment, missing, damaged).
pub(crate) fn read_segment_ids(dir: &Path, meta: &SegmentMeta) -> Result<Vec<String>, String> {
    let Some(hash) = &meta.ids_hash else {
        return Err("no id list (segment written before id lists were kept)".into());
    };
    let path = segment_file(dir, &meta.name, "ids");
    let bytes = fs::read(&path).map_err(|e| format!("{}.ids: {e}", meta.name))?;
    if blake3::hash(&bytes).to_hex().as_str() != hash {
        return Err(format!("{}.ids: checksum mismatch", meta.name));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{}.ids: {e}", meta.name))
}

/// The vector length a `.vec` file's header records, when it has a valid header.
pub(crate) fn vector_dimension(path: &Path) -> Option<usize> {
    use std::io::Read;
    let mut header = [0u8; 16];
    fs::File::open(path).ok()?.read_exact(&mut header).ok()?;
    (&header[..8] == VEC_MAGIC)
        .then(|| u32::from_le_bytes([header[8], header[9], header[10], header[11]]) as usize)
}

/// Reads and verifies a segment: its documents and its vector rows (decoded into
/// memory; a snapshot maps them instead).
pub(crate) fn read_segment(
    dir: &Path,
    meta: &SegmentMeta,
    dimension: usize,
) -> Result<(Vec<Document>, Vec<f32>), IndexError> {
    let docs = read_documents(dir, meta)?;
    let vec_bytes = read_file(dir, meta, "vec")?;
    if blake3::hash(&vec_bytes).to_hex().as_str() != meta.vec_hash {
        return Err(corrupt(
            dir,
            meta,
            format!("{}.vec: checksum mismatch", meta.name),
        ));
    }
    let chunks: usize = docs.iter().map(|d| d.chunks.len()).sum();
    check_header(&vec_bytes, vec_bytes.len(), dimension, chunks)
        .map_err(|detail| corrupt(dir, meta, detail))?;
    let vectors = vec_bytes[VEC_HEADER..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok((docs, vectors))
}

/// Reads and verifies a segment's documents (`<name>.docs`), decoded into memory.
pub(crate) fn read_documents(dir: &Path, meta: &SegmentMeta) -> Result<Vec<Document>, IndexError> {
    let (bytes, _) = read_checked_documents(dir, meta)?;
    decode_documents(dir, meta, &bytes)
}

/// The bytes of a segment's `.docs` file, checked against the manifest's BLAKE3, and the
/// file they were read from.
pub(crate) fn read_checked_documents(
    dir: &Path,
    meta: &SegmentMeta,
) -> Result<(Vec<u8>, fs::File), IndexError> {
    use std::io::Read;
    let path = segment_file(dir, &meta.name, "docs");
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => corrupt(dir, meta, format!("{}.docs: missing", meta.name)),
        _ => corrupt(dir, meta, format!("{}.docs: {e}", meta.name)),
    };
    let mut file = fs::File::open(&path).map_err(io)?;
    // Sized once: growing by doubling would zero and copy the pages again.
    let len = file.metadata().map_or(0, |m| m.len() as usize);
    let mut bytes = Vec::with_capacity(len);
    file.read_to_end(&mut bytes).map_err(io)?;
    if blake3::hash(&bytes).to_hex().as_str() != meta.docs_hash {
        return Err(corrupt(
            dir,
            meta,
            format!("{}.docs: checksum mismatch", meta.name),
        ));
    }
    Ok((bytes, file))
}

/// Decodes a segment's checked `.docs` bytes in the segment's format.
pub(crate) fn decode_documents(
    dir: &Path,
    meta: &SegmentMeta,
    bytes: &[u8],
) -> Result<Vec<Document>, IndexError> {
    match meta.format {
        1 => v1::decode(bytes),
        FORMAT_VERSION => postcard::from_bytes(bytes).map_err(|e| e.to_string()),
        other => {
            return Err(IndexError::Format {
                dir: dir.to_path_buf(),
                found: other,
                expected: FORMAT_VERSION,
            })
        }
    }
    .map_err(|e| corrupt(dir, meta, format!("decoding documents: {e}")))
}

/// Damage in segment `meta`, described by `detail`.
fn corrupt(dir: &Path, meta: &SegmentMeta, detail: String) -> IndexError {
    IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("segment {}: {detail}", meta.name),
    }
}

/// The bytes of a segment's file with extension `ext`. A file that cannot be read is
/// damage like a wrong checksum: both say which file.
fn read_file(dir: &Path, meta: &SegmentMeta, ext: &str) -> Result<Vec<u8>, IndexError> {
    fs::read(segment_file(dir, &meta.name, ext)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => corrupt(dir, meta, format!("{}.{ext}: missing", meta.name)),
        _ => corrupt(dir, meta, format!("{}.{ext}: {e}", meta.name)),
    })
}

/// Checks a vectors file's header and length (`len` bytes) against the rows expected.
pub(crate) fn check_header(
    header: &[u8],
    len: usize,
    dimension: usize,
    rows: usize,
) -> Result<(), String> {
    if len < VEC_HEADER || header.get(..8) != Some(VEC_MAGIC.as_slice()) {
        return Err("vectors file has no valid header".into());
    }
    let u32_at = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]) as usize
    };
    let (dim, found) = (u32_at(8), u32_at(12));
    if dim != dimension || found != rows || len != VEC_HEADER + found * dim * 4 {
        return Err(format!(
            "vectors file holds {found}x{dim}, expected {rows}x{dimension}"
        ));
    }
    Ok(())
}

/// Format 1: documents before chunks had a context. Frozen copies of the types as they
/// were encoded then, converted to today's on load (no context).
mod v1 {
    use excerpt_core::{Chunk, Document, Section, SectionId, TextRange};
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct ChunkV1 {
        ordinal: u32,
        range: TextRange,
        section: Option<SectionId>,
        tokens: u32,
    }

    #[derive(Deserialize)]
    struct DocumentV1 {
        id: String,
        title: String,
        source: Option<String>,
        /// Metadata as JSON text (how binary formats carry it).
        metadata: String,
        text: String,
        hash: String,
        sections: Vec<Section>,
        chunks: Vec<ChunkV1>,
        sentences: Vec<TextRange>,
        pages: Vec<TextRange>,
    }

    /// Decodes a format-1 `.docs` file.
    pub(super) fn decode(bytes: &[u8]) -> Result<Vec<Document>, String> {
        let old: Vec<DocumentV1> = postcard::from_bytes(bytes).map_err(|e| e.to_string())?;
        old.into_iter()
            .map(|d| {
                let metadata = serde_json::from_str(&d.metadata)
                    .map_err(|e| format!("metadata of {}: {e}", d.id))?;
                Ok(Document {
                    id: d.id,
                    title: d.title,
                    source: d.source,
                    metadata,
                    text: d.text.into(),
                    hash: d.hash,
                    sections: d.sections,
                    chunks: d
                        .chunks
                        .into_iter()
                        .map(|c| Chunk {
                            ordinal: c.ordinal,
                            range: c.range,
                            section: c.section,
                            tokens: c.tokens,
                            context: None,
                        })
                        .collect(),
                    sentences: d.sentences,
                    pages: d.pages,
                })
            })
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde::Serialize;

        /// The format-1 encoding, as the previous build wrote it.
        #[derive(Serialize)]
        struct ChunkV1Out {
            ordinal: u32,
            range: TextRange,
            section: Option<SectionId>,
            tokens: u32,
        }

        #[derive(Serialize)]
        struct DocumentV1Out {
            id: String,
            title: String,
            source: Option<String>,
            metadata: String,
            text: String,
            hash: String,
            sections: Vec<Section>,
            chunks: Vec<ChunkV1Out>,
            sentences: Vec<TextRange>,
            pages: Vec<TextRange>,
        }

        #[test]
        fn format_1_documents_decode_without_context() {
            let idx = excerpt_core::CharIndex::new("héllo world");
            let r = idx.range(0, "héllo world".len()).unwrap();
            let old = vec![DocumentV1Out {
                id: "a.md".into(),
                title: "A".into(),
                source: Some("a.md".into()),
                metadata: r#"{"k":1}"#.into(),
                text: "héllo world".into(),
                hash: "h".into(),
                sections: vec![],
                chunks: vec![ChunkV1Out {
                    ordinal: 0,
                    range: r,
                    section: None,
                    tokens: 3,
                }],
                sentences: vec![r],
                pages: vec![],
            }];
            let bytes = postcard::to_stdvec(&old).unwrap();
            // Today's types cannot read it (the reason formats are recorded)...
            assert!(postcard::from_bytes::<Vec<Document>>(&bytes).is_err());
            // ...the frozen copy can.
            let docs = decode(&bytes).unwrap();
            assert_eq!(docs.len(), 1);
            let d = &docs[0];
            assert_eq!(d.metadata["k"], 1);
            assert_eq!(d.chunk_text(0), "héllo world");
            assert_eq!((d.chunks[0].tokens, d.chunks[0].context.clone()), (3, None));
            d.validate().unwrap();
        }
    }
}

#[cfg(test)]
mod header_tests {
    use super::*;

    #[test]
    fn a_header_is_checked_against_the_rows_expected() {
        let mut h = Vec::from(*VEC_MAGIC);
        h.extend_from_slice(&3u32.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        assert!(check_header(&h, 16 + 2 * 3 * 4, 3, 2).is_ok());
        assert!(check_header(&h, 16 + 2 * 3 * 4 - 1, 3, 2).is_err());
        assert!(check_header(&h, 16 + 2 * 3 * 4, 4, 2).is_err());
        assert!(check_header(&h, 16 + 2 * 3 * 4, 3, 3).is_err());
        assert!(check_header(&h[..10], 10, 3, 2).is_err());
        h[0] = b'X';
        assert!(check_header(&h, 16 + 2 * 3 * 4, 3, 2).is_err());
    }
}
