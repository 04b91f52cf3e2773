//! Queries as front ends spell them: [`QuerySpec`] holds the strings a user types
//! (`--strategy rse:precision`, `--fusion minmax:0.3`, `--where team=infra`) or sends as
//! JSON, and [`QuerySpec::to_request`] validates them into a typed [`QueryRequest`]. The
//! CLI and the HTTP server both go through it, so one spelling means one request, and
//! [`context_value`](crate::context_value) gives both the same JSON output.
//!
//! Also here: [`DocumentSummary`] and [`IndexStats`], the listing and statistics values
//! `excerpt docs --json`, `excerpt stats --json` and the server print alike.

use serde::{Deserialize, Serialize};

use excerpt_context::StrategyConfig;
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
    /// ([`Context::timings`](crate::Context::timings)); off by default, so that a
    /// query's output depends on its inputs only.
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
