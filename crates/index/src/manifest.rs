use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use excerpt_core::ChunkerConfig;
use serde::{Deserialize, Serialize};

use crate::IndexError;

/// Name of the manifest file inside an index directory.
pub const MANIFEST_FILE: &str = "MANIFEST.json";

/// Name of the previous generation's manifest, kept by every commit: what readers and
/// [`IndexWriter::repair`](crate::IndexWriter::repair) recover from when [`MANIFEST_FILE`]
/// is damaged.
pub const PREVIOUS_MANIFEST_FILE: &str = "MANIFEST.prev.json";

/// On-disk format version written by this build. Format 2 added [`Chunk::context`]
/// (LLM-written chunk contexts) to the encoded documents; format-1 segments are still
/// read (see [`OLDEST_READABLE_FORMAT`]), and a writer's next commit labels the index 2.
///
/// [`Chunk::context`]: excerpt_core::Chunk::context
pub const FORMAT_VERSION: u32 = 2;

/// The oldest on-disk format this build reads.
pub const OLDEST_READABLE_FORMAT: u32 = 1;

/// How the chunk contexts of an index were written (`excerpt ingest --contextualize`).
/// Fixed at creation like the rest of [`IndexConfig`]: contexts of different models or
/// prompts never mix in one index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextualizerConfig {
    /// The chat model that wrote them.
    pub model: String,
    /// Version of the prompt they were asked with.
    pub prompt_version: u32,
    /// Cap on a context, in tokens of the embedding model (also left free in each
    /// chunk's token budget by the token chunkers).
    pub max_tokens: usize,
}

impl std::fmt::Display for ContextualizerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (prompt v{}, at most {} tokens)",
            self.model, self.prompt_version, self.max_tokens
        )
    }
}

/// How the sentence vectors of an index's documents are made (`excerpt ingest
/// --sentence-vectors` or `--late-chunking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SentenceVectors {
    /// Each sentence embedded on its own.
    Separate,
    /// Pooled from the token vectors of the forward pass that embeds its chunk.
    Late,
}

/// Settings fixed when an index is created: every vector and chunk in it was made this way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexConfig {
    /// The embedding model's id ([`excerpt_core::Embedder::model_id`]).
    pub model_id: String,
    /// Vector length.
    pub dimension: usize,
    /// How documents were chunked.
    pub chunker: ChunkerConfig,
    /// Whether chunk headers (title and section path) are embedded and searched with
    /// each chunk.
    pub headers: bool,
    /// The LLM that wrote chunk contexts, if any (absent in indexes made without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contextualizer: Option<ContextualizerConfig>,
    /// Sentence vectors asked for by the ingest that created the index: later ingests
    /// make them the same way unless they ask for the other kind (absent: only an
    /// ingest that asks makes them). Not compared between writers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentence_vectors: Option<SentenceVectors>,
}

/// One immutable segment named by the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// File stem under `segments/`.
    pub name: String,
    /// Documents stored in the segment (deleted ones included).
    pub docs: usize,
    /// Chunks stored (= vector rows).
    pub chunks: usize,
    /// BLAKE3 of the `.docs` file.
    pub docs_hash: String,
    /// BLAKE3 of the `.vec` file.
    pub vec_hash: String,
    /// Ids of documents of this segment deleted or replaced since, sorted.
    pub deleted: Vec<String>,
    /// Format its documents are encoded in (1 when absent: written before formats were
    /// recorded per segment).
    #[serde(default = "first_format")]
    pub format: u32,
    /// BLAKE3 of the `.svec` file (sentence vectors), when the segment has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub svec_hash: Option<String>,
    /// BLAKE3 of the `.ids` file (the segment's document ids), absent in segments
    /// written before id lists were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids_hash: Option<String>,
}

fn first_format() -> u32 {
    1
}

/// The committed state of an index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version.
    pub format: u32,
    /// Incremented by every commit.
    pub generation: u64,
    /// Creation settings.
    pub config: IndexConfig,
    /// Live segments, oldest first.
    pub segments: Vec<SegmentMeta>,
    /// The ANN index files of this generation, when the collection is large enough
    /// (absent in smaller indexes and in indexes written before ANN existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ann: Option<AnnMeta>,
}

