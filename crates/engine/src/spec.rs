//! Queries as front ends spell them: [`QuerySpec`] holds the strings a user types
//! (`--strategy rse:precision`, `--fusion minmax:0.3`, `--where team=infra`) or sends as
//! JSON, and [`QuerySpec::to_request`] validates them into a typed [`QueryRequest`]. The
//! CLI and the HTTP server both go through it, so one spelling means one request, and
//! [`context_value`] gives both the same JSON output.
//!
//! Also here: [`DocumentSummary`] and [`IndexStats`], the listing and statistics values
//! `excerpt docs --json`, `excerpt stats --json` and the server print alike.

use serde::{Deserialize, Serialize};

use excerpt_context::{Context, StrategyConfig};
pub use excerpt_core::DocumentSummary;
pub use excerpt_retrieve::Mode;
use excerpt_retrieve::{Filter, FusionMethod, MetaCondition, RetrieveRequest};

use crate::EngineError;

/// One query: what to search, how, where, and how to assemble the context.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryRequest {
    /// The query text.
    pub text: String,
    /// First-stage retrieval.
    #[serde(default)]
    pub mode: Mode,
    /// Candidates each search returns before fusion.
    #[serde(default = "default_candidates")]
    pub candidates: usize,
    /// Hits handed to the strategy (`None`: all fused candidates).
    #[serde(default)]
    pub top_k: Option<usize>,
    /// How dense and BM25 lists are fused in hybrid mode.
    #[serde(default)]
    pub fusion: FusionMethod,
    /// Which documents may be returned.
    #[serde(default)]
    pub filter: Filter,
    /// How the context is assembled.
    #[serde(default)]
    pub strategy: StrategyConfig,
    /// LLM tokens for the whole context.
    #[serde(default = "default_budget")]
    pub budget: usize,
    /// Rerank this many of the best fused candidates with the engine's reranker (which
    /// must be configured); their reranker scores become score and relevance, the rest
    /// are dropped. `None`: no reranking.
    #[serde(default)]
    pub rerank_top: Option<usize>,
    /// Whether the context reports where the query's time went
    /// ([`Context::timings`]); off by default, so that a query's output depends on its
    /// inputs only.
    #[serde(default)]
    pub timings: bool,
}

fn default_candidates() -> usize {
    100
}
fn default_budget() -> usize {
    2000
}

impl QueryRequest {
    /// A request with defaults for everything but the text.
    pub fn new(text: impl Into<String>) -> Self {
        QueryRequest {
            text: text.into(),
            mode: Mode::default(),
            candidates: default_candidates(),
            top_k: None,
            fusion: FusionMethod::default(),
            filter: Filter::default(),
            strategy: StrategyConfig::default(),
            budget: default_budget(),
            rerank_top: None,
            timings: false,
        }
    }

    /// The retrieval stage's part of the request.
    pub fn retrieval(&self) -> RetrieveRequest<'_> {
        RetrieveRequest {
            text: &self.text,
            mode: self.mode,
            candidates: self.candidates,
            top_k: self.top_k,
            fusion: self.fusion,
            filter: &self.filter,
            rerank_top: self.rerank_top,
        }
    }
}

/// Which documents a query may return, as spelled by a user.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilterSpec {
    /// Only these document ids (any of them).
    #[serde(default)]
    pub doc_ids: Vec<String>,
    /// Only documents whose id starts with one of these prefixes.
    #[serde(default)]
    pub prefixes: Vec<String>,
    /// Metadata conditions, all of which must hold: `key=value`, `key=a|b`, `key>=n`,
    /// `key<=n`, `key=n..m` (see [`MetaCondition::parse`]).
    #[serde(default, rename = "where")]
    pub conditions: Vec<String>,
}

impl FilterSpec {
    /// The typed filter; a condition that does not parse is a bad request.
    pub fn to_filter(&self) -> Result<Filter, EngineError> {
        let metadata = self
            .conditions
            .iter()
            .map(|c| MetaCondition::parse(c).map_err(EngineError::BadRequest))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Filter {
            doc_ids: self.doc_ids.clone(),
            path_prefixes: self.prefixes.clone(),
            metadata,
        })
    }
}

