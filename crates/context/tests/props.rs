//! Property tests of the assembly contract, for every strategy, on random corpora and hits.

mod common;

use common::*;
use excerpt_context::{
    assemble, AssembleRequest, AutoParams, Hit, RseParams, RsePreset, SectionParams,
    StrategyConfig, WindowParams,
};
use excerpt_core::ChunkKey;
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "délta",
    "straße",
    "日本語",
    "omega",
    "kappa",
    "cell",
    "segment",
];

fn sentence() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 1..5).prop_map(|ws| {
        let mut s = ws.join(" ");
        s.push_str(". ");
        s
    })
}

fn chunk_spec() -> impl Strategy<Value = ChunkSpec> {
    (
        prop::collection::vec(sentence(), 1..4),
        prop::option::weighted(
            0.3,
            (
                1u8..3,
                prop::sample::select(vec!["Intro", "Méthodes", "Results"]),
            ),
        ),
    )
        .prop_map(|(sentences, section)| ChunkSpec {
            sentences,
            section: section.map(|(l, h)| (l, h.to_string())),
        })
}

fn corpus() -> impl Strategy<Value = TestCorpus> {
    prop::collection::vec(prop::collection::vec(chunk_spec(), 1..9), 1..4).prop_map(|docs| {
        TestCorpus::new(
            docs.iter()
                .enumerate()
                .map(|(i, specs)| build_doc(&format!("doc{i}.md"), &format!("Title {i}"), specs))
                .collect(),
        )
    })
}

