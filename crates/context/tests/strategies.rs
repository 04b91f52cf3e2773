//! Hand-made cases for each strategy.

mod common;

use std::sync::atomic::Ordering;

use common::*;
use excerpt_context::{
    assemble, feedback_terms, AdjacentParams, AssembleRequest, AutoParams, ContextError, Hit,
    LlmTokens, PieceOrder, RseParams, SectionParams, Strategy, StrategyConfig, TiktokenCounter,
    TopkParams, WindowParams,
};
use excerpt_core::{ChunkKey, Embedder};

fn req<'a>(
    corpus: &'a TestCorpus,
    hits: &'a [Hit],
    budget: usize,
    embedder: Option<&'a dyn Embedder>,
    query_vector: Option<&'a [f32]>,
) -> AssembleRequest<'a> {
    AssembleRequest {
        query: "alpha beta",
        query_vector,
        hits,
        corpus,
        budget,
        tokens: &WordTokens,
        embedder,
        feedback: &[],
        count_headers: false,
    }
}

/// Five chunks of two sentences, two words each (4 tokens per chunk).
fn five_chunks() -> TestCorpus {
    let specs: Vec<ChunkSpec> = (0..5)
        .map(|i| {
            let a = format!("c{i} one. ");
            let b = format!("c{i} two. ");
            chunk(&[a.as_str(), b.as_str()])
        })
        .collect();
    TestCorpus::new(vec![build_doc("a.md", "Doc A", &specs)])
}

#[test]
fn zero_hits_give_an_empty_context() {
    let c = five_chunks();
    for s in Strategy::ALL {
        let ctx = assemble(
            &StrategyConfig::default_for(s),
            &req(&c, &[], 100, None, None),
        )
        .unwrap();
        assert!(ctx.pieces.is_empty(), "{s}");
        assert_eq!(ctx.tokens, 0);
        assert_eq!(ctx.strategy, s.name());
    }
}

#[test]
fn budget_smaller_than_one_chunk_returns_nothing_with_a_note() {
    let c = five_chunks();
    let hits = [hit(0, 2, 0.9)];
    for s in Strategy::ALL {
        if s == Strategy::Auto {
            // auto hands this pinpoint question sentences: one fits where no chunk does.
            let ctx = assemble(
                &"auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score"
                    .parse()
                    .unwrap(),
                &req(&c, &hits, 3, None, None),
            )
            .unwrap();
            let texts: Vec<&str> = ctx.pieces.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(texts, ["c2 one. "], "{ctx:?}");
            continue;
        }
        let ctx = assemble(
            &StrategyConfig::default_for(s),
            &req(&c, &hits, 3, None, None),
        )
        .unwrap();
        assert!(ctx.pieces.is_empty(), "{s}: {ctx:?}");
        assert!(
            ctx.notes
                .iter()
                .any(|n| n.contains("nothing fit") || n.contains("no candidate")),
            "{s}: {:?}",
            ctx.notes
        );
    }
    // Exactly one chunk's worth: the best chunk alone.
    let ctx = assemble(&"adjacent".parse().unwrap(), &req(&c, &hits, 4, None, None)).unwrap();
    assert_eq!(ctx.pieces.len(), 1);
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (2, 2)
    );
    assert_eq!(ctx.pieces[0].text, "c2 one. c2 two. ");
}

#[test]
fn one_chunk_document() {
    let c = TestCorpus::new(vec![build_doc(
        "one.md",
        "One",
        &[chunk(&["Only sentence here. "])],
    )]);
    let hits = [hit(0, 0, 0.7)];
    for s in Strategy::ALL {
        let ctx = assemble(
            &StrategyConfig::default_for(s),
            &req(&c, &hits, 50, None, None),
        )
        .unwrap();
        if s == Strategy::Rse {
            // 0.7 − 0.2 = 0.5 ≥ min_value 0.5.
            assert_eq!(ctx.pieces.len(), 1, "{s}");
        }
        if !ctx.pieces.is_empty() {
            assert_eq!(ctx.pieces[0].text, "Only sentence here. ", "{s}");
            assert_eq!((ctx.pieces[0].start, ctx.pieces[0].end), (0, 20));
        }
    }
}

#[test]
fn topk_stops_at_the_first_chunk_that_does_not_fit() {
    let specs = [
        chunk(&["a b c d. "]),
        chunk(&["e f g h i j k l. "]),
        chunk(&["m n. "]),
    ];
    let c = TestCorpus::new(vec![build_doc("t.md", "T", &specs)]);
    let hits = [hit(0, 0, 0.9), hit(0, 1, 0.8), hit(0, 2, 0.7)];
    let cfg = StrategyConfig::Topk(TopkParams::default());
    let ctx = assemble(&cfg, &req(&c, &hits, 10, None, None)).unwrap();
    assert_eq!(ctx.pieces.len(), 1);
    assert_eq!(ctx.pieces[0].hits, vec![0]);
    assert!(ctx.notes.iter().any(|n| n.contains("stopped at rank 2")));
    // Touching hits merge into one piece.
    let ctx = assemble(&cfg, &req(&c, &hits, 100, None, None)).unwrap();
    assert_eq!(ctx.pieces.len(), 1);
    assert_eq!(ctx.pieces[0].hits, vec![0, 1, 2]);
    assert_eq!(ctx.tokens, 14);
}

#[test]
fn adjacent_expands_merges_and_groups() {
    let c = TestCorpus::new(vec![
        build_doc(
            "a.md",
            "A",
            &(0..6)
                .map(|i| chunk(&[&format!("a{i} x. ")]))
                .collect::<Vec<_>>(),
        ),
        build_doc(
            "b.md",
            "B",
            &(0..6)
                .map(|i| chunk(&[&format!("b{i} y. ")]))
                .collect::<Vec<_>>(),
        ),
    ]);
    let hits = [hit(1, 4, 0.9), hit(0, 1, 0.8), hit(0, 3, 0.5)];
    let ctx = assemble(
        &"adjacent".parse().unwrap(),
        &req(&c, &hits, 1000, None, None),
    )
    .unwrap();
    let got: Vec<_> = ctx
        .pieces
        .iter()
        .map(|p| {
            (
                p.doc_id.as_str(),
                p.first_chunk,
                p.last_chunk,
                p.hits.clone(),
            )
        })
        .collect();
    // b.md first (best score 0.9), then a.md: chunks 0..=4 merged from two windows.
    assert_eq!(
        got,
        vec![("b.md", 3, 5, vec![4]), ("a.md", 0, 4, vec![1, 3])]
    );
    assert!((ctx.pieces[0].relevance - 0.9).abs() < 1e-6);
    // Tight budget: hits first (3 chunks × 2 tokens), then the best neighbours.
    let ctx = assemble(&"adjacent".parse().unwrap(), &req(&c, &hits, 8, None, None)).unwrap();
    let hit_chunks: Vec<u32> = ctx.pieces.iter().flat_map(|p| p.hits.clone()).collect();
    assert_eq!(hit_chunks.len(), 3);
    assert_eq!(ctx.tokens, 8);
    // The neighbour taken is the best-scoring one: a neighbour of the 0.9 hit in b.md
    // (b3, by ChunkKey order before b5).
    let b = ctx.pieces.iter().find(|p| p.doc_id == "b.md").unwrap();
    assert_eq!((b.first_chunk, b.last_chunk), (3, 4));
    // Wider window with decay: distance-2 neighbours score 0.9·0.64.
    let cfg = StrategyConfig::Adjacent(AdjacentParams {
        window: 2,
        ..Default::default()
    });
    let ctx = assemble(&cfg, &req(&c, &hits[..1], 1000, None, None)).unwrap();
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (2, 5)
    );
}

#[test]
fn rse_values_unretrieved_neighbours_by_similarity() {
    let specs = [
        chunk(&["zeta zeta zeta. "]),
        chunk(&["unrelated words entirely. "]),
        chunk(&["alpha beta gamma. "]),
        chunk(&["alpha beta delta. "]),
        chunk(&["other things. "]),
    ];
    let c = TestCorpus::new(vec![build_doc("r.md", "R", &specs)]);
    let hits = [hit(0, 2, 0.9)];
    let qv = HashEmbedder::default().vector("alpha beta");
    let cfg: StrategyConfig = "rse".parse().unwrap();
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, Some(&qv))).unwrap();
    assert_eq!(ctx.pieces.len(), 1, "{ctx:?}");
    // Chunk 3 is similar to the query: included although not retrieved; 1 is not.
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (2, 3)
    );
    assert_eq!(ctx.pieces[0].hits, vec![2]);
    assert!(ctx.notes.iter().any(|n| n.contains("valued by similarity")));
    // Without a query vector unretrieved chunks get a flat penalty: the hit alone.
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, None)).unwrap();
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (2, 2)
    );
    // A low threshold lets one segment bridge the chunks between two hits; the default
    // bridges too (0.7 + 0.67 − 3·0.2 > 0.7) — RSE working as designed; 0.3 does not.
    let hits2 = [hit(0, 0, 0.9), hit(0, 4, 0.9)];
    let low = StrategyConfig::Rse(RseParams {
        threshold: 0.05,
        ..RseParams::default()
    });
    let ctx = assemble(&low, &req(&c, &hits2, 1000, None, Some(&qv))).unwrap();
    assert_eq!(ctx.pieces.len(), 1, "{ctx:?}");
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (0, 4)
    );
    assert_eq!(ctx.pieces[0].hits, vec![0, 4]);
    let ctx = assemble(&"rse".parse().unwrap(), &req(&c, &hits2, 1000, None, None)).unwrap();
    assert_eq!(ctx.pieces.len(), 1);
    let high = StrategyConfig::Rse(RseParams {
        threshold: 0.3,
        ..RseParams::default()
    });
    let ctx = assemble(&high, &req(&c, &hits2, 1000, None, None)).unwrap();
    assert_eq!(ctx.pieces.len(), 2, "{ctx:?}");
}

/// Candidate documents holding 2,048 chunks or more are valued on rayon's threads
/// (`PARALLEL_CHUNKS`): each document keeps its own values, so two long documents give
/// the segments one short document gives, each where its own hit is.
#[test]
fn rse_values_long_documents_each_as_alone() {
    let long = |at: usize| -> Vec<ChunkSpec> {
        let filler: Vec<String> = (0..1100).map(|i| format!("filler {i} words. ")).collect();
        let mut specs: Vec<ChunkSpec> = filler.iter().map(|f| chunk(&[f.as_str()])).collect();
        specs[at + 1] = chunk(&["unrelated words entirely. "]);
        specs[at + 2] = chunk(&["alpha beta gamma. "]);
        specs[at + 3] = chunk(&["alpha beta delta. "]);
        specs
    };
    let c = TestCorpus::new(vec![
        build_doc("a.md", "A", &long(500)),
        build_doc("b.md", "B", &long(700)),
    ]);
    let hits = [hit(0, 502, 0.9), hit(1, 702, 0.8)];
    let qv = HashEmbedder::default().vector("alpha beta");
    let cfg: StrategyConfig = "rse".parse().unwrap();
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, Some(&qv))).unwrap();
    let got: Vec<(&str, u32, u32)> = ctx
        .pieces
        .iter()
        .map(|p| (p.doc_id.as_str(), p.first_chunk, p.last_chunk))
        .collect();
    assert_eq!(got, vec![("a.md", 502, 503), ("b.md", 702, 703)], "{ctx:?}");
    assert_eq!(
        assemble(&cfg, &req(&c, &hits, 1000, None, Some(&qv))).unwrap(),
        ctx,
        "the same context again"
    );
}

