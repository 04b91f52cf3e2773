//! The context-evaluation file format: `corpus.jsonl`, `queries.jsonl`, `results.jsonl`.
//!
//! All offsets are character offsets (Unicode scalar values, as Python string indices),
//! half-open `[start, end)`. Readers skip blank lines and report the 1-based line number
//! of the first line that does not parse.
//!
//! Queries come in two formats, told apart per file by [`read_query_set`]:
//! - the **span** format ([`QueryLine`]): evidence as character spans of corpus
//!   documents (`{doc_id, start, end}`), scored by `score_context.py`;
//! - the **page** format ([`PageQueryLine`], as in financebench-dev): one document per
//!   query (`doc`, which also scopes retrieval to it) and evidence as page numbers with
//!   the annotators' text (`{page, text}`), scored by `score_pdf.py`.
//!
//! Results lines carry the query id under both keys the scorers read (`query_id` for
//! `score_context.py`, `id` for `score_pdf.py`), and each piece its pages when the
//! document has pages.

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

/// One piece of page evidence (the page format).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageEvidence {
    /// 1-based page number.
    pub page: i64,
    /// The annotators' extract of the evidence on that page (its spacing need not match
    /// any extractor's; only its words count).
    pub text: String,
}

/// One query of the page format (financebench-dev's `queries.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageQueryLine {
    /// Query id, referenced by results.
    pub id: String,
    /// The question.
    pub query: String,
    /// The document the question is about (a document id of the corpus: for a folder,
    /// the file's path relative to it); retrieval is restricted to it.
    pub doc: String,
    /// Pages holding the evidence, with its text.
    pub evidence: Vec<PageEvidence>,
    /// A reference answer (unused by the coverage metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

impl PageQueryLine {
    /// The query as the runner retrieves it: scoped to [`PageQueryLine::doc`], with no
    /// character-span evidence.
    pub fn to_query_line(&self) -> QueryLine {
        QueryLine {
            id: self.id.clone(),
            query: self.query.clone(),
            answer: self.answer.clone(),
            evidence: Vec::new(),
            scope: Some(vec![self.doc.clone()]),
        }
    }
}

/// A queries file, in one of the two formats.
#[derive(Debug, Clone, PartialEq)]
pub enum QuerySet {
    /// Character-span evidence ([`QueryLine`]).
    Spans(Vec<QueryLine>),
    /// Page evidence ([`PageQueryLine`]).
    Pages(Vec<PageQueryLine>),
}

impl QuerySet {
    /// Number of queries.
    pub fn len(&self) -> usize {
        match self {
            QuerySet::Spans(q) => q.len(),
            QuerySet::Pages(q) => q.len(),
        }
    }

    /// True when there is no query.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The format's name: `"spans"` or `"pages"`.
    pub fn format_name(&self) -> &'static str {
        match self {
            QuerySet::Spans(_) => "spans",
            QuerySet::Pages(_) => "pages",
        }
    }
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
    /// 1-based page holding the piece's first character (documents with pages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_start: Option<u32>,
    /// 1-based page holding the piece's last character (documents with pages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_end: Option<u32>,
}

impl ResultPiece {
    /// A piece known by its place alone: document and character offsets, with no text,
    /// score or pages.
    pub fn place(doc_id: &str, start: usize, end: usize) -> ResultPiece {
        ResultPiece {
            doc_id: doc_id.to_string(),
            start: start as i64,
            end: end as i64,
            text: None,
            score: None,
            page_start: None,
            page_end: None,
        }
    }
}

/// One line of `results.jsonl`: the context returned for one query, pieces in the order
/// they would be handed to an LLM.
///
/// Written with the query id under both `query_id` (read by `score_context.py`) and `id`
/// (read by `score_pdf.py`); read from either key (`query_id` wins when both differ).
#[derive(Debug, Clone, PartialEq)]
pub struct ResultLine {
    /// The query's id.
    pub query_id: String,
    /// The strategy that produced the pieces (empty when the line names none).
    pub strategy: String,
    /// The pieces.
    pub pieces: Vec<ResultPiece>,
}

