//! The fault matrix: every kind of file of an index (the manifest, the previous
//! generation's manifest, each file of a segment named by the previous manifest and of
//! one written after it, the BM25 metadata and data, the ANN centroids and assignments)
//! deleted, truncated and bit-flipped, alone and in pairs; on each damaged copy, the five
//! things a user does: query, ingest, rm, verify and repair.
//!
//! What must hold every time:
//! - `verify` and queries change nothing on disk; `verify` reports the damage.
//! - Queries answer, or fail with an error; what they cannot read, they name.
//! - No document disappears without being named: after ingest (accepted or refused),
//!   rm and repair, every document of the index is there, or named lost by `verify`
//!   before or by `repair` (counted, when its id list is damaged too).
//! - After `repair`, `verify` is clean and the index takes writes again.
//!
//! The CI version runs every single fault and one fault combination per pair of file
//! kinds on a six-document index built once and copied per case. The full matrix (every
//! pair with every combination of faults) runs with `scripts/fault-matrix.sh`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use excerpt_index::{verify, AnnOptions, IndexConfig, IndexError, IndexWriter, Snapshot};

mod common;

use common::{config, doc, vectors, DIM};

/// ANN files from the first chunk on, so that they are part of the matrix.
fn ann() -> AnnOptions {
    AnnOptions {
        min_chunks: 1,
        ..AnnOptions::default()
    }
}

fn put(w: &mut IndexWriter, id: &str, text: &str) {
    let d = doc(id, text);
    let v = vectors(&d, id.len());
    let sv = vec![0.5; d.sentences.len() * DIM];
    w.put_with_sentences(d, v, Some(sv)).unwrap();
}

/// Three commits: {a, b}, {c, d}, {e, f} with b deleted. The previous manifest is
/// generation 2; segment 3 was written after it. Live: a, c, d, e, f.
fn build(dir: &Path) {
    let mut w = IndexWriter::open(dir, config()).unwrap();
    w.set_ann_options(ann());
    put(&mut w, "a", "apples are red|apples are round");
    put(&mut w, "b", "bananas are yellow|bananas are long");
    w.commit().unwrap();
    put(&mut w, "c", "cherries are dark|cherries are small");
    put(&mut w, "d", "dates are sweet|dates are brown");
    w.commit().unwrap();
    put(&mut w, "e", "elderberries grow wild|elderberries are tart");
    put(&mut w, "f", "figs ripen late|figs are soft");
    assert!(w.delete("b"));
    w.commit().unwrap();
}

const LIVE: [&str; 5] = ["a", "c", "d", "e", "f"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Delete,
    Truncate,
    Flip,
}

const FAULTS: [Fault; 3] = [Fault::Delete, Fault::Truncate, Fault::Flip];

/// The files of each kind in the template, relative to the index directory.
fn file_kinds(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let find = |sub: &str, pred: &dyn Fn(&str) -> bool| -> PathBuf {
        let mut found: Vec<(u64, PathBuf)> = fs::read_dir(dir.join(sub))
            .unwrap()
            .flatten()
            .filter(|e| pred(&e.file_name().to_string_lossy()))
            .map(|e| (e.metadata().unwrap().len(), e.path()))
            .collect();
        // The largest file of the kind: the one most of the data is in.
        found.sort();
        let (_, path) = found
            .pop()
            .unwrap_or_else(|| panic!("no such file in {sub}"));
        path.strip_prefix(dir).unwrap().to_path_buf()
    };
    let seg = |g: u64, ext: &str| PathBuf::from(format!("segments/g{g:010}.{ext}"));
    vec![
        ("manifest", PathBuf::from("MANIFEST.json")),
        ("previous manifest", PathBuf::from("MANIFEST.prev.json")),
        ("g2 documents", seg(2, "docs")),
        ("g2 vectors", seg(2, "vec")),
        ("g2 id list", seg(2, "ids")),
        ("g2 sentence vectors", seg(2, "svec")),
        ("g3 documents", seg(3, "docs")),
        ("g3 vectors", seg(3, "vec")),
        ("g3 id list", seg(3, "ids")),
        ("g3 sentence vectors", seg(3, "svec")),
        ("bm25 metadata", PathBuf::from("bm25/meta.json")),
        (
            "bm25 data",
            find("bm25", &|n| !n.ends_with(".json") && !n.ends_with(".lock")),
        ),
        ("ann centroids", find("ann", &|n| n.ends_with(".ivf"))),
        (
            "ann assignments",
            find("ann", &|n| {
                n.starts_with("g0000000003") && n.ends_with(".asg")
            }),
        ),
    ]
}

