//! The PostgreSQL backend against a real PostgreSQL 18 + pgvector, started by
//! `scripts/postgres.sh` through `excerpt_testkit::postgres` (each test in a database of
//! its own). When the server cannot start, the tests say so and pass, unless
//! `EXCERPT_REQUIRE_POSTGRES=1` (CI), where that is a failure.

use std::collections::BTreeSet;

use excerpt_core::{Chunk, ChunkKey, Document, ErrorKind, TextRange};
use excerpt_index::IndexConfig;
use excerpt_postgres::{DocumentWrite, PgError, PgIndex};
use excerpt_retrieve::{Filter, MetaCondition, SearchRequest, Store, StoreError};

const DIM: usize = 4;

fn server() -> Option<String> {
    excerpt_testkit::postgres::server()
}

fn fresh_database(tag: &str) -> Option<String> {
    excerpt_testkit::postgres::database(tag)
}

fn config(model: &str) -> IndexConfig {
    IndexConfig {
        model_id: model.into(),
        dimension: DIM,
        chunker: excerpt_core::ChunkerConfig::default(),
        headers: false,
        contextualizer: None,
        sentence_vectors: None,
    }
}

/// A document cut into chunks at each `|` of `parts`.
fn document(id: &str, parts: &[&str], meta: serde_json::Value) -> Document {
    let text: String = parts.concat();
    let mut chunks = Vec::new();
    let (mut byte, mut ch) = (0, 0);
    for (i, p) in parts.iter().enumerate() {
        let n = p.chars().count();
        chunks.push(Chunk {
            ordinal: i as u32,
            range: TextRange {
                byte_start: byte,
                byte_end: byte + p.len(),
                char_start: ch,
                char_end: ch + n,
            },
            section: None,
            tokens: 0,
            context: None,
        });
        byte += p.len();
        ch += n;
    }
    let hash = excerpt_core::content_hash(&[id.as_bytes(), text.as_bytes()]);
    Document {
        id: id.into(),
        title: id.into(),
        source: None,
        metadata: meta.as_object().cloned().unwrap_or_default(),
        sentences: chunks.iter().map(|c| c.range).collect(),
        text: text.into(),
        hash,
        sections: vec![],
        chunks,
        pages: vec![],
    }
}

/// The unit vector along axis `i`.
fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; DIM];
    v[i % DIM] = 1.0;
    v
}

fn put(pg: &PgIndex, doc: &Document, axes: &[usize]) -> bool {
    let vectors: Vec<f32> = axes.iter().flat_map(|&a| axis(a)).collect();
    let texts: Vec<String> = (0..doc.chunks.len())
        .map(|i| doc.chunk_text(i).to_string())
        .collect();
    let keys: Vec<String> = texts
        .iter()
        .map(|t| excerpt_core::content_hash(&[b"m", t.as_bytes()]))
        .collect();
    pg.replace(&DocumentWrite {
        doc,
        vectors: &vectors,
        embed_keys: &keys,
        indexed: &texts,
        sentence_vectors: None,
    })
    .expect("replace")
}

fn ids(pg: &PgIndex, found: &[(ChunkKey, f32)], corpus: &dyn excerpt_core::Corpus) -> Vec<String> {
    let _ = pg;
    found
        .iter()
        .map(|(k, _)| {
            let d = corpus.document(k.doc).expect("hit document fetched");
            format!("{}#{}", d.id, k.ordinal)
        })
        .collect()
}

fn search<'a>(
    dense: Option<&'a [f32]>,
    lexical: Option<&'a str>,
    filter: &'a Filter,
) -> SearchRequest<'a> {
    SearchRequest {
        dense,
        lexical,
        k: 10,
        filter,
    }
}