/// One query as spelled by a user: every field but `query` is optional and takes the
/// [`QueryRequest::new`] default when absent. Unknown fields are refused when parsed from
/// JSON, so a typo is an error rather than a silently ignored option.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySpec {
    /// The query text.
    #[cfg_attr(feature = "openapi", schema(pattern = r"\S"))]
    pub query: String,
    /// `dense`, `bm25` or `hybrid` (default).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(pattern = "^(dense|bm25|hybrid)$"))]
    pub mode: Option<String>,
    /// Context strategy: `auto` (default), `rse`, `rse:precision`, `topk`, `adjacent`,
    /// `window`, `section`, with optional `:key=value,...` parameters.
    #[serde(default)]
    pub strategy: Option<String>,
    /// LLM tokens for the whole context (default 2000).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1_000_000))]
    pub budget: Option<usize>,
    /// Hits handed to the strategy (default: every fused candidate).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10_000))]
    pub top_k: Option<usize>,
    /// Candidates each search returns before fusion (default 100).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10_000))]
    pub candidates: Option<usize>,
    /// Fusion in hybrid mode: `rrf[:K]` (default `rrf:60`), `minmax[:ALPHA]`,
    /// `dbsf[:ALPHA]`.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = r"^(rrf(:[1-9][0-9]{0,5})?|(minmax|min_max|dbsf)(:(0(\.[0-9]{1,6})?|1(\.0{1,6})?))?)$"
        )
    )]
    pub fusion: Option<String>,
    /// Which documents may be returned.
    #[serde(default)]
    pub filter: FilterSpec,
    /// Rerank this many of the best fused candidates with the configured reranker.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10_000))]
    pub rerank: Option<usize>,
    /// Report where the query's time went (embedding, searches, fusion, feedback terms,
    /// assembly) in the context's (or the answer's) `timings`, in milliseconds.
    #[serde(default)]
    pub timings: bool,
}

impl QuerySpec {
    /// A spec with defaults for everything but the text.
    pub fn new(query: impl Into<String>) -> QuerySpec {
        QuerySpec {
            query: query.into(),
            ..QuerySpec::default()
        }
    }

    /// Validates the strings into a typed request. Every error is
    /// [`EngineError::BadRequest`] with a message naming the bad value. (Whether the
    /// query text is empty or the filter names unknown documents is checked by
    /// [`crate::Engine::query`], which sees the index.)
    pub fn to_request(&self) -> Result<QueryRequest, EngineError> {
        let mut req = QueryRequest::new(self.query.clone());
        if let Some(m) = &self.mode {
            req.mode = m.parse::<Mode>().map_err(EngineError::BadRequest)?;
        }
        if let Some(s) = &self.strategy {
            req.strategy = s
                .parse::<StrategyConfig>()
                .map_err(|e| EngineError::BadRequest(e.to_string()))?;
        }
        if let Some(f) = &self.fusion {
            req.fusion = parse_fusion(f)?;
        }
        if let Some(b) = self.budget {
            req.budget = b;
        }
        if let Some(c) = self.candidates {
            req.candidates = c;
        }
        req.top_k = self.top_k;
        req.rerank_top = self.rerank;
        req.timings = self.timings;
        req.filter = self.filter.to_filter()?;
        Ok(req)
    }
}

/// Parses `rrf[:K]`, `minmax[:ALPHA]` (also `min_max`), `dbsf[:ALPHA]`; `ALPHA` weights
/// the dense list. The parameters are validated ([`FusionMethod::validate`]).
pub fn parse_fusion(s: &str) -> Result<FusionMethod, EngineError> {
    s.parse()
        .map_err(|e: excerpt_retrieve::FusionError| EngineError::BadRequest(e.to_string()))
}

/// The JSON value of a context as `excerpt query --format json` prints it and the
/// server returns it: the [`Context`] fields plus `query`.
pub fn context_value(query: &str, ctx: &Context) -> serde_json::Value {
    let mut v = serde_json::to_value(ctx).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(o) = v.as_object_mut() {
        o.insert("query".into(), serde_json::Value::String(query.to_string()));
    }
    v
}

