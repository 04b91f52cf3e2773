//! A damaged index on a real directory: a segment in the middle that fails its
//! checksum, a segment file deleted, a truncated manifest. Each time `verify` names the
//! damage, readers answer from what can be read and name the documents lost, writers
//! refuse with an error that says the index is corrupt, `repair` drops exactly the
//! lost documents, and afterwards `verify` is clean and ingest works.

use std::path::Path;

use excerpt_index::{verify, AnnOptions, AnnStatus, IndexError, IndexWriter, Snapshot};

mod common;

use common::{config, doc, vectors, DIM};

/// ANN files from the first chunk on, so that repair has them to keep or rebuild.
fn ann() -> AnnOptions {
    AnnOptions {
        min_chunks: 1,
        ..AnnOptions::default()
    }
}

fn put(w: &mut IndexWriter, id: &str, text: &str) {
    let d = doc(id, text);
    let v = vectors(&d, id.len());
    w.put(d, v).unwrap();
}

/// Three commits, three segments: {a, b}, {c, d} (the middle one), {e}.
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
    w.commit().unwrap();
}

fn segment_file(dir: &Path, generation: u64, ext: &str) -> std::path::PathBuf {
    dir.join("segments")
        .join(format!("g{generation:010}.{ext}"))
}

fn ids(s: &Snapshot) -> Vec<String> {
    s.documents().iter().map(|d| d.id.clone()).collect()
}

/// Ids of the documents BM25 finds for `text`, sorted.
fn bm25_ids(s: &Snapshot, text: &str) -> Vec<String> {
    let mut out: Vec<String> = s
        .bm25_search(text, 50, None)
        .unwrap()
        .into_iter()
        .map(|(k, _)| s.doc(k.doc).unwrap().id.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What every damaged index must show: verify names `lost`, readers answer from the
/// others, writers refuse, repair drops exactly `lost`, then all is sound and writable.
fn damaged_then_repaired(dir: &Path, lost: &[&str], readable: &[&str], problem: &str) {
    let lost: Vec<String> = lost.iter().map(|s| s.to_string()).collect();
    let readable: Vec<String> = readable.iter().map(|s| s.to_string()).collect();

    let report = verify(dir).unwrap();
    assert!(!report.is_sound(), "{report:?}");
    assert!(
        report.problems.iter().any(|p| p.contains(problem)),
        "{problem} in {:?}",
        report.problems
    );
    assert_eq!(report.lost_documents, lost);
    assert_eq!(report.documents, readable.len());

    // Readers: the readable documents, searched both ways; the others named.
    let s = Snapshot::open(dir).unwrap();
    assert_eq!(ids(&s), readable);
    assert_eq!(s.damage().lost_documents(), lost);
    assert!(!s.damage().is_empty());
    assert!(s
        .stats()
        .damage
        .problems()
        .iter()
        .any(|p| p.contains(problem)));
    let all = "apples bananas cherries dates elderberries";
    assert_eq!(bm25_ids(&s, all), readable);
    let hits = s.dense_search(&[1.0, 0.0, 0.0, 0.0], 50, None);
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|(k, _)| (k.doc as usize) < readable.len()));

    // Writers refuse with a corruption error (the front end says to repair).
    let err = IndexWriter::open(dir, config()).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");

    // Repair drops exactly the lost documents.
    let repaired = IndexWriter::repair(dir, &|| None, &ann()).unwrap();
    assert_eq!(repaired.lost_documents, lost);
    assert_eq!(repaired.lost_unnamed, 0);
    assert_eq!(repaired.documents, readable.len());
    let report = verify(dir).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert!(report.files.iter().any(|f| f.file.ends_with(".ivf")));
    let s = Snapshot::open(dir).unwrap();
    assert!(s.damage().is_empty(), "{:?}", s.damage());
    assert_eq!(ids(&s), readable);
    assert_eq!(bm25_ids(&s, all), readable);
    assert!(!s.stats().bm25_rebuilt_in_memory);
    assert!(matches!(s.ann_status(), AnnStatus::Ready { .. }));
    assert_eq!(s.manifest().generation, repaired.generation);

    // Ingest works again, lost documents included.
    let mut w = IndexWriter::open(dir, config()).unwrap();
    w.set_ann_options(ann());
    put(&mut w, "c", "cherries are back|cherries again");
    put(&mut w, "f", "figs ripen late|figs are soft");
    w.commit().unwrap();
    drop(w);
    let report = verify(dir).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    let s = Snapshot::open(dir).unwrap();
    let mut expected = readable.clone();
    expected.extend(["c".to_string(), "f".to_string()]);
    expected.sort();
    expected.dedup();
    assert_eq!(ids(&s), expected);
}

