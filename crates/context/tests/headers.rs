//! Every printed byte counts against the budget: with `count_headers`, each piece's
//! title and section path (cut to a bound, as every rendering shows them) are counted in
//! `Context::tokens` and inside the budget, so a megabyte title or heading cannot escape
//! it (issue 63, row 8).

mod common;

use common::*;
use excerpt_context::{
    assemble, render_markdown, render_text, AssembleRequest, Context, LlmTokens, RenderOptions,
    Strategy, StrategyConfig, TiktokenCounter,
};
use excerpt_core::{header_text, HEADER_SECTION_MAX_CHARS, HEADER_TITLE_MAX_CHARS};

/// A megabyte of words.
fn megabyte(word: &str) -> String {
    word.repeat((1 << 20) / word.len())
}

/// One document with a megabyte title and a megabyte heading over three short chunks,
/// and one with a normal title and heading.
fn corpus() -> TestCorpus {
    let huge = build_doc(
        "huge.md",
        &megabyte("Kettle "),
        &[
            sec(
                1,
                &megabyte("Heron "),
                &["alpha beta gamma. ", "delta epsilon. "],
            ),
            chunk(&["alpha zeta eta. ", "theta iota. "]),
            chunk(&["alpha kappa. ", "lambda mu nu. "]),
        ],
    );
    let normal = build_doc(
        "normal.md",
        "Kettles",
        &[sec(
            1,
            "Boiling",
            &["alpha whistles at ninety-eight degrees. "],
        )],
    );
    TestCorpus::new(vec![huge, normal])
}

fn run(c: &TestCorpus, strategy: Strategy, budget: usize, count_headers: bool) -> Context {
    let hits = [
        hit(0, 0, 0.9),
        hit(1, 0, 0.8),
        hit(0, 2, 0.7),
        hit(0, 1, 0.6),
    ];
    let t = TiktokenCounter::cl100k().unwrap();
    let req = AssembleRequest {
        query: "alpha",
        query_vector: None,
        hits: &hits,
        corpus: c,
        budget,
        tokens: &t,
        embedder: None,
        feedback: &[],
        count_headers,
    };
    assemble(&StrategyConfig::default_for(strategy), &req).unwrap()
}

/// The header tokens of the pieces as the rendered context shows them: each document's
/// title once, each piece's section path.
fn headers(ctx: &Context) -> usize {
    let t = TiktokenCounter::cl100k().unwrap();
    let mut seen: Vec<&str> = Vec::new();
    let mut n = 0;
    for p in &ctx.pieces {
        if !seen.contains(&p.doc_id.as_str()) {
            seen.push(&p.doc_id);
            n += t.count(&header_text(&p.title, ""));
        }
        n += t.count(&header_text("", &p.section));
    }
    n
}

#[test]
fn headers_are_cut_and_counted_inside_the_budget() {
    let c = corpus();
    for strategy in Strategy::ALL {
        for budget in [50, 200, 400, 2000] {
            let ctx = run(&c, strategy, budget, true);
            let text: usize = ctx.pieces.iter().map(|p| p.tokens).sum();
            assert_eq!(ctx.tokens, text + headers(&ctx), "{strategy:?} {budget}");
            assert!(
                ctx.tokens <= budget,
                "{strategy:?} {budget}: {}",
                ctx.tokens
            );
            for p in &ctx.pieces {
                assert!(p.title.chars().count() <= HEADER_TITLE_MAX_CHARS);
                assert!(p.section.chars().count() <= HEADER_SECTION_MAX_CHARS);
            }
            // What a renderer prints is bounded by the pieces, not by the document.
            let printed =
                render_text(&ctx, &RenderOptions::default()).len() + render_markdown(&ctx).len();
            assert!(
                printed < 64 * 1024,
                "{strategy:?} {budget}: {printed} bytes"
            );
        }
        // At 50 tokens the huge document's header alone does not fit: only the normal
        // document's piece, header included, is left.
        let small = run(&c, strategy, 50, true);
        assert!(
            small.pieces.iter().all(|p| p.doc_id == "normal.md"),
            "{strategy:?}: {small:?}"
        );
    }
    // With room, the huge document's piece is there, its title and section cut with `…`.
    let ctx = run(&c, Strategy::Topk, 2000, true);
    let p = ctx.pieces.iter().find(|p| p.doc_id == "huge.md").unwrap();
    assert!(p.title.ends_with('…') && p.title.starts_with("Kettle Kettle"));
    assert!(p.section.ends_with('…') && p.section.starts_with("Heron Heron"));
    // Normal titles and sections are shown as they are.
    let p = ctx.pieces.iter().find(|p| p.doc_id == "normal.md").unwrap();
    assert_eq!(
        (p.title.as_str(), p.section.as_str()),
        ("Kettles", "Boiling")
    );
}

#[test]
fn without_counting_headers_the_budget_covers_texts_only() {
    let c = corpus();
    let ctx = run(&c, Strategy::Topk, 50, false);
    let text: usize = ctx.pieces.iter().map(|p| p.tokens).sum();
    assert_eq!(ctx.tokens, text);
    assert!(ctx.pieces.iter().any(|p| p.doc_id == "huge.md"));
    // Counted, the same pieces cost more than their texts.
    let counted = run(&c, Strategy::Topk, 2000, true);
    let text: usize = counted.pieces.iter().map(|p| p.tokens).sum();
    assert!(counted.tokens > text);
}
