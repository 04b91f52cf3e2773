//! The index on a real directory: commits, snapshots, searches, replacement, deletion,
//! locking and recovery from a BM25 index that is ahead of the manifest.

use excerpt_core::{ChunkKey, ChunkerConfig, Document};
use excerpt_index::{DocMask, IndexError, IndexWriter, Manifest, Snapshot};

mod common;

use common::{config, doc, vectors, DIM};

#[test]
fn commit_then_search_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a.txt", "apples are red|bananas are yellow|cherries");
    let b = doc("b.txt", "éclair with crème|apples again");
    w.put(a.clone(), vectors(&a, 0)).unwrap();
    w.put(b.clone(), vectors(&b, 1)).unwrap();
    // Nothing visible before the commit.
    assert!(matches!(Snapshot::open(dir.path()), Ok(s) if s.documents().is_empty()));
    let stats = w.commit().unwrap();
    assert_eq!((stats.generation, stats.written), (1, 2));

    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.documents().len(), 2);
    assert_eq!(s.chunk_count(), 5);
    assert_eq!(s.doc(0).unwrap().as_ref(), &a);
    assert_eq!(
        s.vector(ChunkKey::new(1, 1)).unwrap(),
        &[0.0, 0.0, 1.0, 0.0]
    );
    assert!(s.vector(ChunkKey::new(1, 2)).is_none());

    // Dense: axis 1 is a.txt chunk 1 and b.txt chunk 0; ties broken by key.
    let hits = s.dense_search(&[0.0, 1.0, 0.0, 0.0], 3, None);
    assert_eq!(hits[0], (ChunkKey::new(0, 1), 1.0));
    assert_eq!(hits[1], (ChunkKey::new(1, 0), 1.0));
    assert_eq!(hits[2].1, 0.0);
    let only_b = DocMask(vec![false, true]);
    let hits = s.dense_search(&[1.0, 0.0, 0.0, 0.0], 5, Some(&only_b));
    assert!(hits.iter().all(|(k, _)| k.doc == 1));
    assert_eq!(hits.len(), 2);

    // BM25 with stemming ("apple" finds "apples"), filtered identically.
    let hits = s.bm25_search("apple", 10, None).unwrap();
    let keys: Vec<ChunkKey> = hits.iter().map(|h| h.0).collect();
    assert_eq!(keys.len(), 2);
    assert!(keys.contains(&ChunkKey::new(0, 0)) && keys.contains(&ChunkKey::new(1, 1)));
    let hits = s.bm25_search("apple", 10, Some(&only_b)).unwrap();
    assert_eq!(
        hits.iter().map(|h| h.0).collect::<Vec<_>>(),
        vec![ChunkKey::new(1, 1)]
    );
    // Headers are searched: the title word matches every chunk of a.txt.
    let hits = s
        .bm25_search("title", 10, Some(&DocMask(vec![true, false])))
        .unwrap();
    assert_eq!(hits.len(), 3);
    // Query syntax is not interpreted.
    assert!(s.bm25_search("apples AND (\"", 10, None).is_ok());
    assert!(s.bm25_search("", 10, None).unwrap().is_empty());
}