fn apply(dir: &Path, file: &Path, fault: Fault) {
    let path = dir.join(file);
    match fault {
        Fault::Delete => fs::remove_file(&path).unwrap(),
        Fault::Truncate => {
            let bytes = fs::read(&path).unwrap();
            fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        }
        Fault::Flip => {
            let mut bytes = fs::read(&path).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
            fs::write(&path, bytes).unwrap();
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Every file of `dir` with its contents (the lock file left out).
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                walk(root, &e.path(), out);
            } else if e.file_name() != "LOCK" {
                let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, fs::read(e.path()).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Live documents after a repair, checked clean by `verify` and writable.
fn repaired_ids(dir: &Path, case: &str) -> (BTreeSet<String>, BTreeSet<String>, usize) {
    let report = IndexWriter::repair(dir, &|| Some(config()), &ann())
        .unwrap_or_else(|e| panic!("{case}: repair failed: {e}"));
    let v = verify(dir).unwrap();
    assert!(
        v.is_sound(),
        "{case}: verify after repair: {:?}",
        v.problems
    );
    let s = Snapshot::open(dir).unwrap();
    assert!(s.damage().is_empty(), "{case}: {:?}", s.damage());
    let ids: BTreeSet<String> = s.documents().iter().map(|d| d.id.clone()).collect();
    assert_eq!(ids.len(), report.documents, "{case}");
    (
        ids,
        report.lost_documents.into_iter().collect(),
        report.lost_unnamed,
    )
}

/// Figures of a run of the matrix.
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    operations: usize,
    /// Documents lost and named (by `verify` before, or by `repair`).
    named_losses: usize,
    /// Documents lost and counted, their ids unknown (id lists damaged too).
    counted_losses: usize,
    writes_refused: usize,
}

/// Checks that every document of `expected` missing from `found` was named in `named`,
/// or is covered by the `unnamed` count.
fn accounted(
    case: &str,
    op: &str,
    expected: &BTreeSet<String>,
    found: &BTreeSet<String>,
    named: &BTreeSet<String>,
    unnamed: usize,
    tally: &mut Tally,
) {
    let missing: Vec<&String> = expected.difference(found).collect();
    let silent: Vec<&&String> = missing.iter().filter(|id| !named.contains(**id)).collect();
    assert!(
        silent.len() <= unnamed,
        "{case}, {op}: documents {silent:?} disappeared without being named \
         (named {named:?}, {unnamed} unnamed)"
    );
    tally.named_losses += missing.len() - silent.len();
    tally.counted_losses += silent.len();
}

fn run_case(template: &Path, work: &Path, faults: &[(&str, &Path, Fault)], tally: &mut Tally) {
    let case = faults
        .iter()
        .map(|(kind, _, f)| format!("{kind} {f:?}"))
        .collect::<Vec<_>>()
        .join(" + ");
    let live: BTreeSet<String> = LIVE.iter().map(|s| s.to_string()).collect();
    let damaged = work.join("damaged");
    let _ = fs::remove_dir_all(work);
    copy_dir(template, &damaged);
    for (_, file, fault) in faults {
        apply(&damaged, file, *fault);
    }
    tally.cases += 1;

    // verify: reports the damage, changes nothing.
    let before = contents(&damaged);
    let report = verify(&damaged).unwrap_or_else(|e| panic!("{case}: verify failed: {e}"));
    // Only a deleted previous manifest is no damage (indexes written before it was
    // kept have none).
    let harmless = faults
        .iter()
        .all(|(kind, _, f)| *kind == "previous manifest" && *f == Fault::Delete);
    assert_eq!(
        report.is_sound(),
        harmless,
        "{case}: verify says {:?}",
        report.problems
    );
    let mut named: BTreeSet<String> = report.lost_documents.iter().cloned().collect();
    let mut unnamed = report.lost_unnamed;

    // query: answers from what it can read and names the rest, or fails cleanly.
    match Snapshot::open(&damaged) {
        Ok(s) => {
            let ids: BTreeSet<String> = s.documents().iter().map(|d| d.id.clone()).collect();
            let lost: BTreeSet<String> = s.damage().lost_documents().into_iter().collect();
            accounted(
                &case,
                "query",
                &live,
                &ids,
                &lost,
                s.damage().lost_unnamed(),
                &mut Tally::default(),
            );
            s.bm25_search("apples cherries figs", 10, None)
                .unwrap_or_else(|e| panic!("{case}: BM25 search failed: {e}"));
            s.dense_search(&[1.0, 0.0, 0.0, 0.0], 10, None);
        }
        Err(e) => assert!(
            matches!(e, IndexError::Corrupt { .. }),
            "{case}: query failed with {e}"
        ),
    }
    tally.operations += 2;
    assert!(
        contents(&damaged) == before,
        "{case}: verify or a query changed the index"
    );

    // ingest, then repair: the new document and every old one, or their names.
    let dir = work.join("ingest");
    copy_dir(&damaged, &dir);
    // A writer that refuses changes nothing (the repair below covers that state); one
    // that accepts is followed by a repair here.
    let mut expected = live.clone();
    match IndexWriter::open(&dir, config()) {
        Ok(mut w) => {
            w.set_ann_options(ann());
            put(&mut w, "g", "grapes grow in bunches|grapes are green");
            w.commit()
                .unwrap_or_else(|e| panic!("{case}: ingest commit failed: {e}"));
            drop(w);
            expected.insert("g".into());
            let (ids, lost, lost_unnamed) = repaired_ids(&dir, &case);
            let all_named = named.union(&lost).cloned().collect();
            accounted(
                &case,
                "ingest",
                &expected,
                &ids,
                &all_named,
                unnamed + lost_unnamed,
                &mut Tally::default(),
            );
        }
        Err(_) => {
            tally.writes_refused += 1;
            assert!(
                contents(&dir) == before,
                "{case}: a refused ingest changed files"
            );
        }
    }

    // rm a, then repair: a is gone or the rm was refused; nothing else is lost unnamed.
    let dir = work.join("rm");
    copy_dir(&damaged, &dir);
    let mut expected = live.clone();
    match IndexWriter::open(&dir, config()) {
        Ok(mut w) => {
            w.set_ann_options(ann());
            if w.delete("a") {
                w.commit()
                    .unwrap_or_else(|e| panic!("{case}: rm commit failed: {e}"));
                expected.remove("a");
            }
            drop(w);
            let (ids, lost, lost_unnamed) = repaired_ids(&dir, &case);
            let all_named = named.union(&lost).cloned().collect();
            accounted(
                &case,
                "rm",
                &expected,
                &ids,
                &all_named,
                unnamed + lost_unnamed,
                &mut Tally::default(),
            );
        }
        Err(_) => assert!(
            contents(&dir) == before,
            "{case}: a refused rm changed files"
        ),
    }

    // repair alone, then writes work again.
    let (ids, lost, lost_unnamed) = repaired_ids(&damaged, &case);
    named.extend(lost);
    unnamed += lost_unnamed;
    accounted(&case, "repair", &live, &ids, &named, unnamed, tally);
    let mut w = IndexWriter::open(&damaged, config())
        .unwrap_or_else(|e| panic!("{case}: writer after repair: {e}"));
    w.set_ann_options(ann());
    put(&mut w, "h", "honeydew melons|honeydew is sweet");
    w.commit().unwrap();
    drop(w);
    let v = verify(&damaged).unwrap();
    assert!(
        v.is_sound(),
        "{case}: after repair and ingest: {:?}",
        v.problems
    );
    tally.operations += 3;
}

/// Runs single faults and the pairs `pairs` chooses (kind indexes and their faults).
fn matrix(pairs: &dyn Fn(usize, usize) -> Vec<(Fault, Fault)>) -> Tally {
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    build(&template);
    let kinds = file_kinds(&template);
    let work = tmp.path().join("work");
    let mut tally = Tally::default();
    for (kind, file) in &kinds {
        for fault in FAULTS {
            run_case(
                &template,
                &work,
                &[(kind, file.as_path(), fault)],
                &mut tally,
            );
        }
    }
    for i in 0..kinds.len() {
        for j in i + 1..kinds.len() {
            for (fi, fj) in pairs(i, j) {
                let (ki, pi) = (kinds[i].0, kinds[i].1.as_path());
                let (kj, pj) = (kinds[j].0, kinds[j].1.as_path());
                run_case(&template, &work, &[(ki, pi, fi), (kj, pj, fj)], &mut tally);
            }
        }
    }
    eprintln!("fault matrix: {tally:?}");
    tally
}

/// Every single fault, and for each pair of file kinds one combination of faults
/// (rotating, so that every combination appears).
#[test]
fn no_document_disappears_without_being_named() {
    let tally = matrix(&|i, j| vec![(FAULTS[(i + j) % 3], FAULTS[(i + 2 * j) % 3])]);
    // 14 kinds: 42 single faults, 91 pairs.
    assert_eq!(tally.cases, 42 + 91);
    assert!(tally.writes_refused > 0);
}

/// Every pair of file kinds with every combination of faults (`scripts/fault-matrix.sh`).
#[test]
#[ignore = "the full matrix takes minutes: scripts/fault-matrix.sh"]
fn full_matrix() {
    let tally = matrix(&|_, _| {
        FAULTS
            .iter()
            .flat_map(|&a| FAULTS.iter().map(move |&b| (a, b)))
            .collect()
    });
    assert_eq!(tally.cases, 42 + 91 * 9);
}

/// The bug this matrix was written for: a deleted manifest made the next writer start
/// a new index over the old one. The writer now refuses and names the problem; with
/// both manifests gone, readers and writers refuse, `verify` reports damage, and
/// `repair` reads every document back from the segments.
#[test]
fn a_lost_manifest_is_damage_not_a_new_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    fs::remove_file(dir.join("MANIFEST.json")).unwrap();
    let before = contents(&dir);
    let err = IndexWriter::open(&dir, config()).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("MANIFEST.json: missing"), "{err}");
    assert!(contents(&dir) == before, "the refused writer changed files");

    fs::remove_file(dir.join("MANIFEST.prev.json")).unwrap();
    let err = IndexWriter::open(&dir, config()).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");
    let err = Snapshot::open(&dir).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");
    let report = verify(&dir).unwrap();
    assert!(!report.is_sound());
    assert!(
        report.problems[0].contains("MANIFEST.json: missing"),
        "{report:?}"
    );
    // Without the index's settings repair cannot read the segments; with a model of
    // another dimension it refuses rather than drop them all.
    assert!(matches!(
        IndexWriter::repair(&dir, &|| None, &ann()),
        Err(IndexError::Corrupt { .. })
    ));
    let other = IndexConfig {
        dimension: DIM + 1,
        ..config()
    };
    assert!(matches!(
        IndexWriter::repair(&dir, &|| Some(other.clone()), &ann()),
        Err(IndexError::ConfigMismatch { .. })
    ));
    assert!(
        contents(&dir)
            == before
                .into_iter()
                .filter(|(p, _)| p != Path::new("MANIFEST.prev.json"))
                .collect::<BTreeMap<_, _>>()
    );
    // From the segments alone: every document, the deleted one back (not lost).
    let repaired = IndexWriter::repair(&dir, &|| Some(config()), &ann()).unwrap();
    assert!(repaired.lost_documents.is_empty(), "{repaired:?}");
    assert_eq!(repaired.documents, 6);
    assert!(verify(&dir).unwrap().is_sound());
    let s = Snapshot::open(&dir).unwrap();
    let ids: Vec<&str> = s.documents().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e", "f"]);
}