#[test]
fn rse_values_chunks_by_the_relevance_of_their_scores() {
    // Five hits in a row that rank relevance rates alike (as RRF does for the first tens
    // of hits); their scores say only chunk 2 is relevant.
    let c = five_chunks();
    let ranked: Vec<Hit> = [2u32, 1, 3, 0, 4]
        .iter()
        .map(|&o| hit(0, o, 0.95))
        .collect();
    let cfg = StrategyConfig::Rse(RseParams {
        fill: false,
        ..RseParams::default()
    });
    let span = |hits: &[Hit]| {
        let ctx = assemble(&cfg, &req(&c, hits, 1000, None, None)).unwrap();
        check_invariants(&ctx, &c, hits, 1000, &WordTokens, false).unwrap();
        assert_eq!(ctx.pieces.len(), 1, "{ctx:?}");
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk)
    };
    // Valued by rank relevance alone, the segment spans all five.
    assert_eq!(span(&ranked), (0, 4));
    let scored: Vec<Hit> = ranked
        .iter()
        .map(|h| Hit {
            score_relevance: Some(if h.key.ordinal == 2 { 0.9 } else { 0.05 }),
            ..*h
        })
        .collect();
    assert_eq!(span(&scored), (2, 2));
    // The pieces still show the rank relevance.
    let ctx = assemble(&cfg, &req(&c, &scored, 1000, None, None)).unwrap();
    assert_eq!(ctx.pieces[0].relevance, 0.95);
    // A score relevance that is not a number is refused like any other.
    let mut bad = scored.clone();
    bad[3].score_relevance = Some(f32::NAN);
    assert!(matches!(
        assemble(&cfg, &req(&c, &bad, 1000, None, None)),
        Err(ContextError::InvalidHit {
            index: 3,
            what: "score_relevance",
            ..
        })
    ));
    // Serialised hits carry it only when set.
    let json = serde_json::to_string(&ranked[0]).unwrap();
    assert!(!json.contains("score_relevance"), "{json}");
    let json = serde_json::to_string(&scored[0]).unwrap();
    assert!(json.contains("\"score_relevance\":0.9"), "{json}");
}

#[test]
fn rse_presets_and_max_tokens() {
    let c = five_chunks();
    let hits = [hit(0, 1, 0.95), hit(0, 2, 0.9), hit(0, 3, 0.9)];
    for preset in ["rse:balanced", "rse:precision", "rse:find_all"] {
        let cfg: StrategyConfig = preset.parse().unwrap();
        let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, None)).unwrap();
        assert_eq!(ctx.pieces.len(), 1, "{preset}");
        assert_eq!(
            (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
            (1, 3)
        );
    }
    let cfg = StrategyConfig::Rse(RseParams {
        max_tokens: Some(8),
        ..Default::default()
    });
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, None)).unwrap();
    assert!(ctx.tokens <= 8);
    assert_eq!(ctx.budget, 1000);
}

#[test]
fn rse_fill_spends_leftover_budget_on_remaining_hits_in_rank_order() {
    // Two documents: a strong run in A (chunks 1-3) and weak single hits elsewhere that
    // make no segment of their own (value below min_value).
    let a = five_chunks();
    let mut docs = vec![a.docs[0].clone()];
    let specs: Vec<ChunkSpec> = (0..5)
        .map(|i| {
            let x = format!("b{i} one. ");
            let y = format!("b{i} two. ");
            chunk(&[x.as_str(), y.as_str()])
        })
        .collect();
    docs.push(build_doc("b.md", "Doc B", &specs));
    let c = TestCorpus::new(docs);
    let hits = [
        hit(0, 1, 0.95),
        hit(0, 2, 0.9),
        hit(0, 3, 0.9),
        hit(1, 4, 0.4),
        hit(0, 0, 0.1),
        hit(1, 0, 0.35),
    ];
    let no_fill: StrategyConfig = "rse:fill=false".parse().unwrap();
    let ctx = assemble(&no_fill, &req(&c, &hits, 20, None, None)).unwrap();
    assert_eq!(ctx.pieces.len(), 1, "{ctx:?}");
    assert_eq!(ctx.tokens, 12);
    check_invariants(&ctx, &c, &hits, 20, &WordTokens, false).unwrap();

    let fill: StrategyConfig = "rse".parse().unwrap();
    let ctx = assemble(&fill, &req(&c, &hits, 20, None, None)).unwrap();
    check_invariants(&ctx, &c, &hits, 20, &WordTokens, false).unwrap();
    // 8 tokens left: hit (1,4) then (0,0) fit (4 each); (1,0) does not.
    assert_eq!(ctx.tokens, 20, "{ctx:?}");
    let spans: Vec<(&str, u32, u32)> = ctx
        .pieces
        .iter()
        .map(|p| (p.doc_id.as_str(), p.first_chunk, p.last_chunk))
        .collect();
    // A first (its segment has the best score), chunk 0 merged into the segment.
    assert_eq!(spans, vec![("a.md", 0, 3), ("b.md", 4, 4)]);
    assert!(
        ctx.notes.iter().any(|n| n.contains("filled")),
        "{:?}",
        ctx.notes
    );
    // The precision preset does not fill.
    let ctx = assemble(
        &"rse:precision".parse().unwrap(),
        &req(&c, &hits, 20, None, None),
    )
    .unwrap();
    assert_eq!(ctx.tokens, 12);
}

#[test]
fn strategy_specs_set_any_parameter() {
    let cfg: StrategyConfig = "rse:threshold=0.3,max_len_chunks=4".parse().unwrap();
    assert_eq!(
        cfg,
        StrategyConfig::Rse(RseParams {
            threshold: 0.3,
            max_len_chunks: 4,
            ..RseParams::default()
        })
    );
    let cfg: StrategyConfig = "rse:precision, max_tokens=none".parse().unwrap();
    assert_eq!(
        cfg,
        StrategyConfig::Rse(RseParams {
            max_tokens: None,
            ..RseParams::preset(excerpt_context::RsePreset::Precision)
        })
    );
    let cfg: StrategyConfig = "window:threshold=0.6,query_threshold=0.2".parse().unwrap();
    assert_eq!(
        cfg,
        StrategyConfig::Window(WindowParams {
            threshold: 0.6,
            query_threshold: Some(0.2),
            ..WindowParams::default()
        })
    );
    let cfg: StrategyConfig = "adjacent:window=2".parse().unwrap();
    assert_eq!(
        cfg,
        StrategyConfig::Adjacent(AdjacentParams {
            window: 2,
            ..AdjacentParams::default()
        })
    );
    for bad in [
        "rse:treshold=0.3",
        "rse:max_len_chunks=1.5",
        "rse:threshold",
        "rse:balanced,precision",
        "topk:strategy=rse",
        "window:threshold=high",
        "adjacent:precision",
    ] {
        let e = bad.parse::<StrategyConfig>().unwrap_err().to_string();
        assert!(e.contains(bad.split(':').next().unwrap()), "{bad}: {e}");
    }
    let e = "rse:treshold=0.3"
        .parse::<StrategyConfig>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("threshold"), "{e}");
    // Range checks still apply after parsing.
    let cfg: StrategyConfig = "rse:threshold=1.5".parse().unwrap();
    assert!(cfg.validate().is_err());
}

#[test]
fn window_grows_by_sentences_and_merges_overlaps_in_one_embed_call() {
    // Sentences about alpha (similar to each other), then a topic change.
    let specs = [
        chunk(&["red blue green. ", "alpha beta one. "]),
        chunk(&["alpha beta two. ", "alpha beta three. "]),
        chunk(&["alpha beta four. ", "zeta eta theta. "]),
        chunk(&["iota kappa lambda. "]),
    ];
    let c = TestCorpus::new(vec![build_doc("w.md", "W", &specs)]);
    let emb = HashEmbedder::default();
    let hits = [hit(0, 1, 0.9), hit(0, 2, 0.8)];
    // The hash embedder puts same-topic sentences above 0.5 and the topic change below.
    let cfg: StrategyConfig = "window:threshold=0.5".parse().unwrap();
    let qv = emb.vector("alpha beta");
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, Some(&emb), Some(&qv))).unwrap();
    assert_eq!(
        emb.calls.load(Ordering::SeqCst),
        1,
        "one batched embed call"
    );
    // 7 sentences reachable (hit chunks 1-2 ± 3 sentences), each embedded once.
    assert_eq!(emb.texts.load(Ordering::SeqCst), 7);
    assert_eq!(ctx.pieces.len(), 1, "{ctx:#?}");
    let p = &ctx.pieces[0];
    assert_eq!(
        p.text,
        "alpha beta one. alpha beta two. alpha beta three. alpha beta four. "
    );
    assert_eq!((p.first_chunk, p.last_chunk), (0, 2));
    assert_eq!(p.hits, vec![1, 2]);
    // Query guidance that nothing passes: seed sentences only, still merged when touching.
    let strict = StrategyConfig::Window(WindowParams {
        threshold: 0.5,
        query_threshold: Some(0.99),
        ..Default::default()
    });
    let ctx = assemble(&strict, &req(&c, &hits, 1000, Some(&emb), None)).unwrap();
    assert!(ctx.pieces.iter().all(|p| p.text.starts_with("alpha")));
    // Without an embedder: chunk windows like adjacent, with a note.
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, None)).unwrap();
    assert!(ctx.notes.iter().any(|n| n.contains("no embedder")));
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (0, 3)
    );
}

#[test]
fn window_sentence_seeds_and_fixed_windows() {
    // The best sentence for the query sits in a chunk retrieval ranked low, beside two
    // same-topic sentences; the retrieved chunk holds nothing like the query.
    let specs = [
        chunk(&["iota kappa lambda. ", "red blue green. "]),
        chunk(&[
            "zeta eta theta. ",
            "alpha beta gamma. ",
            "alpha beta delta. ",
        ]),
        chunk(&["omicron pi rho. ", "sigma tau upsilon. "]),
    ];
    let c = TestCorpus::new(vec![build_doc("w.md", "W", &specs)]).with_sentence_vectors();
    let emb = HashEmbedder::default();
    let qv = emb.vector("alpha beta gamma");
    let hits = [hit(0, 0, 0.9)];
    let run = |spec: &str, corpus: &TestCorpus| {
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &req(corpus, &hits, 9, Some(&emb), Some(&qv))).unwrap();
        check_invariants(&ctx, corpus, &hits, 9, &WordTokens, true).unwrap();
        ctx
    };
    // Chunk seeds start from the retrieved chunk; sentence seeds find the sentence itself
    // and grow into its similar neighbour, not into the other topic before it.
    let chunk_seeded = run("window:threshold=0.5", &c);
    assert!(
        chunk_seeded.pieces[0].text.contains("iota"),
        "{chunk_seeded:#?}"
    );
    let ctx = run("window:seeds=sentence,threshold=0.5", &c);
    assert_eq!(ctx.pieces[0].text, "alpha beta gamma. alpha beta delta. ");
    assert!(
        ctx.pieces[0].hits.is_empty(),
        "the window overlaps no retrieved chunk"
    );
    // A fixed window takes one sentence on each side whatever it says.
    let ctx = run("window:seeds=sentence,expand=fixed,max_expand=1", &c);
    assert_eq!(
        ctx.pieces[0].text,
        "zeta eta theta. alpha beta gamma. alpha beta delta. "
    );
    // Without stored sentence vectors, sentence seeds fall back to chunk seeds and say so.
    let plain = TestCorpus::new(vec![build_doc("w.md", "W", &specs)]);
    let ctx = run("window:seeds=sentence,threshold=0.5", &plain);
    assert!(ctx
        .notes
        .iter()
        .any(|n| n.contains("need stored sentence vectors")));
    assert_eq!(ctx.pieces, run("window:threshold=0.5", &plain).pieces);
}

