//! [`IndexWriter::repair`]: the manifest recovered, unreadable segments set aside in
//! `damaged/` (a repair deletes nothing), the newest version of every document kept,
//! BM25 rebuilt and ANN files checked, committed as a new generation, with what was lost
//! and what could not be confirmed in the [`RepairReport`].

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::Path;

use excerpt_core::Document;

use crate::ann::{self, AnnOptions, ANN_DIR};
use crate::bm25;
use crate::health::{self, SegmentDamage};
use crate::segment::{read_segment, read_segment_ids, segment_file, write_segment_ids};
use crate::svec::read_sentence_vectors;
use crate::writer::{collect_garbage, lock_dir, sync_new_entries};
use crate::{IndexConfig, IndexError, IndexWriter, Manifest, SegmentMeta, FORMAT_VERSION};

/// What [`IndexWriter::repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairReport {
    /// The generation committed by the repair.
    pub generation: u64,
    /// How the manifest was recovered, when it was damaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    /// Segments dropped because they could not be read, with the documents lost.
    pub dropped: Vec<SegmentDamage>,
    /// Ids of the documents lost, sorted (ingest them again to have them back).
    pub lost_documents: Vec<String>,
    /// Documents lost whose ids are unknown (segments without a readable id list).
    pub lost_unnamed: usize,
    /// Everything else done, one line each (BM25 rebuilt, id lists written, sentence
    /// vectors dropped, ANN files rebuilt, where damaged files were moved).
    pub actions: Vec<String>,
    /// Live documents after the repair.
    pub documents: usize,
    /// Ids of documents kept whose state could not be confirmed, sorted: brought back
    /// although a newer generation may have removed them (the BM25 index, or the damaged
    /// manifest, no longer holds them), or kept in an older version because the segment
    /// of the newest could not be read. Check them, and `rm` or ingest them again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unconfirmed: Vec<String>,
}

impl IndexWriter {
    /// Repairs the index in `dir` so that every file it names can be read, and commits
    /// the result as a new generation through the usual path (files synced, directories
    /// synced, manifest renamed into place). Takes the writer lock.
    ///
    /// - A manifest that does not parse is recovered from the previous generation's and
    ///   the segments written after it, or, with no previous generation, from the
    ///   segments on disk made with the config `fallback` returns (`None`: an error).
    /// - Segments whose files are missing, fail their checksum or do not decode are
    ///   dropped (their files moved to `damaged/`), naming the documents lost; damaged
    ///   sentence vectors are dropped (documents kept); missing id lists are written.
    /// - A document live in several segments keeps its newest version.
    /// - BM25 is rebuilt from the surviving documents, and the ANN files are checked
    ///   and rebuilt where needed (with `ann`).
    ///
    /// Runs on a sound index too (rebuilding BM25). Afterwards [`crate::verify`] finds
    /// nothing wrong, barring new damage.
    pub fn repair(
        dir: &Path,
        fallback: &dyn Fn() -> Option<IndexConfig>,
        ann_options: &AnnOptions,
    ) -> Result<RepairReport, IndexError> {
        let any = [
            crate::MANIFEST_FILE,
            crate::PREVIOUS_MANIFEST_FILE,
            "segments",
        ];
        if !any.iter().any(|f| dir.join(f).exists()) {
            return Err(IndexError::NotFound {
                dir: dir.to_path_buf(),
            });
        }
        let _lock = lock_dir(dir)?;
        let (mut next, recovered) = repair_manifest(dir, fallback)?;
        let recovered_generation = next.generation;
        let mut report = RepairReport {
            manifest: recovered,
            ..RepairReport::default()
        };
        // What the other records of the index know, read before anything is changed:
        // the BM25 index (rebuilt below) and a damaged manifest that still parses.
        let bm25_known = bm25::stored_doc_ids(&dir.join("bm25"));
        let hinted_deleted = health::deleted_by_damaged_manifest(dir);
        correct_dimension(dir, &mut next, &mut report);
        let mut kept = surviving_segments(dir, &mut next, &mut report)?;
        keep_newest_versions(&mut kept);
        let live: Vec<&Document> = kept
            .iter()
            .flat_map(|(m, docs)| {
                docs.iter()
                    .filter(|d| m.deleted.binary_search(&d.id).is_err())
            })
            .collect();
        count_losses(&mut report, &live);
        let witnesses = Witnesses {
            bm25: bm25_known,
            deleted_by_damaged_manifest: hinted_deleted,
            recovered_generation,
        };
        name_from_witnesses(&mut report, &live, witnesses);

        // The new generation names its files above every generation on disk.
        let generation = health::highest_generation(dir, &next) + 1;
        next.generation = generation;
        next.format = FORMAT_VERSION;
        next.segments = kept.iter().map(|(m, _)| m.clone()).collect();
        repair_ann(dir, &mut next, ann_options, &mut report)?;
        rebuild_bm25(dir, &live, &next, &mut report)?;

        // The commit point, as in `commit`. A previous manifest that does not parse is
        // removed first: the one stored now replaces it only when the current one
        // parses (`Manifest::store`).
        sync_new_entries(dir)?;
        if let Err(IndexError::Corrupt { .. }) =
            Manifest::load_file(dir, crate::PREVIOUS_MANIFEST_FILE)
        {
            let prev = dir.join(crate::PREVIOUS_MANIFEST_FILE);
            let to = set_aside(dir, &prev, crate::PREVIOUS_MANIFEST_FILE)
                .map_err(IndexError::io("moving", &prev))?;
            report.actions.push(format!(
                "moved the damaged {} to damaged/{to}",
                crate::PREVIOUS_MANIFEST_FILE
            ));
        }
        next.store(dir)?;
        // Nothing is deleted: segment files no manifest names are kept aside (ANN files,
        // derived from the segments, are removed as garbage).
        set_aside_unnamed_segments(dir, &next, &mut report);
        collect_garbage(dir, &next);
        report.generation = generation;
        Ok(report)
    }
}

