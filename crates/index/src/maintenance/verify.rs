//! [`verify`]: every file of an index checked (the manifest, every segment file against
//! its checksum, the BM25 index against tantivy's checksums and the manifest, the ANN
//! files), with the documents that cannot be read, in a [`VerifyReport`].

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::ann;
use crate::bm25::{self, Bm25Reader};
use crate::health::{describe, has_index_files, load_manifest, lost_of, missing_manifest};
use crate::segment::{read_segment, segment_file};
use crate::{IndexError, Manifest, SegmentMeta, MANIFEST_FILE, PREVIOUS_MANIFEST_FILE};

/// One file of an index and what is wrong with it (`None`: sound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCheck {
    /// Path relative to the index directory.
    pub file: String,
    /// What is wrong, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What [`verify`] found: every file checked, every problem, the documents that cannot
/// be read.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The index directory.
    pub index: PathBuf,
    /// The generation read (recovered, when the manifest is damaged); `None` when no
    /// manifest could be read or recovered.
    pub generation: Option<u64>,
    /// Live documents that can be read.
    pub documents: usize,
    /// Every file checked, in order: manifest, segments, BM25, ANN.
    pub files: Vec<FileCheck>,
    /// What is wrong, one line each; empty when the index is sound.
    pub problems: Vec<String>,
    /// Ids of the live documents that cannot be read, sorted.
    pub lost_documents: Vec<String>,
    /// Live documents that cannot be read whose ids are unknown.
    pub lost_unnamed: usize,
    /// What is not as a clean shutdown leaves it but is no damage, one line each: the
    /// state a crash leaves, which readers work around and the next writer heals (a
    /// BM25 index committed for the generation after the manifest's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing is wrong.
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks a file against its BLAKE3; `None` when it matches.
fn check_hash(path: &Path, hash: &str) -> Option<String> {
    match fs::read(path) {
        Ok(b) if blake3::hash(&b).to_hex().as_str() == hash => None,
        Ok(_) => Some("checksum mismatch".into()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("missing".into()),
        Err(e) => Some(e.to_string()),
    }
}

/// Checks every file of the index in `dir`: the manifest parses; every segment file
/// named by it exists and matches its checksum, and its documents decode; the BM25
/// index passes tantivy's checksums, matches the manifest's generation and holds every
/// live chunk; the ANN files named by the manifest match theirs. Reads everything, so
/// it takes about as long as opening a snapshot. Damage is reported, never an error;
/// errors are only for no index at all, or one of a format this build does not read.
pub fn verify(dir: &Path) -> Result<VerifyReport, IndexError> {
    let mut report = VerifyReport {
        index: dir.to_path_buf(),
        generation: None,
        documents: 0,
        files: Vec::new(),
        problems: Vec::new(),
        lost_documents: Vec::new(),
        lost_unnamed: 0,
        notes: Vec::new(),
    };
    let Some(manifest) = verified_manifest(dir, &mut report)? else {
        return Ok(report);
    };
    check_previous_manifest(dir, &mut report);
    report.generation = Some(manifest.generation);
    let dim = manifest.config.dimension;
    let mut live: BTreeMap<String, usize> = BTreeMap::new();
    let mut damaged_segments = false;
    for meta in &manifest.segments {
        if let Some(p) = check_segment(dir, meta, dim, &mut report, &mut live) {
            damaged_segments = true;
            let lost = lost_of(dir, meta, p.clone());
            if !report.problems.iter().any(|q| q.starts_with(&p)) {
                report.problems.push(p);
            }
            report.lost_documents.extend(lost.lost);
            report.lost_unnamed += lost.lost_unnamed;
        }
    }
    report.lost_documents.retain(|id| !live.contains_key(id));
    report.lost_documents.sort();
    report.lost_documents.dedup();
    report.documents = live.len();
    let chunks: usize = live.values().sum();
    let bm25 = check_bm25(
        dir,
        manifest.generation,
        (!damaged_segments).then_some(chunks),
    );
    // Ahead is no damage only when nothing else is wrong: a manifest recovered from the
    // previous generation is behind a BM25 commit whose manifest was lost.
    let ahead = matches!(bm25, Some(Bm25Problem::Ahead(_))) && report.problems.is_empty();
    let mut bm25 = bm25.map(Bm25Problem::into_text);
    if ahead {
        report
            .notes
            .extend(bm25.take().map(|n| format!("bm25: {n}")));
    }
    if let Some(p) = &bm25 {
        report.problems.push(format!("bm25: {p}"));
    }
    report.files.push(FileCheck {
        file: "bm25/".into(),
        problem: bm25,
    });
    for (file, problem) in ann::check_files(dir, &manifest) {
        if let Some(p) = &problem {
            report
                .problems
                .push(format!("{file}: {p} (dense search is exact)"));
        }
        report.files.push(FileCheck { file, problem });
    }
    Ok(report)
}

/// The manifest `verify` checks the index against, its file's check in `report`: the
/// current one, else (damaged) the previous generation's, the damage reported; `None`
/// when neither can be read (reported: there is nothing more to check).
fn verified_manifest(
    dir: &Path,
    report: &mut VerifyReport,
) -> Result<Option<Manifest>, IndexError> {
    let current = match Manifest::load(dir) {
        Ok(None) if has_index_files(dir) => Err(missing_manifest(dir)),
        other => other,
    };
    match current {
        Ok(Some(m)) => {
            report.files.push(FileCheck {
                file: MANIFEST_FILE.into(),
                problem: None,
            });
            Ok(Some(m))
        }
        Ok(None) => Err(IndexError::NotFound {
            dir: dir.to_path_buf(),
        }),
        Err(IndexError::Corrupt { detail, .. }) => {
            report.files.push(FileCheck {
                file: MANIFEST_FILE.into(),
                problem: Some(detail.clone()),
            });
            match load_manifest(dir, None) {
                Ok(Some((m, how))) => {
                    report.problems.push(how.unwrap_or(detail));
                    Ok(Some(m))
                }
                _ => {
                    report.problems.push(format!(
                        "{detail}; no previous generation is on disk (repair reads the \
                         segments with the configured model)"
                    ));
                    Ok(None)
                }
            }
        }
        Err(e) => Err(e),
    }
}

/// The previous generation's manifest is what recovery reads when the current one is
/// lost: one that does not parse is reported (none at all is not: indexes written
/// before it was kept have none).
fn check_previous_manifest(dir: &Path, report: &mut VerifyReport) {
    if let Err(e) = Manifest::load_file(dir, PREVIOUS_MANIFEST_FILE) {
        let p = describe(&e);
        report.problems.push(format!(
            "{p} (the previous generation, kept for recovery; repair replaces it)"
        ));
        report.files.push(FileCheck {
            file: PREVIOUS_MANIFEST_FILE.into(),
            problem: Some(p),
        });
    }
}

/// Checks the files of segment `meta` against their checksums and decodes its
/// documents, each file's check and every problem in `report`, its live documents'
/// chunk counts in `live`; returns what makes its documents unreadable, if anything.
fn check_segment(
    dir: &Path,
    meta: &SegmentMeta,
    dim: usize,
    report: &mut VerifyReport,
    live: &mut BTreeMap<String, usize>,
) -> Option<String> {
    let files = [
        ("docs", Some(&meta.docs_hash)),
        ("vec", Some(&meta.vec_hash)),
        ("svec", meta.svec_hash.as_ref()),
        ("ids", meta.ids_hash.as_ref()),
    ];
    let mut core_problem = None;
    for (ext, hash) in files {
        let Some(hash) = hash else { continue };
        let file = format!("segments/{}.{ext}", meta.name);
        let problem = check_hash(&segment_file(dir, &meta.name, ext), hash);
        if let Some(p) = &problem {
            let what = match ext {
                "docs" | "vec" => "its documents cannot be read",
                "svec" => "its documents are read without sentence vectors",
                _ => "its documents can be read, but not named if the segment is lost",
            };
            report.problems.push(format!("{file}: {p} ({what})"));
            if matches!(ext, "docs" | "vec") && core_problem.is_none() {
                core_problem = Some(format!("{file}: {p}"));
            }
        }
        report.files.push(FileCheck { file, problem });
    }
    if core_problem.is_some() {
        return core_problem;
    }
    match read_segment(dir, meta, dim) {
        Ok((docs, _)) => {
            let svec_sound = meta
                .svec_hash
                .as_ref()
                .is_none_or(|h| check_hash(&segment_file(dir, &meta.name, "svec"), h).is_none());
            if svec_sound {
                if let Err(e) = crate::svec::read_sentence_vectors(dir, meta, &docs, dim) {
                    report.problems.push(format!(
                        "{} (its documents are read without sentence vectors)",
                        describe(&e)
                    ));
                }
            }
            for d in docs {
                let is_live = meta.deleted.binary_search(&d.id).is_err();
                if is_live && live.insert(d.id.clone(), d.chunks.len()).is_some() {
                    report.problems.push(format!(
                        "document {} is live in two segments (the newest is read)",
                        d.id
                    ));
                }
            }
            None
        }
        Err(e) => Some(describe(&e)),
    }
}

/// What [`check_bm25`] found wrong with a BM25 index.
enum Bm25Problem {
    /// Damage, in words.
    Damaged(String),
    /// Committed for the generation after the manifest's, and otherwise sound: a crash
    /// after the BM25 commit and before the manifest's rename, healed by the next writer.
    Ahead(String),
}

impl Bm25Problem {
    fn into_text(self) -> String {
        match self {
            Bm25Problem::Damaged(p) | Bm25Problem::Ahead(p) => p,
        }
    }
}

/// What is wrong with the BM25 index of `dir` for generation `generation` holding
/// `chunks` chunks (`None`: the count is not checked); `None` when it is sound.
fn check_bm25(dir: &Path, generation: u64, chunks: Option<usize>) -> Option<Bm25Problem> {
    use Bm25Problem::{Ahead, Damaged};
    let bm25_dir = dir.join("bm25");
    let run = || -> Result<Option<Bm25Problem>, IndexError> {
        let Some((index, fields)) = bm25::open_existing(&bm25_dir)? else {
            return Ok(Some(Damaged(
                "missing (readers rebuild it in memory)".into(),
            )));
        };
        let damaged = index.validate_checksum()?;
        if !damaged.is_empty() {
            let mut names: Vec<String> = damaged
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            names.sort();
            return Ok(Some(Damaged(format!(
                "{} file(s) fail their checksum ({}; readers rebuild it in memory)",
                names.len(),
                names.join(", ")
            ))));
        }
        let committed = bm25::committed_generation(&index)?;
        if committed == generation.checked_add(1) {
            return Ok(Some(Ahead(format!(
                "committed for generation {}, one after the manifest's {generation}: a \
                 commit was cut off before its manifest; readers rebuild BM25 in memory \
                 and the next writer rebuilds it on disk (no document is lost)",
                generation + 1
            ))));
        }
        if committed != Some(generation) {
            return Ok(Some(Damaged(format!(
                "committed for generation {}, the manifest is at {generation} (readers \
                 rebuild it in memory)",
                committed.map_or_else(|| "none".into(), |g| g.to_string())
            ))));
        }
        let held = match Bm25Reader::new(index.clone(), fields) {
            Ok(reader) => reader.num_chunks(),
            // A reader takes tantivy's meta lock, a file it cannot create in a read-only
            // directory: that is no damage. Count the live documents of the committed
            // segments from the meta file instead (their files passed their checksums).
            Err(IndexError::Tantivy(tantivy::TantivyError::LockFailure(..))) => index
                .load_metas()?
                .segments
                .iter()
                .map(|s| u64::from(s.num_docs()))
                .sum(),
            Err(e) => return Err(e),
        };
        let held = usize::try_from(held).unwrap_or(usize::MAX);
        match chunks {
            Some(n) if n != held => Ok(Some(Damaged(format!(
                "holds {held} chunks, the segments {n} (readers rebuild it in memory)"
            )))),
            _ => Ok(None),
        }
    };
    match crate::quiet::catch_quietly(run) {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => Some(Damaged(format!("{e} (readers rebuild it in memory)"))),
        Err(_) => Some(Damaged(
            "the BM25 library failed reading it (readers rebuild it in memory)".into(),
        )),
    }
}