fn configs() -> Vec<(StrategyConfig, bool)> {
    let mut v: Vec<(StrategyConfig, bool)> = [
        "topk",
        "adjacent",
        "rse",
        "rse:precision",
        "rse:find_all",
        "rse:optimal=true",
        "section",
        "auto",
    ]
    .iter()
    .map(|s| (s.parse().expect("known"), false))
    .collect();
    v.push(("topk:order=score".parse().expect("known"), false));
    v.push((
        StrategyConfig::Section(SectionParams {
            full_documents: false,
            ..Default::default()
        }),
        false,
    ));
    v.push((
        StrategyConfig::Auto(AutoParams {
            sections: false,
            ..Default::default()
        }),
        false,
    ));
    v.push((
        StrategyConfig::Rse(RseParams {
            min_value: -1.0,
            threshold: 0.5,
            ..RseParams::preset(RsePreset::Balanced)
        }),
        false,
    ));
    // Sentence units: pieces start and end on sentences, like window's.
    for spec in [
        "rse:unit=sentence",
        "rse:unit=sentence,min_value=0",
        "topk:unit=sentence",
        "topk:unit=sentence,order=score,pool=3",
    ] {
        v.push((spec.parse().expect("known"), true));
    }
    v.push((StrategyConfig::Window(WindowParams::default()), true));
    v.push((
        "window:seeds=sentence,expand=fixed,max_expand=1"
            .parse()
            .expect("known"),
        true,
    ));
    v.push((
        StrategyConfig::Window(WindowParams {
            threshold: 0.0,
            query_threshold: Some(0.1),
            max_expand: 5,
            ..Default::default()
        }),
        true,
    ));
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_strategy_keeps_the_contract(
        corpus in corpus(),
        raw_hits in prop::collection::vec((0u32..4, 0u32..9, 0.0f32..1.0), 0..8),
        budget in 1usize..120,
        query in prop::sample::select(vec!["alpha beta", "compare all gamma and omega", "straße"]),
        with_vector in any::<bool>(),
        with_feedback in any::<bool>(),
    ) {
        // Feedback terms read from every chunk of the corpus (the engine reads other
        // documents'; any list must keep the contract).
        let all: Vec<ChunkKey> = corpus
            .docs
            .iter()
            .enumerate()
            .flat_map(|(d, doc)| (0..doc.chunks.len()).map(move |o| ChunkKey::new(d as u32, o as u32)))
            .collect();
        let fb = if with_feedback {
            excerpt_context::feedback_terms(query, &corpus, &all, 10, 30)
        } else {
            Vec::new()
        };
        let mut hits: Vec<Hit> = raw_hits
            .iter()
            .map(|&(d, o, s)| {
                let d = d % corpus.docs.len() as u32;
                let o = o % corpus.docs[d as usize].chunks.len() as u32;
                hit(d, o, s)
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        let emb = HashEmbedder::default();
        let qv = emb.vector(query);
        for (cfg, window) in configs() {
            for use_embedder in [true, false] {
                if !window && !use_embedder {
                    continue;
                }
                let req = AssembleRequest {
                    query,
                    query_vector: with_vector.then_some(qv.as_slice()),
                    hits: &hits,
                    corpus: &corpus,
                    budget,
                    tokens: &WordTokens,
                    embedder: use_embedder.then_some(&emb as &dyn excerpt_core::Embedder),
                    feedback: &fb,
                    count_headers: false,
                };
                let ctx = assemble(&cfg, &req).map_err(|e| TestCaseError::fail(e.to_string()))?;
                // Window pieces are sentence-aligned only with an embedder (without one it
                // falls back to adjacent chunks); sentence-unit rse pieces always are.
                let sentence_units = matches!(cfg, StrategyConfig::Rse(p) if p.unit == excerpt_context::RseUnit::Sentence)
                    || matches!(cfg, StrategyConfig::Topk(p) if p.unit == excerpt_context::TopkUnit::Sentence)
                    // auto's pinpoint route takes sentences (chunk-aligned pieces are
                    // sentence-aligned too).
                    || matches!(cfg, StrategyConfig::Auto(_));
                let sentence_aligned = (window && use_embedder) || sentence_units;
                if let Err(e) = check_invariants(&ctx, &corpus, &hits, budget, &WordTokens, sentence_aligned) {
                    return Err(TestCaseError::fail(format!("{cfg:?} (embedder {use_embedder}): {e}\n{ctx:#?}")));
                }
                let again = assemble(&cfg, &req).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&ctx, &again, "not deterministic: {:?}", cfg);
                // Hits of a piece must be covered; the best hit is present when the budget
                // is ample (every strategy keeps a hit chunk unless rse's values exclude it).
                if budget >= 1000 && !hits.is_empty() && !matches!(cfg, StrategyConfig::Rse(_) | StrategyConfig::Auto(_)) {
                    let best: ChunkKey = hits[0].key;
                    prop_assert!(ctx.pieces.iter().any(|p| p.hits.contains(&best.ordinal)));
                }
            }
        }
    }

    #[test]
    fn ample_budget_covers_best_hit(
        corpus in corpus(),
        raw_hits in prop::collection::vec((0u32..4, 0u32..9, 0.0f32..1.0), 1..8),
    ) {
        let mut hits: Vec<Hit> = raw_hits
            .iter()
            .map(|&(d, o, s)| {
                let d = d % corpus.docs.len() as u32;
                let o = o % corpus.docs[d as usize].chunks.len() as u32;
                hit(d, o, s)
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        let emb = HashEmbedder::default();
        for name in ["topk", "adjacent", "section", "window"] {
            let cfg: StrategyConfig = name.parse().expect("known");
            let req = AssembleRequest {
                query: "alpha",
                query_vector: None,
                hits: &hits,
                corpus: &corpus,
                budget: 100_000,
                tokens: &WordTokens,
                embedder: Some(&emb),
                feedback: &[],
                count_headers: false,
            };
            let ctx = assemble(&cfg, &req).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let best = hits[0].key;
            let doc_id = &corpus.docs[best.doc as usize].id;
            prop_assert!(
                ctx.pieces.iter().any(|p| &p.doc_id == doc_id && p.hits.contains(&best.ordinal)),
                "{}: best hit missing", name
            );
        }
    }
}