#[test]
fn ingest_search_replace_and_delete() {
    let Some(url) = fresh_database("basic") else {
        return;
    };
    let mut pg = PgIndex::connect(&url).unwrap();
    assert!(pg.config().is_none());
    pg.ensure_config(&config("m")).unwrap();
    let owls = document(
        "animals/owls.md",
        &["Owls hunt mice at night. ", "Barn owls nest in old barns."],
        serde_json::json!({"year": 2021}),
    );
    let zebras = document(
        "animals/zebras.md",
        &["Zebras graze on grass all day."],
        serde_json::json!({"year": 2019}),
    );
    let notes = document("notes/a_b.md", &["Mice and grass."], serde_json::json!({}));
    assert!(put(&pg, &owls, &[0, 1]));
    assert!(put(&pg, &zebras, &[2]));
    assert!(put(&pg, &notes, &[3]));
    // Unchanged content hash: a no-op.
    assert!(!put(&pg, &owls, &[0, 1]));
    assert_eq!(pg.document_count().unwrap(), 3);

    let all = Filter::default();
    let q = axis(1);
    let found = pg.search(&search(Some(&q), Some("mice"), &all)).unwrap();
    let corpus = found.corpus.as_corpus();
    let dense = ids(&pg, &found.dense, corpus);
    assert_eq!(dense[0], "animals/owls.md#1", "{dense:?}");
    assert!((found.dense[0].1 - 1.0).abs() < 1e-5);
    let lexical: BTreeSet<String> = ids(&pg, &found.lexical, corpus).into_iter().collect();
    assert_eq!(
        lexical,
        BTreeSet::from([
            "animals/owls.md#0".to_string(),
            "notes/a_b.md#0".to_string()
        ])
    );
    // The strategies read chunk vectors and texts from the corpus.
    let key = found.dense[0].0;
    assert_eq!(corpus.chunk_vector(key).unwrap(), axis(1).as_slice());
    assert_eq!(
        corpus.document(key.doc).unwrap().chunk_text(1),
        "Barn owls nest in old barns."
    );

    // Filters: prefix (LIKE characters taken literally), metadata, unknown ids.
    let prefix = Filter {
        path_prefixes: vec!["notes/a_".into()],
        ..Filter::default()
    };
    let found = pg
        .search(&search(Some(&q), Some("mice grass"), &prefix))
        .unwrap();
    let got: BTreeSet<String> = ids(&pg, &found.dense, found.corpus.as_corpus())
        .into_iter()
        .chain(ids(&pg, &found.lexical, found.corpus.as_corpus()))
        .collect();
    assert_eq!(got, BTreeSet::from(["notes/a_b.md#0".to_string()]));
    let literal = Filter {
        path_prefixes: vec!["notes/a%".into()],
        ..Filter::default()
    };
    let found = pg.search(&search(Some(&q), None, &literal)).unwrap();
    assert!(found.dense.is_empty());
    let meta = Filter {
        metadata: vec![MetaCondition::parse("year>=2020").unwrap()],
        ..Filter::default()
    };
    let found = pg
        .search(&search(Some(&axis(2)), Some("grass"), &meta))
        .unwrap();
    let got: BTreeSet<String> = ids(&pg, &found.dense, found.corpus.as_corpus())
        .into_iter()
        .collect();
    assert_eq!(
        got,
        BTreeSet::from([
            "animals/owls.md#0".to_string(),
            "animals/owls.md#1".to_string()
        ])
    );
    assert!(found.lexical.is_empty(), "grass is only in other documents");
    let unknown = Filter {
        doc_ids: vec!["nope.md".into()],
        ..Filter::default()
    };
    match pg.search(&search(Some(&q), None, &unknown)) {
        Err(StoreError::UnknownDocument(id)) => assert_eq!(id, "nope.md"),
        other => panic!("expected an unknown document, got {other:?}"),
    }

    // A changed document replaces every chunk of the old one.
    let owls2 = document(
        "animals/owls.md",
        &["Owls sleep by day."],
        serde_json::json!({}),
    );
    assert!(put(&pg, &owls2, &[3]));
    let found = pg
        .search(&search(Some(&axis(1)), Some("barns"), &all))
        .unwrap();
    assert!(ids(&pg, &found.lexical, found.corpus.as_corpus()).is_empty());
    assert!(!ids(&pg, &found.dense, found.corpus.as_corpus())
        .iter()
        .any(|h| h == "animals/owls.md#1"));

    // Reused vectors are found by embedding-input key.
    let key = excerpt_core::content_hash(&[b"m", b"Owls sleep by day."]);
    let stored = pg.vectors_by_key(std::slice::from_ref(&key)).unwrap();
    assert_eq!(stored[&key], axis(3));

    assert_eq!(
        pg.delete(&["notes/a_b.md".into(), "missing".into()])
            .unwrap(),
        vec!["notes/a_b.md".to_string()]
    );
    assert_eq!(
        pg.document_ids().unwrap(),
        ["animals/owls.md", "animals/zebras.md"]
    );
}