// ---------------------------------------------------------------------------------
// The manifest's own fields (issue 63): a manifest that holds its own checksum, edits
// that keep it valid JSON, and writers that never overwrite.
// ---------------------------------------------------------------------------------

/// Rewrites the manifest file `name` of `dir` with `edit` applied to its JSON. The
/// checksum is left as it was (`Keep`: the file no longer matches it, as after a bit
/// flip) or removed (`Strip`: a manifest as builds before checksums wrote them).
fn edit_manifest(dir: &Path, name: &str, checksum: Checksum, edit: impl FnOnce(&mut Value)) {
    let path = dir.join(name);
    let mut v: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    edit(&mut v);
    if checksum == Checksum::Strip {
        v.as_object_mut().unwrap().remove("checksum");
    }
    fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checksum {
    Keep,
    Strip,
}

use serde_json::Value;

/// The live documents of `dir` and their texts, as a snapshot reads them.
fn texts(dir: &Path) -> BTreeMap<String, String> {
    let s = Snapshot::open(dir).unwrap();
    s.documents()
        .iter()
        .map(|d| (d.id.clone(), d.text.to_string()))
        .collect()
}

/// Issue 63, row 1: a segment name flipped in the manifest (`g0000000001` to
/// `g0000000000`) made `repair` drop the segment as missing and then delete its intact
/// files (named by no manifest once the flipped one became the previous generation),
/// reporting its document as one "whose id is unknown". The files are kept under
/// their real name, whether the manifest has a checksum (damage: recovered from the
/// previous generation) or is an old one without.
#[test]
fn regression_a_flipped_segment_name_never_deletes_the_segment() {
    for checksum in [Checksum::Keep, Checksum::Strip] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("idx");
        build(&dir);
        let g1: BTreeMap<PathBuf, Vec<u8>> = contents(&dir)
            .into_iter()
            .filter(|(p, _)| p.to_string_lossy().starts_with("segments/g0000000001."))
            .collect();
        assert!(
            !g1.is_empty(),
            "{:?}",
            contents(&dir).keys().collect::<Vec<_>>()
        );
        edit_manifest(&dir, "MANIFEST.json", checksum, |v| {
            v["segments"][0]["name"] = "g0000000000".into();
        });
        assert!(!verify(&dir).unwrap().is_sound(), "{checksum:?}");
        assert!(IndexWriter::open(&dir, config()).is_err(), "{checksum:?}");
        let report = IndexWriter::repair(&dir, &|| Some(config()), &ann()).unwrap();
        assert!(report.lost_documents.is_empty(), "{checksum:?}: {report:?}");
        assert_eq!(report.lost_unnamed, 0, "{checksum:?}: {report:?}");
        assert!(verify(&dir).unwrap().is_sound(), "{checksum:?}");
        let found = texts(&dir);
        for id in LIVE {
            assert!(
                found.contains_key(id),
                "{checksum:?}: {id} is gone: {report:?}"
            );
        }
        // The segment's files are where they were, unchanged.
        let now = contents(&dir);
        for (path, bytes) in &g1 {
            assert_eq!(now.get(path), Some(bytes), "{checksum:?}: {path:?}");
        }
    }
}

