//! Property tests: every loader and chunker config on arbitrary Unicode input gives a
//! document that validates, partitions the text, respects sections, limits and code
//! blocks.

use excerpt_core::{ChunkerConfig, Document, TokenCounter};
use excerpt_ingest::{
    chunk, load_str, split_sentences, ChunkOptions, DocFormat, IngestError, ParsedDocument,
};
use excerpt_testkit::WordCounter;
use proptest::prelude::*;

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "\\PC{1,12}",
        2 => "[a-z]{1,8}( [a-z]{1,8}){0,6}[.!?]? ",
        1 => Just("\n".to_string()),
        1 => Just("\r\n".to_string()),
        1 => Just("\n\n".to_string()),
        1 => Just("\r".to_string()),
        1 => Just("\t  ".to_string()),
        1 => Just("\n# ".to_string()),
        1 => Just("\n## Title ".to_string()),
        1 => Just("\n### ".to_string()),
        1 => Just("\n```\n".to_string()),
        1 => Just("\n```rust\nfn x() {}\n# not heading\n```\n".to_string()),
        1 => Just("\nSetext\n======\n".to_string()),
        1 => Just("\nSub\n---\n".to_string()),
        1 => "[a-zé日🦀]{40,150}",
        1 => Just("é日本語🦀\u{200d}\u{301}".to_string()),
        1 => Just("---\ntitle: t\n---\n".to_string()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..40).prop_map(|v| v.concat())
}

fn config() -> impl Strategy<Value = ChunkerConfig> {
    prop_oneof![
        (1usize..60).prop_map(|max_tokens| ChunkerConfig::Tokens { max_tokens }),
        (1usize..200).prop_map(|size| ChunkerConfig::Chars { size }),
        Just(ChunkerConfig::Sentence),
        (1usize..60).prop_map(|max_tokens| ChunkerConfig::Section { max_tokens }),
    ]
}

/// Checks every invariant of a chunked document against its parsed source.
fn check(
    parsed: &ParsedDocument,
    doc: &Document,
    config: &ChunkerConfig,
    counter: Option<&WordCounter>,
) -> Result<(), TestCaseError> {
    prop_assert!(doc.validate().is_ok(), "{:?}", doc.validate());
    prop_assert_eq!(&doc.text, &parsed.text);
    let concat: String = (0..doc.chunks.len()).map(|i| doc.chunk_text(i)).collect();
    prop_assert_eq!(&concat, &doc.text);
    prop_assert_eq!(doc.chunks.is_empty(), doc.text.is_empty());
    prop_assert_eq!(doc.sentences.is_empty(), doc.text.is_empty());
    for c in &doc.chunks {
        prop_assert!(doc.text.is_char_boundary(c.range.byte_start));
        prop_assert!(doc.text.is_char_boundary(c.range.byte_end));
        // No chunk crosses any section's own boundary.
        for s in &doc.sections {
            for b in [s.own.byte_start, s.own.byte_end] {
                prop_assert!(
                    !(c.range.byte_start < b && b < c.range.byte_end),
                    "chunk {:?} crosses {}",
                    c.range,
                    b
                );
            }
        }
        if let Some(counter) = counter {
            prop_assert_eq!(c.tokens as usize, counter.count(c.range.slice(&doc.text)));
        } else {
            prop_assert_eq!(c.tokens, 0);
        }
    }
    // Limits.
    let limit_ok = |slice: &str| -> bool {
        match (*config, counter) {
            (
                ChunkerConfig::Tokens { max_tokens } | ChunkerConfig::Section { max_tokens },
                Some(c),
            ) => c.count(slice) <= max_tokens.saturating_sub(2).max(1),
            (
                ChunkerConfig::Tokens { max_tokens } | ChunkerConfig::Section { max_tokens },
                None,
            ) => slice.chars().count() <= max_tokens * 4,
            (ChunkerConfig::Chars { size }, _) => slice.chars().count() <= size.max(1),
            (ChunkerConfig::Sentence, _) => true,
        }
    };
    for c in &doc.chunks {
        let t = c.range.slice(&doc.text);
        prop_assert!(limit_ok(t), "chunk over limit: {:?} ({:?})", t, config);
    }
    // Code blocks that fit (and lie in one region) are never split.
    let bounds: Vec<(usize, usize)> = doc
        .sections
        .iter()
        .map(|s| (s.own.byte_start, s.own.byte_end))
        .collect();
    for &(a, b) in &parsed.atomic {
        let crosses_region = bounds
            .iter()
            .any(|&(s, e)| (a < s && s < b) || (a < e && e < b));
        if crosses_region || !limit_ok(&parsed.text[a..b]) {
            continue;
        }
        for c in &doc.chunks {
            let e = c.range.byte_end;
            prop_assert!(
                !(a < e && e < b),
                "chunk ends at {} inside code block {}..{}",
                e,
                a,
                b
            );
        }
    }
    Ok(())
}