#[test]
fn a_second_connection_refuses_another_model_and_sees_the_config() {
    let Some(url) = fresh_database("config") else {
        return;
    };
    let mut first = PgIndex::connect(&url).unwrap();
    first.ensure_config(&config("model-a")).unwrap();
    let mut second = PgIndex::connect(&url).unwrap();
    assert_eq!(second.config().unwrap().model_id, "model-a");
    assert_eq!(second.model_id(), "model-a");
    let err = second.ensure_config(&config("model-b")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("model-a") && text.contains("model-b"),
        "{text}"
    );
    assert!(!text.contains('\n'));
    assert!(!text.contains(":excerpt@"), "password hidden: {text}");
    second.ensure_config(&config("model-a")).unwrap();
}

#[test]
fn same_document_from_many_writers_never_duplicates() {
    let Some(url) = fresh_database("race") else {
        return;
    };
    let mut pg = PgIndex::connect(&url).unwrap();
    pg.ensure_config(&config("m")).unwrap();
    let pg = std::sync::Arc::new(pg);
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let pg = pg.clone();
            std::thread::spawn(move || {
                for round in 0..5 {
                    let text = format!("version {} ", (i + round) % 3);
                    let doc = document("same.md", &[&text, "tail"], serde_json::json!({}));
                    put(&pg, &doc, &[i, i + 1]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let docs: i64 = client
        .query_one("SELECT count(*) FROM excerpt_documents", &[])
        .unwrap()
        .get(0);
    let chunks: i64 = client
        .query_one("SELECT count(*) FROM excerpt_chunks", &[])
        .unwrap()
        .get(0);
    assert_eq!((docs, chunks), (1, 2));
}

#[test]
fn failures_are_one_line_errors() {
    let Some(base) = server() else {
        return;
    };
    let one_line = |e: &PgError| {
        let t = e.to_string();
        assert!(!t.contains('\n'), "{t}");
        assert!(!t.contains(":excerpt@") && !t.contains(":wrong@"), "{t}");
        t
    };
    // Wrong password.
    let wrong = base.replacen(":excerpt@", ":wrong@", 1);
    let e = PgIndex::connect(&wrong).unwrap_err();
    assert!(matches!(e, PgError::Credentials { .. }), "{e:?}");
    assert!(one_line(&e).contains("refused the credentials"));
    // Nothing listening (a port just freed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = PgIndex::connect(&format!(
        "postgres://excerpt:excerpt@127.0.0.1:{port}/excerpt"
    ))
    .unwrap_err();
    assert!(matches!(e, PgError::Unreachable { .. }), "{e:?}");
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(one_line(&e).contains("cannot reach"));
    // Not a URL the client reads.
    let e = PgIndex::connect("postgres://excerpt:excerpt@127.0.0.1:notaport/x").unwrap_err();
    assert!(matches!(e, PgError::BadUrl { .. }), "{e:?}");

    // A schema newer than this build.
    let url = fresh_database("newer").unwrap();
    PgIndex::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute("UPDATE excerpt_schema SET version = 99")
        .unwrap();
    let e = PgIndex::connect(&url).unwrap_err();
    assert!(matches!(e, PgError::NewerSchema { found: 99, .. }), "{e:?}");
    assert!(one_line(&e).contains("upgrade Excerpt"));

    // A database without pgvector, whose user may not create it.
    let db = fresh_database("novector").unwrap();
    let name = db.rsplit('/').next().unwrap().to_string();
    let role = format!("{name}_user");
    let mut admin = postgres::Client::connect(&db, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN PASSWORD 'pw' NOSUPERUSER;
             GRANT ALL ON SCHEMA public TO {role};"
        ))
        .unwrap();
    let as_user = db.replacen("excerpt:excerpt@", &format!("{role}:pw@"), 1);
    let e = PgIndex::connect(&as_user).unwrap_err();
    assert!(matches!(e, PgError::NoPgvector { .. }), "{e:?}");
    assert!(one_line(&e).contains("pgvector"));
}

#[test]
fn an_empty_database_is_no_index_for_queries() {
    let Some(url) = fresh_database("empty") else {
        return;
    };
    let pg = PgIndex::connect(&url).unwrap();
    let all = Filter::default();
    let err = pg.search(&search(None, Some("x"), &all)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("ingest documents first"));
}

/// The BM25 statistics every write keeps, against a recount from the chunks.
fn statistics_match_a_recount(client: &mut postgres::Client) {
    let stale: i64 = client
        .query_one(
            "SELECT count(*) FROM (
                 SELECT lexeme, df FROM excerpt_lexicon WHERE df <> 0
                 EXCEPT
                 SELECT u.lexeme, count(*) FROM excerpt_chunks c, unnest(c.tsv) AS u GROUP BY 1
             ) AS x",
            &[],
        )
        .unwrap()
        .get(0);
    let missing: i64 = client
        .query_one(
            "SELECT count(*) FROM (
                 SELECT u.lexeme, count(*) FROM excerpt_chunks c, unnest(c.tsv) AS u GROUP BY 1
                 EXCEPT
                 SELECT lexeme, df FROM excerpt_lexicon
             ) AS x",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!((stale, missing), (0, 0), "lexicon differs from a recount");
    let totals = client
        .query_one(
            "SELECT t.chunks = (SELECT count(*) FROM excerpt_chunks),
                    t.tokens = (SELECT coalesce(sum(tokens), 0) FROM excerpt_chunks),
                    (SELECT bool_and(tokens = (SELECT coalesce(sum(coalesce(array_length(x.positions, 1), 1)), 0)
                                               FROM unnest(tsv) AS x)) FROM excerpt_chunks)
             FROM excerpt_totals t",
            &[],
        )
        .unwrap();
    let (c, t, per_chunk): (bool, bool, Option<bool>) =
        (totals.get(0), totals.get(1), totals.get(2));
    assert!(
        c && t && per_chunk.unwrap_or(true),
        "totals differ from a recount"
    );
}

