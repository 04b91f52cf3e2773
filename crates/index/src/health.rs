//! Damage: what a reader could not read ([`Damage`]) and the recovery of a manifest that
//! does not parse. The check of every file of an index ([`verify`](crate::verify)) and
//! the repair are in `maintenance`.
//!
//! Readers never fail wholesale on a damaged index: a segment whose files are missing or
//! fail their checksum is left out and named, with the documents it held (from its id
//! list, `<name>.ids`), and a manifest that does not parse is replaced in memory by the
//! previous generation's plus the segments written after it. `IndexWriter::repair`
//! makes the same choices durable.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::ann::ANN_DIR;
use crate::segment::{self, read_segment, read_segment_ids, segment_file};
use crate::{
    IndexConfig, IndexError, Manifest, SegmentMeta, FORMAT_VERSION, MANIFEST_FILE,
    PREVIOUS_MANIFEST_FILE,
};

/// A segment whose files could not be read, and the live documents lost with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentDamage {
    /// The segment's name (file stem under `segments/`).
    pub segment: String,
    /// What is wrong (which file, and how).
    pub problem: String,
    /// Ids of the live documents that could not be read, sorted. Documents of the
    /// segment live in another segment too (replaced versions) are not counted.
    pub lost: Vec<String>,
    /// Live documents lost whose ids are unknown (the segment has no readable id list).
    pub lost_unnamed: usize,
    /// Documents of the segment (from its id list) that another segment holds too,
    /// sorted: what is read of them may be an older version. Filled by `repair`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub older_kept: Vec<String>,
}

/// What a reader could not read of an index: empty when the index is sound.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// The manifest did not parse: what is wrong, and what was read instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// Segments left out, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentDamage>,
    /// Other files that could not be read, and what was done without them (sentence
    /// vectors left out): no document is lost.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<String>,
}

impl Damage {
    /// Whether nothing is damaged.
    pub fn is_empty(&self) -> bool {
        self.manifest.is_none() && self.segments.is_empty() && self.degraded.is_empty()
    }

    /// Ids of the live documents that could not be read, sorted.
    pub fn lost_documents(&self) -> Vec<String> {
        let set: BTreeSet<&String> = self.segments.iter().flat_map(|s| &s.lost).collect();
        set.into_iter().cloned().collect()
    }

    /// Live documents lost whose ids are unknown.
    pub fn lost_unnamed(&self) -> usize {
        self.segments.iter().map(|s| s.lost_unnamed).sum()
    }

    /// One line per problem, for people: the manifest, each segment, each degraded file.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self.manifest.iter().cloned().collect();
        out.extend(self.segments.iter().map(|s| s.problem.clone()));
        out.extend(self.degraded.iter().cloned());
        out
    }

    /// A one-line summary of what is unavailable: the lost documents' ids (the first
    /// `max_ids`, then how many more) and how many are unnamed.
    pub fn summary(&self, max_ids: usize) -> String {
        let lost = self.lost_documents();
        let unnamed = self.lost_unnamed();
        let total = lost.len() + unnamed;
        if total == 0 {
            return match &self.manifest {
                Some(m) => m.clone(),
                None => "no document is lost".into(),
            };
        }
        let mut named: Vec<String> = lost.iter().take(max_ids).cloned().collect();
        if lost.len() > max_ids {
            named.push(format!("{} more", lost.len() - max_ids));
        }
        if unnamed > 0 {
            named.push(format!("{unnamed} whose ids are unknown"));
        }
        format!(
            "{total} document{} unavailable: {}",
            if total == 1 { " is" } else { "s are" },
            named.join(", ")
        )
    }
}

/// The live documents of a segment that cannot be read: from its id list, else only
/// their number.
pub(crate) fn lost_of(dir: &Path, meta: &SegmentMeta, problem: String) -> SegmentDamage {
    let live = meta.docs.saturating_sub(meta.deleted.len());
    match read_segment_ids(dir, meta) {
        Ok(ids) => {
            let mut lost: Vec<String> = ids
                .into_iter()
                .filter(|id| meta.deleted.binary_search(id).is_err())
                .collect();
            lost.sort();
            lost.dedup();
            SegmentDamage {
                segment: meta.name.clone(),
                problem,
                lost,
                lost_unnamed: 0,
                older_kept: Vec::new(),
            }
        }
        Err(_) => SegmentDamage {
            segment: meta.name.clone(),
            problem,
            lost: Vec::new(),
            lost_unnamed: live,
            older_kept: Vec::new(),
        },
    }
}

/// The error of a segment read, in words (without the index directory).
pub(crate) fn describe(e: &IndexError) -> String {
    match e {
        IndexError::Corrupt { detail, .. } => detail.clone(),
        other => other.to_string(),
    }
}