#[test]
fn replace_and_delete_make_new_generations() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "one|two");
    let b = doc("b", "three|four");
    w.put(a.clone(), vectors(&a, 0)).unwrap();
    w.put(b.clone(), vectors(&b, 0)).unwrap();
    w.commit().unwrap();
    let old = Snapshot::open(dir.path()).unwrap();

    let a2 = doc("a", "uno|dos|tres");
    w.put(a2.clone(), vectors(&a2, 2)).unwrap();
    assert!(w.delete("b"));
    assert!(!w.delete("nope"));
    let st = w.commit().unwrap();
    assert_eq!((st.generation, st.written, st.removed), (2, 1, 1));

    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.documents().len(), 1);
    assert_eq!(s.doc(0).unwrap().text, "uno|dos|tres");
    assert!(s.bm25_search("three", 5, None).unwrap().is_empty());
    assert_eq!(
        s.bm25_search("dos", 5, None).unwrap()[0].0,
        ChunkKey::new(0, 1)
    );
    // The old snapshot still reads its own generation.
    assert_eq!(old.doc(0).unwrap().text, "one|two");
    assert_eq!(old.documents().len(), 2);
    // The first segment is fully deleted: dropped from the manifest, and from disk when
    // the previous generation no longer names it either (at the next commit).
    let m = Manifest::load(dir.path()).unwrap().unwrap();
    assert_eq!(m.segments.len(), 1);
    let files = || {
        std::fs::read_dir(dir.path().join("segments"))
            .unwrap()
            .count()
    };
    let first = dir.path().join("segments/g0000000001.docs");
    // Documents, vectors, ids, of both segments.
    assert_eq!(files(), 6);
    // Empty commit is a no-op.
    assert_eq!(w.commit().unwrap().generation, 2);
    // The old snapshot's vectors are mapped from a file now removed: still its own.
    assert_eq!(old.doc_vectors(0).unwrap(), vectors(&a, 0).as_slice());
    assert_eq!(old.doc_vectors(1).unwrap(), vectors(&b, 0).as_slice());
    let hits = old.dense_search_exact(&[1.0, 0.0, 0.0, 0.0], 1, None);
    assert_eq!(hits, vec![(ChunkKey::new(0, 0), 1.0)]);
    assert!(first.exists());
    let c = doc("c", "five");
    w.put(c.clone(), vectors(&c, 0)).unwrap();
    w.commit().unwrap();
    assert!(!first.exists());
    assert_eq!(files(), 6);
}

/// Vectors are read from the segment files they were written to (mapped): across
/// segments, replacements and deletions, each live document's rows are the ones last
/// put, and exact search over them ranks as a brute-force sort does.
#[test]
fn vectors_are_read_from_every_segment_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let mut seed = 17u64;
    let mut noise = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    };
    let mut expected = std::collections::BTreeMap::new();
    // Per commit: documents put (id, text cut at `|`), then ids deleted.
    type Commit<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let commits: [Commit; 3] = [
        (&[("a", "1|2|3"), ("b", "4|5"), ("c", "6")], &[]),
        (&[("b", "4|5|6|7"), ("d", "8|9")], &[]),
        (&[("e", "10|11|12")], &["a"]),
    ];
    for (puts, deletes) in commits {
        for (id, text) in puts {
            let d = doc(id, text);
            let v = noise(d.chunks.len() * DIM);
            expected.insert(id.to_string(), v.clone());
            w.put(d, v).unwrap();
        }
        for id in deletes {
            assert!(w.delete(id));
            expected.remove(*id);
        }
        w.commit().unwrap();
    }
    let s = Snapshot::open(dir.path()).unwrap();
    assert!(s.damage().is_empty());
    let ids: Vec<&str> = s.documents().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["b", "c", "d", "e"]);
    // Texts are read in place from the mapped segment files, and equal what was put.
    for d in s.documents() {
        assert!(d.text.is_in_place(), "{}", d.id);
        d.validate().unwrap();
    }
    assert_eq!(s.documents()[0].text, "4|5|6|7");
    assert_eq!(s.documents()[3].text, "10|11|12");
    let mut all = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let want = &expected[*id];
        assert_eq!(s.doc_vectors(i as u32).unwrap(), want.as_slice(), "{id}");
        for (o, row) in want.chunks_exact(DIM).enumerate() {
            let key = ChunkKey::new(i as u32, o as u32);
            assert_eq!(s.vector(key).unwrap(), row);
            all.push((key, row));
        }
        assert!(s
            .vector(ChunkKey::new(i as u32, (want.len() / DIM) as u32))
            .is_none());
    }
    let query = noise(DIM);
    let dot = |r: &[f32]| r.iter().zip(&query).map(|(x, y)| x * y).sum::<f32>();
    let mut brute: Vec<(ChunkKey, f32)> = all.iter().map(|(k, r)| (*k, dot(r))).collect();
    brute.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let got = s.dense_search_exact(&query, brute.len() + 3, None);
    assert_eq!(got.len(), brute.len());
    for (g, b) in got.iter().zip(&brute) {
        assert_eq!(g.0, b.0);
        assert!((g.1 - b.1).abs() < 1e-6);
    }
    // A mask keeps the rows of the documents it allows, in the same order.
    let mask = DocMask(vec![false, true, false, true]);
    let got = s.dense_search_exact(&query, 100, Some(&mask));
    let want: Vec<ChunkKey> = brute
        .iter()
        .map(|b| b.0)
        .filter(|k| k.doc == 1 || k.doc == 3)
        .collect();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), want);
}

