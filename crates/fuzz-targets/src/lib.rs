//! The bodies of the fuzz targets: each takes arbitrary bytes and must return without
//! panicking, hanging or allocating without bound, whatever the bytes. Where the input
//! is accepted, the result must also keep its invariants (a loaded document chunks into
//! exact slices of its text).
//!
//! `fuzz/` (a cargo-fuzz project outside the workspace) calls them from libFuzzer;
//! `scripts/fuzz.sh` runs each for a bounded time. Every input that once crashed a
//! target is kept under `fuzz/regressions/<target>/` and replayed by this crate's test
//! on stable Rust in CI.

#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::OnceLock;

use excerpt_core::{CharIndex, Chunk, ChunkerConfig, Document};
use excerpt_index::{IndexConfig, IndexWriter, Manifest, Snapshot, MANIFEST_FILE};
use excerpt_ingest::{chunk, load_bytes, load_str, ChunkOptions, DocFormat};

/// A fuzz target: takes any bytes, must return normally.
pub type Target = fn(&[u8]);

/// Every target, by the name its fuzz binary and regression folder have.
pub const TARGETS: &[(&str, Target)] = &[
    ("load_text", load_text),
    ("load_markdown", load_markdown),
    ("load_html", load_html),
    ("load_jsonl", load_jsonl),
    ("load_pdf", load_pdf),
    ("query_spec", query_spec),
    ("manifest", manifest),
    ("segment", segment),
];

/// Loads `data` (as UTF-8, lossily) in `format`, then chunks every document and checks
/// that each chunk is an exact, in-bounds slice.
fn load(format: DocFormat, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(loaded) = load_str(format, "fuzz.input", &text) else {
        return;
    };
    for parsed in loaded.documents {
        let doc_text = parsed.text.clone();
        let opts = ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 64 });
        let Ok(doc) = chunk(parsed, &opts) else {
            continue;
        };
        for c in &doc.chunks {
            assert!(c.range.byte_start <= c.range.byte_end);
            assert!(doc_text.get(c.range.byte_start..c.range.byte_end).is_some());
        }
        for s in &doc.sections {
            assert!(doc_text.get(s.range.byte_start..s.range.byte_end).is_some());
        }
    }
}

/// Plain text.
pub fn load_text(data: &[u8]) {
    load(DocFormat::Text, data);
}

/// Markdown with front matter.
pub fn load_markdown(data: &[u8]) {
    load(DocFormat::Markdown, data);
}

/// HTML.
pub fn load_html(data: &[u8]) {
    load(DocFormat::Html, data);
}

/// JSONL.
pub fn load_jsonl(data: &[u8]) {
    load(DocFormat::Jsonl, data);
}

/// PDF bytes through PDFium (when it is installed; without it every input is refused):
/// an accepted PDF has pages partitioning its text and chunks into exact slices.
pub fn load_pdf(data: &[u8]) {
    let Ok(loaded) = load_bytes(DocFormat::Pdf, "fuzz.pdf", data) else {
        return;
    };
    for parsed in loaded.documents {
        let mut at = 0;
        for p in &parsed.pages {
            assert_eq!(p.byte_start, at);
            at = p.byte_end;
        }
        assert_eq!(at, parsed.text.len());
        let opts = ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 64 });
        let doc = chunk(parsed, &opts).expect("a loaded PDF chunks");
        assert_eq!(doc.pages.last().map(|p| p.byte_end), Some(doc.text.len()));
    }
}

/// Query spellings: each line of the input goes through the strategy, fusion and
/// metadata-filter parsers, and the whole input through the JSON query parser.
pub fn query_spec(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = line.parse::<excerpt::StrategyConfig>();
        let _ = excerpt::parse_fusion(line);
        let _ = excerpt_retrieve::MetaCondition::parse(line);
    }
    if let Ok(spec) = serde_json::from_slice::<excerpt::QuerySpec>(data) {
        if let Ok(req) = spec.to_request() {
            let _ = req.retrieval().validate();
        }
    }
}

/// A manifest file holding the input: loading it and opening the index fail cleanly.
pub fn manifest(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    if std::fs::write(dir.path().join(MANIFEST_FILE), data).is_err() {
        return;
    }
    let _ = Manifest::load(dir.path());
    let _ = Snapshot::open(dir.path());
}

/// A small committed index, written once per process, that [`segment`] damages.
fn template() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = IndexConfig {
            model_id: "fuzz-model".into(),
            dimension: 4,
            chunker: ChunkerConfig::Chars { size: 16 },
            headers: false,
            contextualizer: None,
            sentence_vectors: None,
        };
        let mut w = IndexWriter::open(dir.path(), config).expect("a writer");
        for (id, text) in [
            ("a.txt", "apples are red|bananas are yellow"),
            ("b.txt", "cherries|dates"),
        ] {
            let doc = document(id, text);
            let rows = doc.chunks.len();
            let vectors: Vec<f32> = (0..rows * 4)
                .map(|i| if i % 5 == 0 { 1.0 } else { 0.0 })
                .collect();
            w.put(doc, vectors).expect("put");
        }
        w.commit().expect("commit");
        dir
    })
    .path()
}

/// A document cut into chunks after every `|`.
fn document(id: &str, text: &str) -> Document {
    let idx = CharIndex::new(text);
    let mut cuts = vec![0];
    cuts.extend(text.match_indices('|').map(|(i, _)| i + 1));
    cuts.push(text.len());
    let chunks = cuts
        .windows(2)
        .enumerate()
        .map(|(o, w)| Chunk {
            ordinal: o as u32,
            range: idx.range(w[0], w[1]).expect("a range"),
            section: None,
            tokens: 0,
            context: None,
        })
        .collect::<Vec<_>>();
    Document {
        id: id.into(),
        title: id.into(),
        source: None,
        metadata: Default::default(),
        hash: excerpt_core::content_hash(&[id.as_bytes(), text.as_bytes()]),
        text: text.into(),
        sections: vec![],
        sentences: chunks.iter().map(|c| c.range).collect(),
        chunks,
        pages: vec![],
    }
}

/// Copies `from` into `to`, files only, one level of subdirectories.
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}

/// The template index with one segment file replaced by the input: opening it and
/// searching it either works or fails with an error.
pub fn segment(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let index = dir.path().join("idx");
    if copy_dir(template(), &index).is_err() {
        return;
    }
    let Ok(Some(m)) = Manifest::load(&index) else {
        return;
    };
    let Some(seg) = m.segments.first() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(index.join("segments")) else {
        return;
    };
    // Damage every file of the first segment (its documents and its vectors).
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&seg.name) {
            let _ = std::fs::write(e.path(), data);
        }
    }
    if let Ok(s) = Snapshot::open(&index) {
        let _ = s.bm25_search("apples", 10, None);
        let _ = s.dense_search(&[1.0, 0.0, 0.0, 0.0], 10, None);
        for d in s.documents() {
            let _ = d.validate();
        }
    }
}
