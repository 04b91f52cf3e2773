//! Bodies of `/rerank` endpoints (the Cohere/Jina shape and the bare array of
//! text-embeddings-inference).

use serde_json::{json, Value};

/// The passages of a rerank request: `documents` (Cohere, Jina) or `texts` (TEI),
/// non-string entries as empty strings.
pub fn documents(body: &Value) -> Vec<String> {
    body.get("documents")
        .or_else(|| body.get("texts"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| d.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `(index, score)` for each score, sorted by decreasing score as real servers send
/// them (clients must reorder by index).
fn by_decreasing_score(scores: &[f64]) -> Vec<(usize, f64)> {
    let mut scored: Vec<(usize, f64)> = scores.iter().copied().enumerate().collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

/// The Cohere/Jina response: `{"results": [{"index", "relevance_score"}]}` sorted by
/// decreasing score, with the `id` and `meta` fields real servers add.
pub fn cohere(scores: &[f64]) -> Value {
    json!({
        "id": "fake",
        "results": by_decreasing_score(scores)
            .iter()
            .map(|&(i, s)| json!({"index": i, "relevance_score": s}))
            .collect::<Vec<_>>(),
        "meta": {"billed_units": {"search_units": 1}}
    })
}

/// The text-embeddings-inference response: a bare `[{"index", "score"}]` sorted by
/// decreasing score.
pub fn tei(scores: &[f64]) -> Value {
    Value::Array(
        by_decreasing_score(scores)
            .iter()
            .map(|&(i, s)| json!({"index": i, "score": s}))
            .collect(),
    )
}