/// [`context_value`] written out as compact JSON, the bytes `serde_json::to_vec` gives
/// for it, without building the value first: the server answers every query this way.
///
/// The value is a map, so its keys come out in byte order at every level, and each
/// `f32` is written as the `f64` it widens to; the fields are taken apart by name, so a
/// field added to [`Context`] or [`Piece`](excerpt_core::Piece) does not compile here
/// until it is written.
pub fn context_json(query: &str, ctx: &Context) -> Vec<u8> {
    use excerpt_core::{Piece, PieceOrder, Timings};
    // Scalars are written by serde_json itself, so they are spelled as the value's are
    // (a float that is not finite is `null`, as `to_value` makes it).
    fn put<T: Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, v: &T, first: bool) {
        if !first {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        serde_json::to_writer(&mut *out, v).expect("writing to a Vec cannot fail");
    }
    let Context {
        strategy,
        budget,
        tokens,
        pieces,
        order,
        notes,
        warnings,
        timings,
    } = ctx;
    let text_bytes: usize = pieces.iter().map(|p| p.text.len()).sum();
    let mut out = Vec::with_capacity(512 + text_bytes + text_bytes / 8 + 256 * pieces.len());
    out.push(b'{');
    put(&mut out, "budget", budget, true);
    if !notes.is_empty() {
        put(&mut out, "notes", notes, false);
    }
    put(
        &mut out,
        "order",
        match order {
            PieceOrder::Document => "document",
            PieceOrder::Score => "score",
        },
        false,
    );
    out.extend_from_slice(b",\"pieces\":[");
    for (i, piece) in pieces.iter().enumerate() {
        let Piece {
            doc_id,
            title,
            section,
            start,
            end,
            first_chunk,
            last_chunk,
            text,
            score,
            relevance,
            tokens,
            hits,
            page_start,
            page_end,
        } = piece;
        if i > 0 {
            out.push(b',');
        }
        out.push(b'{');
        put(&mut out, "doc_id", doc_id, true);
        put(&mut out, "end", end, false);
        put(&mut out, "first_chunk", first_chunk, false);
        put(&mut out, "hits", hits, false);
        put(&mut out, "last_chunk", last_chunk, false);
        if let Some(p) = page_end {
            put(&mut out, "page_end", p, false);
        }
        if let Some(p) = page_start {
            put(&mut out, "page_start", p, false);
        }
        put(&mut out, "relevance", &f64::from(*relevance), false);
        put(&mut out, "score", &f64::from(*score), false);
        put(&mut out, "section", section, false);
        put(&mut out, "start", start, false);
        put(&mut out, "text", text, false);
        put(&mut out, "title", title, false);
        put(&mut out, "tokens", tokens, false);
        out.push(b'}');
    }
    out.push(b']');
    put(&mut out, "query", query, false);
    put(&mut out, "strategy", strategy, false);
    if let Some(t) = timings {
        let Timings {
            embed_ms,
            lexical_ms,
            dense_ms,
            fusion_ms,
            rerank_ms,
            feedback_ms,
            assembly_ms,
            total_ms,
        } = t;
        out.extend_from_slice(b",\"timings\":{");
        put(&mut out, "assembly_ms", assembly_ms, true);
        put(&mut out, "dense_ms", dense_ms, false);
        put(&mut out, "embed_ms", embed_ms, false);
        put(&mut out, "feedback_ms", feedback_ms, false);
        put(&mut out, "fusion_ms", fusion_ms, false);
        put(&mut out, "lexical_ms", lexical_ms, false);
        put(&mut out, "rerank_ms", rerank_ms, false);
        put(&mut out, "total_ms", total_ms, false);
        out.push(b'}');
    }
    put(&mut out, "tokens", tokens, false);
    if !warnings.is_empty() {
        put(&mut out, "warnings", warnings, false);
    }
    out.push(b'}');
    out
}

