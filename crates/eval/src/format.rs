//! The context-evaluation file format: `corpus.jsonl`, `queries.jsonl`, `results.jsonl`.
//!
//! All offsets are character offsets (Unicode scalar values, as Python string indices),
//! half-open `[start, end)`. Readers skip blank lines and report the 1-based line number
//! of the first line that does not parse.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::EvalError;

/// One document of `corpus.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusDoc {
    /// Document id, referenced by evidence and results.
    pub id: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The text every offset refers to.
    pub text: String,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

/// One gold span of a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Document id.
    pub doc_id: String,
    /// Character offset of the start.
    #[serde(deserialize_with = "offset")]
    pub start: i64,
    /// Character offset of the end (exclusive).
    #[serde(deserialize_with = "offset")]
    pub end: i64,
}

/// One query of `queries.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryLine {
    /// Query id, referenced by results.
    pub id: String,
    /// The question.
    pub query: String,
    /// A reference answer (unused by the coverage metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Gold spans answering the query.
    pub evidence: Vec<Evidence>,
    /// Documents retrieval is restricted to, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<String>>,
}

/// One piece of context in a results line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultPiece {
    /// Document id.
    pub doc_id: String,
    /// Character offset of the start.
    #[serde(deserialize_with = "offset")]
    pub start: i64,
    /// Character offset of the end (exclusive).
    #[serde(deserialize_with = "offset")]
    pub end: i64,
    /// The text, which must equal `corpus.text[start:end]` (optional in the format).
    /// An explicit `null` is read as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The piece's score (strategy-specific).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// One line of `results.jsonl`: the context returned for one query, pieces in the order
/// they would be handed to an LLM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultLine {
    /// The query's id.
    pub query_id: String,
    /// The strategy that produced the pieces.
    #[serde(default)]
    pub strategy: String,
    /// The pieces.
    #[serde(default)]
    pub pieces: Vec<ResultPiece>,
}

/// Offsets as the reference scorer reads them (`int(x)`): integers, or floats truncated
/// toward zero, or decimal strings.
fn offset<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    use serde::de::Error;
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else if let Some(f) = n.as_f64().filter(|f| f.is_finite() && f.abs() < 9.0e18) {
                Ok(f.trunc() as i64)
            } else {
                Err(D::Error::custom(format!("offset {n} out of range")))
            }
        }
        serde_json::Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| D::Error::custom(format!("offset {s:?} is not an integer"))),
        other => Err(D::Error::custom(format!(
            "offset must be an integer, got {other}"
        ))),
    }
}

/// Reads a JSONL file into `T`s, skipping blank lines. Errors name the file and the
/// 1-based line.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, EvalError> {
    let file = File::open(path).map_err(|e| EvalError::io(path, e))?;
    read_jsonl_from(BufReader::new(file), path)
}

/// Like [`read_jsonl`], from any reader; `path` only names the source in errors.
pub fn read_jsonl_from<T: DeserializeOwned>(
    reader: impl BufRead,
    path: &Path,
) -> Result<Vec<T>, EvalError> {
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| EvalError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&line).map_err(|e| EvalError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        out.push(value);
    }
    Ok(out)
}

/// Reads `corpus.jsonl`.
pub fn read_corpus(path: &Path) -> Result<Vec<CorpusDoc>, EvalError> {
    read_jsonl(path)
}

/// Reads `queries.jsonl`.
pub fn read_queries(path: &Path) -> Result<Vec<QueryLine>, EvalError> {
    read_jsonl(path)
}

/// Reads a `results.jsonl`.
pub fn read_results(path: &Path) -> Result<Vec<ResultLine>, EvalError> {
    read_jsonl(path)
}

/// Writes one value as one JSON line and flushes, so an interrupted run keeps every
/// line it finished.
pub fn write_jsonl_line<T: Serialize>(
    out: &mut impl Write,
    value: &T,
    path: &Path,
) -> Result<(), EvalError> {
    let mut line = serde_json::to_string(value).map_err(|e| EvalError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    line.push('\n');
    out.write_all(line.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| EvalError::io(path, e))
}

/// Writes values as JSONL (one line each).
pub fn write_jsonl<T: Serialize>(path: &Path, values: &[T]) -> Result<(), EvalError> {
    let mut f = std::io::BufWriter::new(File::create(path).map_err(|e| EvalError::io(path, e))?);
    for v in values {
        write_jsonl_line(&mut f, v, path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_all_three_formats() {
        let q: Vec<QueryLine> = read_jsonl_from(
            concat!(
                r#"{"id":"q1","query":"x?","evidence":[{"doc_id":"d","start":1,"end":4}],"scope":["d"]}"#,
                "\n\n",
                r#"{"id":"q2","query":"y?","answer":"a","evidence":[]}"#,
                "\n"
            )
            .as_bytes(),
            Path::new("q.jsonl"),
        )
        .unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(q[0].evidence[0].end, 4);
        assert_eq!(q[0].scope.as_deref(), Some(&["d".to_string()][..]));
        assert_eq!(q[1].answer.as_deref(), Some("a"));

        let r: Vec<ResultLine> = read_jsonl_from(
            r#"{"query_id":"q1","strategy":"rse","pieces":[{"doc_id":"d","start":1.0,"end":"4","text":"abc","score":1.5}]}"#.as_bytes(),
            Path::new("r.jsonl"),
        )
        .unwrap();
        assert_eq!((r[0].pieces[0].start, r[0].pieces[0].end), (1, 4));

        let c: Vec<CorpusDoc> = read_jsonl_from(
            r#"{"id":"d","title":"D","text":"héllo","metadata":{"k":1}}"#.as_bytes(),
            Path::new("c.jsonl"),
        )
        .unwrap();
        assert_eq!(c[0].text, "héllo");
    }

    #[test]
    fn errors_name_the_line() {
        let err = read_jsonl_from::<QueryLine>(
            "\n{\"id\":\"q\",\"query\":\"x\",\"evidence\":[]}\n{\"id\":\"q2\"}\n".as_bytes(),
            Path::new("q.jsonl"),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("q.jsonl:3:"), "{msg}");
        assert!(msg.contains("query"), "{msg}");
    }

    #[test]
    fn result_lines_round_trip_in_the_exact_format() {
        let line = ResultLine {
            query_id: "q".into(),
            strategy: "topk".into(),
            pieces: vec![ResultPiece {
                doc_id: "d".into(),
                start: 0,
                end: 2,
                text: Some("😀é".into()),
                score: Some(0.5),
            }],
        };
        let s = serde_json::to_string(&line).unwrap();
        assert_eq!(
            s,
            r#"{"query_id":"q","strategy":"topk","pieces":[{"doc_id":"d","start":0,"end":2,"text":"😀é","score":0.5}]}"#
        );
        let back: ResultLine = serde_json::from_str(&s).unwrap();
        assert_eq!(back, line);
    }
}
