//! The IVF index on a real on-disk index: built automatically from `min_chunks`, recall@10
//! against exact search ≥ 0.95 across incremental commits, deleted documents never
//! returned, filters respected, and exact fallback when its files are damaged.

use excerpt_core::{CharIndex, Chunk, ChunkKey, ChunkerConfig, Document};
use excerpt_index::{AnnOptions, AnnStatus, DocMask, IndexConfig, IndexWriter, Snapshot};

const DIM: usize = 32;
const CHUNKS_PER_DOC: usize = 20;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

fn normalise(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// A point near one of `centers` (clustered data, as embeddings are).
fn near(rng: &mut Rng, centers: &[Vec<f32>]) -> Vec<f32> {
    let c = &centers[(rng.next() % centers.len() as u64) as usize];
    normalise(
        c.iter()
            .map(|x| x + 0.35 * rng.unit() / (DIM as f32).sqrt())
            .collect(),
    )
}

fn doc(id: &str) -> Document {
    let text: String = (0..CHUNKS_PER_DOC)
        .map(|i| format!("{id} chunk {i}.\n"))
        .collect();
    let idx = CharIndex::new(&text);
    let mut start = 0;
    let mut chunks = Vec::new();
    for (o, (i, _)) in text.match_indices('\n').enumerate() {
        chunks.push(Chunk {
            ordinal: o as u32,
            range: idx.range(start, i + 1).unwrap(),
            section: None,
            tokens: 0,
            context: None,
        });
        start = i + 1;
    }
    let sentences = chunks.iter().map(|c| c.range).collect();
    Document {
        id: id.into(),
        title: id.into(),
        source: None,
        metadata: Default::default(),
        hash: excerpt_core::content_hash(&[id.as_bytes()]),
        text: text.into(),
        sections: vec![],
        chunks,
        sentences,
        pages: vec![],
    }
}

/// The test index's configuration.
fn config() -> IndexConfig {
    IndexConfig {
        model_id: "test-model".into(),
        dimension: DIM,
        chunker: ChunkerConfig::Chars { size: 16 },
        headers: false,
        contextualizer: None,
        sentence_vectors: None,
    }
}

fn add_docs(w: &mut IndexWriter, rng: &mut Rng, centers: &[Vec<f32>], ids: std::ops::Range<usize>) {
    for d in ids {
        let vectors: Vec<f32> = (0..CHUNKS_PER_DOC)
            .flat_map(|_| near(rng, centers))
            .collect();
        w.put(doc(&format!("d{d:05}")), vectors).unwrap();
    }
    w.commit().unwrap();
}

fn recall_at_10(
    snap: &Snapshot,
    rng: &mut Rng,
    centers: &[Vec<f32>],
    mask: Option<&DocMask>,
) -> f64 {
    let queries = 100;
    let mut sum = 0.0;
    for _ in 0..queries {
        let q = near(rng, centers);
        let approx = snap.dense_search(&q, 10, mask);
        let exact = snap.dense_search_exact(&q, 10, mask);
        let truth: Vec<ChunkKey> = exact.iter().map(|h| h.0).collect();
        sum += approx.iter().filter(|h| truth.contains(&h.0)).count() as f64
            / truth.len().max(1) as f64;
    }
    sum / queries as f64
}

#[test]
fn ivf_is_built_by_size_and_keeps_recall() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let config = config();
    let mut rng = Rng(0x5eed);
    let centers: Vec<Vec<f32>> = (0..64)
        .map(|_| normalise((0..DIM).map(|_| rng.unit()).collect()))
        .collect();
    let mut w = IndexWriter::open(&path, config).unwrap();
    w.set_ann_options(AnnOptions {
        min_chunks: 4_000,
        ..AnnOptions::default()
    });

    // Below the threshold: no ANN, search is exact.
    add_docs(&mut w, &mut rng, &centers, 0..100);
    let snap = Snapshot::open(&path).unwrap();
    assert_eq!(snap.stats().ann, AnnStatus::Absent);
    assert!(
        !path.join("ann").exists()
            || std::fs::read_dir(path.join("ann"))
                .unwrap()
                .next()
                .is_none()
    );
    let q = near(&mut rng, &centers);
    assert_eq!(
        snap.dense_search(&q, 10, None),
        snap.dense_search_exact(&q, 10, None)
    );

    // Above it: built at commit, and approximate search keeps recall@10 ≥ 0.95.
    add_docs(&mut w, &mut rng, &centers, 100..400);
    let snap = Snapshot::open(&path).unwrap();
    assert!(
        matches!(snap.stats().ann, AnnStatus::Ready { .. }),
        "{:?}",
        snap.stats().ann
    );
    let r = recall_at_10(&snap, &mut rng, &centers, None);
    assert!(r >= 0.95, "recall@10 {r}");

    // Incremental: more documents (assigned to the existing lists) and deletions.
    add_docs(&mut w, &mut rng, &centers, 400..500);
    for d in (0..500).step_by(7) {
        assert!(w.delete(&format!("d{d:05}")));
    }
    w.commit().unwrap();
    let snap = Snapshot::open(&path).unwrap();
    assert!(matches!(snap.stats().ann, AnnStatus::Ready { .. }));
    let r = recall_at_10(&snap, &mut rng, &centers, None);
    assert!(r >= 0.95, "recall@10 after updates {r}");
    for _ in 0..50 {
        let q = near(&mut rng, &centers);
        for (key, _) in snap.dense_search(&q, 50, None) {
            let id = &snap.documents()[key.doc as usize].id;
            let n: usize = id[1..].parse().unwrap();
            assert!(!n.is_multiple_of(7), "deleted document {id} returned");
        }
    }

    // A filter allowing most documents goes through the ANN probe and stays inside it.
    let allowed: Vec<bool> = (0..snap.documents().len()).map(|i| i % 3 != 0).collect();
    let mask = DocMask(allowed.clone());
    let r = recall_at_10(&snap, &mut rng, &centers, Some(&mask));
    assert!(r >= 0.95, "filtered recall@10 {r}");
    for _ in 0..20 {
        let q = near(&mut rng, &centers);
        for (key, _) in snap.dense_search(&q, 50, Some(&mask)) {
            assert!(allowed[key.doc as usize]);
        }
    }
    drop(w);

    // Damaged ANN files: the snapshot says so and searches exactly.
    for e in std::fs::read_dir(path.join("ann")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ivf") {
            std::fs::write(&p, b"not an index").unwrap();
        }
    }
    let snap = Snapshot::open(&path).unwrap();
    assert!(
        matches!(snap.stats().ann, AnnStatus::Unavailable { .. }),
        "{:?}",
        snap.stats().ann
    );
    let q = near(&mut rng, &centers);
    assert_eq!(
        snap.dense_search(&q, 10, None),
        snap.dense_search_exact(&q, 10, None)
    );
}

