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