/// Sections: Intro (0-1), Methods (2) with subsection Detail (3), Results (4); chunk 5
/// outside? No: a preamble chunk before Intro.
fn sectioned() -> TestCorpus {
    let specs = [
        chunk(&["preamble text. "]),
        sec(1, "Intro", &["intro one. "]),
        chunk(&["intro two. "]),
        sec(1, "Methods", &["methods one. "]),
        sec(2, "Detail", &["detail one. "]),
        sec(1, "Results", &["results one. "]),
    ];
    TestCorpus::new(vec![
        build_doc("s.md", "S", &specs),
        build_doc("o.md", "O", &[sec(1, "Only", &["other doc. "])]),
    ])
}

#[test]
fn section_promotion_on_and_off() {
    let c = sectioned();
    let hits = [hit(0, 2, 0.9), hit(0, 5, 0.8), hit(1, 0, 0.5)];
    let on: StrategyConfig = "section".parse().unwrap();
    let ctx = assemble(&on, &req(&c, &hits, 1000, None, None)).unwrap();
    let got: Vec<_> = ctx
        .pieces
        .iter()
        .map(|p| (p.doc_id.as_str(), p.first_chunk, p.last_chunk))
        .collect();
    assert_eq!(got, vec![("s.md", 0, 5), ("o.md", 0, 0)]);
    assert!(ctx.notes.iter().any(|n| n.contains("whole document")));
    let off = StrategyConfig::Section(SectionParams {
        full_documents: false,
        ..Default::default()
    });
    let ctx = assemble(&off, &req(&c, &hits, 1000, None, None)).unwrap();
    let got: Vec<_> = ctx
        .pieces
        .iter()
        .map(|p| {
            (
                p.doc_id.as_str(),
                p.first_chunk,
                p.last_chunk,
                p.section.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("s.md", 1, 2, "Intro"),
            ("s.md", 5, 5, "Results"),
            ("o.md", 0, 0, "Only")
        ]
    );
    // Whole document does not fit (12 tokens): sections instead (4 + 2 tokens).
    let ctx = assemble(&on, &req(&c, &hits[..2], 8, None, None)).unwrap();
    let got: Vec<_> = ctx
        .pieces
        .iter()
        .map(|p| (p.first_chunk, p.last_chunk))
        .collect();
    assert_eq!(got, vec![(1, 2), (5, 5)]);
    assert!(ctx.notes.iter().any(|n| n.contains("did not fit")));
}

#[test]
fn section_single_match_subsections_and_preamble() {
    let c = sectioned();
    let on: StrategyConfig = "section".parse().unwrap();
    // A hit in Methods returns Methods with its subsection Detail.
    let ctx = assemble(&on, &req(&c, &[hit(0, 3, 0.9)], 1000, None, None)).unwrap();
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (3, 4)
    );
    assert_eq!(ctx.pieces[0].section, "Methods");
    // A hit in Detail returns Detail only; in the preamble, the preamble.
    let ctx = assemble(&on, &req(&c, &[hit(0, 4, 0.9)], 1000, None, None)).unwrap();
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (4, 4)
    );
    assert_eq!(ctx.pieces[0].section, "Methods > Detail");
    let ctx = assemble(&on, &req(&c, &[hit(0, 0, 0.9)], 1000, None, None)).unwrap();
    assert_eq!(
        (
            ctx.pieces[0].first_chunk,
            ctx.pieces[0].last_chunk,
            ctx.pieces[0].section.as_str()
        ),
        (0, 0, "")
    );
    // Section too big for the budget: the hit chunk.
    let ctx = assemble(&on, &req(&c, &[hit(0, 2, 0.9)], 2, None, None)).unwrap();
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (2, 2)
    );
    // Promotion with threshold 1: any match promotes.
    let one = StrategyConfig::Section(SectionParams {
        multi_section_threshold: 1,
        ..Default::default()
    });
    let ctx = assemble(&one, &req(&c, &[hit(0, 2, 0.9)], 1000, None, None)).unwrap();
    assert_eq!(
        (ctx.pieces[0].first_chunk, ctx.pieces[0].last_chunk),
        (0, 5)
    );
}

#[test]
fn auto_routes_by_query_form_and_document_structure() {
    let plain = TestCorpus::new(vec![build_doc(
        "g.md",
        "G",
        &(0..20)
            .map(|i| chunk(&[&format!("g{i} w. ")]))
            .collect::<Vec<_>>(),
    )]);
    let hits: Vec<Hit> = [0.9, 0.85, 0.3, 0.29]
        .iter()
        .enumerate()
        .map(|(i, &r)| hit(0, (i * 4) as u32, r))
        .collect();
    assert_eq!(StrategyConfig::default(), "auto".parse().unwrap());
    let auto: StrategyConfig =
        "auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score"
            .parse()
            .unwrap();
    let same_as = |name: &str, r: &AssembleRequest<'_>| {
        let cfg: StrategyConfig = name.parse().unwrap();
        assemble(&cfg, r).unwrap().pieces
    };
    // A passage question goes to rse.
    let mut r = req(&plain, &hits, 12, None, None);
    r.query = "Summarize the discussion about the budget";
    let ctx = assemble(&auto, &r).unwrap();
    assert!(
        ctx.notes[0].contains("passage question (cue \"summarize\"): rse"),
        "{:?}",
        ctx.notes
    );
    assert_eq!(ctx.pieces, same_as("rse", &r));
    // A cap on one route's budget holds on that route only.
    let capped = StrategyConfig::Auto(AutoParams {
        rse: RseParams {
            max_tokens: Some(4),
            ..RseParams::default()
        },
        topk: TopkParams {
            passages: false,
            order: PieceOrder::Score,
            continuation: 0,
            ..TopkParams::sentences()
        },
        min_piece_chars: 0,
        chars_per_token: 0.0,
        ..AutoParams::default()
    });
    let ctx = assemble(&capped, &r).unwrap();
    assert!(ctx.tokens <= 4 && ctx.budget == 12, "{ctx:?}");
    r.query = "Receiving Party shall return the documents";
    assert!(assemble(&capped, &r).unwrap().tokens > 4);
    // A pinpoint question goes to topk's sentence route.
    let ctx = assemble(&auto, &r).unwrap();
    assert!(
        ctx.notes[0].contains("pinpoint question: topk"),
        "{:?}",
        ctx.notes
    );
    assert_eq!(ctx.pieces, same_as("topk:unit=sentence,order=score", &r));
    assert_ne!(
        ctx.pieces,
        same_as("rse", &r),
        "the test must tell routes apart"
    );
    // Over sectioned documents it stays on sentences by default; with `sections=true`
    // it goes to section.
    let c = sectioned();
    let hits = vec![hit(0, 1, 0.9), hit(0, 3, 0.8)];
    let mut r = req(&c, &hits, 1000, None, None);
    r.query = "where is the setting";
    let ctx = assemble(&auto, &r).unwrap();
    assert_eq!(ctx.pieces, same_as("topk:unit=sentence,order=score", &r));
    let with_sections = StrategyConfig::Auto(AutoParams {
        sections: true,
        min_piece_chars: 0,
        chars_per_token: 0.0,
        topk: TopkParams {
            passages: false,
            order: PieceOrder::Score,
            continuation: 0,
            ..TopkParams::sentences()
        },
        ..Default::default()
    });
    assert_eq!(with_sections, "auto:sections=true,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap());
    let ctx = assemble(&with_sections, &r).unwrap();
    assert!(ctx.notes[0].contains("headings in"), "{:?}", ctx.notes);
    assert_eq!(ctx.pieces, same_as("section", &r));
    assert_ne!(
        ctx.pieces,
        same_as("topk:unit=sentence,order=score", &r),
        "the test must tell routes apart"
    );
    // A passage question over documents with headings takes the sentence route too,
    // unless `rse_over_headings=true`.
    r.query = "Summarize where the setting is";
    let ctx = assemble(&auto, &r).unwrap();
    assert!(
        ctx.notes[0].contains("(cue \"summarize\") over headings in"),
        "{:?}",
        ctx.notes
    );
    assert_eq!(ctx.pieces, same_as("topk:unit=sentence,order=score", &r));
    let ctx = assemble(&"auto:rse_over_headings=true,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap(), &r).unwrap();
    assert!(ctx.notes[0].ends_with(": rse"), "{:?}", ctx.notes);
    assert_eq!(ctx.pieces, same_as("rse", &r));
    assert_ne!(
        ctx.pieces,
        same_as("topk:unit=sentence,order=score", &r),
        "the test must tell routes apart"
    );
    // A request to explain or describe asks about a subject, not the course of a
    // conversation: a pinpoint question, on sentences even with `rse_over_headings`.
    for q in ["Explain where the setting is", "Describe the setting"] {
        r.query = q;
        let ctx = assemble(&"auto:rse_over_headings=true,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap(), &r).unwrap();
        assert!(
            ctx.notes[0].contains("pinpoint question"),
            "{q}: {:?}",
            ctx.notes
        );
    }
}

#[test]
fn auto_sends_pinpoint_questions_over_a_conversation_to_rse() {
    // A meeting transcript: every line a speaker's turn.
    let speakers = [
        "Project Manager",
        "Marketing",
        "Mr. Paul Manly (Nanaimo, GP)",
    ];
    let chunks: Vec<ChunkSpec> = (0..12)
        .map(|i| {
            let a = format!("{}: Turn {i} about the remote w{i}.\n", speakers[i % 3]);
            let b = format!("{}: Reply {i} on the buttons.\n", speakers[(i + 1) % 3]);
            chunk(&[a.as_str(), b.as_str()])
        })
        .collect();
    let c = TestCorpus::new(vec![build_doc("meeting.txt", "Meeting", &chunks)]);
    let hits: Vec<Hit> = [0.9, 0.85, 0.8, 0.3]
        .iter()
        .enumerate()
        .map(|(i, &r)| hit(0, (i * 3) as u32, r))
        .collect();
    let mut r = req(&c, &hits, 60, None, None);
    r.query = "What were the problems with the buttons?";
    let pieces = |spec: &str| {
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 60, &WordTokens, true).unwrap();
        (ctx.pieces, ctx.notes)
    };
    let (got, notes) =
        pieces("auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score");
    assert!(
        notes[0].contains("pinpoint question over the conversation \"meeting.txt\": rse"),
        "{notes:?}"
    );
    assert_eq!(got, pieces("rse").0);
    // Off, or over a document that is not a conversation, it takes the sentence route.
    let (off, notes) = pieces("auto:dialogue=false,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score");
    assert!(notes[0].contains("pinpoint question: topk"), "{notes:?}");
    assert_eq!(off, pieces("topk:unit=sentence,order=score").0);
    assert_ne!(got, off, "the test must tell routes apart");
}

#[test]
fn topk_sentences_keep_a_code_block_or_table_whole() {
    let c = TestCorpus::new(vec![build_doc(
        "guide.md",
        "Guide",
        &[
            chunk(&["Some intro. ", "Install the tool first.\n"]),
            chunk(&[
                "```sh\n",
                "cargo install zeta\n",
                "zeta --init\n",
                "```\n",
                "Then check the flags below.\n",
                "| flag | effect |\n",
                "| --init | writes zeta config |\n",
                "Unrelated closing words. ",
            ]),
        ],
    )]);
    let hits = vec![hit(0, 1, 0.9), hit(0, 0, 0.5)];
    let cfg: StrategyConfig = "topk:unit=sentence,order=score".parse().unwrap();
    let mut r = req(&c, &hits, 19, None, None);
    r.query = "zeta config";
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, 19, &WordTokens, true).unwrap();
    let texts: Vec<&str> = ctx.pieces.iter().map(|p| p.text.as_str()).collect();
    // The table line naming both words brings its whole table, the code block comes
    // whole too (one unit each), never a single line cut out of either.
    assert_eq!(
        texts,
        [
            "| flag | effect |\n| --init | writes zeta config |\n",
            "```sh\ncargo install zeta\nzeta --init\n```\n"
        ]
    );
}