impl Manifest {
    /// Reads the manifest of `dir`; `Ok(None)` when there is none.
    pub fn load(dir: &Path) -> Result<Option<Manifest>, IndexError> {
        Self::load_file(dir, MANIFEST_FILE)
    }

    /// Reads the manifest file `name` of `dir` (the current one, or the previous
    /// generation's); `Ok(None)` when there is none.
    pub(crate) fn load_file(dir: &Path, name: &str) -> Result<Option<Manifest>, IndexError> {
        let path = dir.join(name);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(IndexError::io("reading", &path)(e)),
        };
        Self::parse(dir, name, &bytes).map(Some)
    }

    /// The manifest in `bytes`, as read from the file `name` of `dir` (named in errors).
    pub fn parse(dir: &Path, name: &str, bytes: &[u8]) -> Result<Manifest, IndexError> {
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: format!("{name}: {e}"),
        })?;
        if !(OLDEST_READABLE_FORMAT..=FORMAT_VERSION).contains(&m.format) {
            return Err(IndexError::Format {
                dir: dir.to_path_buf(),
                found: m.format,
                expected: FORMAT_VERSION,
            });
        }
        Ok(m)
    }

    /// Replaces the manifest of `dir` atomically: temporary file, fsync, rename, fsync of
    /// the directory. The manifest replaced, when it parses, stays on disk as
    /// [`PREVIOUS_MANIFEST_FILE`] (a hard link, renamed into place before the new one),
    /// which readers and `repair` fall back to when the current one is damaged.
    pub fn store(&self, dir: &Path) -> Result<(), IndexError> {
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let json = serde_json::to_vec_pretty(self).map_err(|e| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        write_durably(&tmp, &json)?;
        keep_previous(dir);
        let path = dir.join(MANIFEST_FILE);
        fs::rename(&tmp, &path).map_err(IndexError::io("renaming", &path))?;
        sync_dir(dir)
    }

    /// Total documents live in this generation.
    pub fn live_docs(&self) -> usize {
        self.segments.iter().map(|s| s.docs - s.deleted.len()).sum()
    }
}

/// Keeps the current manifest of `dir` as [`PREVIOUS_MANIFEST_FILE`] when it parses (a
/// damaged one never replaces a good previous copy). Best effort: without it, recovery
/// from a damaged manifest reads the segments alone.
fn keep_previous(dir: &Path) {
    let current = dir.join(MANIFEST_FILE);
    let readable = fs::read(&current)
        .ok()
        .is_some_and(|b| serde_json::from_slice::<Manifest>(&b).is_ok());
    if !readable {
        return;
    }
    let tmp = dir.join(format!("{PREVIOUS_MANIFEST_FILE}.tmp"));
    let _ = fs::remove_file(&tmp);
    // The current file is replaced by a rename, never written in place, so a hard link
    // to it is a stable copy; copying is the fallback where links are not supported.
    let linked = fs::hard_link(&current, &tmp).is_ok()
        || fs::read(&current)
            .ok()
            .is_some_and(|b| write_durably(&tmp, &b).is_ok());
    if linked {
        let _ = fs::rename(&tmp, dir.join(PREVIOUS_MANIFEST_FILE));
    }
}

/// Writes `bytes` to `path` and fsyncs it.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut f = fs::File::create(path).map_err(IndexError::io("creating", path))?;
    f.write_all(bytes)
        .map_err(IndexError::io("writing", path))?;
    f.sync_all().map_err(IndexError::io("syncing", path))
}

/// Fsyncs a directory so renames in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), IndexError> {
    let f = fs::File::open(dir).map_err(IndexError::io("opening", dir))?;
    f.sync_all().map_err(IndexError::io("syncing", dir))
}

/// The ANN files of one generation, as the manifest names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnnMeta {
    /// File stem of the centroids under `ann/` (`c` and the generation that trained them).
    pub centroids: String,
    /// BLAKE3 of the centroids file.
    pub centroids_hash: String,
    /// Number of lists (centroids).
    pub lists: usize,
    /// Stored rows when the centroids were trained.
    pub trained_rows: usize,
    /// Segment name to the BLAKE3 of its assignment file, for every live segment.
    pub assignments: BTreeMap<String, String>,
}
