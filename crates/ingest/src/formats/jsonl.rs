//! JSONL corpora in the eval format: one `{"id", "title", "text", "metadata"?}` per line.
//! Texts are kept exactly (eval offsets depend on it); ATX headings, if any, become
//! sections without changing the text.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::markdown;
use crate::parsed::{build_sections, Loaded, ParsedDocument};
use crate::IngestError;

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
        // An integer beyond 64 bits (or a fraction) was read as a float, which would
        // print rounded (`1.2345678901234568e+28`), so that distinct ids collide: its
        // literal text is the id.
        Some(Value::Number(n)) if n.is_f64() => literal_id(line)?,
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
    let st = markdown::structure(&text, true);
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
        pages: Vec::new(),
    })
}

/// The literal text of the line's `"id"` (a number), as written.
fn literal_id(line: &str) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct Id<'a> {
        #[serde(borrow)]
        id: &'a serde_json::value::RawValue,
    }
    let raw: Id<'_> = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    Ok(raw.id.get().to_string())
}