/// The generation a file name under `segments/` or `ann/` was written by (`g...` for
/// segments, `c...` for centroids), if it has one.
fn generation_of(file_name: &str) -> Option<u64> {
    let stem = file_name.split('.').next()?;
    let digits = stem.strip_prefix('g').or_else(|| stem.strip_prefix('c'))?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The highest generation any file of `dir` names (manifests, segments, ANN files): a
/// new commit after a recovery must name its files above it.
pub(crate) fn highest_generation(dir: &Path, manifest: &Manifest) -> u64 {
    let mut g = manifest.generation;
    if let Ok(Some(prev)) = Manifest::load_file(dir, PREVIOUS_MANIFEST_FILE) {
        g = g.max(prev.generation);
    }
    for sub in ["segments", ANN_DIR] {
        if let Ok(rd) = fs::read_dir(dir.join(sub)) {
            for e in rd.flatten() {
                if let Some(n) = generation_of(&e.file_name().to_string_lossy()) {
                    g = g.max(n);
                }
            }
        }
    }
    g
}

/// The extensions of a segment's files under `segments/`.
const SEGMENT_EXTS: [&str; 4] = ["docs", "vec", "svec", "ids"];

/// The stems of the segment files on disk (`g...`, whatever the extension), sorted.
pub(crate) fn segment_stems_on_disk(dir: &Path) -> BTreeSet<String> {
    let Ok(rd) = fs::read_dir(dir.join("segments")) else {
        return BTreeSet::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (stem, ext) = name.split_once('.')?;
            (SEGMENT_EXTS.contains(&ext) && stem.starts_with('g') && generation_of(stem).is_some())
                .then(|| stem.to_string())
        })
        .collect()
}

/// Whether `dir` holds the files of an index other than its manifest: a previous
/// generation's manifest, or segment files. Without a manifest these mean that the
/// manifest was lost (damage to repair), never that the index is new: a writer that
/// started a new index there would replace every document.
pub(crate) fn has_index_files(dir: &Path) -> bool {
    dir.join(PREVIOUS_MANIFEST_FILE).exists() || !segment_stems_on_disk(dir).is_empty()
}

/// The error for a manifest that is missing although the index's files are there.
pub(crate) fn missing_manifest(dir: &Path) -> IndexError {
    IndexError::Corrupt {
        dir: dir.to_path_buf(),
        detail: format!("{MANIFEST_FILE}: missing, although the index's other files are on disk"),
    }
}

/// Reads the manifest of `dir`; `Ok(None)` when there is none. When it does not parse,
/// recovers one in memory and says how (the `String`): the previous generation's
/// ([`PREVIOUS_MANIFEST_FILE`]) plus the segments on disk written after it, or, with no
/// previous generation, the segments on disk alone made with `fallback` (no fallback:
/// an error). Documents deleted after the generation recovered from are live again;
/// a document in several segments is read from the newest.
pub(crate) fn load_manifest(
    dir: &Path,
    fallback: Option<&IndexConfig>,
) -> Result<Option<(Manifest, Option<String>)>, IndexError> {
    let problem = match Manifest::load(dir) {
        Ok(Some(m)) => return Ok(Some((m, None))),
        // A commit renames the previous manifest into place before the new one, and the
        // first writer stores a manifest before any segment: a previous generation or
        // segments without a current manifest mean the current one was lost.
        Ok(None) if has_index_files(dir) => format!("{MANIFEST_FILE}: missing"),
        Ok(None) => return Ok(None),
        Err(IndexError::Corrupt { detail, .. }) => detail,
        Err(e) => return Err(e),
    };
    let previous = Manifest::load_file(dir, PREVIOUS_MANIFEST_FILE)
        .ok()
        .flatten();
    let (mut manifest, how) = match (previous, fallback) {
        (Some(prev), _) => {
            let how = format!(
                "{MANIFEST_FILE} is damaged ({problem}); read from the previous generation \
                 {} ({PREVIOUS_MANIFEST_FILE}) and the segments written after it",
                prev.generation
            );
            (prev, how)
        }
        (None, Some(config)) => {
            check_dimension(dir, config)?;
            let how = format!(
                "{MANIFEST_FILE} is damaged ({problem}) and no previous generation is on disk; \
                 read from the segments on disk, with model {} and chunker {}",
                config.model_id, config.chunker
            );
            let m = Manifest {
                format: FORMAT_VERSION,
                generation: 0,
                config: config.clone(),
                segments: Vec::new(),
                ann: None,
            };
            (m, how)
        }
        (None, None) => {
            return Err(IndexError::Corrupt {
                dir: dir.to_path_buf(),
                detail: format!("{problem}, and no previous generation is on disk"),
            })
        }
    };
    // Every segment written after the generation recovered from, readable or not: one
    // that cannot be read stays named, so that readers, `verify` and `repair` report
    // its documents (from its id list) instead of leaving them out in silence.
    let named: BTreeSet<String> = manifest.segments.iter().map(|s| s.name.clone()).collect();
    let stems: Vec<String> = segment_stems_on_disk(dir)
        .into_iter()
        .filter(|stem| {
            !named.contains(stem) && generation_of(stem).is_some_and(|g| g > manifest.generation)
        })
        .collect();
    for stem in stems {
        let meta = scan_segment(dir, &stem, manifest.config.dimension);
        manifest.generation = manifest.generation.max(generation_of(&stem).unwrap_or(0));
        manifest.segments.push(meta);
    }
    Ok(Some((manifest, Some(how))))
}

