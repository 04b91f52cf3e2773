//! `EXCERPT_NO_MMAP=1`: segment files read into memory instead of mapped give the same
//! snapshot. (A test binary of its own: it sets an environment variable of the process.)

use excerpt_core::ChunkKey;
use excerpt_index::{IndexWriter, Snapshot};

mod common;

use common::{config, doc, vectors, DIM};

#[test]
fn files_read_into_memory_give_the_same_snapshot_as_mapped_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    for (i, (id, text)) in [("a", "héllo|wörld"), ("b", "one|two|three"), ("c", "x")]
        .iter()
        .enumerate()
    {
        let d = doc(id, text);
        w.put(d.clone(), vectors(&d, i)).unwrap();
        w.commit().unwrap();
    }
    let d = doc("b", "uno|dos");
    w.put(d.clone(), vectors(&d, 3)).unwrap();
    w.commit().unwrap();

    let mapped = Snapshot::open(dir.path()).unwrap();
    std::env::set_var("EXCERPT_NO_MMAP", "1");
    let copied = Snapshot::open(dir.path()).unwrap();
    std::env::remove_var("EXCERPT_NO_MMAP");

    assert_eq!(mapped.documents().len(), 3);
    assert_eq!(mapped.documents(), copied.documents());
    for (m, c) in mapped.documents().iter().zip(copied.documents()) {
        assert!(m.text.is_in_place() && !c.text.is_in_place(), "{}", m.id);
    }
    for d in 0..3u32 {
        assert_eq!(mapped.doc_vectors(d), copied.doc_vectors(d));
        assert!(mapped.doc_vectors(d).is_some());
    }
    let query = [0.5, 0.5, 0.5, 0.5][..DIM].to_vec();
    assert_eq!(
        mapped.dense_search_exact(&query, 10, None),
        copied.dense_search_exact(&query, 10, None)
    );
    assert_eq!(
        mapped.vector(ChunkKey::new(1, 1)).unwrap(),
        copied.vector(ChunkKey::new(1, 1)).unwrap()
    );
}