#[test]
fn bm25_statistics_follow_concurrent_replaces_and_deletes() {
    let Some(url) = fresh_database("stats") else {
        return;
    };
    let mut pg = PgIndex::connect(&url).unwrap();
    pg.ensure_config(&config("m")).unwrap();
    let pg = std::sync::Arc::new(pg);
    let words = [
        "contract",
        "party",
        "disclose",
        "notice",
        "term",
        "agreement",
        "confidential",
        "return",
        "destroy",
        "copies",
    ];
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let pg = pg.clone();
            std::thread::spawn(move || {
                for round in 0..12usize {
                    // Writers share document ids and words, so their lexeme rows collide.
                    let id = format!("doc{}.md", (t + round) % 5);
                    if round % 4 == 3 {
                        pg.delete(&[id, format!("doc{}.md", (t + round + 1) % 5)])
                            .unwrap();
                        continue;
                    }
                    let a = words[(t * 3 + round) % words.len()];
                    let b = words[(t + round * 7) % words.len()];
                    let first = format!("{a} {b} {a} round{round} ");
                    let second = format!("{b} writer{t} ");
                    let doc = document(&id, &[&first, &second], serde_json::json!({}));
                    put(&pg, &doc, &[t, round]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    statistics_match_a_recount(&mut client);
    // A query's BM25 reads those statistics: the rarest word ranks first.
    let doc = document(
        "extra.md",
        &["zebra contract ", "contract contract "],
        serde_json::json!({}),
    );
    put(&pg, &doc, &[0, 1]);
    let filter = Filter::default();
    let found = pg
        .search(&search(None, Some("zebra contract"), &filter))
        .unwrap();
    let top = ids(&pg, &found.lexical, found.corpus.as_corpus());
    assert_eq!(top.first().map(String::as_str), Some("extra.md#0"));
    statistics_match_a_recount(&mut client);
}

#[test]
fn a_version_1_database_is_migrated_with_its_statistics() {
    let Some(url) = fresh_database("v1") else {
        return;
    };
    {
        let mut pg = PgIndex::connect(&url).unwrap();
        pg.ensure_config(&config("m")).unwrap();
        put(
            &pg,
            &document(
                "a.md",
                &["alpha beta ", "beta gamma"],
                serde_json::json!({}),
            ),
            &[0, 1],
        );
    }
    // Back to version 1: no statistics tables, no token counts.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(
            "DROP TABLE excerpt_lexicon; DROP TABLE excerpt_totals;
             ALTER TABLE excerpt_chunks DROP COLUMN tokens;
             UPDATE excerpt_schema SET version = 1;",
        )
        .unwrap();
    let pg = PgIndex::connect(&url).unwrap();
    statistics_match_a_recount(&mut client);
    let df: i64 = client
        .query_one("SELECT df FROM excerpt_lexicon WHERE lexeme = 'beta'", &[])
        .unwrap()
        .get(0);
    assert_eq!(df, 2);
    let filter = Filter::default();
    let found = pg.search(&search(None, Some("gamma"), &filter)).unwrap();
    assert_eq!(
        ids(&pg, &found.lexical, found.corpus.as_corpus()),
        ["a.md#1"]
    );
}

#[test]
fn metadata_filters_in_sql_select_every_document_the_conditions_match() {
    let Some(url) = fresh_database("meta") else {
        return;
    };
    let mut pg = PgIndex::connect(&url).unwrap();
    pg.ensure_config(&config("m")).unwrap();
    let metas = [
        serde_json::json!({"year": 2020}),
        serde_json::json!({"year": 2020.0}),
        serde_json::json!({"year": "2020"}),
        serde_json::json!({"year": 2021.5}),
        serde_json::json!({"tags": ["a", "b"]}),
        serde_json::json!({"tags": ["a"]}),
        serde_json::json!({"lang": "en"}),
        serde_json::json!({"lang": "EN", "year": null}),
        serde_json::json!({}),
        serde_json::json!({"nested": {"x": 1, "y": [true]}}),
    ];
    for (i, m) in metas.iter().enumerate() {
        let doc = document(&format!("d{i}.md"), &["alpha text "], m.clone());
        put(&pg, &doc, &[i]);
    }
    let conditions = [
        "year=2020",
        "year=2020.0",
        "year=\"2020\"",
        "year>=2021",
        "year<=2020",
        "year=2020..2021",
        "year=2020|\"2020\"",
        "year=null",
        "tags=[\"a\"]",
        "tags=[\"a\",\"b\"]",
        "lang=en|EN",
        "lang=en",
        "nested={\"x\":1,\"y\":[true]}",
        "nested={\"x\":1}",
        "missing=1",
    ];
    let filter_of = |c: &MetaCondition| Filter {
        metadata: vec![c.clone()],
        ..Default::default()
    };
    for c in conditions {
        let cond = MetaCondition::parse(c).unwrap();
        let expected: Vec<String> = metas
            .iter()
            .enumerate()
            .filter(|(_, m)| cond.matches(m.as_object().unwrap()))
            .map(|(i, _)| format!("d{i}.md#0"))
            .collect();
        let filter = filter_of(&cond);
        let found = pg.search(&search(None, Some("alpha"), &filter)).unwrap();
        let mut got = ids(&pg, &found.lexical, found.corpus.as_corpus());
        got.sort();
        assert_eq!(got, expected, "{c}");
    }
    // The filter narrows in SQL: the GIN index on metadata exists.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let indexed: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'excerpt_documents_metadata'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(indexed, 1);
}

/// Issue 27, row 10: six processes opening a fresh database at once, two failed on
/// `CREATE EXTENSION` (a duplicate key): the extension was created before the migration
/// lock. Now every open succeeds. Several fresh databases, eight opens each, all at once.
#[test]
fn concurrent_opens_of_a_fresh_database_all_succeed() {
    let mut urls = Vec::new();
    for _ in 0..3 {
        let Some(url) = fresh_database("opens") else {
            return;
        };
        urls.push(url);
    }
    for url in urls {
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let (url, start) = (url.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    PgIndex::connect(&url)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        for open in opens {
            let opened = open.join().expect("no panic");
            assert!(opened.is_ok(), "{opened:?}");
        }
    }
}