/// The documents that the manifest file of `dir`, when it parses as JSON but fails its
/// own checks (its checksum, above all), records deleted or replaced: what a manifest
/// recovered from the previous generation may bring back. Hints only: the damaged file
/// cannot be trusted, so these are named, never acted on.
pub(crate) fn deleted_by_damaged_manifest(dir: &Path) -> BTreeSet<String> {
    let Ok(bytes) = fs::read(dir.join(MANIFEST_FILE)) else {
        return BTreeSet::new();
    };
    if Manifest::parse(dir, MANIFEST_FILE, &bytes).is_ok() {
        return BTreeSet::new();
    }
    serde_json::from_slice::<Manifest>(&bytes)
        .map(|m| {
            m.segments
                .into_iter()
                .flat_map(|s| s.deleted)
                .collect::<BTreeSet<String>>()
        })
        .unwrap_or_default()
}

/// The vector length every segment file on disk records in its header, when they all
/// agree (and at least one has a readable header).
pub(crate) fn dimension_on_disk(dir: &Path) -> Option<usize> {
    let mut found = None;
    for stem in segment_stems_on_disk(dir) {
        if let Some(d) = segment::vector_dimension(&segment_file(dir, &stem, "vec")) {
            if found.is_some_and(|f| f != d) {
                return None;
            }
            found = Some(d);
        }
    }
    found
}

/// Fails when the vectors on disk have another length than `config`'s: the segments
/// were embedded with another model, and reading them with this config would drop them
/// all as damaged.
fn check_dimension(dir: &Path, config: &IndexConfig) -> Result<(), IndexError> {
    for stem in segment_stems_on_disk(dir) {
        if let Some(found) = segment::vector_dimension(&segment_file(dir, &stem, "vec")) {
            if found != config.dimension {
                return Err(IndexError::ConfigMismatch {
                    dir: dir.to_path_buf(),
                    field: "dimension",
                    existing: found.to_string(),
                    requested: config.dimension.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The manifest entry of a segment on disk that no manifest names. Its checksums are
/// computed, not checked. When its files decode, the entry reads them (and keeps the
/// id list only when it names exactly its documents); when they do not, the entry
/// stays so that readers report the segment damaged and its documents, counted and
/// named from the id list when that parses.
fn scan_segment(dir: &Path, name: &str, dimension: usize) -> SegmentMeta {
    let read = |ext: &str| fs::read(segment_file(dir, name, ext)).ok();
    let hash = |bytes: &[u8]| blake3::hash(bytes).to_hex().to_string();
    let ids_bytes = read("ids");
    let ids: Option<Vec<String>> = ids_bytes
        .as_deref()
        .and_then(|b| serde_json::from_slice(b).ok());
    let mut meta = SegmentMeta {
        name: name.to_string(),
        docs: ids.as_ref().map_or(0, Vec::len),
        chunks: 0,
        // A missing file is reported missing before its checksum is compared.
        docs_hash: read("docs").map_or_else(String::new, |b| hash(&b)),
        vec_hash: read("vec").map_or_else(String::new, |b| hash(&b)),
        deleted: Vec::new(),
        format: FORMAT_VERSION,
        svec_hash: read("svec").map(|b| hash(&b)),
        ids_hash: ids
            .is_some()
            .then(|| ids_bytes.as_deref().map(hash))
            .flatten(),
    };
    for format in [FORMAT_VERSION, 1] {
        meta.format = format;
        if let Ok((docs, _)) = read_segment(dir, &meta, dimension) {
            meta.docs = docs.len();
            meta.chunks = docs.iter().map(|d| d.chunks.len()).sum();
            let listed = ids
                .as_ref()
                .is_some_and(|ids| ids.iter().eq(docs.iter().map(|d| &d.id)));
            if !listed {
                meta.ids_hash = None;
            }
            return meta;
        }
    }
    meta.format = FORMAT_VERSION;
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_come_from_segment_and_centroid_names() {
        assert_eq!(generation_of("g0000000012.docs"), Some(12));
        assert_eq!(generation_of("g0000000003.c0000000001.asg"), Some(3));
        assert_eq!(generation_of("c0000000007.ivf"), Some(7));
        assert_eq!(generation_of("LOCK"), None);
        assert_eq!(generation_of("g.docs"), None);
    }

    #[test]
    fn summary_names_the_first_ids_and_counts_the_rest() {
        let d = Damage {
            manifest: None,
            segments: vec![SegmentDamage {
                segment: "g1".into(),
                problem: "x".into(),
                lost: vec!["a".into(), "b".into(), "c".into()],
                lost_unnamed: 2,
                older_kept: vec![],
            }],
            degraded: vec![],
        };
        assert_eq!(
            d.summary(2),
            "5 documents are unavailable: a, b, 1 more, 2 whose ids are unknown"
        );
        assert!(!d.is_empty());
        assert!(Damage::default().is_empty());
    }
}