impl Serialize for ResultLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Line<'a> {
            query_id: &'a str,
            id: &'a str,
            strategy: &'a str,
            pieces: &'a [ResultPiece],
        }
        Line {
            query_id: &self.query_id,
            id: &self.query_id,
            strategy: &self.strategy,
            pieces: &self.pieces,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ResultLine {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Line {
            #[serde(default)]
            query_id: Option<String>,
            #[serde(default)]
            id: Option<String>,
            #[serde(default)]
            strategy: String,
            #[serde(default)]
            pieces: Vec<ResultPiece>,
        }
        let l = Line::deserialize(d)?;
        let query_id = l
            .query_id
            .or(l.id)
            .ok_or_else(|| serde::de::Error::missing_field("query_id"))?;
        Ok(ResultLine {
            query_id,
            strategy: l.strategy,
            pieces: l.pieces,
        })
    }
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

/// The format a queries line is in, by its keys: `None` when it says neither (no
/// `doc`, no `scope`, no evidence item).
fn line_format(v: &serde_json::Value) -> Result<Option<&'static str>, String> {
    let Some(obj) = v.as_object() else {
        return Err("a query must be a JSON object".into());
    };
    let items = obj
        .get("evidence")
        .and_then(serde_json::Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has = |key: &str| items.iter().any(|e| e.get(key).is_some());
    let pages = obj.contains_key("doc") || has("page");
    let spans = obj.contains_key("scope") || has("doc_id") || has("start") || has("end");
    match (pages, spans) {
        (true, true) => Err(
            "mixes the page format (\"doc\", evidence {\"page\", \"text\"}) and the span format \
             (\"scope\", evidence {\"doc_id\", \"start\", \"end\"})"
                .into(),
        ),
        (true, false) => Ok(Some("page")),
        (false, true) => Ok(Some("span")),
        (false, false) => Ok(None),
    }
}

/// Reads a queries file in either format, detected from its lines: a line with a `doc`
/// or evidence items with a `page` is in the page format, one with a `scope` or evidence
/// items with `doc_id`, `start` or `end` in the span format; a line saying neither (no
/// evidence) goes with the others, and a file of such lines only is in the span format.
/// A line mixing the two, or a file whose lines differ in format, is an error naming the
/// lines.
pub fn read_query_set(path: &Path) -> Result<QuerySet, EvalError> {
    let file = File::open(path).map_err(|e| EvalError::io(path, e))?;
    let parse_err = |line: usize, message: String| EvalError::Parse {
        path: path.to_path_buf(),
        line,
        message,
    };
    // (1-based line number, value) of every non-blank line.
    let mut values: Vec<(usize, serde_json::Value)> = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| EvalError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str(&line).map_err(|e| parse_err(i + 1, e.to_string()))?;
        values.push((i + 1, v));
    }
    let mut format: Option<(&'static str, usize)> = None;
    for (n, v) in &values {
        let Some(f) = line_format(v).map_err(|m| parse_err(*n, m))? else {
            continue;
        };
        match format {
            None => format = Some((f, *n)),
            Some((g, first)) if g != f => {
                return Err(parse_err(
                    *n,
                    format!(
                        "this query is in the {f} format but line {first} is in the {g} \
                         format; a queries file holds one format"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    fn all<T: DeserializeOwned>(
        values: Vec<(usize, serde_json::Value)>,
        err: impl Fn(usize, String) -> EvalError,
    ) -> Result<Vec<T>, EvalError> {
        values
            .into_iter()
            .map(|(n, v)| serde_json::from_value(v).map_err(|e| err(n, e.to_string())))
            .collect()
    }
    Ok(match format {
        Some(("page", _)) => QuerySet::Pages(all(values, parse_err)?),
        _ => QuerySet::Spans(all(values, parse_err)?),
    })
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
            pieces: vec![
                ResultPiece {
                    doc_id: "d".into(),
                    start: 0,
                    end: 2,
                    text: Some("😀é".into()),
                    score: Some(0.5),
                    page_start: None,
                    page_end: None,
                },
                ResultPiece {
                    doc_id: "r.pdf".into(),
                    start: 2,
                    end: 3,
                    text: Some("x".into()),
                    score: None,
                    page_start: Some(4),
                    page_end: Some(5),
                },
            ],
        };
        let s = serde_json::to_string(&line).unwrap();
        assert_eq!(
            s,
            concat!(
                r#"{"query_id":"q","id":"q","strategy":"topk","pieces":["#,
                r#"{"doc_id":"d","start":0,"end":2,"text":"😀é","score":0.5},"#,
                r#"{"doc_id":"r.pdf","start":2,"end":3,"text":"x","page_start":4,"page_end":5}]}"#
            )
        );
        let back: ResultLine = serde_json::from_str(&s).unwrap();
        assert_eq!(back, line);
        // Either key names the query; neither is an error.
        let only_id: ResultLine = serde_json::from_str(r#"{"id":"q2","pieces":[]}"#).unwrap();
        assert_eq!(only_id.query_id, "q2");
        assert!(serde_json::from_str::<ResultLine>(r#"{"pieces":[]}"#).is_err());
    }

    fn query_set(text: &str) -> Result<QuerySet, EvalError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        std::fs::write(&path, text).unwrap();
        read_query_set(&path)
    }

    #[test]
    fn query_sets_are_told_apart_by_their_lines() {
        let spans = concat!(
            r#"{"id":"a","query":"x?","evidence":[]}"#,
            "\n",
            r#"{"id":"b","query":"y?","evidence":[{"doc_id":"d","start":0,"end":3}]}"#,
            "\n"
        );
        let QuerySet::Spans(q) = query_set(spans).unwrap() else {
            panic!("span format expected");
        };
        assert_eq!(q.len(), 2);
        let pages = concat!(
            r#"{"id":"f1","query":"x?","doc":"A.pdf","evidence":[{"page":3,"text":"t"}],"answer":"1"}"#,
            "\n\n",
            r#"{"id":"f2","query":"y?","doc":"B.pdf","evidence":[]}"#,
            "\n"
        );
        let set = query_set(pages).unwrap();
        assert_eq!((set.format_name(), set.len()), ("pages", 2));
        let QuerySet::Pages(p) = set else {
            panic!("page format expected");
        };
        assert_eq!(p[0].evidence[0].page, 3);
        let q = p[0].to_query_line();
        assert_eq!(q.scope.as_deref(), Some(&["A.pdf".to_string()][..]));
        assert!(q.evidence.is_empty() && q.answer.as_deref() == Some("1"));
        // Lines without evidence or scope go with the others; none at all: spans.
        assert!(matches!(
            query_set(r#"{"id":"a","query":"x?","evidence":[]}"#).unwrap(),
            QuerySet::Spans(_)
        ));

        let mixed = format!(
            "{}\n{}",
            pages.lines().next().unwrap(),
            spans.lines().nth(1).unwrap()
        );
        let msg = query_set(&mixed).unwrap_err().to_string();
        assert!(msg.contains("q.jsonl:2:"), "{msg}");
        assert!(
            msg.contains("span format but line 1 is in the page format"),
            "{msg}"
        );
        let both = r#"{"id":"a","query":"x?","doc":"A.pdf","evidence":[{"doc_id":"d","start":0,"end":3}]}"#;
        let msg = query_set(both).unwrap_err().to_string();
        assert!(msg.contains("q.jsonl:1:") && msg.contains("mixes"), "{msg}");
        // A page-format line missing a field names its line.
        let msg = query_set(&format!(
            "{}\n{}",
            pages.lines().next().unwrap(),
            r#"{"id":"f3","doc":"A.pdf","evidence":[]}"#
        ))
        .unwrap_err()
        .to_string();
        assert!(msg.contains("q.jsonl:2:") && msg.contains("query"), "{msg}");
    }
}