/// Issue 63, row 2: `generation` lowered in the manifest (3 to 2) left `verify`
/// reporting only BM25 out of step, and the next ingest was allowed: it wrote its
/// segment as `g0000000003`, over the live one's files, and the manifest named that
/// segment twice. Now the writer refuses (the checksum fails; without one, the
/// manifest names a segment written after its generation), changing nothing, and
/// `repair` brings every document back.
#[test]
fn regression_a_lowered_generation_never_lets_a_writer_overwrite_a_segment() {
    for checksum in [Checksum::Keep, Checksum::Strip] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("idx");
        build(&dir);
        let before_texts = texts(&dir);
        edit_manifest(&dir, "MANIFEST.json", checksum, |v| {
            v["generation"] = 2.into();
        });
        assert!(!verify(&dir).unwrap().is_sound(), "{checksum:?}");
        let before = contents(&dir);
        match IndexWriter::open(&dir, config()) {
            Ok(mut w) => {
                put(&mut w, "g", "grapes grow in bunches|grapes are green");
                let _ = w.commit();
                drop(w);
                let after = texts(&dir);
                panic!("{checksum:?}: a writer was allowed; the index now reads {after:?}");
            }
            Err(e) => assert!(matches!(e, IndexError::Corrupt { .. }), "{e}"),
        }
        assert!(
            contents(&dir) == before,
            "{checksum:?}: the refused writer changed files"
        );
        let report = IndexWriter::repair(&dir, &|| Some(config()), &ann()).unwrap();
        assert!(report.lost_documents.is_empty(), "{report:?}");
        assert!(verify(&dir).unwrap().is_sound());
        let after = texts(&dir);
        for id in LIVE {
            assert_eq!(after.get(id), before_texts.get(id), "{checksum:?}: {id}");
        }
        // And the writer after the repair names its files above every generation.
        let mut w = IndexWriter::open(&dir, config()).unwrap();
        put(&mut w, "g", "grapes grow in bunches|grapes are green");
        w.commit().unwrap();
        drop(w);
        assert!(verify(&dir).unwrap().is_sound());
        assert_eq!(texts(&dir).len(), after.len() + 1);
    }
}

