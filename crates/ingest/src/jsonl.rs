//! JSONL corpora in the eval format: one `{"id", "title", "text", "metadata"?}` per line.
//! Texts are kept exactly (eval offsets depend on it); ATX headings, if any, become
//! sections without changing the text.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::load::build_sections;
use crate::{IngestError, Loaded, ParsedDocument};

pub(crate) fn load(path: &Path, source: Option<&str>, text: &str) -> Loaded {
    let mut loaded = Loaded::default();
    let mut seen: HashSet<String> = HashSet::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| IngestError::JsonlLine {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        match parse_line(line, source) {
            Ok(doc) => {
                if seen.insert(doc.id.clone()) {
                    loaded.documents.push(doc);
                } else {
                    loaded
                        .problems
                        .push(bad(format!("duplicate id {:?}", doc.id)));
                }
            }
            Err(m) => loaded.problems.push(bad(m)),
        }
    }
    loaded
}

fn parse_line(line: &str, source: Option<&str>) -> Result<ParsedDocument, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(mut obj) = value else {
        return Err("expected a JSON object".into());
    };
    let id = match obj.remove("id") {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(_)) => return Err("empty \"id\"".into()),
        Some(_) => return Err("\"id\" must be a string".into()),
        None => return Err("missing \"id\"".into()),
    };
    let text = match obj.remove("text") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(format!("document {id:?}: \"text\" must be a string")),
        None => return Err(format!("document {id:?}: missing \"text\"")),
    };
    let title = match obj.remove("title") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(Value::String(_) | Value::Null) | None => id.clone(),
        Some(_) => return Err(format!("document {id:?}: \"title\" must be a string")),
    };
    let metadata = match obj.remove("metadata") {
        Some(Value::Object(m)) => m,
        Some(Value::Null) | None => serde_json::Map::new(),
        Some(_) => return Err(format!("document {id:?}: \"metadata\" must be an object")),
    };
    let st = crate::markdown::structure(&text, true);
    let sections =
        build_sections(&text, st.headings).map_err(|e| format!("document {id:?}: {e}"))?;
    Ok(ParsedDocument {
        id,
        title,
        source: source.map(str::to_string),
        metadata,
        text,
        sections,
        atomic: st.fences,
    })
}

#[cfg(test)]
mod tests {
    use crate::{load_str, DocFormat, IngestError};

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