/// The manifest `repair` starts from (and whether it was recovered): the current one,
/// else the previous generation's, else, when both are damaged, one rebuilt from the
/// segments on disk with the `fallback` config.
fn repair_manifest(
    dir: &Path,
    fallback: &dyn Fn() -> Option<IndexConfig>,
) -> Result<(Manifest, Option<String>), IndexError> {
    let not_found = || IndexError::NotFound {
        dir: dir.to_path_buf(),
    };
    match health::load_manifest(dir, None) {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(not_found()),
        Err(e @ IndexError::Corrupt { .. }) => match fallback() {
            Some(config) => health::load_manifest(dir, Some(&config))?.ok_or_else(not_found),
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Moves the file `from` into `damaged/` under `name`, or under `name.1`, `name.2`...
/// when a file kept there before has that name (nothing kept aside is replaced); the
/// name it was given.
fn set_aside(dir: &Path, from: &Path, name: &str) -> std::io::Result<String> {
    let damaged_dir = dir.join("damaged");
    fs::create_dir_all(&damaged_dir)?;
    let mut to = name.to_string();
    let mut n = 0;
    while damaged_dir.join(&to).exists() {
        n += 1;
        to = format!("{name}.{n}");
    }
    fs::rename(from, damaged_dir.join(&to))?;
    Ok(to)
}

/// Moves the files of segment `name` with extensions `exts` to `damaged/` (those that
/// exist and move), saying so in `report` with `why`.
fn move_to_damaged(dir: &Path, name: &str, exts: &[&str], why: &str, report: &mut RepairReport) {
    let mut moved = Vec::new();
    for ext in exts {
        let from = segment_file(dir, name, ext);
        if from.exists() {
            if let Ok(to) = set_aside(dir, &from, &format!("{name}.{ext}")) {
                moved.push(to);
            }
        }
    }
    if !moved.is_empty() {
        report
            .actions
            .push(format!("moved {} to damaged/{why}", moved.join(", ")));
    }
}

/// Moves the files of the segments on disk that neither `manifest` nor the previous
/// generation's names to `damaged/`, a line each in `report`: a repair deletes nothing.
fn set_aside_unnamed_segments(dir: &Path, manifest: &Manifest, report: &mut RepairReport) {
    let previous = Manifest::load_file(dir, crate::PREVIOUS_MANIFEST_FILE)
        .ok()
        .flatten();
    let keep: BTreeSet<&str> = std::iter::once(manifest)
        .chain(previous.as_ref())
        .flat_map(|m| m.segments.iter().map(|s| s.name.as_str()))
        .collect();
    for stem in health::segment_stems_on_disk(dir) {
        if !keep.contains(stem.as_str()) {
            move_to_damaged(
                dir,
                &stem,
                &SEGMENT_EXTS,
                " (a segment no manifest names)",
                report,
            );
        }
    }
}

/// The extensions of a segment's files.
const SEGMENT_EXTS: [&str; 4] = ["docs", "vec", "svec", "ids"];

/// Corrects the dimension of `next` from the segments on disk when every one of them
/// records another (a damaged manifest field must not make every sound segment look
/// damaged).
fn correct_dimension(dir: &Path, next: &mut Manifest, report: &mut RepairReport) {
    if next.segments.is_empty() {
        return;
    }
    if let Some(d) = health::dimension_on_disk(dir) {
        if d != next.config.dimension {
            report.actions.push(format!(
                "corrected the manifest's dimension from {} to {d}: the vectors of every \
                 segment on disk have {d} values",
                next.config.dimension
            ));
            next.config.dimension = d;
        }
    }
}

/// A segment of the manifest whose files are not under its name: the segment on disk
/// that no manifest entry names whose `.docs` and `.vec` files match the entry's
/// checksums, when there is one and it reads back. `meta` is renamed to it; returns the
/// name the manifest gave it and its documents.
fn adopt(
    dir: &Path,
    meta: &mut SegmentMeta,
    unnamed: &mut Vec<String>,
    dim: usize,
) -> Option<(String, Vec<Document>)> {
    let hash = |stem: &str, ext: &str| {
        fs::read(segment_file(dir, stem, ext))
            .ok()
            .map(|b| blake3::hash(&b).to_hex().to_string())
    };
    let pos = unnamed.iter().position(|stem| {
        hash(stem, "docs").as_deref() == Some(meta.docs_hash.as_str())
            && hash(stem, "vec").as_deref() == Some(meta.vec_hash.as_str())
    })?;
    let mut adopted = meta.clone();
    adopted.name = unnamed[pos].clone();
    let (docs, _) = read_segment(dir, &adopted, dim).ok()?;
    unnamed.remove(pos);
    let named = std::mem::replace(meta, adopted).name;
    Some((named, docs))
}

/// The segments of `next` that read back, with their documents (in segment order),
/// taken out of `next`: unreadable ones are dropped (their documents named in
/// `report`, their files moved to `damaged/`), damaged sentence vectors are dropped, and
/// missing id lists are written again.
fn surviving_segments(
    dir: &Path,
    next: &mut Manifest,
    report: &mut RepairReport,
) -> Result<Vec<(SegmentMeta, Vec<Document>)>, IndexError> {
    let dim = next.config.dimension;
    let named: BTreeSet<&str> = next.segments.iter().map(|m| m.name.as_str()).collect();
    let mut unnamed: Vec<String> = health::segment_stems_on_disk(dir)
        .into_iter()
        .filter(|stem| !named.contains(stem.as_str()))
        .collect();
    let mut kept: Vec<(SegmentMeta, Vec<Document>)> = Vec::new();
    for mut meta in std::mem::take(&mut next.segments) {
        let docs = match read_segment(dir, &meta, dim) {
            Ok((docs, _)) => docs,
            Err(e) => match adopt(dir, &mut meta, &mut unnamed, dim) {
                Some((was, docs)) => {
                    report.actions.push(format!(
                        "kept segment {} under its real name: the manifest named it {was}, \
                         and its files match the manifest's checksums",
                        meta.name
                    ));
                    docs
                }
                None => {
                    report
                        .dropped
                        .push(health::lost_of(dir, &meta, health::describe(&e)));
                    move_to_damaged(dir, &meta.name, &SEGMENT_EXTS, "", report);
                    continue;
                }
            },
        };
        if meta.svec_hash.is_some() {
            if let Err(e) = read_sentence_vectors(dir, &meta, &docs, dim) {
                meta.svec_hash = None;
                report.actions.push(format!(
                    "dropped the sentence vectors of segment {} ({}); its documents are kept without them",
                    meta.name,
                    health::describe(&e)
                ));
                move_to_damaged(dir, &meta.name, &["svec"], "", report);
            }
        }
        if read_segment_ids(dir, &meta).is_err() {
            let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
            meta.ids_hash = Some(write_segment_ids(dir, &meta.name, &ids, true)?);
            report
                .actions
                .push(format!("wrote the id list of segment {}", meta.name));
        }
        kept.push((meta, docs));
    }
    Ok(kept)
}

/// Keeps the newest version of every document live: older live versions are marked
/// deleted, and segments left with no live document are dropped.
fn keep_newest_versions(kept: &mut Vec<(SegmentMeta, Vec<Document>)>) {
    let mut newest: HashMap<&str, usize> = HashMap::new();
    for (si, (meta, docs)) in kept.iter().enumerate() {
        for d in docs {
            if meta.deleted.binary_search(&d.id).is_err() {
                newest.insert(d.id.as_str(), si);
            }
        }
    }
    let mut superseded: Vec<(usize, String)> = Vec::new();
    for (si, (meta, docs)) in kept.iter().enumerate() {
        for d in docs {
            if meta.deleted.binary_search(&d.id).is_err() && newest[d.id.as_str()] != si {
                superseded.push((si, d.id.clone()));
            }
        }
    }
    drop(newest);
    for (si, id) in superseded {
        let deleted = &mut kept[si].0.deleted;
        if let Err(pos) = deleted.binary_search(&id) {
            deleted.insert(pos, id);
        }
    }
    kept.retain(|(m, _)| m.deleted.len() < m.docs);
}

/// The documents `report` counts as lost: those of dropped segments that no surviving
/// segment holds (`live`), named and counted, and how many documents are left.
fn count_losses(report: &mut RepairReport, live: &[&Document]) {
    let live_ids: BTreeSet<&str> = live.iter().map(|d| d.id.as_str()).collect();
    for seg in &mut report.dropped {
        let (kept, lost): (Vec<String>, Vec<String>) = std::mem::take(&mut seg.lost)
            .into_iter()
            .partition(|id| live_ids.contains(id.as_str()));
        seg.lost = lost;
        seg.older_kept = kept;
    }
    let lost: BTreeSet<String> = report
        .dropped
        .iter()
        .flat_map(|s| s.lost.iter().cloned())
        .collect();
    report.lost_documents = lost.into_iter().collect();
    report.lost_unnamed = report.dropped.iter().map(|s| s.lost_unnamed).sum();
    report.documents = live.len();
}

/// What the other records of an index know of its documents, read by `repair` before
/// it changes anything.
struct Witnesses {
    /// The BM25 index's generation and the ids of the documents it holds, when it reads
    /// back whole.
    bm25: Option<bm25::StoredIds>,
    /// The documents a damaged manifest that still parses records deleted.
    deleted_by_damaged_manifest: BTreeSet<String>,
    /// The generation of the manifest the repair started from.
    recovered_generation: u64,
}

/// Names in `report` what the segments alone cannot say, from the other records of the
/// index (`witnesses`): lost documents whose segment has no id list, from the BM25
/// index; and the documents kept in `live` whose state is unconfirmed (a newer record
/// no longer holds them, or an older version of them is kept because the segment of
/// the newest was dropped).
fn name_from_witnesses(report: &mut RepairReport, live: &[&Document], witnesses: Witnesses) {
    let live_ids: BTreeSet<&str> = live.iter().map(|d| d.id.as_str()).collect();
    let recovered = report.manifest.is_some();
    let mut unconfirmed: BTreeSet<String> = BTreeSet::new();
    let mut say = |report: &mut RepairReport, ids: Vec<String>, why: &str| {
        if !ids.is_empty() {
            report.actions.push(format!(
                "kept {} document(s) whose state is unconfirmed ({why}): {}",
                ids.len(),
                ids.join(", ")
            ));
            unconfirmed.extend(ids);
        }
    };
    // An older version is kept while the segment of a newer one was dropped.
    let older: Vec<String> = report
        .dropped
        .iter()
        .flat_map(|seg| seg.older_kept.iter().cloned())
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect();
    say(
        report,
        older,
        "a version of each was in a segment that could not be read; an older one is kept",
    );
    if let Some((bm25_generation, ids)) = &witnesses.bm25 {
        if recovered || !report.dropped.is_empty() {
            let already: BTreeSet<&str> =
                report.lost_documents.iter().map(String::as_str).collect();
            let named: Vec<String> = ids
                .iter()
                .filter(|id| !live_ids.contains(id.as_str()) && !already.contains(id.as_str()))
                .cloned()
                .collect();
            if !named.is_empty() {
                report.lost_unnamed = report.lost_unnamed.saturating_sub(named.len());
                report.actions.push(format!(
                    "named {} lost document(s) from the BM25 index",
                    named.len()
                ));
                report.lost_documents.extend(named);
                report.lost_documents.sort();
                report.lost_documents.dedup();
            }
        }
        let newer = bm25_generation.is_some_and(|g| g >= witnesses.recovered_generation);
        if recovered && newer {
            let gone: Vec<String> = live_ids
                .iter()
                .filter(|id| !ids.contains(**id))
                .map(|id| id.to_string())
                .collect();
            say(
                report,
                gone,
                "the BM25 index, committed after the generation the manifest was recovered \
                 from, no longer holds them: removed or replaced since",
            );
        }
    }
    let hinted: Vec<String> = witnesses
        .deleted_by_damaged_manifest
        .iter()
        .filter(|id| live_ids.contains(id.as_str()))
        .cloned()
        .collect();
    say(
        report,
        hinted,
        "the damaged manifest records them deleted or replaced",
    );
    report.unconfirmed = unconfirmed.into_iter().collect();
}

/// The ANN files of the repaired generation: sound files are kept, the rest rebuilt
/// (or dropped, for exact dense search).
fn repair_ann(
    dir: &Path,
    next: &mut Manifest,
    ann_options: &AnnOptions,
    report: &mut RepairReport,
) -> Result<(), IndexError> {
    if let Some(stem) = next.ann.as_ref().map(|m| m.centroids.clone()) {
        let sound: BTreeSet<String> = ann::check_files(dir, next)
            .into_iter()
            .filter(|(_, problem)| problem.is_none())
            .map(|(file, _)| file)
            .collect();
        if !sound.contains(&format!("{ANN_DIR}/{stem}.ivf")) {
            next.ann = None;
        } else if let Some(meta) = next.ann.as_mut() {
            meta.assignments
                .retain(|seg, _| sound.contains(&format!("{ANN_DIR}/{seg}.{stem}.asg")));
        }
    }
    let before = next.ann.clone();
    next.ann = ann::update(dir, next, next.generation, ann_options)?;
    if next.ann != before {
        report.actions.push(match &next.ann {
            Some(m) => format!("rebuilt the ANN files ({} lists)", m.lists),
            None => "dropped the ANN files (exact dense search)".into(),
        });
    }
    Ok(())
}

/// BM25 rebuilt from scratch from the `live` documents, tagged with `next`'s generation.
fn rebuild_bm25(
    dir: &Path,
    live: &[&Document],
    next: &Manifest,
    report: &mut RepairReport,
) -> Result<(), IndexError> {
    let bm25_dir = dir.join("bm25");
    if bm25_dir.exists() {
        fs::remove_dir_all(&bm25_dir).map_err(IndexError::io("removing", &bm25_dir))?;
    }
    let (tindex, fields) = bm25::open_or_create(&bm25_dir)?;
    let mut tantivy = bm25::writer(&tindex)?;
    for d in live {
        bm25::add_document(&tantivy, fields, d, next.config.headers)?;
    }
    let mut prepared = tantivy.prepare_commit()?;
    prepared.set_payload(&next.generation.to_string());
    prepared.commit()?;
    let _ = tantivy.wait_merging_threads();
    report
        .actions
        .push(format!("rebuilt BM25 from {} documents", live.len()));
    Ok(())
}