/// Issue 63, row 3: a deleted id flipped in the manifest (`b` to `a`) made the live
/// document `a` vanish: `verify` was clean, queries warned of nothing, `repair` said no
/// document was lost and writes stayed allowed. The checksum makes it damage: readers
/// recover from the previous generation (with `a`), `verify` reports it, writers
/// refuse, and `repair` keeps `a` and names `b`, which the generations after the one
/// recovered from may have removed.
#[test]
fn regression_a_flipped_deleted_id_is_damage_not_a_deletion() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    let manifest: Value =
        serde_json::from_slice(&fs::read(dir.join("MANIFEST.json")).unwrap()).unwrap();
    assert_eq!(manifest["segments"][0]["deleted"], serde_json::json!(["b"]));
    edit_manifest(&dir, "MANIFEST.json", Checksum::Keep, |v| {
        v["segments"][0]["deleted"] = serde_json::json!(["a"]);
    });
    let v = verify(&dir).unwrap();
    assert!(!v.is_sound(), "verify found nothing wrong");
    let s = Snapshot::open(&dir).unwrap();
    assert!(s.doc_index("a").is_some(), "a is not read");
    assert!(s.damage().manifest.is_some(), "queries are not warned");
    drop(s);
    let before = contents(&dir);
    assert!(
        IndexWriter::open(&dir, config()).is_err(),
        "writes are allowed"
    );
    assert!(contents(&dir) == before);
    let report = IndexWriter::repair(&dir, &|| Some(config()), &ann()).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert!(verify(&dir).unwrap().is_sound());
    let found = texts(&dir);
    for id in LIVE {
        assert!(found.contains_key(id), "{id} is gone: {report:?}");
    }
    // `b` is back (the previous generation did not know it deleted): named.
    if found.contains_key("b") {
        assert!(
            json["unconfirmed"]
                .as_array()
                .is_some_and(|u| u.iter().any(|id| id == "b")),
            "b is back unnamed: {report:?}"
        );
    }
}

/// A manifest written before manifests held their checksum opens as before, and the
/// next commit writes it with one; a checksum key damaged into another name is not an
/// old manifest but a damaged one.
#[test]
fn an_old_manifest_without_a_checksum_opens_and_is_upgraded_at_the_next_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    edit_manifest(&dir, "MANIFEST.json", Checksum::Strip, |_| {});
    assert!(verify(&dir).unwrap().is_sound());
    assert_eq!(texts(&dir).len(), LIVE.len());
    let mut w = IndexWriter::open(&dir, config()).unwrap();
    put(&mut w, "g", "grapes grow in bunches|grapes are green");
    w.commit().unwrap();
    drop(w);
    let v: Value = serde_json::from_slice(&fs::read(dir.join("MANIFEST.json")).unwrap()).unwrap();
    assert!(v["checksum"].is_string(), "{v}");
    assert!(verify(&dir).unwrap().is_sound());

    let text = fs::read_to_string(dir.join("MANIFEST.json")).unwrap();
    fs::write(
        dir.join("MANIFEST.json"),
        text.replace("\"checksum\"", "\"checksuo\""),
    )
    .unwrap();
    assert!(!verify(&dir).unwrap().is_sound());
    assert!(IndexWriter::open(&dir, config()).is_err());
}

