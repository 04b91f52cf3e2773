//! `topk`: hits in rank order, each as its own chunk (touching ones merge), until the
//! first that does not fit — assembly stops there (no skipping to smaller chunks, so the
//! context is always a rank prefix of the hits).

use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, ContextError};
use crate::selection::{chunk_span, Assembler, RHit, Selection};

/// Parameters of [`Strategy::Topk`](crate::Strategy::Topk).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopkParams {
    /// At most this many hits are considered (default 50: more than any budget of a few
    /// thousand tokens holds, so the budget is the real limit).
    pub max_chunks: usize,
}

impl Default for TopkParams {
    fn default() -> Self {
        TopkParams { max_chunks: 50 }
    }
}

impl TopkParams {
    /// `max_chunks ≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_min("topk", "max_chunks", self.max_chunks, 1)
    }
}

impl Assembler for TopkParams {
    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        topk(self, hits, req, sel, notes);
        Ok(())
    }
}

/// See the module documentation.
fn topk(
    p: &TopkParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) {
    for h in hits.iter().take(p.max_chunks) {
        let Some(doc) = req.corpus.document(h.key.doc) else {
            continue;
        };
        let o = h.key.ordinal as usize;
        if !sel.try_add(
            h.key.doc,
            doc,
            chunk_span(doc, o, o),
            h.score,
            h.relevance,
            &[h.key.ordinal],
        ) {
            notes.push(format!(
                "topk: stopped at rank {} (chunk did not fit the remaining budget)",
                h.rank + 1
            ));
            break;
        }
    }
}
