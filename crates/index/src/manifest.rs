use std::fs;
use std::io::Write;
use std::path::Path;

use excerpt_core::ChunkerConfig;
use serde::{Deserialize, Serialize};

use crate::{IndexError, MANIFEST_FILE};

/// On-disk format version written by this build.
pub const FORMAT_VERSION: u32 = 1;

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
}

impl Manifest {
    /// Reads the manifest of `dir`; `Ok(None)` when there is none.
    pub fn load(dir: &Path) -> Result<Option<Manifest>, IndexError> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(IndexError::io("reading", &path)(e)),
        };
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: format!("{MANIFEST_FILE}: {e}"),
        })?;
        if m.format != FORMAT_VERSION {
            return Err(IndexError::Format {
                dir: dir.to_path_buf(),
                found: m.format,
                expected: FORMAT_VERSION,
            });
        }
        Ok(Some(m))
    }

    /// Replaces the manifest of `dir` atomically: temporary file, fsync, rename, fsync of
    /// the directory.
    pub fn store(&self, dir: &Path) -> Result<(), IndexError> {
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let json = serde_json::to_vec_pretty(self).map_err(|e| IndexError::Corrupt {
            dir: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        write_durably(&tmp, &json)?;
        let path = dir.join(MANIFEST_FILE);
        fs::rename(&tmp, &path).map_err(IndexError::io("renaming", &path))?;
        sync_dir(dir)
    }

    /// Total documents live in this generation.
    pub fn live_docs(&self) -> usize {
        self.segments.iter().map(|s| s.docs - s.deleted.len()).sum()
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
