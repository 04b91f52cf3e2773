//! `excerpt query --explain`: [`excerpt::Engine::explain`]'s hits, a line each.

use excerpt::ExplainedHit;

/// One line per hit, for standard error.
pub(super) fn lines(hits: &[ExplainedHit]) -> Vec<String> {
    let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
    hits.iter()
        .map(|h| {
            let scores = h
                .score_relevance
                .map(|s| format!(" (scores {s:.2})"))
                .unwrap_or_default();
            format!(
                "explain: #{} {} chunk {} [{}..{}] relevance {:.2}{scores}, BM25 {}, dense {}; \
                 in context {} of {} chars: {:?}",
                h.rank,
                h.doc_id,
                h.chunk,
                h.start,
                h.end,
                h.relevance,
                rank(h.bm25_rank),
                rank(h.dense_rank),
                h.in_context,
                h.end - h.start,
                h.preview
            )
        })
        .collect()
}
