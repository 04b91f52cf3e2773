//! Query scope: which documents a query may return. Evaluated once per query into a
//! [`DocMask`] that both searches apply inside their scan (never a post-filter that
//! silently returns fewer than k).

use excerpt_core::Document;
use excerpt_index::DocMask;
use serde::{Deserialize, Serialize};

/// One condition on a metadata field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum MetaCondition {
    /// The field equals the value (JSON equality; numbers compared as f64).
    Eq {
        /// Field name (top-level key of the metadata object).
        key: String,
        /// The value.
        value: serde_json::Value,
    },
    /// The field equals one of the values.
    OneOf {
        /// Field name.
        key: String,
        /// Allowed values.
        values: Vec<serde_json::Value>,
    },
    /// The field is a number within `[min, max]` (either bound optional).
    Range {
        /// Field name.
        key: String,
        /// Inclusive lower bound.
        min: Option<f64>,
        /// Inclusive upper bound.
        max: Option<f64>,
    },
}

impl MetaCondition {
    /// Whether metadata `meta` satisfies the condition.
    pub fn matches(&self, meta: &serde_json::Map<String, serde_json::Value>) -> bool {
        match self {
            MetaCondition::Eq { key, value } => meta.get(key).is_some_and(|v| json_eq(v, value)),
            MetaCondition::OneOf { key, values } => meta
                .get(key)
                .is_some_and(|v| values.iter().any(|x| json_eq(v, x))),
            MetaCondition::Range { key, min, max } => {
                match meta.get(key).and_then(|v| v.as_f64()) {
                    Some(x) => min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m),
                    None => false,
                }
            }
        }
    }

    /// Parses the CLI form: `key=value`, `key=a|b|c` (one of), `key>=n`, `key<=n`,
    /// `key=n..m` (range). Values are JSON when they parse as JSON, strings otherwise.
    pub fn parse(s: &str) -> Result<MetaCondition, String> {
        let json = |v: &str| {
            serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()))
        };
        // A bound must be a finite number: `NaN` and `inf` parse as f64 but compare
        // with nothing the way a user means.
        let num = |v: &str| match v.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(n),
            _ => Err(format!("{v:?} is not a finite number in {s:?}")),
        };
        let key_of = |k: &str| {
            let key = k.trim();
            if key.is_empty() {
                Err(format!("metadata filter {s:?} has no key"))
            } else {
                Ok(key.to_string())
            }
        };
        if let Some((k, v)) = s.split_once(">=") {
            return Ok(MetaCondition::Range {
                key: key_of(k)?,
                min: Some(num(v)?),
                max: None,
            });
        }
        if let Some((k, v)) = s.split_once("<=") {
            return Ok(MetaCondition::Range {
                key: key_of(k)?,
                min: None,
                max: Some(num(v)?),
            });
        }
        let Some((k, v)) = s.split_once('=') else {
            return Err(format!(
                "metadata filter {s:?}: expected key=value, key=a|b, key>=n, key<=n or key=n..m"
            ));
        };
        let key = key_of(k)?;
        if let Some((a, b)) = v.split_once("..") {
            if let (Ok(a), Ok(b)) = (num(a), num(b)) {
                if a > b {
                    return Err(format!(
                        "metadata filter {s:?}: the range is empty ({a} > {b})"
                    ));
                }
                return Ok(MetaCondition::Range {
                    key,
                    min: Some(a),
                    max: Some(b),
                });
            }
        }
        if v.contains('|') {
            return Ok(MetaCondition::OneOf {
                key,
                values: v.split('|').map(json).collect(),
            });
        }
        Ok(MetaCondition::Eq {
            key,
            value: json(v),
        })
    }
}

fn json_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Which documents a query may return: all conditions must hold (an empty list places
/// no restriction).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// Document ids, any of them.
    #[serde(default)]
    pub doc_ids: Vec<String>,
    /// Prefixes of the document id (the path relative to the ingest root), any of them.
    #[serde(default)]
    pub path_prefixes: Vec<String>,
    /// Metadata conditions, all of them.
    #[serde(default)]
    pub metadata: Vec<MetaCondition>,
}

impl Filter {
    /// True when the filter restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.doc_ids.is_empty() && self.path_prefixes.is_empty() && self.metadata.is_empty()
    }

    /// Whether a document passes.
    pub fn allows(&self, d: &Document) -> bool {
        (self.doc_ids.is_empty() || self.doc_ids.iter().any(|id| id == &d.id))
            && (self.path_prefixes.is_empty()
                || self
                    .path_prefixes
                    .iter()
                    .any(|p| d.id.starts_with(p.as_str())))
            && self.metadata.iter().all(|c| c.matches(&d.metadata))
    }

    /// The mask over `docs`, or `None` when the filter restricts nothing.
    pub fn mask<D: AsRef<Document>>(&self, docs: &[D]) -> Option<DocMask> {
        (!self.is_empty()).then(|| DocMask(docs.iter().map(|d| self.allows(d.as_ref())).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(id: &str, meta: serde_json::Value) -> Document {
        Document {
            id: id.into(),
            title: String::new(),
            source: None,
            metadata: meta.as_object().cloned().unwrap_or_default(),
            text: Default::default(),
            hash: String::new(),
            sections: vec![],
            chunks: vec![],
            sentences: vec![],
            pages: vec![],
        }
    }

    #[test]
    fn conditions() {
        let d = doc(
            "docs/a.md",
            json!({"year": 2021, "lang": "en", "tags": ["x"]}),
        );
        let yes = |s: &str| {
            Filter {
                metadata: vec![MetaCondition::parse(s).unwrap()],
                ..Default::default()
            }
            .allows(&d)
        };
        assert!(yes("year=2021"));
        assert!(yes("year=2021.0"));
        assert!(!yes("year=2020"));
        assert!(yes("lang=en"));
        assert!(yes("lang=fr|en"));
        assert!(!yes("lang=fr|de"));
        assert!(yes("year>=2000"));
        assert!(!yes("year<=2000"));
        assert!(yes("year=2000..2021"));
        assert!(!yes("missing=1"));
        assert!(MetaCondition::parse("nokey").is_err());
        assert!(MetaCondition::parse("=1").is_err());
        assert!(MetaCondition::parse("y>=abc").is_err());

        let f = Filter {
            path_prefixes: vec!["docs/".into()],
            doc_ids: vec![],
            metadata: vec![],
        };
        assert!(f.allows(&d));
        assert!(!f.allows(&doc("src/a.md", json!({}))));
        let mask = f
            .mask(&[
                std::sync::Arc::new(d.clone()),
                std::sync::Arc::new(doc("x", json!({}))),
            ])
            .unwrap();
        assert_eq!(mask.0, vec![true, false]);
        assert!(Filter::default().mask(&[std::sync::Arc::new(d)]).is_none());
    }

    #[test]
    fn malformed_conditions_are_refused() {
        for bad in [
            ">=5",
            "<=5",
            " >= 5",
            "year>=NaN",
            "year<=inf",
            "year>=-inf",
            "y=5..1",
        ] {
            let err = MetaCondition::parse(bad).expect_err(bad);
            assert!(
                err.contains(bad.trim()) || err.contains("has no key"),
                "{bad}: {err}"
            );
        }
        // `..` with non-numbers is an equality on the string, as before.
        assert!(matches!(
            MetaCondition::parse("v=a..b"),
            Ok(MetaCondition::Eq { .. })
        ));
    }
}