/// Figures about the committed index.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct IndexStats {
    /// The index directory, or the PostgreSQL URL (password hidden).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub index: std::path::PathBuf,
    /// Committed generation (0 on PostgreSQL, which has no generations).
    pub generation: u64,
    /// Live documents.
    pub documents: usize,
    /// Live chunks.
    pub chunks: usize,
    /// Bytes of document text.
    pub text_bytes: usize,
    /// Segments (0 on PostgreSQL).
    pub segments: usize,
    /// Bytes the index directory takes on disk; on PostgreSQL, what the index's tables
    /// take with their indexes and TOAST (`pg_total_relation_size`).
    pub disk_bytes: u64,
    /// Embedding model id.
    pub model: String,
    /// Vector dimension.
    pub dimension: usize,
    /// Chunker, as `excerpt ingest --chunker` spells it.
    pub chunker: String,
    /// Whether chunk headers are embedded and searched.
    pub headers: bool,
    /// Sentence vectors stored (`ingest --sentence-vectors`), and how many documents
    /// have them.
    pub sentence_vectors: usize,
    /// Documents with stored sentence vectors.
    pub sentence_vector_documents: usize,
    /// Whether some of the index cannot be read (`excerpt repair` fixes it). Always
    /// false on PostgreSQL, which checks its own storage (`pg_amcheck`).
    pub damaged: bool,
    /// What cannot be read, one line each (empty when not damaged).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<String>,
    /// Ids of the documents that cannot be read, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unavailable_documents: Vec<String>,
    /// Documents that cannot be read whose ids are unknown.
    #[serde(skip_serializing_if = "is_zero")]
    pub unavailable_unnamed: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `context_json` gives the bytes of `context_value`, with and without every field
    /// that may be left out, for scores of every kind and text that needs escaping.
    #[test]
    fn context_json_is_the_value_written_out() {
        use excerpt_core::{Piece, PieceOrder, Timings};
        let piece = |i: u32, score: f32, pages: Option<(u32, u32)>| Piece {
            doc_id: format!("dir/doc {i}.md"),
            title: "Title \"quoted\" \u{e9}t\u{e9}".into(),
            section: if i.is_multiple_of(2) {
                String::new()
            } else {
                "A > B".into()
            },
            start: 10 * i as usize,
            end: 10 * i as usize + 7,
            first_chunk: i,
            last_chunk: i + 2,
            text: "line one\n\ttab \\ back\u{1}slash \u{1f600} \u{2028}".into(),
            score,
            relevance: score.clamp(0.0, 1.0),
            tokens: 3 + i as usize,
            hits: (0..i).collect(),
            page_start: pages.map(|p| p.0),
            page_end: pages.map(|p| p.1),
        };
        let full = Context {
            strategy: "auto".into(),
            budget: 1000,
            tokens: 27,
            pieces: vec![
                piece(0, 0.1, None),
                piece(1, 0.48360804, Some((3, 4))),
                piece(2, f32::MAX, Some((1, 1))),
                piece(3, -0.0, None),
                piece(4, f32::NAN, None),
                piece(5, f32::INFINITY, None),
                piece(6, 1e-42, None),
            ],
            order: PieceOrder::Score,
            notes: vec!["a note".into(), "another: \"x\"".into()],
            warnings: vec!["damaged segment".into()],
            timings: Some(Timings {
                embed_ms: 6.123,
                lexical_ms: 3.0,
                dense_ms: 0.8,
                fusion_ms: 0.15,
                rerank_ms: 0.0,
                feedback_ms: 1.234567,
                assembly_ms: 0.9,
                total_ms: 1e-3,
            }),
        };
        let bare = Context {
            pieces: Vec::new(),
            order: PieceOrder::Document,
            notes: Vec::new(),
            warnings: Vec::new(),
            timings: None,
            ..full.clone()
        };
        for (query, ctx) in [("What is \"x\"?\n", &full), ("", &bare)] {
            let want = serde_json::to_vec(&context_value(query, ctx)).unwrap();
            let got = context_json(query, ctx);
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    #[test]
    fn defaults_match_query_request_new() {
        let req = QuerySpec::new("q").to_request().unwrap();
        let def = QueryRequest::new("q");
        assert_eq!(req.mode, def.mode);
        assert_eq!(req.budget, def.budget);
        assert_eq!(req.candidates, def.candidates);
        assert_eq!(req.fusion, def.fusion);
        assert_eq!(req.strategy, def.strategy);
        assert!(req.filter.is_empty());
    }

    #[test]
    fn strings_parse_into_typed_fields() {
        let spec: QuerySpec = serde_json::from_value(serde_json::json!({
            "query": "q", "mode": "bm25", "strategy": "topk", "fusion": "minmax:0.3",
            "budget": 500, "top_k": 3, "candidates": 20,
            "filter": {"doc_ids": ["a"], "prefixes": ["guide/"], "where": ["team=infra", "year>=2020"]}
        }))
        .unwrap();
        let req = spec.to_request().unwrap();
        assert_eq!(req.mode, Mode::Bm25);
        assert_eq!(req.fusion, FusionMethod::MinMax { alpha: 0.3 });
        assert_eq!(req.strategy, "topk".parse::<StrategyConfig>().unwrap());
        assert_eq!((req.budget, req.top_k, req.candidates), (500, Some(3), 20));
        assert_eq!(req.filter.doc_ids, vec!["a"]);
        assert_eq!(req.filter.path_prefixes, vec!["guide/"]);
        assert_eq!(req.filter.metadata.len(), 2);
    }

    #[test]
    fn bad_values_are_bad_requests_naming_the_value() {
        let bad = |spec: QuerySpec, needle: &str| match spec.to_request() {
            Err(EngineError::BadRequest(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected a bad request, got {other:?}"),
        };
        bad(
            QuerySpec {
                strategy: Some("nope".into()),
                ..QuerySpec::new("q")
            },
            "nope",
        );
        bad(
            QuerySpec {
                fusion: Some("rrf:x".into()),
                ..QuerySpec::new("q")
            },
            "\"x\"",
        );
        bad(
            QuerySpec {
                fusion: Some("minmax:2".into()),
                ..QuerySpec::new("q")
            },
            "minmax:2",
        );
        bad(
            QuerySpec {
                fusion: Some("sum".into()),
                ..QuerySpec::new("q")
            },
            "sum",
        );
        bad(
            QuerySpec {
                mode: Some("sparse".into()),
                ..QuerySpec::new("q")
            },
            "sparse",
        );
        let mut spec = QuerySpec::new("q");
        spec.filter.conditions = vec!["no-operator".into()];
        bad(spec, "no-operator");
    }

    #[test]
    fn unknown_json_fields_are_refused() {
        let e = serde_json::from_value::<QuerySpec>(serde_json::json!({"query": "q", "topk": 3}))
            .unwrap_err();
        assert!(e.to_string().contains("topk"), "{e}");
        let e = serde_json::from_value::<QuerySpec>(
            serde_json::json!({"query": "q", "filter": {"team": "infra"}}),
        )
        .unwrap_err();
        assert!(e.to_string().contains("team"), "{e}");
    }
}