fn all_configs(parsed: &ParsedDocument, config: &ChunkerConfig) -> Result<(), TestCaseError> {
    for counter in [None, Some(&WordCounter)] {
        let dyn_counter = counter.map(|c| c as &dyn TokenCounter);
        let doc = chunk(
            parsed.clone(),
            &ChunkOptions::new(*config).counter(dyn_counter),
        );
        prop_assert!(doc.is_ok(), "{:?}", doc.err());
        if let Ok(doc) = doc {
            check(parsed, &doc, config, counter)?;
        }
    }
    Ok(())
}

fn loaded(format: DocFormat, id: &str, text: &str) -> Result<Vec<ParsedDocument>, TestCaseError> {
    match load_str(format, id, text) {
        Ok(l) => {
            prop_assert!(l.problems.is_empty(), "{:?}", l.problems);
            Ok(l.documents)
        }
        Err(IngestError::Empty { .. }) => Ok(Vec::new()),
        Err(e) => Err(TestCaseError::fail(format!("{e}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn plain_text(text in text(), config in config()) {
        for d in loaded(DocFormat::Text, "t.txt", &text)? {
            prop_assert!(!d.text.contains('\r'));
            all_configs(&d, &config)?;
        }
        // Raw, un-normalised text (as JSONL keeps it), including empty text.
        let raw = ParsedDocument {
            id: "raw".into(),
            title: "raw".into(),
            source: None,
            metadata: Default::default(),
            text: text.clone(),
            sections: Vec::new(),
            atomic: Vec::new(),
            pages: Vec::new(),
        };
        all_configs(&raw, &config)?;
    }

    #[test]
    fn markdown(text in text(), config in config()) {
        for d in loaded(DocFormat::Markdown, "m.md", &text)? {
            // Sections tile the text from the first heading on, in order, nested.
            let mut at = d.sections.first().map_or(d.text.len(), |s| s.own.byte_start);
            for (i, s) in d.sections.iter().enumerate() {
                prop_assert_eq!(s.own.byte_start, at);
                prop_assert!(s.own.byte_end > s.own.byte_start);
                prop_assert_eq!(s.range.byte_start, s.own.byte_start);
                prop_assert!(s.range.byte_end >= s.own.byte_end);
                prop_assert!(!s.path.is_empty());
                if let Some(p) = s.parent {
                    prop_assert!((p as usize) < i);
                    prop_assert!(d.sections[p as usize].range.byte_end >= s.range.byte_end);
                }
                at = s.own.byte_end;
            }
            prop_assert_eq!(at, d.text.len());
            all_configs(&d, &config)?;
        }
    }

    #[test]
    fn html(text in text(), config in config()) {
        let html = format!(
            "<html><head><title>T</title></head><body><h1>{}</h1><p>{}</p><pre>{}</pre><script>{}</script><h2>x</h2>{}</body></html>",
            escape(&text.chars().take(20).collect::<String>()),
            escape(&text),
            escape(&text),
            escape(&text),
            escape(&text),
        );
        for d in loaded(DocFormat::Html, "p.html", &html)? {
            prop_assert_eq!(&d.title, "T");
            all_configs(&d, &config)?;
        }
    }

    #[test]
    fn jsonl(text in text(), config in config()) {
        let line = serde_json::json!({"id": "d1", "title": "D", "text": text}).to_string();
        let src = format!("{line}\n{{bad\n");
        let l = load_str(DocFormat::Jsonl, "c.jsonl", &src);
        prop_assert!(l.is_ok());
        if let Ok(l) = l {
            prop_assert_eq!(l.documents.len(), 1);
            prop_assert_eq!(l.problems.len(), 1);
            prop_assert_eq!(&l.documents[0].text, &text);
            all_configs(&l.documents[0], &config)?;
        }
    }

    #[test]
    fn sentences_partition(text in text()) {
        let s = split_sentences(&text);
        let mut at = 0;
        for &(a, b) in &s {
            prop_assert_eq!(a, at);
            prop_assert!(b > a && text.is_char_boundary(b));
            at = b;
        }
        prop_assert_eq!(at, text.len());
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