#[test]
fn topk_sentences_take_rows_of_a_table_of_figures_together() {
    // A statement as PDF extraction leaves it: plain lines ending in figures. Its rows
    // come in parts of whole rows (at most 500 characters), never one row alone.
    let rows: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "Line item number {i} of zeta earnings $ {},{:03} $ {}\n",
                i + 1,
                i * 7,
                i * 3
            )
        })
        .collect();
    let mut parts: Vec<&str> = vec!["Statements of Zeta Earnings\n", "Fiscal Years 2017 2016\n"];
    parts.extend(rows.iter().map(String::as_str));
    parts.push("These notes are part of the statements. ");
    let c = TestCorpus::new(vec![build_doc(
        "report.pdf",
        "Report",
        &[
            chunk(&["An introduction in prose. ", "Nothing to see here.\n"]),
            chunk(&parts),
        ],
    )]);
    let hits = vec![hit(0, 1, 0.9), hit(0, 0, 0.5)];
    let cfg: StrategyConfig = "topk:unit=sentence,order=score".parse().unwrap();
    let mut r = req(&c, &hits, 150, None, None);
    r.query = "zeta earnings statements";
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, 150, &WordTokens, true).unwrap();
    let first = &ctx.pieces[0].text;
    // The best unit is the table's first part: its headings and the rows after them.
    assert!(
        first.starts_with("Statements of Zeta Earnings\nFiscal Years 2017 2016\n"),
        "{first:?}"
    );
    assert!(first.lines().count() >= 4, "{first:?}");
    assert!(first.chars().count() <= 500, "{}", first.chars().count());
    for p in &ctx.pieces {
        assert!(
            p.text.ends_with('\n') || p.text.ends_with(". "),
            "a row cut: {:?}",
            p.text
        );
    }
}

#[test]
fn topk_sentences_keep_a_hard_wrapped_sentence_whole() {
    let c = TestCorpus::new(vec![build_doc(
        "notes.md",
        "Notes",
        &[
            chunk(&[
                "# Caching\n\n",
                "Short title line\n",
                "Other words here.\n",
                "A paragraph that ends without its stop and a blank line of spaces\n \n",
            ]),
            chunk(&[
                "Answers from the chat endpoint are cached in the index directory, so\n",
                "re-ingesting the same zeta files costs nothing at all.\n",
                "- a list item about zeta\n",
                "Unrelated closing words. ",
            ]),
        ],
    )]);
    let hits = vec![hit(0, 1, 0.9), hit(0, 0, 0.5)];
    let cfg: StrategyConfig = "topk:unit=sentence,order=score".parse().unwrap();
    let mut r = req(&c, &hits, 22, None, None);
    r.query = "zeta files";
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, 22, &WordTokens, true).unwrap();
    let texts: Vec<&str> = ctx.pieces.iter().map(|p| p.text.as_str()).collect();
    // The sentence comes with both of its lines; the list item and the title line stay
    // units of their own.
    assert_eq!(
        texts[0],
        "Answers from the chat endpoint are cached in the index directory, so\nre-ingesting the same zeta files costs nothing at all.\n"
    );
    assert!(
        texts.iter().all(|t| !t.starts_with("re-ingesting")),
        "{texts:?}"
    );
    // A blank line ends a paragraph even when it holds spaces.
    let mut r = req(&c, &hits, 13, None, None);
    r.query = "paragraph spaces";
    let ctx = assemble(&cfg, &r).unwrap();
    let texts: Vec<&str> = ctx.pieces.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        texts,
        ["A paragraph that ends without its stop and a blank line of spaces\n \n"]
    );
}

#[test]
fn sentences_may_value_their_chunks_by_the_relevance_of_their_scores() {
    // Two chunks whose sentences match the query alike; rank relevance (as RRF gives the
    // first hits) rates them nearly alike, their scores say the second is far better.
    let c = TestCorpus::new(vec![build_doc(
        "d.md",
        "D",
        &[
            chunk(&["Alpha beta first here. "]),
            chunk(&["Alpha beta second here. "]),
        ],
    )]);
    let hits = vec![
        Hit {
            score_relevance: Some(0.1),
            ..hit(0, 0, 0.95)
        },
        Hit {
            score_relevance: Some(0.9),
            ..hit(0, 1, 0.94)
        },
    ];
    let r = req(&c, &hits, 4, None, None);
    let run = |cfg: &str| {
        let ctx = assemble(&cfg.parse().unwrap(), &r).unwrap();
        check_invariants(&ctx, &c, &hits, 4, &WordTokens, true).unwrap();
        ctx.pieces.into_iter().map(|p| p.text).collect::<Vec<_>>()
    };
    assert_eq!(run("topk:unit=sentence"), ["Alpha beta first here. "]);
    assert_eq!(
        run("topk:unit=sentence,score_weight=1"),
        ["Alpha beta second here. "]
    );
    let out_of_range: StrategyConfig = "topk:score_weight=1.5".parse().unwrap();
    assert!(assemble(&out_of_range, &r).is_err());
}

#[test]
fn passages_read_a_list_item_with_its_lead_in_or_not_at_all() {
    let c = TestCorpus::new(vec![build_doc(
        "nda.md",
        "NDA",
        &[
            chunk(&["Alpha beta appear together here. "]),
            chunk(&["The parties agree as follows: ", "(a) keep alpha secret. "]),
            chunk(&["Beta notes stand alone there. "]),
        ],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.8), hit(0, 2, 0.7)];
    let r = req(&c, &hits, 14, None, None);
    let run = |cfg: &str| {
        let ctx = assemble(&cfg.parse().unwrap(), &r).unwrap();
        check_invariants(&ctx, &c, &hits, 14, &WordTokens, true).unwrap();
        ctx.pieces.into_iter().map(|p| p.text).collect::<Vec<_>>()
    };
    // The item brings the words that govern it, in one passage: the lead-in is worth
    // what its item is, and a label may not end a run, so it is never alone.
    let with = run("topk:unit=sentence,passages=true,piece_chars=0,tokens_per_piece=0");
    assert_eq!(
        with,
        [
            "Alpha beta appear together here. The parties agree as follows: (a) keep alpha secret. "
        ]
    );
    // Without lead-ins, the five tokens go to the next best sentence instead.
    let without =
        run("topk:unit=sentence,passages=true,piece_chars=0,tokens_per_piece=0,lead_ins=false");
    assert!(
        without.iter().all(|t| !t.contains("agree as follows")),
        "{without:?}"
    );
    assert!(
        without.iter().any(|t| t.contains("Beta notes")),
        "{without:?}"
    );
}

#[test]
fn topk_sentences_take_the_matching_sentences_best_first_with_list_lead_ins() {
    let c = TestCorpus::new(vec![build_doc(
        "nda.md",
        "NDA",
        &[
            chunk(&["Intro words here. ", "Nothing relevant at all. "]),
            chunk(&[
                "The parties agree as follows: ",
                "(a) keep alpha secret. ",
                "(b) return gamma papers. ",
            ]),
            chunk(&[
                "Alpha beta appear together here. ",
                "Unrelated filler text now. ",
            ]),
        ],
    )]);
    let hits = vec![hit(0, 2, 0.9), hit(0, 1, 0.8), hit(0, 0, 0.5)];
    let cfg: StrategyConfig = "topk:unit=sentence,order=score".parse().unwrap();
    let r = req(&c, &hits, 14, None, None);
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, 14, &WordTokens, true).unwrap();
    assert_eq!(ctx.order, PieceOrder::Score);
    let texts: Vec<&str> = ctx.pieces.iter().map(|p| p.text.as_str()).collect();
    // The sentence with both query words first (although it comes last in the
    // document), then the list item with the other query word, preceded by its lead-in.
    assert_eq!(
        texts,
        [
            "Alpha beta appear together here. ",
            "The parties agree as follows: (a) keep alpha secret. "
        ]
    );
    assert_eq!(ctx.tokens, 14);
    // Without lead-ins the budget left goes to the next best sentence instead.
    let cfg: StrategyConfig = "topk:unit=sentence,order=score,lead_ins=false"
        .parse()
        .unwrap();
    let ctx = assemble(&cfg, &r).unwrap();
    assert!(ctx
        .pieces
        .iter()
        .all(|p| !p.text.contains("agree as follows")));
    // Document order keeps reading order; chunk topk hands over whole chunks.
    let cfg: StrategyConfig = "topk:unit=sentence".parse().unwrap();
    let ctx = assemble(&cfg, &r).unwrap();
    assert_eq!(ctx.pieces[0].text, texts[1]);
    let ctx = assemble(&"topk".parse().unwrap(), &req(&c, &hits, 14, None, None)).unwrap();
    assert_eq!(
        ctx.pieces[0].text,
        "Alpha beta appear together here. Unrelated filler text now. "
    );
}

#[test]
fn score_order_ranks_each_line_by_its_own_score() {
    // The best sentence ends a line; the next line, which touches it, matches less than
    // a line of the second chunk. Best first, the second chunk's line comes before it:
    // one good sentence does not carry the next line's text to the front.
    let c = TestCorpus::new(vec![build_doc(
        "nda.txt",
        "NDA",
        &[
            chunk(&["Zeta options are kept secret.\n", "Filler words of zeta.\n"]),
            chunk(&["Zeta options may be shared.\n"]),
        ],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.8)];
    let mut r = req(&c, &hits, 100, None, None);
    r.query = "zeta options";
    let cfg: StrategyConfig = "topk:unit=sentence,order=score,neighbours=0"
        .parse()
        .unwrap();
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, 100, &WordTokens, true).unwrap();
    let texts: Vec<&str> = ctx.pieces.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Zeta options are kept secret.\n",
            "Zeta options may be shared.\n",
            "Filler words of zeta.\n"
        ]
    );
    // Pieces touching at a line break are allowed in score order only; in document
    // order the same sentences merge into reading-order runs.
    let cfg: StrategyConfig = "topk:unit=sentence,neighbours=0".parse().unwrap();
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, 100, &WordTokens, true).unwrap();
    assert_eq!(ctx.pieces.len(), 1);
}