#[test]
fn sound_index_verifies_clean() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.generation, Some(3));
    assert_eq!(report.documents, 5);
    // Three segments of three files (no sentence vectors), manifest, BM25, ANN.
    let segment_files = report
        .files
        .iter()
        .filter(|f| f.file.starts_with("segments/"))
        .count();
    assert_eq!(segment_files, 9);
    assert!(Snapshot::open(dir.path()).unwrap().damage().is_empty());
    assert!(matches!(
        verify(&dir.path().join("nothing")),
        Err(IndexError::NotFound { .. })
    ));
}

#[test]
fn damaged_segment_in_the_middle() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let path = segment_file(dir.path(), 2, "docs");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    damaged_then_repaired(
        dir.path(),
        &["c", "d"],
        &["a", "b", "e"],
        "g0000000002.docs: checksum mismatch",
    );
    // The damaged files were kept aside, not deleted.
    assert!(dir.path().join("damaged/g0000000002.docs").exists());
}

#[test]
fn deleted_segment_file() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    std::fs::remove_file(segment_file(dir.path(), 2, "vec")).unwrap();
    damaged_then_repaired(
        dir.path(),
        &["c", "d"],
        &["a", "b", "e"],
        "g0000000002.vec: missing",
    );
}

#[test]
fn replaced_documents_of_a_lost_segment_are_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    // d gets a new version in a fourth segment: only c is lost with the second one.
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    w.set_ann_options(ann());
    put(&mut w, "d", "dates again|dates are brown");
    w.commit().unwrap();
    drop(w);
    std::fs::remove_file(segment_file(dir.path(), 2, "docs")).unwrap();
    damaged_then_repaired(
        dir.path(),
        &["c"],
        &["a", "b", "d", "e"],
        "g0000000002.docs: missing",
    );
}

#[test]
fn truncated_manifest_is_read_from_the_previous_generation() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let manifest = dir.path().join("MANIFEST.json");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();

    let report = verify(dir.path()).unwrap();
    assert!(!report.is_sound());
    assert!(
        report.problems[0].contains("previous generation 2"),
        "{:?}",
        report.problems
    );
    assert!(report.lost_documents.is_empty());
    // Generation 2's manifest plus the third segment: nothing is lost.
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(ids(&s), ["a", "b", "c", "d", "e"]);
    let note = s.damage().manifest.clone().unwrap();
    assert!(note.contains("MANIFEST.json is damaged"), "{note}");
    assert!(s.damage().lost_documents().is_empty());
    assert_eq!(bm25_ids(&s, "elderberries apples"), ["a", "e"]);
    let err = IndexWriter::open(dir.path(), config()).unwrap_err();
    assert!(matches!(err, IndexError::Corrupt { .. }), "{err}");

    let repaired = IndexWriter::repair(dir.path(), &|| None, &ann()).unwrap();
    assert!(repaired.manifest.is_some());
    assert!(repaired.lost_documents.is_empty());
    assert_eq!(repaired.documents, 5);
    // Above every generation on disk: the next commit's segment name is new.
    assert_eq!(repaired.generation, 4);
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    put(&mut w, "f", "figs ripen late");
    w.commit().unwrap();
    drop(w);
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(ids(&s), ["a", "b", "c", "d", "e", "f"]);
    assert!(verify(dir.path()).unwrap().is_sound());
}