#[test]
fn one_writer_at_a_time_and_config_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let w = IndexWriter::open(dir.path(), config()).unwrap();
    assert!(matches!(
        IndexWriter::open(dir.path(), config()),
        Err(IndexError::Locked { .. })
    ));
    drop(w);
    let mut other = config();
    other.chunker = ChunkerConfig::Sentence;
    let err = IndexWriter::open(dir.path(), other).unwrap_err();
    assert!(
        matches!(
            err,
            IndexError::ConfigMismatch {
                field: "chunker",
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(
        Snapshot::open(&dir.path().join("missing")),
        Err(IndexError::NotFound { .. })
    ));
}

#[test]
fn bad_documents_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "x|y");
    assert!(w.put(a.clone(), vec![0.0; 3]).is_err());
    let mut nan = vectors(&a, 0);
    nan[0] = f32::NAN;
    assert!(w.put(a.clone(), nan).is_err());
    let mut gap = a.clone();
    gap.chunks.pop();
    assert!(w.put(gap, vec![0.0; DIM]).is_err());
}

#[test]
fn bm25_segments_are_merged_two_at_a_time() {
    // Ten commits of one document each: tantivy's default policy merges eight segments
    // of a level and leaves three here; the index's policy merges pairs, so a search
    // reads one or two segments. The searches find every document either way.
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    for i in 0..10 {
        let d = doc(&format!("d{i}"), &format!("alpha|word{i}"));
        w.put(d.clone(), vectors(&d, i)).unwrap();
        w.commit().unwrap();
    }
    drop(w);
    let bm25 = tantivy::Index::open_in_dir(dir.path().join("bm25")).unwrap();
    let segments = bm25.searchable_segment_ids().unwrap().len();
    assert!(segments <= 2, "{segments} BM25 segments");
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.bm25_search("alpha", 20, None).unwrap().len(), 10);
    assert_eq!(s.bm25_search("word7", 20, None).unwrap().len(), 1);
}

#[test]
fn bm25_ahead_of_manifest_is_rebuilt() {
    // A crash after the BM25 commit and before the manifest rename leaves BM25 one
    // generation ahead. Readers must see exactly the manifest's generation.
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "alpha|beta");
    w.put(a.clone(), vectors(&a, 0)).unwrap();
    w.commit().unwrap();
    let gen1 = std::fs::read(dir.path().join("MANIFEST.json")).unwrap();
    let b = doc("b", "gamma|alpha");
    w.put(b.clone(), vectors(&b, 0)).unwrap();
    w.commit().unwrap();
    drop(w);
    std::fs::write(dir.path().join("MANIFEST.json"), &gen1).unwrap();

    let s = Snapshot::open(dir.path()).unwrap();
    assert!(s.stats().bm25_rebuilt_in_memory);
    assert_eq!(s.documents().len(), 1);
    assert!(s.bm25_search("gamma", 5, None).unwrap().is_empty());
    assert_eq!(s.bm25_search("alpha", 5, None).unwrap().len(), 1);

    // The next writer repairs the on-disk BM25 index and removes the orphan segment.
    let w = IndexWriter::open(dir.path(), config()).unwrap();
    drop(w);
    let s = Snapshot::open(dir.path()).unwrap();
    assert!(!s.stats().bm25_rebuilt_in_memory);
    assert!(s.bm25_search("gamma", 5, None).unwrap().is_empty());
    assert_eq!(
        std::fs::read_dir(dir.path().join("segments"))
            .unwrap()
            .count(),
        3
    );
}