#[test]
fn topk_sentences_bridge_short_gaps_inside_a_section_only() {
    // Two matching lines of one section with a filler line between them, then another
    // section whose matching line is as close: bridged, the first two read as one
    // passage with the filler; the third stays apart, and so does everything in a
    // document without headings.
    let lines = [
        "Zeta options are kept secret.\n",
        "Filler words stay here.\n",
        "Zeta options may be shared.\n",
    ];
    let other = ["More filler words.\n", "Zeta options are listed.\n"];
    let headed = TestCorpus::new(vec![build_doc(
        "guide.md",
        "Guide",
        &[sec(1, "Usage", &lines), sec(1, "Other", &other)],
    )]);
    let plain = TestCorpus::new(vec![build_doc(
        "guide.txt",
        "Guide",
        &[chunk(&lines), chunk(&other)],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.9)];
    let texts = |c: &TestCorpus, spec: &str| {
        let mut r = req(c, &hits, 100, None, None);
        r.query = "zeta options";
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, c, &hits, 100, &WordTokens, true).unwrap();
        ctx.pieces
            .iter()
            .map(|p| p.text.clone())
            .collect::<Vec<_>>()
    };
    let spec = "topk:unit=sentence,order=score,neighbours=0,feedback=0";
    let bridged = texts(&headed, &format!("{spec},bridge=100"));
    assert_eq!(bridged[0], lines.concat());
    assert!(bridged.contains(&other[1].to_string()), "{bridged:?}");
    assert!(bridged
        .iter()
        .all(|t| !t.contains("Zeta options are listed.\n") || t == other[1]));
    // Off, or without sections, the matching lines come first, each alone.
    for (c, spec) in [
        (&headed, spec.to_string()),
        (&plain, format!("{spec},bridge=100")),
    ] {
        let apart = texts(c, &spec);
        assert!(
            apart[..3].iter().all(|t| t.starts_with("Zeta options")),
            "{apart:?}"
        );
    }
    // A gap longer than the bridge is not bridged.
    let short = texts(&headed, &format!("{spec},bridge=10"));
    assert!(
        short[..3].iter().all(|t| t.starts_with("Zeta options")),
        "{short:?}"
    );
}

#[test]
fn topk_sentences_rise_with_matching_neighbours_on_their_line_only() {
    let c = TestCorpus::new(vec![build_doc(
        "guide.md",
        "Guide",
        &[
            chunk(&["Lone zeta remark here.\n", "Options are listed below.\n"]),
            chunk(&[
                "Filler line sits here.\n",
                "Zeta reads one file. ",
                "Options live there too.\n",
            ]),
        ],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.9)];
    let mut r = req(&c, &hits, 12, None, None);
    r.query = "zeta options";
    let first = |spec: &str| {
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 12, &WordTokens, true).unwrap();
        ctx.pieces[0].text.clone()
    };
    // Scored alone, the first chunk's sentences lead (the better-ranked chunk); worth
    // about as much, its two lines stay one piece.
    assert_eq!(
        first("topk:unit=sentence,order=score,neighbours=0"),
        "Lone zeta remark here.\nOptions are listed below.\n"
    );
    // With neighbours, the two sentences of one line that each carry a query word lead;
    // the first chunk's two matching sentences are on two lines and do not lift each
    // other.
    assert_eq!(
        first("topk:unit=sentence,order=score"),
        "Zeta reads one file. Options live there too.\n"
    );
    assert!("topk:neighbours=1.5"
        .parse::<StrategyConfig>()
        .unwrap()
        .validate()
        .is_err());
}

#[test]
fn topk_sentences_count_their_headings_words() {
    let c = TestCorpus::new(vec![build_doc(
        "guide.md",
        "Guide",
        &[
            sec(
                1,
                "Usage",
                &["Zeta prints a report.\n", "Filler text stays here.\n"],
            ),
            sec(
                1,
                "Install",
                &["Zeta needs one file.\n", "Filler words again now.\n"],
            ),
        ],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.9)];
    let mut r = req(&c, &hits, 4, None, None);
    r.query = "install zeta";
    let texts = |spec: &str| {
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 4, &WordTokens, true).unwrap();
        ctx.pieces
            .iter()
            .map(|p| p.text.clone())
            .collect::<Vec<_>>()
    };
    // The sentence under the heading that names the query's other word comes first.
    assert_eq!(
        texts("topk:unit=sentence,order=score"),
        ["Zeta needs one file.\n"]
    );
    // Scored on their own words, the better-ranked chunk's sentence does.
    assert_eq!(
        texts("topk:unit=sentence,order=score,heading_terms=false"),
        ["Zeta prints a report.\n"]
    );
}

#[test]
fn feedback_terms_come_from_the_sentences_that_match_best() {
    let c = TestCorpus::new(vec![
        build_doc(
            "a.txt",
            "A",
            &[
                chunk(&["Nobody may solicit or hire employees under clause 12.\n"]),
                chunk(&["Lunch is served at noon.\n"]),
            ],
        ),
        build_doc(
            "b.txt",
            "B",
            &[chunk(&[
                "Parties shall not solicit staff or hire employees.\n",
                "Weather reports arrive daily.\n",
            ])],
        ),
    ]);
    let keys = [
        ChunkKey::new(0, 0),
        ChunkKey::new(0, 1),
        ChunkKey::new(1, 0),
        ChunkKey::new(7, 0), // not in the corpus: skipped
        ChunkKey::new(0, 9), // no such chunk: skipped
    ];
    let fb = feedback_terms("solicit", &c, &keys, 10, 30);
    let words: Vec<&str> = fb.iter().map(|(t, _)| t.as_str()).collect();
    // Both matching sentences share "hire" and "employees"; the query's own word and
    // the words of sentences that do not match are left out.
    assert!(
        words.contains(&"hire") && words.contains(&"employe"),
        "{fb:?}"
    );
    assert!(!words.contains(&"solicit"), "{fb:?}");
    // Numbers are labels, not wording.
    for w in ["lunch", "weather", "daili", "noon", "12"] {
        assert!(!words.contains(&w), "{w}: {fb:?}");
    }
    // Best first with the best at 1, every weight in (0, 1]; same input, same output.
    assert!((fb[0].1 - 1.0).abs() < 1e-6, "{fb:?}");
    assert!(fb.windows(2).all(|w| w[0].1 >= w[1].1));
    assert!(fb.iter().all(|(_, w)| *w > 0.0 && *w <= 1.0));
    assert_eq!(feedback_terms("solicit", &c, &keys, 10, 30), fb);
    // Fewer terms when asked; none when nothing matches or none are wanted.
    assert_eq!(
        feedback_terms("solicit", &c, &keys, 10, 2),
        fb[..2].to_vec()
    );
    assert!(feedback_terms("zebra", &c, &keys, 10, 30).is_empty());
    assert!(feedback_terms("solicit", &c, &keys, 10, 0).is_empty());
    assert!(feedback_terms("solicit", &c, &keys, 0, 30).is_empty());
}

#[test]
fn topk_sentences_match_the_feedback_terms() {
    let c = TestCorpus::new(vec![
        build_doc(
            "deal.txt",
            "Deal",
            &[
                chunk(&["Filler words stay.\n"]),
                chunk(&["Firms hire employees.\n"]),
            ],
        ),
        build_doc(
            "other.txt",
            "Other",
            &[chunk(&["Nobody may solicit or hire employees.\n"])],
        ),
    ]);
    // The question's word is only in the other document; feedback read there brings
    // "hire" and "employees" to the scoped one.
    let fb = feedback_terms("solicit", &c, &[ChunkKey::new(1, 0)], 10, 30);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.8)];
    let mut r = req(&c, &hits, 3, None, None);
    r.query = "solicit";
    r.feedback = &fb;
    let texts = |spec: &str| {
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 3, &WordTokens, true).unwrap();
        (
            ctx.pieces
                .iter()
                .map(|p| p.text.clone())
                .collect::<Vec<_>>(),
            ctx.notes,
        )
    };
    let (with, notes) = texts("topk:unit=sentence,order=score");
    assert_eq!(with, ["Firms hire employees.\n"]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("feedback term") && n.contains("hire")),
        "{notes:?}"
    );
    // Without feedback no sentence matches, and the better-ranked chunk's comes first.
    let (without, notes) = texts("topk:unit=sentence,order=score,feedback=0");
    assert_eq!(without, ["Filler words stay.\n"]);
    assert!(!notes.iter().any(|n| n.contains("feedback")), "{notes:?}");
    assert!("topk:feedback=1.5"
        .parse::<StrategyConfig>()
        .unwrap()
        .validate()
        .is_err());
    // Who reads feedback terms, so a caller can skip them for the others.
    for (spec, reads) in [
        ("auto", true),
        ("topk:unit=sentence", true),
        ("topk:unit=sentence,feedback=0", false),
        ("topk", false),
        ("rse", false),
        ("section", false),
    ] {
        let cfg: StrategyConfig = spec.parse().unwrap();
        assert_eq!(cfg.uses_feedback(), reads, "{spec}");
    }
}

#[test]
fn strategy_names_configs_and_validation() {
    for s in Strategy::ALL {
        assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        let cfg = StrategyConfig::default_for(s);
        cfg.validate().unwrap();
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<StrategyConfig>(&json).unwrap(), cfg);
        assert_eq!(cfg.to_string(), s.name());
    }
    assert!(matches!(
        "nope".parse::<Strategy>(),
        Err(ContextError::UnknownStrategy { .. })
    ));
    assert!("rse:wild".parse::<StrategyConfig>().is_err());
    assert!("topk:precision".parse::<StrategyConfig>().is_err());
    let partial: StrategyConfig =
        serde_json::from_str(r#"{"strategy":"rse","threshold":0.25}"#).unwrap();
    assert_eq!(
        partial,
        StrategyConfig::Rse(RseParams {
            threshold: 0.25,
            ..Default::default()
        })
    );
    assert!(
        serde_json::from_str::<StrategyConfig>(r#"{"strategy":"rse","treshold":0.25}"#).is_err()
    );
    let bad = [
        StrategyConfig::Rse(RseParams {
            threshold: 1.5,
            ..Default::default()
        }),
        StrategyConfig::Rse(RseParams {
            rank_decay: 0.0,
            ..Default::default()
        }),
        StrategyConfig::Adjacent(AdjacentParams {
            decay: 0.0,
            ..Default::default()
        }),
        StrategyConfig::Window(WindowParams {
            threshold: f32::NAN,
            ..Default::default()
        }),
        StrategyConfig::Window(WindowParams {
            query_threshold: Some(2.0),
            ..Default::default()
        }),
        StrategyConfig::Section(SectionParams {
            multi_section_threshold: 0,
            ..Default::default()
        }),
        StrategyConfig::Auto(AutoParams {
            structure_hits: 0,
            ..Default::default()
        }),
        StrategyConfig::Topk(TopkParams {
            max_chunks: 0,
            ..Default::default()
        }),
    ];
    let c = five_chunks();
    for cfg in bad {
        let e = assemble(&cfg, &req(&c, &[], 10, None, None)).unwrap_err();
        assert!(
            matches!(e, ContextError::InvalidParams { .. }),
            "{cfg:?}: {e}"
        );
        assert!(e.to_string().contains("invalid parameter"));
    }
}

#[test]
fn bad_hits_are_errors() {
    let c = five_chunks();
    let missing = [Hit::new(ChunkKey::new(0, 9), 1.0, 1.0)];
    assert!(matches!(
        assemble(&"topk".parse().unwrap(), &req(&c, &missing, 10, None, None)),
        Err(ContextError::MissingChunk {
            index: 0,
            doc: 0,
            ordinal: 9
        })
    ));
    let nan = [Hit::new(ChunkKey::new(0, 1), 1.0, f32::NAN)];
    assert!(matches!(
        assemble(&"topk".parse().unwrap(), &req(&c, &nan, 10, None, None)),
        Err(ContextError::InvalidHit {
            what: "relevance",
            ..
        })
    ));
    let short = [0.5f32; 3];
    assert!(matches!(
        assemble(
            &"rse".parse().unwrap(),
            &req(&c, &[hit(0, 1, 0.9)], 10, None, Some(&short))
        ),
        Err(ContextError::DimensionMismatch { .. })
    ));
}

#[test]
fn tiktoken_counts_offline() {
    let t = TiktokenCounter::cl100k().unwrap();
    assert_eq!(t.name(), "cl100k_base");
    assert_eq!(t.count("hello world"), 2);
    assert_eq!(t.count(""), 0);
    assert_eq!(t.count("<|endoftext|>"), t.count("<|endoftext|>"));
    let o = TiktokenCounter::new("o200k_base").unwrap();
    assert_eq!(o.name(), "o200k_base");
    assert!(o.count("Bonjour, le monde — naïve café") > 0);
    assert!(matches!(
        TiktokenCounter::new("gpt2"),
        Err(ContextError::Tokenizer { .. })
    ));
    // Budgets in real LLM tokens.
    let c = five_chunks();
    let hits = [hit(0, 2, 0.9), hit(0, 0, 0.5)];
    for s in Strategy::ALL {
        let r = AssembleRequest {
            tokens: &t,
            ..req(&c, &hits, 12, None, None)
        };
        let ctx = assemble(&StrategyConfig::default_for(s), &r).unwrap();
        check_invariants(&ctx, &c, &hits, 12, &t, false).unwrap();
    }
}

/// A section-less document of `n` chunks, each two distinct sentences (4 word tokens),
/// and a hit on every chunk, best first.
fn flat(n: u32) -> (TestCorpus, Vec<excerpt_context::Hit>) {
    let specs: Vec<ChunkSpec> = (0..n)
        .map(|i| {
            let x = format!("c{i} one. ");
            let y = format!("c{i} two. ");
            chunk(&[x.as_str(), y.as_str()])
        })
        .collect();
    let c = TestCorpus::new(vec![build_doc("flat.md", "Flat", &specs)]);
    let hits = (0..n).map(|i| hit(0, i, 1.0 - i as f32 / 100.0)).collect();
    (c, hits)
}

#[test]
fn window_fills_the_budget_past_ten_hits_and_embeds_only_what_it_uses() {
    // Unrelated sentences: windows do not grow, so each hit gives about one sentence and
    // a large budget needs many hits.
    let (c, hits) = flat(40);
    let cfg: StrategyConfig = "window".parse().unwrap();
    let emb = HashEmbedder::default();
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, Some(&emb), None)).unwrap();
    check_invariants(&ctx, &c, &hits, 1000, &WordTokens, true).unwrap();
    let hit_chunks: usize = ctx.pieces.iter().map(|p| p.hits.len()).sum();
    assert_eq!(hit_chunks, 40, "every hit expanded: {:?}", ctx.notes);
    assert!(emb.calls.load(Ordering::SeqCst) >= 5, "waves of eight hits");
    // A small budget stops after the first wave: fewer sentences embedded.
    let small = HashEmbedder::default();
    let qv = small.vector("c0 one");
    let ctx = assemble(&cfg, &req(&c, &hits, 6, Some(&small), Some(&qv))).unwrap();
    check_invariants(&ctx, &c, &hits, 6, &WordTokens, true).unwrap();
    assert!(ctx.tokens > 0 && ctx.tokens <= 6);
    assert_eq!(small.calls.load(Ordering::SeqCst), 1, "{:?}", ctx.notes);
    assert!(small.texts.load(Ordering::SeqCst) < emb.texts.load(Ordering::SeqCst));
    // max_hits still caps the hits expanded.
    let capped: StrategyConfig = "window:max_hits=3".parse().unwrap();
    let ctx = assemble(&capped, &req(&c, &hits, 1000, Some(&emb), None)).unwrap();
    let hit_chunks: usize = ctx.pieces.iter().map(|p| p.hits.len()).sum();
    assert_eq!(hit_chunks, 3);
}