#[test]
fn garbled_manifest_without_a_previous_generation_needs_a_config() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    put(&mut w, "a", "apples are red");
    put(&mut w, "b", "bananas are yellow");
    w.commit().unwrap();
    drop(w);
    // The first open stored an empty generation 0, which the commit kept as the
    // previous one: without it, only the segments are left to read.
    let _ = std::fs::remove_file(dir.path().join("MANIFEST.prev.json"));
    std::fs::write(dir.path().join("MANIFEST.json"), b"{\"format\": 2, \"gen").unwrap();

    // Readers cannot know the settings: a clear error.
    let err = Snapshot::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("no previous generation"), "{err}");
    let report = verify(dir.path()).unwrap();
    assert!(!report.is_sound());
    assert_eq!(report.generation, None);
    assert!(matches!(
        IndexWriter::repair(dir.path(), &|| None, &ann()),
        Err(IndexError::Corrupt { .. })
    ));
    // With the settings of the index, the segments are read back.
    let repaired = IndexWriter::repair(dir.path(), &|| Some(config()), &ann()).unwrap();
    assert!(repaired
        .manifest
        .unwrap()
        .contains("read from the segments"));
    assert_eq!(repaired.documents, 2);
    assert!(verify(dir.path()).unwrap().is_sound());
    assert_eq!(ids(&Snapshot::open(dir.path()).unwrap()), ["a", "b"]);
}

#[test]
fn damaged_sentence_vectors_keep_their_documents() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "one.|two.");
    let sv = vec![0.5; a.sentences.len() * DIM];
    w.put_with_sentences(a.clone(), vec![1.0; a.chunks.len() * DIM], Some(sv))
        .unwrap();
    w.commit().unwrap();
    drop(w);
    let path = segment_file(dir.path(), 1, "svec");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();

    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(ids(&s), ["a"]);
    assert!(s.damage().lost_documents().is_empty());
    assert_eq!(s.damage().degraded.len(), 1);
    assert_eq!(s.sentence_vector(0, 0), None);
    assert!(!verify(dir.path()).unwrap().is_sound());
    let repaired = IndexWriter::repair(dir.path(), &|| None, &AnnOptions::default()).unwrap();
    assert!(repaired.lost_documents.is_empty());
    assert!(
        repaired
            .actions
            .iter()
            .any(|a| a.contains("sentence vectors")),
        "{:?}",
        repaired.actions
    );
    assert!(verify(dir.path()).unwrap().is_sound());
}

#[test]
fn deleted_manifest_is_read_from_the_previous_generation() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    std::fs::remove_file(dir.path().join("MANIFEST.json")).unwrap();
    // A previous generation without a current one: the current one was lost, not never
    // written.
    let report = verify(dir.path()).unwrap();
    assert!(!report.is_sound());
    assert!(
        report.problems[0].contains("missing"),
        "{:?}",
        report.problems
    );
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(ids(&s), ["a", "b", "c", "d", "e"]);
    assert!(s.damage().manifest.is_some());
    let repaired = IndexWriter::repair(dir.path(), &|| None, &ann()).unwrap();
    assert_eq!(repaired.documents, 5);
    assert!(verify(dir.path()).unwrap().is_sound());
    // An empty directory is no index at all, for readers, verify and repair alike.
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        Snapshot::open(empty.path()),
        Err(IndexError::NotFound { .. })
    ));
    assert!(matches!(
        verify(empty.path()),
        Err(IndexError::NotFound { .. })
    ));
    assert!(matches!(
        IndexWriter::repair(empty.path(), &|| None, &ann()),
        Err(IndexError::NotFound { .. })
    ));
}