#[test]
fn corrupt_segment_is_reported_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "alpha|beta");
    w.put(a.clone(), vectors(&a, 0)).unwrap();
    w.commit().unwrap();
    drop(w);
    flip_last_byte(dir.path(), "docs");
    // Readers leave the segment out and name its documents; writers refuse.
    let s = Snapshot::open(dir.path()).unwrap();
    assert!(s.documents().is_empty());
    assert_eq!(s.damage().lost_documents(), ["a"]);
    assert!(matches!(
        IndexWriter::open(dir.path(), config()),
        Err(IndexError::Corrupt { .. })
    ));
}

/// A vectors file is checked after the open, before any of its rows is read: one that
/// fails leaves its segment's vectors out of every dense search (its documents stay,
/// found by BM25) and is named in the damage; writers refuse the index.
#[test]
fn a_vectors_file_failing_its_check_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "alpha|beta");
    w.put(a.clone(), vectors(&a, 0)).unwrap();
    w.commit().unwrap();
    let b = doc("b", "gamma|delta");
    w.put(b.clone(), vectors(&b, 2)).unwrap();
    w.commit().unwrap();
    drop(w);
    // The first segment's vectors (it holds "a"): a flipped byte in a row.
    let path = std::fs::read_dir(dir.path().join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "vec"))
        .min()
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();

    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.documents().len(), 2, "the documents are intact");
    let (da, db) = (s.doc_index("a").unwrap(), s.doc_index("b").unwrap());
    assert!(
        s.doc_vectors(da).is_none(),
        "rows of a failing file are not read"
    );
    assert!(s.doc_vectors(db).is_some());
    let found: Vec<u32> = s
        .dense_search(s.doc_vectors(db).unwrap().get(..DIM).unwrap(), 10, None)
        .into_iter()
        .map(|(k, _)| k.doc)
        .collect();
    assert!(
        !found.is_empty() && found.iter().all(|&d| d == db),
        "{found:?}"
    );
    let hits = s.bm25_search("alpha", 10, None).unwrap();
    assert!(hits.iter().any(|(k, _)| k.doc == da), "BM25 still finds it");
    let damage = s.damage();
    assert!(damage.lost_documents().is_empty());
    assert_eq!(damage.degraded.len(), 1, "{damage:?}");
    assert!(
        damage.degraded[0].contains("checksum mismatch"),
        "{damage:?}"
    );
    assert_eq!(s.stats().damage, damage);
    assert!(matches!(
        IndexWriter::open(dir.path(), config()),
        Err(IndexError::Corrupt { .. })
    ));
}

#[test]
fn metadata_survives_the_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let mut a = doc("a", "x|y");
    a.metadata = serde_json::json!({"year": 2021, "tags": ["a", "b"], "nested": {"k": null}})
        .as_object()
        .cloned()
        .unwrap();
    w.put(a.clone(), vectors(&a, 0)).unwrap();
    w.commit().unwrap();
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.doc(0).unwrap().metadata, a.metadata);
}

/// One vector per sentence, distinct per (seed, sentence).
fn sentence_vectors(d: &Document, seed: usize) -> Vec<f32> {
    (0..d.sentences.len())
        .flat_map(|i| {
            let x = (seed * 100 + i) as f32;
            [x, 1.0, -x, 0.5]
        })
        .collect()
}