#[test]
fn section_fill_takes_hits_beyond_max_hits_in_rank_order() {
    // One section-less document too long to promote: sections fall back to the top ten
    // hit chunks, and fill adds the next ones while they fit.
    let (c, hits) = flat(30);
    let ctx = assemble(
        &"section:fill=false".parse().unwrap(),
        &req(&c, &hits, 60, None, None),
    )
    .unwrap();
    check_invariants(&ctx, &c, &hits, 60, &WordTokens, false).unwrap();
    assert_eq!(ctx.tokens, 40, "ten hit chunks of 4 tokens: {ctx:?}");
    let ctx = assemble(&"section".parse().unwrap(), &req(&c, &hits, 60, None, None)).unwrap();
    check_invariants(&ctx, &c, &hits, 60, &WordTokens, false).unwrap();
    assert_eq!(ctx.tokens, 60);
    // Filled in rank order: chunks 0..15, one merged piece.
    assert_eq!(
        ctx.pieces
            .iter()
            .map(|p| (p.first_chunk, p.last_chunk))
            .collect::<Vec<_>>(),
        vec![(0, 14)]
    );
    assert!(
        ctx.notes.iter().any(|n| n.contains("filled")),
        "{:?}",
        ctx.notes
    );
}

#[test]
fn auto_takes_the_section_holding_the_best_hits_whole_first() {
    use excerpt_context::Corpus as _;
    // Two of the best hits lie in "Intro" (chunks 1 and 2); the third in "Methods".
    let c = sectioned();
    let hits = vec![hit(0, 2, 0.9), hit(0, 1, 0.8), hit(0, 3, 0.7)];
    let mut r = req(&c, &hits, 1000, None, None);
    r.query = "where is the intro";
    let run = |spec: &str, r: &AssembleRequest<'_>| {
        let ctx = assemble(&spec.parse().unwrap(), r).unwrap();
        check_invariants(&ctx, &c, &hits, r.budget, &WordTokens, true).unwrap();
        ctx
    };
    let ctx = run(
        "auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score",
        &r,
    );
    assert!(
        ctx.notes[1].contains("2 of the best 3 hits lie in the section \"Intro\""),
        "{:?}",
        ctx.notes
    );
    // The section comes first, whole: chunks 1 and 2, from its heading on (the next
    // section's sentence, worth nearly as much, may join it).
    let first = &ctx.pieces[0];
    assert_eq!(first.first_chunk, 1, "{:?}", ctx.pieces);
    assert!(first.last_chunk >= 2, "{:?}", ctx.pieces);
    let doc = c.document(0).unwrap();
    assert_eq!(first.start, doc.chunks[1].range.char_start);
    assert!(first.end >= doc.chunks[2].range.char_end);
    // Off, the route's sentences alone.
    let off = run("auto:extent=false,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score", &r);
    assert_eq!(off.pieces, run("topk:unit=sentence,order=score", &r).pieces);
    // Under a budget the sentences compete for, the section is what changes: whole
    // "Intro" against its best line and the other section's better-matching line.
    let specs = [
        sec(1, "Intro", &["alpha one. ", "filler words here. "]),
        chunk(&["more filler text. ", "plain words. "]),
        sec(1, "Other", &["alpha beta gamma. "]),
        chunk(&["beta again. "]),
    ];
    let tight = TestCorpus::new(vec![build_doc("t.md", "T", &specs)]);
    let tight_hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.85), hit(0, 2, 0.5)];
    let r3 = req(&tight, &tight_hits, 12, None, None);
    let on = assemble(&"auto:extent_share=1,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap(), &r3).unwrap();
    check_invariants(&on, &tight, &tight_hits, 12, &WordTokens, true).unwrap();
    let off = assemble(&"auto:extent=false,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap(), &r3).unwrap();
    let texts =
        |ps: &[excerpt_context::Piece]| ps.iter().map(|p| p.text.clone()).collect::<Vec<_>>();
    assert_eq!(
        texts(&on.pieces)[0],
        "alpha one. filler words here. more filler text. plain words. ",
        "{:?}",
        on.notes
    );
    assert!(
        texts(&off.pieces)
            .iter()
            .any(|t| t.contains("alpha beta gamma")),
        "{:?}",
        off.pieces
    );
    assert!(
        !texts(&on.pieces)
            .iter()
            .any(|t| t.contains("alpha beta gamma")),
        "{:?}",
        on.pieces
    );
    // Hits in different sections, or fewer than extent_min together: no extent step.
    let apart = vec![hit(0, 1, 0.9), hit(0, 3, 0.8)];
    let mut r2 = req(&c, &apart, 1000, None, None);
    r2.query = "where is the intro";
    let ctx = assemble(
        &"auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score"
            .parse()
            .unwrap(),
        &r2,
    )
    .unwrap();
    assert!(
        !ctx.notes.iter().any(|n| n.contains("taken whole")),
        "{:?}",
        ctx.notes
    );
    let ctx = run("auto:extent_min=3,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score", &r);
    assert!(
        !ctx.notes.iter().any(|n| n.contains("taken whole")),
        "{:?}",
        ctx.notes
    );
    // A section larger than its share of the budget is not taken whole.
    let small = req(&c, &hits, 6, None, None);
    let ctx = run(
        "auto:extent_share=0.5,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score",
        &AssembleRequest {
            query: "where is the intro",
            ..small
        },
    );
    assert!(
        !ctx.notes.iter().any(|n| n.contains("taken whole")),
        "{:?}",
        ctx.notes
    );
    assert!("auto:extent_share=0,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score"
        .parse::<StrategyConfig>()
        .and_then(|c| c.validate())
        .is_err());
}

#[test]
fn auto_takes_the_run_of_the_best_hit_and_its_neighbour_when_the_section_is_too_long() {
    // "Intro" holds four chunks of four words: 16 words, more than the budget of 10. The
    // best hit (chunk 2) and the third (chunk 3) are neighbours in it.
    let specs = [
        sec(1, "Intro", &["alpha one two. ", "plain filler. "]),
        chunk(&["more filler text. ", "beta words. "]),
        chunk(&["gamma delta more. ", "alpha close. "]),
        chunk(&["alpha beta near. ", "tail words. "]),
        sec(1, "Other", &["alpha beta gamma. "]),
    ];
    let c = TestCorpus::new(vec![build_doc("r.md", "R", &specs)]);
    let hits = vec![hit(0, 2, 0.9), hit(0, 4, 0.8), hit(0, 3, 0.7)];
    let mut r = req(&c, &hits, 10, None, None);
    r.query = "alpha beta";
    let run = |spec: &str| {
        let ctx = assemble(&spec.parse().unwrap(), &r).unwrap();
        check_invariants(&ctx, &c, &hits, r.budget, &WordTokens, true).unwrap();
        ctx
    };
    let on = run("auto:extent_run=1,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score");
    assert!(
        on.notes.iter().any(|n| n.contains("their run taken first")),
        "{:?}",
        on.notes
    );
    let first = &on.pieces[0];
    assert_eq!(
        (first.first_chunk, first.last_chunk),
        (2, 3),
        "{:?}",
        on.pieces
    );
    assert_eq!(
        first.text,
        "gamma delta more. alpha close. alpha beta near. tail words. "
    );
    // Off by default; and a best hit whose neighbour is not among the best hits (the run
    // would span chunks 2 and 4 across the section's end) takes no run.
    let off = run("auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score");
    assert!(
        !off.notes.iter().any(|n| n.contains("run taken")),
        "{:?}",
        off.notes
    );
    assert_ne!(off.pieces[0].text, first.text);
    let far = vec![hit(0, 2, 0.9), hit(0, 0, 0.8), hit(0, 4, 0.7)];
    let ctx = assemble(
        &"auto:extent_run=1,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap(),
        &AssembleRequest { hits: &far, ..r },
    )
    .unwrap();
    assert!(
        !ctx.notes.iter().any(|n| n.contains("run taken")),
        "{:?}",
        ctx.notes
    );
}

#[test]
fn auto_brings_the_sections_a_question_names_into_the_candidates() {
    // A filing: narrative that talks about cash, and statements the retrieval missed.
    let specs = [
        sec(
            1,
            "Liquidity",
            &["Our cash position and cash flow remained strong this year. "],
        ),
        chunk(&["We expect cash flow from operations to fund our plans. "]),
        sec(
            1,
            "Consolidated Statements of Operations",
            &["Revenue 3,991 5,506\n", "In millions.\n"],
        ),
        sec(
            1,
            "Consolidated Balance Sheets",
            &["Total assets 3,109 3,767\n", "In millions.\n"],
        ),
        sec(
            1,
            "Consolidated Statements of Cash Flows",
            &["Net loss (660) (403)\n"],
        ),
        chunk(&["Depreciation and amortization 167 203\n"]),
        sec(
            1,
            "Cash Flow Hedges",
            &["Hedges of forecast cash flows are recorded. "],
        ),
        sec(
            1,
            "Principles of Consolidation",
            &["The statements consolidate subsidiaries. "],
        ),
    ];
    let c = TestCorpus::new(vec![build_doc("f.pdf", "F", &specs)]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.8)];
    let mut r = req(&c, &hits, 30, None, None);
    r.query = "what depreciation and amortization does the statement of cash flows show";
    let run = |spec: &str, r: &AssembleRequest<'_>| {
        let ctx = assemble(&spec.parse().unwrap(), r).unwrap();
        check_invariants(&ctx, &c, &hits, r.budget, &WordTokens, true).unwrap();
        ctx
    };
    let has =
        |ctx: &excerpt_context::Context, s: &str| ctx.pieces.iter().any(|p| p.text.contains(s));
    let on = run(
        "auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score",
        &r,
    );
    let note = on
        .notes
        .iter()
        .find(|n| n.contains("names"))
        .cloned()
        .unwrap_or_default();
    // "Consolidated" is in three headings: leaving it out still names the statement.
    assert!(
        note.contains("\"Consolidated Statements of Cash Flows\"")
            && note.contains("2 of their chunks join the candidates, 0 reached"),
        "{:?}",
        on.notes
    );
    // "Cash Flow Hedges" matches fewer of the words than the statement does: not named.
    assert!(!note.contains("Hedges"), "{note}");
    assert!(
        has(&on, "Depreciation and amortization 167 203"),
        "{:?} {:?}",
        on.pieces,
        on.notes
    );
    let off = run(
        "auto:named=false,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score",
        &r,
    );
    assert!(
        !has(&off, "Depreciation"),
        "{:?} {:?}",
        off.pieces,
        off.notes
    );
    // A statement named by another of its names: the income statement, or the P&L, is
    // the filing's "Statements of Operations".
    for query in [
        "what revenue does the income statement show",
        "what revenue does the P&L show",
    ] {
        r.query = query;
        let ctx = run(
            "auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score",
            &r,
        );
        assert!(
            ctx.notes
                .iter()
                .any(|n| n.contains("names \"Consolidated Statements of Operations\"")),
            "{query}: {:?}",
            ctx.notes
        );
        assert!(
            has(&ctx, "Revenue 3,991 5,506"),
            "{query}: {:?}",
            ctx.pieces
        );
    }
    // One word of a heading, numbers, or a missing word that is the section's own
    // subject ("Operations" is in one heading) name nothing.
    for query in [
        "what does the statement say",
        "consolidated 3,991 5,506",
        "the consolidated statements",
    ] {
        r.query = query;
        let ctx = run(
            "auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score",
            &r,
        );
        assert!(
            !ctx.notes.iter().any(|n| n.contains("names")),
            "{query}: {:?}",
            ctx.notes
        );
    }
    // A named section retrieval reached, with a weaker hit: a statement (rows of figures)
    // has that chunk raised to the best hit's value and its other chunk added; with
    // `named_reached=false` it is left as ranked.
    let reached = vec![hit(0, 0, 0.9), hit(0, 1, 0.85), hit(0, 4, 0.2)];
    let mut r2 = req(&c, &reached, 30, None, None);
    r2.query = "what depreciation and amortization does the statement of cash flows show";
    let ctx = assemble(
        &"auto:min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score"
            .parse()
            .unwrap(),
        &r2,
    )
    .unwrap();
    check_invariants(&ctx, &c, &reached, 30, &WordTokens, true).unwrap();
    assert!(
        ctx.notes
            .iter()
            .any(|n| n.contains("1 of their chunks join the candidates, 1 reached")),
        "{:?}",
        ctx.notes
    );
    assert!(
        has(&ctx, "Depreciation and amortization"),
        "{:?}",
        ctx.pieces
    );
    let ctx = assemble(&"auto:named_reached=false,min_piece_chars=0,chars_per_token=0,topk.passages=false,topk.continuation=0,topk.order=score".parse().unwrap(), &r2).unwrap();
    assert!(
        !ctx.notes.iter().any(|n| n.contains("names")),
        "{:?}",
        ctx.notes
    );
}

