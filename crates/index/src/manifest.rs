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

/// The manifest's field holding its own checksum: the BLAKE3 (hex) of the rest of the
/// manifest in canonical form ([`canonical_checksum`]).
pub const CHECKSUM_KEY: &str = "checksum";

/// The fields of a manifest written before manifests held their checksum.
const UNCHECKED_KEYS: [&str; 5] = ["format", "generation", "config", "segments", "ann"];

/// The BLAKE3 (hex) of `value` in canonical form: compact JSON, object keys sorted, so
/// that it does not depend on how the file was laid out or on field order.
pub fn canonical_checksum(value: &serde_json::Value) -> String {
    let mut out = String::new();
    canonical(value, &mut out);
    blake3::hash(out.as_bytes()).to_hex().to_string()
}

fn canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&fields[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The generation a segment name records (`g` and its digits), if it is one.
pub(crate) fn segment_generation(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('g')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

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
    ///
    /// The file checks itself: its [`CHECKSUM_KEY`] field is the BLAKE3 of the rest of
    /// it in canonical form ([`canonical_checksum`]), so an edit that keeps it valid
    /// JSON (a bit flipped in a segment name, a generation, a deleted id) is damage, not
    /// a state to trust. A manifest written before manifests checked themselves has no
    /// checksum and is read as it is, provided it holds only the fields such manifests
    /// had (a damaged checksum key must not make a manifest pass for an old one); the
    /// next commit writes it with one. Either way the manifest must agree with itself
    /// ([`Manifest::check_consistency`]): no segment named after the generation, no
    /// segment named twice, deleted ids sorted and no more than the segment's documents.
    pub fn parse(dir: &Path, name: &str, bytes: &[u8]) -> Result<Manifest, IndexError> {
        let corrupt = |detail: String| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: format!("{name}: {detail}"),
        };
        let mut value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
        let Some(fields) = value.as_object_mut() else {
            return Err(corrupt("not a JSON object".into()));
        };
        match fields.remove(CHECKSUM_KEY) {
            Some(serde_json::Value::String(sum)) => {
                if canonical_checksum(&value) != sum {
                    return Err(corrupt(
                        "checksum mismatch (the file changed after it was written)".into(),
                    ));
                }
            }
            Some(_) => return Err(corrupt(format!("`{CHECKSUM_KEY}` is not a string"))),
            None => {
                if let Some(k) = fields
                    .keys()
                    .find(|k| !UNCHECKED_KEYS.contains(&k.as_str()))
                {
                    return Err(corrupt(format!(
                        "no checksum, and the field `{k}`, which manifests without one never had"
                    )));
                }
            }
        }
        let m: Manifest = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
        if !(OLDEST_READABLE_FORMAT..=FORMAT_VERSION).contains(&m.format) {
            return Err(IndexError::Format {
                dir: dir.to_path_buf(),
                found: m.format,
                expected: FORMAT_VERSION,
            });
        }
        m.check_consistency().map_err(corrupt)?;
        Ok(m)
    }

    /// Checks that the manifest agrees with itself: every segment name is a file stem
    /// (letters and digits), none is named twice, none was written after the manifest's
    /// generation (a writer would choose that generation again), and each segment's
    /// deleted ids are sorted, distinct and no more than its documents. `Err` says what
    /// does not hold.
    pub fn check_consistency(&self) -> Result<(), String> {
        let mut names = std::collections::BTreeSet::new();
        for s in &self.segments {
            if s.name.is_empty() || !s.name.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(format!("segment name {:?} is not a file stem", s.name));
            }
            if !names.insert(s.name.as_str()) {
                return Err(format!("segment {} is named twice", s.name));
            }
            if let Some(g) = segment_generation(&s.name) {
                if g > self.generation {
                    return Err(format!(
                        "segment {} was written after the manifest's generation {}",
                        s.name, self.generation
                    ));
                }
            }
            if !s.deleted.windows(2).all(|w| w[0] < w[1]) {
                return Err(format!(
                    "the deleted ids of segment {} are not sorted and distinct",
                    s.name
                ));
            }
            if s.deleted.len() > s.docs {
                return Err(format!(
                    "segment {} has {} deleted ids for {} documents",
                    s.name,
                    s.deleted.len(),
                    s.docs
                ));
            }
        }
        Ok(())
    }

    /// Replaces the manifest of `dir` atomically: temporary file, fsync, rename, fsync of
    /// the directory. The manifest replaced, when it parses, stays on disk as
    /// [`PREVIOUS_MANIFEST_FILE`] (a hard link, renamed into place before the new one),
    /// which readers and `repair` fall back to when the current one is damaged.
    pub fn store(&self, dir: &Path) -> Result<(), IndexError> {
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let json = self.to_checked_json().map_err(|e| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        write_durably(&tmp, &json)?;
        keep_previous(dir);
        let path = dir.join(MANIFEST_FILE);
        fs::rename(&tmp, &path).map_err(IndexError::io("renaming", &path))?;
        sync_dir(dir)
    }

    /// The manifest as its file holds it: pretty JSON with its own checksum
    /// ([`CHECKSUM_KEY`]).
    pub fn to_checked_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut value = serde_json::to_value(self)?;
        let sum = canonical_checksum(&value);
        if let Some(fields) = value.as_object_mut() {
            fields.insert(CHECKSUM_KEY.into(), serde_json::Value::String(sum));
        }
        serde_json::to_vec_pretty(&value)
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
        .is_some_and(|b| Manifest::parse(dir, MANIFEST_FILE, &b).is_ok());
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

/// Creates `path`, a file of the index in `dir`, as a new file (`O_EXCL`): a file
/// already there is never truncated nor replaced. Segment and ANN files are named by
/// the generation that writes them, above every generation on disk, so one already
/// there means that the manifest does not tell the truth about the files: a refusal,
/// saying what to run.
pub(crate) fn create_new(dir: &Path, path: &Path) -> Result<fs::File, IndexError> {
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let shown = path.strip_prefix(dir).unwrap_or(path);
            Err(IndexError::Corrupt {
                dir: dir.to_path_buf(),
                detail: format!(
                    "{} already exists, and a writer never overwrites an index file: the \
                     manifest does not name the files on disk; run `excerpt repair`",
                    shown.display()
                ),
            })
        }
        Err(e) => Err(IndexError::io("creating", path)(e)),
    }
}

/// Writes `bytes` to `path`, a new file of the index in `dir` ([`create_new`]), and
/// fsyncs it.
pub(crate) fn write_new_durably(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut f = create_new(dir, path)?;
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
