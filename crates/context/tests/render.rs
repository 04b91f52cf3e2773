//! Snapshot tests of the renderers, on a context assembled from a fixed corpus.

mod common;

use common::*;
use excerpt_context::{
    assemble, render_markdown, render_text, AssembleRequest, Context, PieceOrder, RenderOptions,
    StrategyConfig, DEFAULT_CLOSING_INSTRUCTION, SCORE_ORDER_CLOSING_INSTRUCTION,
};

fn context() -> Context {
    let c = TestCorpus::new(vec![
        build_doc(
            "guide/cells.md",
            "Cell segmentation guide",
            &[
                chunk(&["Calcium imaging records neurons. "]),
                sec(
                    1,
                    "Methods",
                    &[
                        "We segment cells with watershed. ",
                        "Images are smoothed first.\n\n",
                    ],
                ),
                sec(2, "Parameters", &["The sigma is 2 pixels. "]),
                sec(1, "Results", &["Segmentation reached 95% recall.\n"]),
            ],
        ),
        build_doc(
            "notes/oasis.md",
            "",
            &[
                chunk(&["OASIS deconvolves traces. "]),
                chunk(&["It is fast — and naïve-friendly. "]),
            ],
        ),
    ]);
    let hits = [hit(0, 1, 0.92), hit(1, 1, 0.61), hit(0, 3, 0.55)];
    let req = AssembleRequest {
        query: "how are cells segmented",
        query_vector: None,
        hits: &hits,
        corpus: &c,
        budget: 200,
        tokens: &WordTokens,
        embedder: None,
        feedback: &[],
        count_headers: false,
    };
    let cfg: StrategyConfig = "topk".parse().expect("known");
    let ctx = assemble(&cfg, &req).expect("assembles");
    // Grouped: guide/cells.md (0.92) with its two pieces in reading order, then oasis.
    let order: Vec<(&str, u32)> = ctx
        .pieces
        .iter()
        .map(|p| (p.doc_id.as_str(), p.first_chunk))
        .collect();
    assert_eq!(
        order,
        vec![
            ("guide/cells.md", 1),
            ("guide/cells.md", 3),
            ("notes/oasis.md", 1)
        ]
    );
    ctx
}

#[test]
fn text_rendering() {
    insta::assert_snapshot!("text", render_text(&context(), &RenderOptions::default()));
}

#[test]
fn text_rendering_without_instruction() {
    let s = render_text(
        &context(),
        &RenderOptions {
            closing_instruction: None,
        },
    );
    assert!(s.ends_with("=== END OF DOCUMENT CONTEXT ===\n"));
}

#[test]
fn the_closing_instruction_claims_reading_order_only_when_it_holds() {
    let mut ctx = context();
    let s = render_text(&ctx, &RenderOptions::default());
    assert!(s.ends_with(&format!("{DEFAULT_CLOSING_INSTRUCTION}\n")));
    ctx.order = PieceOrder::Score;
    let s = render_text(&ctx, &RenderOptions::default());
    assert!(s.ends_with(&format!("{SCORE_ORDER_CLOSING_INSTRUCTION}\n")));
    assert!(!s.contains("reading order"));
    // An instruction of the caller's own is never rewritten.
    let own = RenderOptions {
        closing_instruction: Some("Answer briefly.".into()),
    };
    assert!(render_text(&ctx, &own).ends_with("Answer briefly.\n"));
}

#[test]
fn empty_text_rendering() {
    let ctx = Context {
        strategy: "adjacent".into(),
        budget: 100,
        tokens: 0,
        pieces: vec![],
        order: Default::default(),
        notes: vec![],
        warnings: vec![],
        timings: None,
    };
    insta::assert_snapshot!("text_empty", render_text(&ctx, &RenderOptions::default()));
}

#[test]
fn markdown_rendering() {
    insta::assert_snapshot!("markdown", render_markdown(&context()));
}

#[test]
fn json_rendering() {
    let ctx = context();
    // The serde value of the context (what the engine's `context_value` adds the query to).
    let json = serde_json::to_string_pretty(&ctx).unwrap();
    let back: Context = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(back, ctx);
    insta::assert_snapshot!("json", json);
}