#[test]
fn exact_scans_read_through_the_8_bit_rows_give_the_plain_scans_answer() {
    // Scans of 2,048 rows or more read the 8-bit rows from the second one on: every
    // answer, before and after, masked or not, is the plain scan's, bit for bit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let config = config();
    let mut rng = Rng(0xfeed);
    let centers: Vec<Vec<f32>> = (0..16)
        .map(|_| normalise((0..DIM).map(|_| rng.unit()).collect()))
        .collect();
    let mut w = IndexWriter::open(&path, config).unwrap();
    add_docs(&mut w, &mut rng, &centers, 0..100);
    add_docs(&mut w, &mut rng, &centers, 100..250);
    drop(w);
    // Opened plainly, the second long scan builds the 8-bit rows itself; shared, a
    // thread of the snapshot's own builds them while scans read the f32 rows.
    for shared in [false, true] {
        let snap = Snapshot::open(&path).unwrap();
        let snap = if shared {
            snap.shared()
        } else {
            std::sync::Arc::new(snap)
        };
        scans_give_the_plain_answer(&snap, shared, &mut rng, &centers);
    }
}

fn scans_give_the_plain_answer(snap: &Snapshot, shared: bool, rng: &mut Rng, centers: &[Vec<f32>]) {
    assert_eq!(snap.stats().ann, AnnStatus::Absent);
    // Every row in the snapshot's numbering (documents in order), with its key.
    let rows: Vec<(usize, Vec<f32>, ChunkKey)> = (0..snap.documents().len() as u32)
        .flat_map(|d| {
            let v = snap.doc_vectors(d).unwrap();
            (0..v.len() / DIM).map(move |o| {
                (
                    v[o * DIM..(o + 1) * DIM].to_vec(),
                    ChunkKey::new(d, o as u32),
                )
            })
        })
        .enumerate()
        .map(|(i, (v, k))| (i, v, k))
        .collect();
    let plain = |q: &[f32], k: usize, allowed: &dyn Fn(u32) -> bool| -> Vec<(ChunkKey, u32)> {
        let picked = rows.iter().filter(|r| allowed(r.2.doc));
        excerpt_index::top_k_rows(q, k, picked.map(|r| (r.0, r.1.as_slice())))
            .into_iter()
            .map(|(i, s)| (rows[i].2, s.to_bits()))
            .collect()
    };
    let bits = |hits: Vec<(ChunkKey, f32)>| -> Vec<(ChunkKey, u32)> {
        hits.into_iter().map(|(k, s)| (k, s.to_bits())).collect()
    };
    let mask = DocMask((0..250).map(|d| d % 5 != 0).collect());
    // Twenty rounds, and at least four after the 8-bit rows are there.
    let (mut i, mut ready_at) = (0, None);
    let started = std::time::Instant::now();
    while ready_at.is_none_or(|r: usize| i < (r + 4).max(20)) {
        if ready_at.is_none() && snap.scan_rows_ready() {
            ready_at = Some(i);
        }
        // Built by the second long scan, in it (two rounds of two scans have passed)
        // or soon after on the snapshot's thread.
        if !shared && i == 2 {
            assert!(snap.scan_rows_ready());
        }
        assert!(
            started.elapsed().as_secs() < 120,
            "the 8-bit rows were never built"
        );
        let q = near(rng, centers);
        let k = [1, 10, 100, 300][i % 4];
        i += 1;
        assert_eq!(
            bits(snap.dense_search_exact(&q, k, None)),
            plain(&q, k, &|_| true)
        );
        assert_eq!(
            bits(snap.dense_search_exact(&q, k, Some(&mask))),
            plain(&q, k, &|d| d % 5 != 0),
        );
    }
}
