//! Renderers of a [`Context`]: JSON (the value), Markdown (for people) and the structured
//! plain-text context (for LLMs).
//!
//! Order: renderers never re-rank. They show `Context::pieces` in order, grouping pieces
//! of one document under one header (documents in order of first appearance, pieces in
//! their relative order). Strategies emit pieces grouped by document — documents by best
//! piece score, pieces in reading order — unless the context is ordered best first
//! ([`PieceOrder::Score`]), and the default closing instruction says which.

use crate::context::{Context, Piece, PieceOrder};

/// The default closing instruction of [`render_text`].
pub const DEFAULT_CLOSING_INSTRUCTION: &str =
    "Use the excerpts above to answer the user's question. \
They are exact quotations, shown in reading order within each document. If the answer is spread \
across several excerpts or documents, synthesize them into one coherent answer, and say so if \
the excerpts do not contain it.";

/// What [`DEFAULT_CLOSING_INSTRUCTION`] becomes for a context ordered best first
/// ([`PieceOrder::Score`]): it must not claim reading order.
pub const SCORE_ORDER_CLOSING_INSTRUCTION: &str =
    "Use the excerpts above to answer the user's question. \
They are exact quotations, the most relevant first. If the answer is spread across several \
excerpts or documents, synthesize them into one coherent answer, and say so if the excerpts do \
not contain it.";

/// Options of [`render_text`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderOptions {
    /// Appended after the context; `None` for none. Defaults to
    /// [`DEFAULT_CLOSING_INSTRUCTION`].
    pub closing_instruction: Option<String>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            closing_instruction: Some(DEFAULT_CLOSING_INSTRUCTION.to_string()),
        }
    }
}

/// Pieces grouped by document, in order of first appearance.
fn groups(ctx: &Context) -> Vec<Vec<&Piece>> {
    let mut out: Vec<Vec<&Piece>> = Vec::new();
    for p in &ctx.pieces {
        match out.iter_mut().find(|g| g[0].doc_id == p.doc_id) {
            Some(g) => g.push(p),
            None => out.push(vec![p]),
        }
    }
    out
}

fn chunk_label(p: &Piece) -> String {
    if p.first_chunk == p.last_chunk {
        format!("chunk {}", p.first_chunk)
    } else {
        format!("chunks {}-{}", p.first_chunk, p.last_chunk)
    }
}

/// "p. 3" or "p. 3–4" for a piece of a paged document.
fn page_label(p: &Piece) -> Option<String> {
    match (p.page_start, p.page_end) {
        (Some(a), Some(b)) if b > a => Some(format!("p. {a}–{b}")),
        (Some(a), _) => Some(format!("p. {a}")),
        _ => None,
    }
}

fn percent(r: f32) -> u32 {
    (f64::from(r.clamp(0.0, 1.0)) * 100.0).round() as u32
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The context as Markdown: a summary line, one `##` heading per document, one `###`
/// heading per piece (section, chunk range, character range, relevance), then the notes.
pub fn render_markdown(ctx: &Context) -> String {
    let gs = groups(ctx);
    let mut s = String::from("# Context\n\n");
    s.push_str(&format!(
        "Strategy `{}` · {} from {} · {} of {} tokens\n",
        ctx.strategy,
        plural(ctx.pieces.len(), "excerpt", "excerpts"),
        plural(gs.len(), "document", "documents"),
        ctx.tokens,
        ctx.budget
    ));
    for w in &ctx.warnings {
        s.push_str(&format!("\n> **Warning:** {w}\n"));
    }
    if gs.is_empty() {
        s.push_str("\n*No relevant context found.*\n");
    }
    for (i, g) in gs.iter().enumerate() {
        let d = g[0];
        let title = if d.title.trim().is_empty() {
            &d.doc_id
        } else {
            &d.title
        };
        s.push_str(&format!(
            "\n## {}. {}\n\n`{}`\n",
            i + 1,
            title.trim(),
            d.doc_id
        ));
        for p in g {
            let mut head = Vec::new();
            if !p.section.is_empty() {
                head.push(p.section.clone());
            }
            head.extend(page_label(p));
            head.push(chunk_label(p));
            head.push(format!("chars {}-{}", p.start, p.end));
            head.push(format!("relevance {}%", percent(p.relevance)));
            s.push_str(&format!("\n### {}\n\n", head.join(" · ")));
            s.push_str(p.text.trim_end());
            s.push('\n');
        }
    }
    if !ctx.notes.is_empty() {
        s.push_str("\n## Notes\n\n");
        for n in &ctx.notes {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s
}

/// The structured LLM context: a header, one block per document with a clear
/// boundary and the document's title, a header per piece (section, pages, chunk range,
/// relevance as a percentage), pieces in the context's order, and the closing
/// instruction (if any).
pub fn render_text(ctx: &Context, opts: &RenderOptions) -> String {
    let gs = groups(ctx);
    let mut s = String::from("=== RELEVANT INFORMATION FROM DOCUMENTS ===\n");
    if gs.is_empty() {
        s.push_str("(no relevant information was found)\n=== END OF DOCUMENT CONTEXT ===\n");
        return s;
    }
    s.push_str(&format!(
        "{} from {}\n",
        plural(ctx.pieces.len(), "excerpt", "excerpts"),
        plural(gs.len(), "document", "documents")
    ));
    let n_docs = gs.len();
    for (i, g) in gs.iter().enumerate() {
        let d = g[0];
        let title = if d.title.trim().is_empty() {
            d.doc_id.as_str()
        } else {
            d.title.trim()
        };
        let name = if title == d.doc_id {
            title.to_string()
        } else {
            format!("{title} ({})", d.doc_id)
        };
        s.push_str(&format!(
            "\n--- Document {} of {n_docs}: {name} · {} ---\n",
            i + 1,
            plural(g.len(), "excerpt", "excerpts")
        ));
        for p in g {
            // The document's name is in its block's header line, not repeated per piece.
            let mut head = Vec::new();
            if !p.section.is_empty() {
                head.push(format!("Section: {}", p.section));
            }
            head.extend(page_label(p));
            head.push(chunk_label(p));
            head.push(format!("Relevance: {}%", percent(p.relevance)));
            s.push_str(&format!("\n[{}]\n", head.join(" | ")));
            s.push_str(p.text.trim_end());
            s.push('\n');
        }
        s.push_str(&format!("\n--- End of document {} ---\n", i + 1));
    }
    s.push_str("\n=== END OF DOCUMENT CONTEXT ===\n");
    if let Some(instr) = opts
        .closing_instruction
        .as_deref()
        .filter(|i| !i.trim().is_empty())
    {
        let instr = if ctx.order == PieceOrder::Score && instr == DEFAULT_CLOSING_INSTRUCTION {
            SCORE_ORDER_CLOSING_INSTRUCTION
        } else {
            instr
        };
        s.push('\n');
        s.push_str(instr.trim_end());
        s.push('\n');
    }
    s
}