/// A file left where the next commit's segment goes is never written over: the
/// writer names its commit above every generation on disk.
#[test]
fn a_commit_never_writes_over_a_file_of_its_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    let mut w = IndexWriter::open(&dir, config()).unwrap();
    // Left by something else after the writer opened (its garbage collection ran).
    let stray = dir.join("segments/g0000000004.docs");
    fs::write(&stray, b"not ours").unwrap();
    put(&mut w, "g", "grapes grow in bunches|grapes are green");
    let stats = w.commit().unwrap();
    assert!(stats.generation > 4, "{stats:?}");
    drop(w);
    assert!(verify(&dir).unwrap().is_sound());
    assert_eq!(texts(&dir).len(), LIVE.len() + 1);
}

/// `verify` after a commit cut off between its BM25 commit and its manifest: the BM25
/// index is one generation ahead, which readers and the next writer heal. A note,
/// not damage.
#[test]
fn bm25_one_generation_ahead_is_a_note_not_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    let manifest = fs::read(dir.join("MANIFEST.json")).unwrap();
    let previous = fs::read(dir.join("MANIFEST.prev.json")).unwrap();
    let mut w = IndexWriter::open(&dir, config()).unwrap();
    assert!(w.delete("a"));
    w.commit().unwrap();
    drop(w);
    // Back to the manifests before the commit: what a crash before the rename leaves.
    fs::write(dir.join("MANIFEST.json"), &manifest).unwrap();
    fs::write(dir.join("MANIFEST.prev.json"), &previous).unwrap();
    let v = verify(&dir).unwrap();
    assert!(v.is_sound(), "{:?}", v.problems);
    let notes = serde_json::to_value(&v).unwrap()["notes"].clone();
    assert_eq!(notes.as_array().map(Vec::len), Some(1), "{notes}");
    let mut w = IndexWriter::open(&dir, config()).unwrap();
    put(&mut w, "g", "grapes grow in bunches|grapes are green");
    w.commit().unwrap();
    drop(w);
    let v = verify(&dir).unwrap();
    assert!(
        v.is_sound() && serde_json::to_value(&v).unwrap().get("notes").is_none(),
        "{v:?}"
    );
    assert!(texts(&dir).contains_key("a"));
}

/// [`build`] and a fourth commit: `c` replaced, `d` removed (segment 2 then holds no
/// live document and leaves the manifest; the previous one, generation 3, still names
/// it). Live: a, c (new text), e, f.
fn build_updated(dir: &Path) -> BTreeMap<String, String> {
    build(dir);
    let mut w = IndexWriter::open(dir, config()).unwrap();
    w.set_ann_options(ann());
    put(&mut w, "c", "cherries are ripe|cherries are sour");
    assert!(w.delete("d"));
    w.commit().unwrap();
    drop(w);
    let live = texts(dir);
    assert_eq!(live.keys().collect::<Vec<_>>(), ["a", "c", "e", "f"]);
    live
}