#[test]
fn topk_sentences_long_questions_take_the_long_floor() {
    // A sentence sharing no word with the question in the best chunk, and one sharing
    // all of them in a weaker chunk. At the usual floor the words win; for a question of
    // at least `long_terms` terms with `long_floor` 1 the chunks' relevance alone ranks.
    let c = TestCorpus::new(vec![build_doc(
        "a.txt",
        "A",
        &[
            chunk(&["Unrelated words fill this line.\n"]),
            chunk(&["Gamma delta epsilon zeta eta theta appear here.\n"]),
        ],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.6)];
    let first = |spec: &str, query: &'static str| {
        let mut r = req(&c, &hits, 100, None, None);
        r.query = query;
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 100, &WordTokens, true).unwrap();
        (ctx.pieces[0].text.clone(), ctx.notes.clone())
    };
    let long = "gamma delta epsilon zeta eta theta";
    let base = "topk:unit=sentence,order=score,neighbours=0,feedback=0";
    let (text, notes) = first(base, long);
    assert!(text.starts_with("Gamma"), "{text:?}");
    assert!(
        !notes.iter().any(|n| n.contains("lexical floor")),
        "{notes:?}"
    );
    let (text, notes) = first(&format!("{base},long_terms=6,long_floor=1"), long);
    assert!(text.starts_with("Unrelated"), "{text:?}");
    assert!(
        notes.iter().any(|n| n.contains("6 terms: lexical floor 1")),
        "{notes:?}"
    );
    // One term short of `long_terms`: the usual floor.
    let (text, _) = first(&format!("{base},long_terms=7,long_floor=1"), long);
    assert!(text.starts_with("Gamma"), "{text:?}");
    // Where stored sentence similarity counts, it stands for meaning instead: no floor
    // change (with its weight at 0 it counts for nothing, and the floor applies).
    let with_vectors = TestCorpus::new(c.docs.clone()).with_sentence_vectors();
    let emb = HashEmbedder::default();
    let qv = emb.vector(long);
    let notes = |spec: &str| {
        let mut r = req(&with_vectors, &hits, 100, None, Some(&qv));
        r.query = long;
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &with_vectors, &hits, 100, &WordTokens, true).unwrap();
        ctx.notes
    };
    let spec = format!("{base},long_terms=6,long_floor=1,dense_min_terms=6");
    let n = notes(&spec);
    assert!(
        n.iter().any(|n| n.contains("stored sentence vectors")),
        "{n:?}"
    );
    assert!(!n.iter().any(|n| n.contains("lexical floor")), "{n:?}");
    let n = notes(&format!("{spec},dense_weight=0"));
    assert!(n.iter().any(|n| n.contains("lexical floor")), "{n:?}");
}

#[test]
fn topk_sentences_long_questions_join_touching_lines() {
    // In score order two touching lines of unequal worth stay two pieces; for a question
    // of at least `long_terms` terms with `long_join` 0 they read as one passage.
    let c = TestCorpus::new(vec![build_doc(
        "a.txt",
        "A",
        &[chunk(&[
            "Zeta options are kept secret.\n",
            "Filler words of zeta.\n",
        ])],
    )]);
    let hits = vec![hit(0, 0, 0.9)];
    let pieces = |spec: &str| {
        let mut r = req(&c, &hits, 100, None, None);
        r.query = "zeta options";
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 100, &WordTokens, true).unwrap();
        ctx.pieces
            .iter()
            .map(|p| p.text.clone())
            .collect::<Vec<_>>()
    };
    let base = "topk:unit=sentence,order=score,neighbours=0,feedback=0,long_join=0";
    assert_eq!(
        pieces(&format!("{base},long_terms=3")),
        ["Zeta options are kept secret.\n", "Filler words of zeta.\n"]
    );
    assert_eq!(
        pieces(&format!("{base},long_terms=2")),
        ["Zeta options are kept secret.\nFiller words of zeta.\n"]
    );
}

#[test]
fn topk_sentences_long_questions_pool_more_hits_at_large_budgets() {
    // Twelve one-sentence chunks, all hits: `pool` of them compete, and for a question of
    // at least `long_terms` terms `pool` per `long_pool_tokens` of budget.
    let specs: Vec<ChunkSpec> = (0..12)
        .map(|i| {
            let s = format!("c{i} alpha beta.\n");
            chunk(&[s.as_str()])
        })
        .collect();
    let c = TestCorpus::new(vec![build_doc("a.txt", "A", &specs)]);
    let hits: Vec<Hit> = (0..12).map(|i| hit(0, i, 0.9 - i as f32 * 0.01)).collect();
    let pieces = |spec: &str| {
        let mut r = req(&c, &hits, 200, None, None);
        r.query = "alpha beta";
        let cfg: StrategyConfig = spec.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 200, &WordTokens, true).unwrap();
        ctx.pieces
            .iter()
            .map(|p| p.text.lines().count())
            .sum::<usize>()
    };
    let base = "topk:unit=sentence,order=score,neighbours=0,feedback=0,pool=2,long_pool_tokens=50";
    assert_eq!(pieces(&format!("{base},long_terms=3")), 2);
    assert_eq!(pieces(&format!("{base},long_terms=2")), 8);
    assert_eq!(
        pieces(&format!("{base},long_terms=2,long_pool_tokens=0")),
        2
    );
}

#[test]
fn auto_leads_a_long_question_with_the_best_run_of_chunks() {
    // No headings, so the extent step cannot fire; the best hits are neighbours.
    let specs: Vec<ChunkSpec> = (0..8)
        .map(|i| {
            let a = format!("part{i} alpha beta gamma. ");
            let b = format!("plain words here {i}. ");
            chunk(&[a.as_str(), b.as_str()])
        })
        .collect();
    let c = TestCorpus::new(vec![build_doc("long.md", "L", &specs)]);
    let hits = vec![hit(0, 3, 0.9), hit(0, 4, 0.85), hit(0, 0, 0.5)];
    let long = "why and how do alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi work together";
    let mut r = req(&c, &hits, 24, None, None);
    r.query = long;
    let run = |spec: &str, r: &AssembleRequest<'_>| {
        let ctx = assemble(&spec.parse().unwrap(), r).unwrap();
        check_invariants(&ctx, &c, &hits, r.budget, &WordTokens, true).unwrap();
        ctx
    };
    let on = run("auto", &r);
    assert!(
        on.notes.iter().any(|n| n.contains("rse's best segment")),
        "{:?}",
        on.notes
    );
    let first = &on.pieces[0];
    assert_eq!(
        (first.first_chunk, first.last_chunk),
        (3, 4),
        "{:?}",
        on.pieces
    );
    assert_eq!(
        first.text,
        "part3 alpha beta gamma. plain words here 3. part4 alpha beta gamma. plain words here 4. "
    );
    // Off, a short question, or a segment that would leave the sentences less than a
    // tenth of the budget: no segment first.
    let off = run("auto:long_segment=false", &r);
    assert!(
        !off.notes.iter().any(|n| n.contains("segment")),
        "{:?}",
        off.notes
    );
    let short = run(
        "auto",
        &AssembleRequest {
            query: "alpha beta",
            ..r
        },
    );
    assert!(
        !short.notes.iter().any(|n| n.contains("segment")),
        "{:?}",
        short.notes
    );
    let tight = run("auto:long_segment_share=0.5", &r);
    assert!(
        tight
            .notes
            .iter()
            .any(|n| n.contains("no run of 2 or more chunks")),
        "{:?}",
        tight.notes
    );
    // A single chunk is not a run.
    let one = vec![hit(0, 3, 0.9), hit(0, 0, 0.5)];
    let ctx = run("auto", &AssembleRequest { hits: &one, ..r });
    assert!(
        ctx.notes
            .iter()
            .any(|n| n.contains("no run of 2 or more chunks")),
        "{:?}",
        ctx.notes
    );
    assert!("auto:long_segment_share=0"
        .parse::<StrategyConfig>()
        .and_then(|c| c.validate())
        .is_err());
}

