//! Text PostgreSQL cannot store: a NUL character (`\0`) is refused in `text` columns and
//! in `jsonb` strings alike, and the server answered it with an internal error. Every
//! value a write or a query sends is checked first, and a NUL is [`PgError::Unstorable`]
//! naming the field (a bad input, not a server fault).

use serde_json::{Map, Value};

use crate::error::PgError;

/// Refuses `text` when PostgreSQL cannot store it; `field` names it in the error.
pub fn check_text(field: &str, text: &str) -> Result<(), PgError> {
    if text.contains('\0') {
        return Err(PgError::Unstorable {
            field: field.to_string(),
        });
    }
    Ok(())
}

/// Refuses a JSON value holding a string or key PostgreSQL cannot store.
pub fn check_json(field: &str, value: &Value) -> Result<(), PgError> {
    match value {
        Value::String(s) => check_text(field, s),
        Value::Array(items) => items.iter().try_for_each(|v| check_json(field, v)),
        Value::Object(map) => check_metadata(field, map),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// Refuses metadata with a key or a value PostgreSQL cannot store; the error names the
/// key (escaped) under `field`.
pub fn check_metadata(field: &str, map: &Map<String, Value>) -> Result<(), PgError> {
    for (key, value) in map {
        let named = format!("{field} key {key:?}");
        check_text(&named, key)?;
        check_json(&named, value)?;
    }
    Ok(())
}

/// Refuses a document PostgreSQL cannot store: its id, title, source, text or metadata
/// holds a NUL. The error names the document and the field.
pub fn check_document(
    id: &str,
    title: &str,
    source: Option<&str>,
    text: &str,
    metadata: &Map<String, Value>,
) -> Result<(), PgError> {
    let field = |name: &str| format!("document {id:?}: {name}");
    check_text("document id", id)?;
    check_text(&field("title"), title)?;
    if let Some(source) = source {
        check_text(&field("source"), source)?;
    }
    check_text(&field("text"), text)?;
    check_metadata(&field("metadata"), metadata)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_is_refused_with_its_field_named() {
        assert!(check_text("query", "plain text").is_ok());
        let e = check_text("query", "a\0b").unwrap_err();
        assert_eq!(e.kind(), excerpt_core::ErrorKind::BadInput);
        assert!(e.to_string().starts_with("query contains a NUL"), "{e}");
        let meta = json!({"team": {"names": ["ok", "b\u{0}d"]}});
        let e = check_metadata("metadata", meta.as_object().unwrap()).unwrap_err();
        assert!(e.to_string().contains("metadata key \"team\""), "{e}");
        let e = check_document("a.md", "T\0", None, "text", &Map::new()).unwrap_err();
        assert!(e.to_string().contains("document \"a.md\": title"), "{e}");
        let e = check_document("a\0.md", "T", None, "text", &Map::new()).unwrap_err();
        assert!(e.to_string().starts_with("document id contains"), "{e}");
    }
}
