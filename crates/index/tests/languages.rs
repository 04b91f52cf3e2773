//! Analysis per language on real indexes: a new index finds a word of Chinese or Thai
//! text that splitting on spaces and punctuation would not, and an index made before
//! analysis per language (a committed fixture, written by the previous release) opens,
//! answers and takes new documents with the English analysis it was made with.

use excerpt_analysis::{Analysis, LANGUAGE_KEY};
use excerpt_core::Document;
use excerpt_index::{IndexWriter, Manifest, Snapshot};

mod common;

use common::{config, doc, vectors};

/// `doc` with its language set in its metadata.
fn doc_in(id: &str, language: &str, text: &str) -> Document {
    let mut d = doc(id, text);
    d.metadata.insert(
        LANGUAGE_KEY.into(),
        serde_json::Value::String(language.into()),
    );
    d
}

/// The document ids of the BM25 hits of `query`, best first.
fn found(s: &Snapshot, query: &str) -> Vec<String> {
    s.bm25_search(query, 5, None)
        .unwrap()
        .into_iter()
        .map(|(k, _)| s.doc(k.doc).unwrap().id.clone())
        .collect()
}

#[test]
fn one_word_queries_find_chinese_and_thai_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = IndexWriter::open(dir.path(), config()).unwrap();
    let docs = [
        doc_in(
            "zh",
            "zh",
            "北京是中华人民共和国的首都，也是全国的政治和文化中心。",
        ),
        doc_in("zh-2", "zh", "上海是中国最大的城市和经济中心。"),
        doc_in(
            "th",
            "th",
            "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทยและเป็นเมืองที่ใหญ่ที่สุด",
        ),
        // No language given: detected.
        doc("th-2", "ภาษาไทยเป็นภาษาที่มีระดับเสียงของคำแน่นอนหรือวรรณยุกต์"),
        doc("en", "Paris is the capital of France and its largest city."),
    ];
    for (i, d) in docs.iter().enumerate() {
        w.put(d.clone(), vectors(d, i)).unwrap();
    }
    w.commit().unwrap();
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(found(&s, "首都"), ["zh"]);
    assert_eq!(found(&s, "上海"), ["zh-2"]);
    assert_eq!(found(&s, "ประเทศ"), ["th"]);
    assert_eq!(found(&s, "วรรณยุกต์"), ["th-2"]);
    assert_eq!(found(&s, "capitals")[0], "en");
    // Each document's own language: the Chinese ones are not English-stemmed.
    assert!(s.bm25_terms("首都").unwrap().contains(&"首都".to_string()));
}

/// A copy of the fixture index made before analysis per language: two English
/// documents, `paris` ("Paris is the capital of France. The river Seine runs through
/// the city.") and `owls` ("Owls are hunting birds that sleep by day and fly at night.").
fn index_made_before() -> tempfile::TempDir {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/index-before-languages");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&from, dir.path());
    dir
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn an_index_made_before_languages_opens_and_answers_in_english() {
    let dir = index_made_before();
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.documents().len(), 2);
    assert_eq!(s.bm25_analysis(), Analysis::English);
    assert!(!s.stats().bm25_rebuilt_in_memory);
    // English stems, as the index was made: "running" finds "runs", "owl" "Owls".
    assert_eq!(found(&s, "running"), ["paris"]);
    assert_eq!(found(&s, "owl hunt"), ["owls"]);

    // A writer keeps its analysis: a new document is English-stemmed too.
    let config = Manifest::load(dir.path()).unwrap().unwrap().config;
    let mut w = IndexWriter::open(dir.path(), config).unwrap();
    let d = doc("cats", "Cats were chasing mice in the barns.");
    let mut v = vec![0.0; 384];
    v[0] = 1.0;
    w.put(d, v).unwrap();
    w.commit().unwrap();
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.bm25_analysis(), Analysis::English);
    assert!(!s.stats().bm25_rebuilt_in_memory);
    assert_eq!(found(&s, "chase barn"), ["cats"]);
    assert_eq!(found(&s, "capital"), ["paris"]);
}
