//! The format loaders (Markdown, HTML, JSONL) through the public entry point
//! [`load_str`], which decodes and dispatches as for a file.

mod markdown {
    use excerpt_ingest::{load_str, DocFormat, IngestError, ParsedDocument};

    fn md(text: &str) -> ParsedDocument {
        let mut l = load_str(DocFormat::Markdown, "notes/doc.md", text).unwrap();
        l.documents.remove(0)
    }

    #[test]
    fn front_matter_becomes_metadata() {
        let d = md("---\ntitle: My Doc\ntags: [a, b]\n---\n\n# Heading\nBody\n");
        assert_eq!(d.title, "My Doc");
        assert_eq!(d.metadata["tags"], serde_json::json!(["a", "b"]));
        assert_eq!(d.text, "# Heading\nBody\n");
        assert_eq!(d.sections.len(), 1);
        assert_eq!(d.sections[0].own.byte_start, 0);
        assert_eq!(d.id, "notes/doc.md");
    }

    #[test]
    fn refused_front_matter_is_kept_as_text_with_a_warning() {
        for (text, why) in [
            ("---\n- a\n- b\n---\n# H\n\nBody\n", "a list"),
            (
                "---\ntitle: [unclosed\n---\n# H\n\nBody\n",
                "not valid YAML",
            ),
        ] {
            let l = load_str(DocFormat::Markdown, "notes/doc.md", text).unwrap();
            assert_eq!(l.documents[0].text, text, "kept as text");
            assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
            assert!(
                l.warnings[0].starts_with("notes/doc.md: front matter"),
                "{:?}",
                l.warnings
            );
            assert!(l.warnings[0].contains(why), "{:?}", l.warnings);
        }
        let ok = load_str(DocFormat::Markdown, "a.md", "---\ntitle: T\n---\nBody\n").unwrap();
        assert!(ok.warnings.is_empty());
    }

    #[test]
    fn title_falls_back_to_h1_then_stem() {
        assert_eq!(md("intro\n\n## Two\n\n# One *x*\n").title, "One x");
        assert_eq!(md("no headings\n").title, "doc");
        // Front matter that is not a mapping stays in the text.
        let d = md("---\njust text\n---\nbody\n");
        assert!(d.text.starts_with("---"));
    }

    #[test]
    fn setext_and_atx_headings() {
        let text =
            "Intro line\n\nFirst\n=====\n\npara\n\nSecond\n------\n\nmore\n\n### Third ###\nend";
        let d = md(text);
        let heads: Vec<_> = d
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.level))
            .collect();
        assert_eq!(heads, vec![("First", 1), ("Second", 2), ("Third", 3)]);
        assert_eq!(d.sections[0].own.slice(&d.text), "First\n=====\n\npara\n\n");
        assert_eq!(d.sections[2].path, vec!["First", "Second", "Third"]);
        assert_eq!(d.sections[2].own.slice(&d.text), "### Third ###\nend");
        assert_eq!(d.text, text);
    }

    #[test]
    fn hashes_in_code_are_not_headings() {
        let text = "# Real\n\n```sh\n# not a heading\necho hi\n```\n\n    # indented code\n\n## Also real\n";
        let d = md(text);
        let heads: Vec<_> = d.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(heads, vec!["Real", "Also real"]);
        assert_eq!(d.atomic.len(), 1);
        let (a, b) = d.atomic[0];
        assert_eq!(&d.text[a..b], "```sh\n# not a heading\necho hi\n```\n");
    }

    #[test]
    fn quoted_heading_is_not_a_section() {
        let d = md("> # quoted\n\n# top\n");
        assert_eq!(d.sections.len(), 1);
        assert_eq!(d.sections[0].heading, "top");
    }

    #[test]
    fn crlf_normalised_and_front_matter_only_is_empty() {
        let d = md("# A\r\nb\r\n");
        assert_eq!(d.text, "# A\nb\n");
        assert!(matches!(
            load_str(DocFormat::Markdown, "x.md", "---\ntitle: t\n---\n\n"),
            Err(IngestError::Empty { .. })
        ));
    }
}

mod html {
    use excerpt_ingest::{load_str, DocFormat, IngestError, ParsedDocument};

    fn html(src: &str) -> ParsedDocument {
        let mut l = load_str(DocFormat::Html, "site/page.html", src).unwrap();
        l.documents.remove(0)
    }

