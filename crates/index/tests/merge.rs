//! Segment merges on a real directory: an index written a document at a time keeps few
//! segments, drops the old versions of replaced documents, and answers every search
//! exactly as the same writes without merges do.

use excerpt_core::{ChunkKey, Document};
use excerpt_index::{verify, AnnOptions, IndexWriter, MergePolicy, Snapshot, MANIFEST_FILE};

mod common;

use common::{config, doc, DIM};

/// A small policy: three segments of up to four chunks make a tier.
fn small_policy() -> MergePolicy {
    MergePolicy {
        factor: 3,
        floor_chunks: 4,
        max_chunks: 10_000,
        max_deleted_share: 0.5,
    }
}

/// Unit vectors that differ from chunk to chunk (a generator seeded by `seed`).
fn spread_vectors(rows: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(rows * DIM);
    for _ in 0..rows {
        let row: Vec<f32> = (0..DIM)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        out.extend(row.iter().map(|x| x / norm));
    }
    out
}

/// Document `i`'s text at version `v`.
fn text(i: usize, v: usize) -> String {
    format!("doc {i} version {v} alpha|word{i} beta{v}|gamma {i} delta|end {v}")
}

/// The same writes into `dir` with `policy`: 40 single-document commits, every fifth
/// replacing an earlier document, every seventh deleting one, some documents with
/// sentence vectors. Returns the last writer's stats of merged segments.
fn write_all(dir: &std::path::Path, policy: MergePolicy, ann: AnnOptions) -> usize {
    let mut merged = 0;
    let mut w = IndexWriter::open(dir, config()).unwrap();
    w.set_merge_policy(policy.clone());
    w.set_ann_options(ann.clone());
    for step in 0..40usize {
        if step == 20 {
            // A writer opened on merged segments finds every document where it is.
            drop(w);
            w = IndexWriter::open(dir, config()).unwrap();
            w.set_merge_policy(policy.clone());
            w.set_ann_options(ann.clone());
        }
        let (id, version) = if step % 5 == 4 {
            (step / 3, step)
        } else {
            (step, 0)
        };
        let d = doc(&format!("d{id:02}"), &text(id, version));
        let v = spread_vectors(d.chunks.len(), (step * 31 + version) as u64);
        if step % 2 == 0 {
            let sv = spread_vectors(d.sentences.len(), step as u64 + 1000);
            w.put_with_sentences(d, v, Some(sv)).unwrap();
        } else {
            w.put(d, v).unwrap();
        }
        if step % 7 == 6 {
            // Some of these were replaced or deleted before, or never written.
            w.delete(&format!("d{:02}", step - 4));
        }
        merged += w.commit().unwrap().merged;
    }
    merged
}

/// Everything a reader can ask of a snapshot, for comparison.
fn answers(s: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (i, d) in s.documents().iter().enumerate() {
        let d: &Document = d;
        out.push(format!("{} {} {:?}", d.id, d.hash, d.text.as_str()));
        for c in 0..d.chunks.len() {
            out.push(format!("{:?}", s.vector(ChunkKey::new(i as u32, c as u32))));
        }
        for t in 0..d.sentences.len() {
            out.push(format!("{:?}", s.sentence_vector(i as u32, t)));
        }
    }
    for q in 0..6u64 {
        let query = spread_vectors(1, 500 + q);
        out.push(format!("{:?}", s.dense_search_exact(&query, 7, None)));
        out.push(format!("{:?}", s.dense_search_ann(&query, 5, None, 1.0)));
    }
    for q in ["alpha", "beta4", "delta end", "word7", "version"] {
        // BM25's statistics count the deleted documents tantivy has not yet merged
        // away, which its background merges decide: the ranking is compared, and the
        // scores to three decimals.
        let hits: Vec<(ChunkKey, String)> = s
            .bm25_search(q, 10, None)
            .unwrap()
            .into_iter()
            .map(|(k, x)| (k, format!("{x:.3}")))
            .collect();
        out.push(format!("{hits:?}"));
    }
    out
}