#[test]
fn sentence_vectors_round_trip_per_document() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let a = doc("a", "one.|two.|three.");
    let b = doc("b", "four.|five.");
    let sa = sentence_vectors(&a, 1);
    w.put_with_sentences(a.clone(), vectors(&a, 1), Some(sa.clone()))
        .unwrap();
    // b has none: a segment may mix documents with and without sentence vectors.
    w.put(b.clone(), vectors(&b, 2)).unwrap();
    // Wrong row count is refused, nothing staged.
    let bad = doc("c", "six.|seven.");
    assert!(matches!(
        w.put_with_sentences(bad.clone(), vectors(&bad, 3), Some(vec![0.0; DIM])),
        Err(IndexError::BadDocument { .. })
    ));
    assert!(matches!(
        w.put_with_sentences(bad.clone(), vectors(&bad, 3), Some(vec![f32::NAN; 2 * DIM])),
        Err(IndexError::BadDocument { .. })
    ));
    w.commit().unwrap();

    let snap = Snapshot::open(dir.path()).unwrap();
    let (ia, ib) = (snap.doc_index("a").unwrap(), snap.doc_index("b").unwrap());
    for i in 0..3 {
        assert_near(
            &snap.sentence_vector(ia, i).unwrap(),
            &sa[i * DIM..(i + 1) * DIM],
        );
    }
    assert_eq!(snap.sentence_vector(ia, 3), None);
    assert_eq!(snap.sentence_vector(ib, 0), None);
    let st = snap.stats();
    assert_eq!((st.sentence_vector_documents, st.sentence_vectors), (1, 3));

    // A later segment: b gains sentence vectors, a is deleted; rows follow documents.
    let sb = sentence_vectors(&b, 7);
    w.put_with_sentences(b.clone(), vectors(&b, 2), Some(sb.clone()))
        .unwrap();
    w.delete("a");
    w.commit().unwrap();
    drop(w);
    let snap = Snapshot::open(dir.path()).unwrap();
    assert!(snap.doc_index("a").is_none());
    let ib = snap.doc_index("b").unwrap();
    assert_near(&snap.sentence_vector(ib, 1).unwrap(), &sb[DIM..2 * DIM]);
    assert_eq!(snap.stats().sentence_vectors, 2);

    // A sentence file of f32 rows (before 8-bit rows) is read too: rewritten here in
    // that layout, with the manifest's checksum to match, the rows read back the same.
    let svec = newest_segment_file(dir.path(), "svec");
    let mut old = b"EXSVEC01".to_vec();
    for n in [DIM as u32, 1, 2] {
        old.extend_from_slice(&n.to_le_bytes());
    }
    for x in &sb {
        old.extend_from_slice(&x.to_le_bytes());
    }
    let new_hash = blake3::hash(&std::fs::read(&svec).unwrap())
        .to_hex()
        .to_string();
    let old_hash = blake3::hash(&old).to_hex().to_string();
    std::fs::write(&svec, &old).unwrap();
    let manifest = dir.path().join("MANIFEST.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains(&new_hash));
    // The manifest checks itself: the edited one is written with its checksum again.
    let edited: Manifest = serde_json::from_str(&text.replace(&new_hash, &old_hash)).unwrap();
    std::fs::write(&manifest, edited.to_checked_json().unwrap()).unwrap();
    let old_snap = Snapshot::open(dir.path()).unwrap();
    assert!(
        old_snap.damage().degraded.is_empty(),
        "{:?}",
        old_snap.damage()
    );
    for i in 0..2 {
        assert_eq!(old_snap.sentence_vector(ib, i), snap.sentence_vector(ib, i));
    }

    // A damaged sentence file is reported, not read: its documents are read without.
    flip_last_byte(dir.path(), "svec");
    let snap = Snapshot::open(dir.path()).unwrap();
    assert_eq!(snap.damage().degraded.len(), 1, "{:?}", snap.damage());
    assert!(snap.damage().lost_documents().is_empty());
    assert_eq!(snap.sentence_vector(snap.doc_index("b").unwrap(), 1), None);
}