    #[test]
    fn extracts_blocks_sections_and_title() {
        let d = html(
            "<html><head><title> The  Page </title><style>p{}</style></head><body>\
             <nav><a href=x>Home</a></nav>\
             <p>Intro   text\n with <b>bold</b>.</p><script>var x = 1;</script>\
             <h2>First <i>part</i></h2><p>One</p><ul><li>a</li><li>b</li></ul>\
             <h2>Second</h2><pre>  code\n    indented</pre><table><tr><td>x</td><td>y</td></tr></table>\
             </body></html>",
        );
        assert_eq!(d.title, "The Page");
        assert_eq!(
            d.text,
            "Intro text with bold.\n\nFirst part\n\nOne\n\na\n\nb\n\nSecond\n\n  code\n    indented\n\nx y"
        );
        assert!(!d.text.contains("var x"));
        assert!(!d.text.contains("Home"));
        let heads: Vec<_> = d
            .sections
            .iter()
            .map(|s| (s.heading.as_str(), s.level))
            .collect();
        assert_eq!(heads, vec![("First part", 2), ("Second", 2)]);
        assert_eq!(
            d.sections[0].own.slice(&d.text),
            "First part\n\nOne\n\na\n\nb\n\n"
        );
        assert_eq!(d.atomic.len(), 1);
        let (a, b) = d.atomic[0];
        assert_eq!(&d.text[a..b], "  code\n    indented");
    }

    #[test]
    fn title_from_h1_and_br() {
        let d = html("<body><h1>Main &amp; more</h1>line<br>next</body>");
        assert_eq!(d.title, "Main & more");
        assert_eq!(d.text, "Main & more\n\nline\nnext");
        assert_eq!(d.sections[0].own.byte_start, 0);
    }

    #[test]
    fn only_scripts_is_empty() {
        assert!(matches!(
            load_str(DocFormat::Html, "x.html", "<script>a()</script>"),
            Err(IngestError::Empty { .. })
        ));
    }
}

mod jsonl {
    use excerpt_ingest::{load_str, DocFormat, IngestError};

    #[test]
    fn lines_load_text_exact_and_bad_lines_reported() {
        let src = concat!(
            r#"{"id":"a","title":"A","text":"  Line one\r\n\nline\ttwo  ","metadata":{"k":1}}"#,
            "\n",
            "not json\n",
            "\n",
            r##"{"id":"b","text":"# Head\nbody\n```\n# code\n```\n## Sub\nx"}"##,
            "\r\n",
            r#"{"title":"no id","text":"t"}"#,
            "\n",
            r#"{"id":"a","text":"dup"}"#,
        );
        let l = load_str(DocFormat::Jsonl, "corpus.jsonl", src).unwrap();
        assert_eq!(l.documents.len(), 2);
        let a = &l.documents[0];
        assert_eq!(a.text, "  Line one\r\n\nline\ttwo  ");
        assert_eq!(a.title, "A");
        assert_eq!(a.metadata["k"], 1);
        assert!(a.sections.is_empty());
        let b = &l.documents[1];
        assert_eq!(b.title, "b");
        let heads: Vec<_> = b.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(heads, vec!["Head", "Sub"]);
        assert_eq!(b.atomic.len(), 1);
        let lines: Vec<usize> = l
            .problems
            .iter()
            .map(|p| match p {
                IngestError::JsonlLine { line, .. } => *line,
                _ => 0,
            })
            .collect();
        assert_eq!(lines, vec![2, 5, 6]);
        assert!(l.problems[0]
            .to_string()
            .starts_with("corpus.jsonl:2: invalid JSON"));
    }

    /// Issue 63, lesser note: numeric ids beyond 64 bits were rounded through a float
    /// (`1.2345678901234568e+28`), so that distinct ids collided. Their digits are kept.
    #[test]
    fn numeric_ids_keep_their_literal_digits() {
        let src = concat!(
            r#"{"id":12345678901234567890123456789,"text":"one"}"#,
            "\n",
            r#"{"id":12345678901234567890123456788,"text":"two"}"#,
            "\n",
            r#"{"id":18446744073709551615,"text":"u64"}"#,
            "\n",
            r#"{"id":-7,"text":"negative"}"#,
            "\n",
            r#"{"id":2.50,"text":"fraction"}"#,
        );
        let l = load_str(DocFormat::Jsonl, "ids.jsonl", src).unwrap();
        assert!(l.problems.is_empty(), "{:?}", l.problems);
        let ids: Vec<&str> = l.documents.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "12345678901234567890123456789",
                "12345678901234567890123456788",
                "18446744073709551615",
                "-7",
                "2.50"
            ]
        );
        assert_eq!(l.documents[0].title, "12345678901234567890123456789");
    }

    #[test]
    fn setext_not_a_heading_in_jsonl() {
        let l = load_str(
            DocFormat::Jsonl,
            "c.jsonl",
            r#"{"id":"x","text":"Title\n=====\nbody"}"#,
        )
        .unwrap();
        assert!(l.documents[0].sections.is_empty());
    }
}