#[test]
fn merged_segments_answer_as_the_writes_without_merges_did() {
    let ann = AnnOptions {
        min_chunks: 40,
        lists_per_sqrt: 1.0,
        retrain_growth: 100.0,
    };
    let plain = tempfile::tempdir().unwrap();
    let merged = tempfile::tempdir().unwrap();
    assert_eq!(
        write_all(plain.path(), MergePolicy::never(), ann.clone()),
        0
    );
    let merges = write_all(merged.path(), small_policy(), ann);
    assert!(merges > 0);

    let a = Snapshot::open(plain.path()).unwrap();
    let b = Snapshot::open(merged.path()).unwrap();
    assert!(a.damage().is_empty() && b.damage().is_empty());
    assert!(matches!(
        b.ann_status(),
        excerpt_index::AnnStatus::Ready { .. }
    ));
    // Some documents have sentence vectors, some do not.
    let with = (0..b.documents().len() as u32)
        .filter(|&i| b.sentence_vector(i, 0).is_some())
        .count();
    assert!(with > 0 && with < b.documents().len(), "{with}");
    assert_eq!(answers(&a), answers(&b));

    // Few segments, none mostly made of old versions.
    let (ma, mb) = (a.manifest(), b.manifest());
    assert!(ma.segments.len() >= 30, "{}", ma.segments.len());
    assert!(mb.segments.len() <= 8, "{}", mb.segments.len());
    assert!(mb.segments.iter().all(|s| s.deleted.len() * 2 <= s.docs));
    assert_eq!(ma.live_docs(), mb.live_docs());

    let report = verify(merged.path()).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}

/// Commits after which [`write_until_a_merge`] gives up: [`small_policy`] (a factor of
/// 3) merges within the first few single-document commits.
const COMMITS_TO_A_MERGE: usize = 32;

/// Single-document commits into a new index at `dir` with [`small_policy`] until one
/// of them is followed by a merge; the ids written, in order. Fails when none is within
/// [`COMMITS_TO_A_MERGE`] commits (instead of committing for ever).
fn write_until_a_merge(dir: &std::path::Path) -> Vec<String> {
    let mut w = IndexWriter::open(dir, config()).unwrap();
    w.set_merge_policy(small_policy());
    let mut ids = Vec::new();
    let mut merges = 0;
    while merges == 0 {
        assert!(
            ids.len() < COMMITS_TO_A_MERGE,
            "no merge after {} single-document commits",
            ids.len()
        );
        let id = format!("d{:02}", ids.len());
        let d = doc(&id, &text(ids.len(), 0));
        let v = spread_vectors(d.chunks.len(), ids.len() as u64);
        w.put(d, v).unwrap();
        merges = w.commit().unwrap().merged;
        ids.push(id);
    }
    ids
}

#[test]
fn a_damaged_manifest_after_a_merge_is_recovered_without_losing_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let ids = write_until_a_merge(dir.path());
    // The generation of the merge is lost: the previous one names the segments merged.
    std::fs::write(dir.path().join(MANIFEST_FILE), b"{ not json").unwrap();
    let s = Snapshot::open(dir.path()).unwrap();
    let damage = s.damage();
    assert!(damage.manifest.is_some());
    assert!(damage.segments.is_empty(), "{:?}", damage.segments);
    let found: Vec<&str> = s.documents().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(found, ids);
}

#[test]
fn a_merge_cut_off_before_its_manifest_leaves_the_generation_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let ids = write_until_a_merge(dir.path());
    // As if the process died after the merged files and BM25 were written, before the
    // rename of the manifest: the generation before the merge is in force.
    let previous = std::fs::read(dir.path().join("MANIFEST.prev.json")).unwrap();
    std::fs::write(dir.path().join(MANIFEST_FILE), &previous).unwrap();
    let s = Snapshot::open(dir.path()).unwrap();
    assert!(s.damage().is_empty(), "{:?}", s.damage());
    let found: Vec<&str> = s.documents().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(found, ids);
    drop(s);
    // The next writer removes the merged segment no manifest names, and carries on.
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    w.set_merge_policy(small_policy());
    let d = doc("last", "the last one|after the cut");
    let v = spread_vectors(d.chunks.len(), 99);
    w.put(d, v).unwrap();
    w.commit().unwrap();
    drop(w);
    let report = verify(dir.path()).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.documents, ids.len() + 1);
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.documents().len(), ids.len() + 1);
    assert_eq!(s.bm25_search("cut", 5, None).unwrap().len(), 1);
}