/// Asserts that a row read back from 8 bits is within half a step of what was stored
/// (a step: the row's largest magnitude over 127).
fn assert_near(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    let step = want.iter().fold(0.0f32, |m, x| m.max(x.abs())) / 127.0;
    for (a, b) in got.iter().zip(want) {
        assert!(
            (a - b).abs() <= step / 2.0 + 1e-6,
            "{got:?} against {want:?}"
        );
    }
}

/// The segment file with extension `ext` of the newest segment that has one.
fn newest_segment_file(index: &std::path::Path, ext: &str) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(index.join("segments"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
        .pop()
        .unwrap_or_else(|| panic!("no .{ext} segment file"))
}

/// Flips every bit of the last byte of the newest segment file with extension `ext`
/// (older ones may be the previous generation's, kept until the next commit).
fn flip_last_byte(index: &std::path::Path, ext: &str) {
    let path = newest_segment_file(index, ext);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
}

/// Flips bytes in the middle of a file (the shape of bit rot or a torn write).
fn damage(path: &std::path::Path, whole: bool) {
    let mut b = std::fs::read(path).unwrap();
    let n = b.len();
    let range = if whole { 0..n } else { n / 4..n / 2 };
    for i in range.step_by(3) {
        b[i] ^= 0xff;
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn damaged_bm25_files_are_searched_around_and_repaired_by_the_next_writer() {
    let texts = [
        (
            "a.txt",
            "apples are red|bananas are yellow|cherries are dark",
        ),
        (
            "b.txt",
            "dates are sweet|elderberries grow wild|figs ripen late",
        ),
    ];
    let build = |dir: &std::path::Path| {
        let mut w = IndexWriter::open(dir, config()).unwrap();
        for (i, (id, t)) in texts.iter().enumerate() {
            let d = doc(id, t);
            let v = vectors(&d, i);
            w.put(d, v).unwrap();
        }
        w.commit().unwrap();
    };
    let good = tempfile::tempdir().unwrap();
    build(good.path());
    let expected = Snapshot::open(good.path())
        .unwrap()
        .bm25_search("bananas figs", 10, None)
        .unwrap();
    assert_eq!(expected.len(), 2);
    let exts: Vec<String> = std::fs::read_dir(good.path().join("bm25"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.rsplit_once('.').map(|(_, x)| x.to_string())
        })
        .filter(|x| !["json", "lock"].contains(&x.as_str()))
        .collect();
    assert!(exts.iter().any(|x| x == "idx"), "{exts:?}");
    for ext in &exts {
        for whole in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            build(dir.path());
            let file = std::fs::read_dir(dir.path().join("bm25"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == ext.as_str()))
                .unwrap();
            damage(&file, whole);
            // Readers answer as before, from an index rebuilt from the segments.
            let s = Snapshot::open(dir.path()).unwrap_or_else(|e| panic!("{ext} {whole}: {e}"));
            let got = s.bm25_search("bananas figs", 10, None);
            let got = got.unwrap_or_else(|e| panic!("{ext} {whole}: {e}"));
            assert_eq!(got, expected, "{ext} {whole}");
            // The next writer repairs the files on disk.
            drop(IndexWriter::open(dir.path(), config()).unwrap());
            let s = Snapshot::open(dir.path()).unwrap();
            assert!(
                !s.stats().bm25_rebuilt_in_memory,
                "{ext} {whole}: repaired on disk"
            );
            assert_eq!(s.bm25_search("bananas figs", 10, None).unwrap(), expected);
        }
    }
}

/// A snapshot opened after a commit shares the unchanged segments' documents with the
/// snapshot still held (nothing read, hashed or decoded again); a segment file changed
/// on disk since is read again, and its damage found.
#[test]
fn a_new_snapshot_shares_the_documents_of_unchanged_segments_and_rereads_changed_files() {
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    for (i, id) in ["a", "b"].iter().enumerate() {
        let d = doc(id, "pears are green|plums are purple");
        w.put(d.clone(), vectors(&d, i)).unwrap();
    }
    w.commit().unwrap();
    let c = doc("c", "figs are soft|limes are sour");
    w.put(c.clone(), vectors(&c, 2)).unwrap();
    w.commit().unwrap();
    let held = Snapshot::open(dir.path()).unwrap();

    // A third commit replaces "b" (its old version stays in the first segment).
    let b = doc("b", "pears are ripe|plums are sweet");
    w.put(b.clone(), vectors(&b, 3)).unwrap();
    w.commit().unwrap();
    let next = Snapshot::open(dir.path()).unwrap();
    let segments = |s: &Snapshot| s.segment_documents().cloned().collect::<Vec<_>>();
    let (before, after) = (segments(&held), segments(&next));
    assert_eq!((before.len(), after.len()), (2, 3));
    assert!(Arc::ptr_eq(&before[0], &after[0]) && Arc::ptr_eq(&before[1], &after[1]));
    let doc_of = |s: &Snapshot, id: &str| Arc::clone(s.doc(s.doc_index(id).unwrap()).unwrap());
    assert!(Arc::ptr_eq(&doc_of(&held, "a"), &doc_of(&next, "a")));
    assert!(!Arc::ptr_eq(&doc_of(&held, "b"), &doc_of(&next, "b")));
    assert_eq!(doc_of(&next, "b").text.as_str(), b.text.as_str());
    // Live versions are told from replaced ones by identity.
    let old_b = &after[0].documents()[1];
    assert_eq!(old_b.id, "b");
    assert_eq!(next.live_index(old_b), None);
    assert_eq!(
        next.live_index(&after[0].documents()[0]),
        next.doc_index("a")
    );
    drop(w);

    // The first segment's documents file damaged in place (a later write: a new
    // modification time) while both snapshots still hold its documents.
    let path = dir.path().join("segments").join("g0000000001.docs");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let reopened = Snapshot::open(dir.path()).unwrap();
    let damage = reopened.damage();
    assert_eq!(damage.segments.len(), 1, "{damage:?}");
    assert!(
        format!("{damage:?}").contains("g0000000001.docs: checksum mismatch"),
        "{damage:?}"
    );
    // "a" was only in the damaged segment; "b" and "c" are read from the others.
    let ids: Vec<&str> = reopened.documents().iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["b", "c"]);
    drop((held, next));
}

/// Commits of one document each leave a large BM25 segment as it is: small segments
/// merge with segments of about their size. (With one level for every segment below
/// 10,000 chunks, each commit rewrote the whole pile of them.)
#[test]
fn single_document_commits_do_not_rewrite_a_large_bm25_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let text: String = (0..5_000).map(|i| format!("word{i}|")).collect();
    let big = doc("big", &text);
    w.put(big.clone(), vectors(&big, 0)).unwrap();
    w.commit().unwrap();
    drop(w);
    let large = || -> Vec<String> {
        let index = tantivy::Index::open_in_dir(dir.path().join("bm25")).unwrap();
        index
            .searchable_segment_metas()
            .unwrap()
            .iter()
            .filter(|m| m.max_doc() >= 5_000)
            .map(|m| m.id().uuid_string())
            .collect()
    };
    let before = large();
    assert_eq!(before.len(), 1);
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    for i in 0..12 {
        let d = doc(&format!("small{i:02}"), "one|two");
        w.put(d.clone(), vectors(&d, i)).unwrap();
        w.commit().unwrap();
    }
    drop(w);
    assert_eq!(large(), before);
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.bm25_search("word4321", 5, None).unwrap().len(), 1);
    assert_eq!(s.bm25_search("two", 20, None).unwrap().len(), 12);
}
