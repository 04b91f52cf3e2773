//! The entry point: [`assemble`] validates the parameters, resolves the hits, hands them
//! to the chosen strategy and packs what it selected into a [`Context`]. The guarantees
//! every strategy keeps are documented on [`assemble`].

use crate::context::{AssembleRequest, Context};
use crate::error::ContextError;
use crate::selection::{resolve_hits, Selection};
use crate::strategies::StrategyConfig;

/// The largest token budget [`assemble`] accepts: a million tokens is far above any
/// model's context window, and bounds the work one request can ask for.
pub const MAX_BUDGET: usize = 1_000_000;

/// Assembles the context for one query with one strategy.
///
/// # Contract (every strategy)
///
/// - Every [`Piece`](crate::Piece) is an exact slice: `piece.text` is the document text
///   between the character offsets `start..end`, and those offsets are the boundaries of
///   chunks `first_chunk..=last_chunk` — except `window` pieces and `rse` pieces with
///   `unit = sentence`, which start and end on sentence boundaries (`first_chunk..=last_chunk` are then the chunks the piece
///   overlaps).
/// - Pieces of one document never overlap and never touch: candidates that overlap or
///   touch are merged into one piece (score and relevance: the maximum of the merged).
/// - `Σ piece.tokens ≤ budget`, where `piece.tokens` is the
///   [`LlmTokens`](crate::LlmTokens) count of the piece's exact text (counted on the
///   merged text, not summed per chunk). With
///   [`AssembleRequest::count_headers`], the headers are counted too (each document's
///   title once, each piece's section path, cut to a bound as every rendering shows
///   them):
///   `Σ piece.tokens + headers = Context::tokens ≤ budget`. Without it the budget covers
///   piece texts only, and a renderer's headers come on top.
/// - Titles and section paths of pieces are cut (with `…`) at
///   [`HEADER_TITLE_MAX_CHARS`](excerpt_core::HEADER_TITLE_MAX_CHARS) and
///   [`HEADER_SECTION_MAX_CHARS`](excerpt_core::HEADER_SECTION_MAX_CHARS) characters.
/// - Nothing is ever truncated. A candidate that does not fit the remaining budget is
///   skipped (`topk`: assembly stops there). So when the budget is smaller than the best
///   chunk, the best chunk is not returned: a smaller candidate that fits may be, and if
///   nothing fits the context is empty with a note saying so.
/// - Order ("the order handed to the LLM", also what the renderers show), as
///   [`Context::order`] says: grouped by document, documents by their best piece score
///   (descending; ties: document position), pieces in reading order within a document
///   ([`PieceOrder::Document`](crate::PieceOrder::Document)); or every piece by its score,
///   best first (ties: document position, then reading order;
///   [`PieceOrder::Score`](crate::PieceOrder::Score)).
/// - Deterministic: same input, same output. Ties between chunks are broken by
///   [`ChunkKey`](excerpt_core::ChunkKey) (document-id order, then reading order); no
///   hash-map iteration order.
/// - Zero hits: an empty context.
///
/// Errors: invalid parameters, a budget of 0 or above [`MAX_BUDGET`], a hit naming a chunk the corpus lacks, a non-finite hit
/// score or relevance, vector dimension mismatches, embedder failures.
pub fn assemble(
    strategy: &StrategyConfig,
    req: &AssembleRequest<'_>,
) -> Result<Context, ContextError> {
    strategy.validate()?;
    if req.budget == 0 || req.budget > MAX_BUDGET {
        return Err(ContextError::BudgetOutOfRange {
            budget: req.budget,
            max: MAX_BUDGET,
        });
    }
    let hits = resolve_hits(req)?;
    let mut notes = Vec::new();
    let assembler = strategy.assembler();
    let budget = assembler.budget(req);
    let mut sel = Selection::new(req.corpus, req.tokens, budget);
    sel.headers.on = req.count_headers;
    if !hits.is_empty() {
        assembler.assemble(&hits, req, &mut sel, &mut notes)?;
        if sel.is_empty() {
            notes.push(match sel.smallest_rejected {
                Some(t) => format!(
                    "nothing fit the budget of {budget} tokens (the smallest candidate needs {t}); pieces are never truncated"
                ),
                None => "no candidate qualified".to_string(),
            });
        } else if sel.rejected > 0 {
            notes.push(format!(
                "{} candidate(s) did not fit the budget of {budget} tokens",
                sel.rejected
            ));
        }
    }
    let order = sel.order;
    let headers = sel.header_tokens();
    let pieces = sel.into_pieces();
    Ok(Context {
        order,
        strategy: strategy.name().to_string(),
        budget: req.budget,
        tokens: pieces.iter().map(|p| p.tokens).sum::<usize>() + headers,
        pieces,
        notes,
        warnings: Vec::new(),
        timings: None,
    })
}
