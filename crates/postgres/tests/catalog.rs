//! The listings of the PostgreSQL backend (document list, one document, statistics,
//! every document with its vectors) against a real PostgreSQL 18 + pgvector from
//! `scripts/postgres.sh` (a database of its own per test). When the server cannot
//! start, the tests say so and pass, unless `EXCERPT_REQUIRE_POSTGRES=1` (CI).

use excerpt_core::{Chunk, Document, ErrorKind, Section, TextRange};
use excerpt_index::IndexConfig;
use excerpt_postgres::{DocumentWrite, PgError, PgIndex};

const DIM: usize = 3;

fn config() -> IndexConfig {
    IndexConfig {
        model_id: "catalog-test".into(),
        dimension: DIM,
        chunker: excerpt_core::ChunkerConfig::default(),
        headers: false,
        contextualizer: None,
        sentence_vectors: None,
    }
}

fn range(text: &str, byte_start: usize, byte_end: usize) -> TextRange {
    TextRange {
        byte_start,
        byte_end,
        char_start: text[..byte_start].chars().count(),
        char_end: text[..byte_end].chars().count(),
    }
}

/// A document cut into chunks (and sentences) at each `|` of `parts`, with one section
/// per part when `sections`.
fn document(id: &str, parts: &[&str], sections: bool, meta: serde_json::Value) -> Document {
    let text: String = parts.concat();
    let mut chunks = Vec::new();
    let mut secs = Vec::new();
    let mut byte = 0;
    for (i, p) in parts.iter().enumerate() {
        let r = range(&text, byte, byte + p.len());
        chunks.push(Chunk {
            ordinal: i as u32,
            range: r,
            section: None,
            tokens: 3,
            context: None,
        });
        if sections {
            secs.push(Section {
                heading: format!("Part {i}"),
                level: 1,
                range: r,
                own: r,
                parent: None,
                path: vec![format!("Part {i}")],
            });
        }
        byte += p.len();
    }
    Document {
        id: id.into(),
        title: format!("Title of {id}"),
        source: Some(format!("docs/{id}")),
        metadata: meta.as_object().cloned().unwrap_or_default(),
        sentences: chunks.iter().map(|c| c.range).collect(),
        hash: excerpt_core::content_hash(&[id.as_bytes(), text.as_bytes()]),
        text: text.into(),
        sections: secs,
        chunks,
        pages: vec![],
    }
}

fn vectors(doc: &Document, seed: f32) -> Vec<f32> {
    (0..doc.chunks.len() * DIM)
        .map(|i| seed + i as f32 / 10.0)
        .collect()
}

fn put(pg: &PgIndex, doc: &Document, vectors: &[f32], sentence_vectors: Option<&[f32]>) {
    let texts: Vec<String> = (0..doc.chunks.len())
        .map(|i| doc.chunk_text(i).to_string())
        .collect();
    let keys: Vec<String> = texts
        .iter()
        .map(|t| excerpt_core::content_hash(&[b"catalog", t.as_bytes()]))
        .collect();
    assert!(pg
        .replace(&DocumentWrite {
            doc,
            vectors,
            embed_keys: &keys,
            indexed: &texts,
            sentence_vectors,
        })
        .expect("replace"));
}

#[test]
fn lists_reads_and_counts_what_was_written() {
    let Some(url) = excerpt_testkit::postgres::database("catalog") else {
        return;
    };
    let mut pg = PgIndex::connect(&url).unwrap();
    // Before the first ingest: an empty list, no document, and stats say no index.
    assert!(pg.list_documents("").unwrap().is_empty());
    assert!(pg.document("a").unwrap().is_none());
    assert!(pg.all_documents().unwrap().is_empty());
    let err = pg.stats().unwrap_err();
    assert!(matches!(err, PgError::NoIndex { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::NotFound);

    pg.ensure_config(&config()).unwrap();
    // Ids whose byte order differs from a linguistic collation's order ("B" < "a" <
    // "b/é" < "é" by bytes), texts with multi-byte characters.
    let docs = [
        document(
            "b/é",
            &["Crème brûlée. ", "Ça va, naïve café."],
            true,
            serde_json::json!({"lang": "fr", "n": 2}),
        ),
        document("B", &["Upper case id first."], false, serde_json::json!({})),
        document(
            "a",
            &["One. ", "Two 二. ", "Three."],
            false,
            serde_json::json!({"k": [1, 2]}),
        ),
        document("é", &["Last by bytes."], true, serde_json::json!({})),
    ];
    let mut written = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let v = vectors(d, i as f32);
        let sv = (d.id == "a").then(|| vec![0.5f32; d.sentences.len() * DIM]);
        put(&pg, d, &v, sv.as_deref());
        written.push((d.clone(), v));
    }
    written.sort_by(|a, b| a.0.id.cmp(&b.0.id));

    let list = pg.list_documents("").unwrap();
    let ids: Vec<&str> = list.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["B", "a", "b/é", "é"]);
    for (l, (d, _)) in list.iter().zip(&written) {
        assert_eq!(l.title, d.title);
        assert_eq!(l.source, d.source);
        assert_eq!(l.chars, d.text.chars().count(), "{}", d.id);
        assert_eq!(l.bytes, d.text.len(), "{}", d.id);
        assert_eq!(l.chunks, d.chunks.len());
        assert_eq!(l.sections, d.sections.len());
        assert_eq!(l.hash, d.hash);
        assert_eq!(l.metadata, d.metadata);
    }
    // A prefix is literal: `_` and `%` match only themselves.
    let only: Vec<String> = pg
        .list_documents("b/")
        .unwrap()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(only, ["b/é"]);
    assert!(pg.list_documents("_").unwrap().is_empty());
    assert!(pg.list_documents("%").unwrap().is_empty());

    for (d, _) in &written {
        assert_eq!(pg.document(&d.id).unwrap().as_ref(), Some(d));
    }
    assert!(pg.document("missing").unwrap().is_none());

    let all = pg.all_documents().unwrap();
    assert_eq!(all.len(), written.len());
    for ((d, v), (wd, wv)) in all.iter().zip(&written) {
        assert_eq!(d, wd);
        assert_eq!(v, wv, "{}", d.id);
    }

    let s = pg.stats().unwrap();
    assert_eq!(s.documents, 4);
    assert_eq!(s.chunks, 2 + 1 + 3 + 1);
    assert_eq!(
        s.text_bytes,
        written.iter().map(|(d, _)| d.text.len()).sum::<usize>()
    );
    assert_eq!(s.sentence_vectors, 3);
    assert_eq!(s.sentence_vector_documents, 1);
    assert!(s.disk_bytes > 0);

    // A delete shows in every listing.
    pg.delete(&["a".to_string()]).unwrap();
    let s = pg.stats().unwrap();
    assert_eq!((s.documents, s.chunks, s.sentence_vectors), (3, 4, 0));
    assert_eq!(pg.list_documents("").unwrap().len(), 3);
    assert!(pg.document("a").unwrap().is_none());
    assert_eq!(pg.all_documents().unwrap().len(), 3);
}