#[test]
fn auto_takes_no_segment_first_when_a_long_question_names_a_section() {
    let specs = [
        sec(1, "Liquidity", &["Cash flow alpha beta gamma rose. "]),
        chunk(&["Cash flow alpha beta gamma stayed. "]),
        sec(
            1,
            "Consolidated Statements of Cash Flows",
            &["Net loss (660) (403)\n"],
        ),
    ];
    let c = TestCorpus::new(vec![build_doc("f.pdf", "F", &specs)]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.85)];
    let mut r = req(&c, &hits, 30, None, None);
    r.query = "according to the consolidated statements of cash flows what alpha beta gamma delta epsilon zeta eta theta iota kappa figures";
    let ctx = assemble(&"auto".parse().unwrap(), &r).unwrap();
    check_invariants(&ctx, &c, &hits, r.budget, &WordTokens, true).unwrap();
    assert!(
        ctx.notes.iter().any(|n| n.contains("naming a section")),
        "{:?}",
        ctx.notes
    );
}

#[test]
fn rse_values_an_unretrieved_chunk_between_hits_by_similarity_among_many_hits() {
    // Thirty-two hits: an unretrieved chunk's value is at most cap · e^(−32/30) − 0.3 < 0,
    // so `rse` values by similarity only the unretrieved chunks within reach of a hit.
    // Chunk 11 lies between two hits: valued by its similarity (−0.13) it joins them in
    // one segment (0.60 − 0.13 + 0.25 > 0.60); valued flat (−0.3), it would not.
    let mut specs: Vec<_> = (0..40)
        .map(|i| chunk(&[&format!("zeta {i} eta theta. ")]))
        .collect();
    specs[10] = chunk(&["alpha beta gamma. "]);
    specs[11] = chunk(&["alpha beta. "]);
    specs[12] = chunk(&["alpha beta delta. "]);
    let others: Vec<_> = (0..30)
        .map(|i| chunk(&[&format!("other {i} things. ")]))
        .collect();
    let c = TestCorpus::new(vec![
        build_doc("r.md", "R", &specs),
        build_doc("s.md", "S", &others),
    ]);
    let mut hits = vec![hit(0, 10, 0.9), hit(0, 12, 0.57)];
    hits.extend((0..30).map(|i| hit(1, i, 0.5)));
    let qv = HashEmbedder::default().vector("alpha beta");
    let cfg = StrategyConfig::Rse(RseParams {
        threshold: 0.3,
        ..RseParams::default()
    });
    let ctx = assemble(&cfg, &req(&c, &hits, 1000, None, Some(&qv))).unwrap();
    let r: Vec<_> = ctx
        .pieces
        .iter()
        .filter(|p| p.doc_id == "r.md")
        .map(|p| (p.first_chunk, p.last_chunk, p.hits.clone()))
        .collect();
    assert_eq!(r, vec![(10, 12, vec![10, 12])], "{:?}", ctx.notes);
}

#[test]
fn passages_join_neighbouring_sentences_and_keep_reading_order() {
    // Two documents; in the first, two matching sentences a word apart (in a chunk
    // retrieval did not find), under a heading; in the second, one matching sentence.
    let c = TestCorpus::new(vec![
        build_doc(
            "a.md",
            "A",
            &[
                sec(
                    1,
                    "Notes",
                    &[
                        "# Notes\n",
                        "Alpha beta come first in this long sentence of many words. ",
                    ],
                ),
                chunk(&["Aside. "]),
                chunk(&[
                    "Alpha beta again in another sentence of words. ",
                    "Unrelated filler text now here for padding words. ",
                ]),
            ],
        ),
        build_doc(
            "b.md",
            "B",
            &[chunk(&[
                "Other words first of all here. ",
                "Beta alpha appear once in this document too. ",
            ])],
        ),
    ]);
    let hits = vec![hit(1, 0, 0.95), hit(0, 0, 0.9), hit(0, 2, 0.85)];
    let greedy: StrategyConfig = "topk:unit=sentence,order=score".parse().unwrap();
    let planned: StrategyConfig =
        "topk:unit=sentence,passages=true,piece_chars=10,value_power=4,tokens_per_piece=0"
            .parse()
            .unwrap();
    let r = req(&c, &hits, 28, None, None);
    let g = assemble(&greedy, &r).unwrap();
    let p = assemble(&planned, &r).unwrap();
    check_invariants(&p, &c, &hits, 28, &WordTokens, true).unwrap();
    // Best first, the greedy hands over the two sentences of `a.md` as two pieces.
    let g_texts: Vec<&str> = g.pieces.iter().map(|p| p.text.as_str()).collect();
    assert!(
        g_texts.contains(&"Alpha beta come first in this long sentence of many words. ")
            && g_texts.contains(&"Alpha beta again in another sentence of words. "),
        "{g_texts:?}"
    );
    // The plan joins them with the word between them into one passage.
    let texts: Vec<&str> = p.pieces.iter().map(|p| p.text.as_str()).collect();
    assert!(
        texts.contains(
            &"Alpha beta come first in this long sentence of many words. Aside. Alpha beta again in another sentence of words. "
        ),
        "{texts:?}"
    );
    assert_eq!(p.pieces.len(), 2, "{texts:?}");
    assert_eq!(p.order, PieceOrder::Document);
    // Reading order within each document, documents never interleaved, no heading
    // alone.
    let mut seen: Vec<&str> = Vec::new();
    for w in p.pieces.windows(2) {
        if w[0].doc_id == w[1].doc_id {
            assert!(w[0].end <= w[1].start, "{texts:?}");
        }
    }
    for piece in &p.pieces {
        if seen.last() != Some(&piece.doc_id.as_str()) {
            assert!(!seen.contains(&piece.doc_id.as_str()), "{texts:?}");
            seen.push(&piece.doc_id);
        }
        assert_ne!(piece.text.trim(), "# Notes", "{texts:?}");
    }
}

#[test]
fn auto_leaves_out_pieces_too_short_to_read_alone() {
    // The best sentence is three words alone in a chunk far from the others.
    let c = TestCorpus::new(vec![build_doc(
        "m.txt",
        "Meeting",
        &[
            chunk(&["Alpha words of a longer first chunk that goes on for quite a while, with more and more words. "]),
            chunk(&["Filler words that no question asks about, in a chunk that retrieval did not find at all. "]),
            chunk(&["Alpha beta. "]),
        ],
    )]);
    let hits = vec![hit(0, 2, 0.9), hit(0, 0, 0.8)];
    let r = req(&c, &hits, 40, None, None);
    let texts = |cfg: &str| -> Vec<String> {
        let cfg: StrategyConfig = cfg.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        check_invariants(&ctx, &c, &hits, 40, &WordTokens, true).unwrap();
        ctx.pieces.iter().map(|p| p.text.clone()).collect()
    };
    let any = texts(
        "auto:topk.piece_chars=0,topk.tokens_per_piece=0,topk.continuation=0,chars_per_token=0,min_piece_chars=0",
    );
    assert!(any.contains(&"Alpha beta. ".to_string()), "{any:?}");
    let readable = texts(
        "auto:topk.piece_chars=0,topk.tokens_per_piece=0,topk.continuation=0,chars_per_token=0",
    );
    assert!(!readable.is_empty());
    assert!(
        readable.iter().all(|t| t.chars().count() >= 80),
        "{readable:?}"
    );
}

#[test]
fn a_sentence_longer_than_half_the_budget_is_read_by_its_clauses() {
    // One sentence of three long clauses (about 50 words each), the second the one the
    // query matches; then a short sentence in a chunk of its own.
    let filler = |w: &str| -> String { vec![w; 44].join(" ") };
    let sentence = format!(
        "The Receiving Party: (i) shall keep {} safe; (ii) shall not use alpha beta for any purpose other than {} stated; (iii) shall return {} on request.",
        filler("records"),
        filler("evaluation"),
        filler("copies"),
    );
    let c = TestCorpus::new(vec![build_doc(
        "nda.txt",
        "NDA",
        &[
            chunk(&[sentence.as_str()]),
            chunk(&[" Alpha is named once more in this closing sentence of the agreement."]),
        ],
    )]);
    let hits = vec![hit(0, 0, 0.9), hit(0, 1, 0.8)];
    let budget = 80;
    let r = req(&c, &hits, budget, None, None);
    // A clause may end inside a sentence: pieces are checked for exact text and budget.
    let text: Vec<char> = c.docs[0].text.chars().collect();
    let texts = |cfg: &str| -> Vec<String> {
        let cfg: StrategyConfig = cfg.parse().unwrap();
        let ctx = assemble(&cfg, &r).unwrap();
        assert!(ctx.tokens <= budget, "{} tokens", ctx.tokens);
        for p in &ctx.pieces {
            let exact: String = text[p.start..p.end].iter().collect();
            assert_eq!(p.text, exact);
        }
        ctx.pieces.iter().map(|p| p.text.clone()).collect()
    };
    // Whole, the sentence (about 140 words) does not fit in 80: its answer is lost.
    let whole = texts("topk:unit=sentence,passages=true,long_clauses=0");
    assert!(whole.iter().all(|t| !t.contains("(ii)")), "{whole:?}");
    // Cut into clauses, the clause that answers is a piece, from its enumerator to the
    // semicolon that ends it.
    let cut = texts("topk:unit=sentence,passages=true");
    assert!(
        cut.iter()
            .any(|t| t.starts_with("(ii) shall not use alpha beta")
                && t.trim_end().ends_with("stated;")),
        "{cut:?}"
    );
}

#[test]
fn a_continuation_reads_a_long_line_only_so_far() {
    // A document on one line: a retrieved chunk, then an unretrieved one of 80 sentences
    // (about 3,600 characters) that goes on in the same line.
    let rest: Vec<String> = (0..80)
        .map(|i| format!("Filler sentence number {i:02} of the line. "))
        .collect();
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let c = TestCorpus::new(vec![build_doc(
        "one-line.txt",
        "One line",
        &[chunk(&["Alpha beta open the line here. "]), chunk(&rest)],
    )]);
    let hits = vec![hit(0, 0, 0.9)];
    let budget = 5000;
    let r = req(&c, &hits, budget, None, None);
    let cfg: StrategyConfig =
        "topk:unit=sentence,passages=true,continuation=300,tokens_per_piece=0"
            .parse()
            .unwrap();
    let ctx = assemble(&cfg, &r).unwrap();
    check_invariants(&ctx, &c, &hits, budget, &WordTokens, true).unwrap();
    let second = c.docs[0].chunks[1].range.char_start;
    let end = ctx.pieces.iter().map(|p| p.end).max().unwrap();
    // Into the next chunk, as far as the line's bound and the sentence it cuts.
    assert!(end > second, "{:?}", ctx.pieces);
    assert!(end <= second + 2000 + 60, "{end}: {:?}", ctx.notes);
}