/// Every JSON-valid edit of one field of `v` (the checksum left alone): strings with a
/// character changed (segment names also swapped for another segment's), numbers one
/// up and one down, booleans negated, arrays with their last element dropped or their
/// first doubled (an empty `deleted` list given a live id), object fields removed.
fn json_edits(v: &Value) -> Vec<(String, Value)> {
    fn pointers(node: &Value, at: String, out: &mut Vec<String>) {
        match node {
            Value::Object(m) => {
                for (k, child) in m {
                    pointers(child, format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    pointers(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }
    let mut at = Vec::new();
    pointers(v, String::new(), &mut at);
    let names: Vec<String> = v["segments"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for p in at {
        if p.is_empty() || p == "/checksum" {
            continue;
        }
        let node = v.pointer(&p).unwrap();
        let mut replaced: Vec<(String, Value)> = Vec::new();
        match node {
            Value::String(s) => {
                let mut chars: Vec<char> = s.chars().collect();
                if let Some(last) = chars.last_mut() {
                    *last = match *last {
                        '9' => '0',
                        c if c.is_ascii_digit() => char::from(c as u8 + 1),
                        'z' => 'a',
                        c if c.is_ascii_alphabetic() => char::from(c as u8 + 1),
                        _ => 'x',
                    };
                }
                replaced.push((
                    "a character changed".into(),
                    chars.into_iter().collect::<String>().into(),
                ));
                if p.ends_with("/name") {
                    for other in names.iter().filter(|n| *n != s) {
                        replaced.push((format!("named {other}"), other.clone().into()));
                    }
                }
            }
            Value::Number(n) => {
                let n = n.as_u64().unwrap_or(0);
                replaced.push(("one up".into(), (n + 1).into()));
                if n > 0 {
                    replaced.push(("one down".into(), (n - 1).into()));
                }
            }
            Value::Bool(b) => replaced.push(("negated".into(), (!b).into())),
            Value::Array(a) => {
                if let Some(first) = a.first() {
                    let mut fewer = a.clone();
                    fewer.pop();
                    replaced.push(("last element dropped".into(), fewer.into()));
                    let mut more = a.clone();
                    more.insert(0, first.clone());
                    replaced.push(("first element doubled".into(), more.into()));
                } else if p.ends_with("/deleted") {
                    replaced.push(("a live id added".into(), serde_json::json!(["a"])));
                }
            }
            Value::Null | Value::Object(_) => {}
        }
        for (what, new) in replaced {
            let mut edited = v.clone();
            *edited.pointer_mut(&p).unwrap() = new;
            out.push((format!("{p} {what}"), edited));
        }
        // A field removed (from its object).
        if let Some((parent, key)) = p.rsplit_once('/') {
            if let Some(Value::Object(_)) = v.pointer(parent) {
                let mut edited = v.clone();
                let parent = if parent.is_empty() {
                    Some(&mut edited)
                } else {
                    edited.pointer_mut(parent)
                };
                if let Some(Value::Object(m)) = parent {
                    m.remove(key);
                }
                out.push((format!("{p} removed"), edited));
            }
        }
    }
    out
}

/// The documents a repair kept whose state it could not confirm (read through the
/// report's JSON, as a user's script would).
fn unconfirmed(report: &excerpt_index::RepairReport) -> BTreeSet<String> {
    serde_json::to_value(report).unwrap()["unconfirmed"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|id| id.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// One case of the manifest matrix on a copy of `template` damaged by `damage`: the
/// damage is reported, refused by writers and never changes a file until `repair`;
/// after it, `verify` is clean, writes work, and every document of `expected` is read
/// with its text or named (lost, or unconfirmed), and every document read that is not
/// in `expected` is named unconfirmed.
fn run_manifest_case(
    template: &Path,
    work: &Path,
    case: &str,
    expected: &BTreeMap<String, String>,
    damage: &dyn Fn(&Path),
    tally: &mut Tally,
) {
    let dir = work.join("case");
    let _ = fs::remove_dir_all(work);
    copy_dir(template, &dir);
    damage(&dir);
    tally.cases += 1;
    let before = contents(&dir);
    let v = verify(&dir).unwrap_or_else(|e| panic!("{case}: verify failed: {e}"));
    assert!(!v.is_sound(), "{case}: verify found nothing wrong");
    let mut named: BTreeSet<String> = v.lost_documents.iter().cloned().collect();
    match Snapshot::open(&dir) {
        Ok(s) => {
            s.bm25_search("apples cherries figs", 10, None)
                .unwrap_or_else(|e| panic!("{case}: BM25 search failed: {e}"));
            // Readers read the previous generation's manifest only when the current
            // one is damaged: they are warned of that one.
            if case.starts_with("MANIFEST.json") {
                assert!(!s.damage().is_empty(), "{case}: queries are not warned");
            }
        }
        Err(e) => assert!(matches!(e, IndexError::Corrupt { .. }), "{case}: {e}"),
    }
    match IndexWriter::open(&dir, config()) {
        Ok(_) => panic!("{case}: a writer was allowed on a damaged index"),
        Err(_) => tally.writes_refused += 1,
    }
    assert!(
        contents(&dir) == before,
        "{case}: verify, a query or a refused writer changed files"
    );
    tally.operations += 3;

    let report = IndexWriter::repair(&dir, &|| Some(config()), &ann())
        .unwrap_or_else(|e| panic!("{case}: repair failed: {e}"));
    let v = verify(&dir).unwrap();
    assert!(
        v.is_sound(),
        "{case}: verify after repair: {:?}",
        v.problems
    );
    named.extend(report.lost_documents.iter().cloned());
    let unconfirmed = unconfirmed(&report);
    let found = texts(&dir);
    let mut silent = Vec::new();
    for (id, text) in expected {
        match found.get(id) {
            Some(t) if t == text => {}
            Some(_) if unconfirmed.contains(id) => tally.named_losses += 1,
            None if named.contains(id) || unconfirmed.contains(id) => tally.named_losses += 1,
            Some(_) => silent.push(format!("{id} reverted")),
            None => silent.push(format!("{id} lost")),
        }
    }
    let unnamed_lost = silent.iter().filter(|s| s.ends_with("lost")).count();
    if unnamed_lost > 0 && unnamed_lost <= report.lost_unnamed + v.lost_unnamed {
        silent.retain(|s| !s.ends_with("lost"));
        tally.counted_losses += unnamed_lost;
    }
    for id in found.keys().filter(|id| !expected.contains_key(*id)) {
        if !unconfirmed.contains(id) {
            silent.push(format!("{id} back"));
        }
    }
    assert!(
        silent.is_empty(),
        "{case}: {silent:?} without being named: {report:#?}"
    );
    let mut w = IndexWriter::open(&dir, config())
        .unwrap_or_else(|e| panic!("{case}: writer after repair: {e}"));
    w.set_ann_options(ann());
    put(&mut w, "h", "honeydew melons|honeydew is sweet");
    w.commit().unwrap();
    drop(w);
    let v = verify(&dir).unwrap();
    assert!(
        v.is_sound(),
        "{case}: after repair and ingest: {:?}",
        v.problems
    );
    tally.operations += 3;
}

/// The manifest matrix: every JSON-valid edit of every field of both manifests (the
/// `keep`-th of them, from `offset`), alone and, every `with_segment`-th, with the
/// newest segment's documents file deleted too; and a bit flipped in every `stride`-th
/// byte of both manifests (bit `byte % 8`).
fn manifest_matrix(keep: usize, with_segment: usize, stride: usize) -> Tally {
    let tmp = tempfile::tempdir().unwrap();
    let template = tmp.path().join("template");
    let expected = build_updated(&template);
    let work = tmp.path().join("work");
    let mut tally = Tally::default();
    let newest = "segments/g0000000004.docs";
    assert!(template.join(newest).exists());
    for file in ["MANIFEST.json", "MANIFEST.prev.json"] {
        let bytes = fs::read(template.join(file)).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        for (i, (what, edited)) in json_edits(&v).into_iter().enumerate() {
            if i % keep != 0 {
                continue;
            }
            let json = serde_json::to_vec_pretty(&edited).unwrap();
            let write = |dir: &Path| fs::write(dir.join(file), &json).unwrap();
            let case = format!("{file} {what}");
            run_manifest_case(&template, &work, &case, &expected, &write, &mut tally);
            if i % (keep * with_segment) == 0 {
                let case = format!("{case} + {newest} deleted");
                let both = |dir: &Path| {
                    write(dir);
                    fs::remove_file(dir.join(newest)).unwrap();
                };
                run_manifest_case(&template, &work, &case, &expected, &both, &mut tally);
            }
        }
        for at in (0..bytes.len()).step_by(stride) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1 << (at % 8);
            let write = |dir: &Path| fs::write(dir.join(file), &flipped).unwrap();
            let case = format!("{file} bit {} of byte {at} flipped", at % 8);
            run_manifest_case(&template, &work, &case, &expected, &write, &mut tally);
        }
    }
    eprintln!("manifest matrix: {tally:?}");
    tally
}

/// The sampled manifest matrix of CI: a sixth of the edits (a fifth of those with the
/// newest segment lost too) and a bit flip in every 199th byte of each manifest.
#[test]
fn no_manifest_edit_loses_or_reverts_a_document_unnamed() {
    let tally = manifest_matrix(6, 5, 199);
    assert!(tally.cases > 50, "{tally:?}");
}

/// Every edit, each also with the newest segment lost, and a bit flip in every byte
/// (`scripts/fault-matrix.sh`).
#[test]
#[ignore = "the full manifest matrix takes minutes: scripts/fault-matrix.sh"]
fn full_manifest_matrix() {
    let tally = manifest_matrix(1, 1, 1);
    assert!(tally.cases > 1000, "{tally:?}");
}

/// Issue 63, row 5: `dimension` changed in a manifest without a checksum (in both
/// manifests) made `repair` move every sound segment to `damaged/`, after which every
/// ingest was refused. The segments all record the same dimension: the manifest is
/// corrected from them and nothing is lost.
#[test]
fn regression_a_wrong_dimension_is_corrected_from_the_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    let before = texts(&dir);
    for file in ["MANIFEST.json", "MANIFEST.prev.json"] {
        edit_manifest(&dir, file, Checksum::Strip, |v| {
            v["config"]["dimension"] = (DIM + 1).into();
        });
    }
    assert!(!verify(&dir).unwrap().is_sound());
    let report = IndexWriter::repair(&dir, &|| Some(config()), &ann()).unwrap();
    assert!(report.lost_documents.is_empty(), "{report:?}");
    assert_eq!(report.lost_unnamed, 0, "{report:?}");
    assert!(verify(&dir).unwrap().is_sound());
    assert_eq!(texts(&dir), before);
    let mut w = IndexWriter::open(&dir, config()).unwrap();
    put(&mut w, "g", "grapes grow in bunches|grapes are green");
    w.commit().unwrap();
}

/// Issue 63, row 6: with a segment's `.docs` and `.ids` both lost, its documents were
/// reported as a count ("2 whose ids are unknown"), although the BM25 index stores
/// each chunk's document id. They are named from it.
#[test]
fn regression_lost_documents_are_named_from_bm25_when_the_id_list_is_lost_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir);
    fs::remove_file(dir.join("segments/g0000000002.docs")).unwrap();
    fs::remove_file(dir.join("segments/g0000000002.ids")).unwrap();
    let report = IndexWriter::repair(&dir, &|| Some(config()), &ann()).unwrap();
    assert_eq!(report.lost_documents, ["c", "d"], "{report:?}");
    assert_eq!(report.lost_unnamed, 0, "{report:?}");
    assert!(verify(&dir).unwrap().is_sound());
    // What could still be read of the segment is kept aside, not deleted.
    assert!(dir.join("damaged/g0000000002.vec").exists());
}
