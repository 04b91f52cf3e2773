//! XLM-RoBERTa on the local path: tiny random-weight models made with `transformers` by
//! scripts/make-xlmr-fixtures.py (an embedding model with e5's prompts, a reranker),
//! held to the vectors and scores PyTorch gave for them.

use std::path::{Path, PathBuf};

use excerpt_embed::{
    CrossEncoderReranker, Embedder, LocalEmbedder, Pooling, QueryWeights, Reranker, TokenCounter,
};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams, TruncationStrategy};

/// Cosine every vector keeps to PyTorch's.
const MIN_COSINE: f64 = 0.9999;

/// Largest difference from PyTorch's score (the sigmoid of the logit).
const MAX_SCORE_GAP: f64 = 1e-4;

/// `reference.json` of the embedding model.
#[derive(Deserialize)]
struct EmbedReference {
    max_tokens: usize,
    prompts: Prompts,
    items: Vec<EmbedItem>,
}

/// The prompts the script wrote into `config_sentence_transformers.json`.
#[derive(Deserialize)]
struct Prompts {
    query: String,
    passage: String,
}

/// One text and PyTorch's vectors of it.
#[derive(Deserialize)]
struct EmbedItem {
    text: String,
    /// Token ids of the passage prompt and the text, truncated, special tokens included.
    passage_ids: Vec<u32>,
    truncated: bool,
    /// Mean pooled, as a passage (`passage: ` before it).
    passage: Vec<f32>,
    /// Mean pooled, as a query (`query: ` before it).
    query: Vec<f32>,
    /// The first token's vector, as a passage.
    passage_cls: Vec<f32>,
    /// Mean pooled with no prompt.
    no_prompt: Vec<f32>,
}

/// `reference.json` of the reranker.
#[derive(Deserialize)]
struct RerankReference {
    max_tokens: usize,
    items: Vec<RerankItem>,
}

/// One pair and PyTorch's score of it.
#[derive(Deserialize)]
struct RerankItem {
    query: String,
    passage: String,
    ids: Vec<u32>,
    truncated: bool,
    score: f64,
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).expect("the fixture is committed");
    serde_json::from_str(&text).expect("the fixture parses")
}

fn embed_reference() -> EmbedReference {
    read_json(&data("xlmr-embedder/reference.json"))
}

fn rerank_reference() -> RerankReference {
    read_json(&data("xlmr-reranker/reference.json"))
}

fn embedder(dir: &Path) -> LocalEmbedder {
    match LocalEmbedder::load(dir) {
        Ok(m) => m,
        Err(e) => panic!("cannot load {}: {e}", dir.display()),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

/// Checks every vector against PyTorch's and returns the largest cosine gap.
fn assert_close(what: &str, got: &[Vec<f32>], want: &[&[f32]], texts: &[&str]) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}");
    let mut gap: f64 = 0.0;
    for ((g, w), text) in got.iter().zip(want).zip(texts) {
        let c = cosine(g, w);
        assert!(c >= MIN_COSINE, "{what}: cosine {c} for {text:?}");
        gap = gap.max(1.0 - c);
    }
    eprintln!("{what}: largest cosine gap to PyTorch {gap:.2e}");
    gap
}

/// A copy of the embedding model in a temporary directory, for variants of its files.
fn embedder_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let from = data("xlmr-embedder");
    for entry in std::fs::read_dir(&from).expect("fixture") {
        let entry = entry.expect("entry");
        let to = dir.path().join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir(&to).expect("mkdir");
            for inner in std::fs::read_dir(entry.path()).expect("subdir") {
                let inner = inner.expect("entry");
                std::fs::copy(inner.path(), to.join(inner.file_name())).expect("copy");
            }
        } else {
            std::fs::copy(entry.path(), &to).expect("copy");
        }
    }
    dir
}

#[test]
fn xlmr_passages_match_pytorch() {
    let reference = embed_reference();
    let model = embedder(&data("xlmr-embedder"));
    assert_eq!(model.dimension(), 32);
    assert_eq!(model.pooling(), Pooling::Mean);
    assert_eq!(model.max_seq_length(), reference.max_tokens);
    assert_eq!(model.query_prompt(), Some(reference.prompts.query.as_str()));
    assert_eq!(
        model.passage_prompt(),
        Some(reference.prompts.passage.as_str())
    );
    let texts: Vec<&str> = reference.items.iter().map(|it| it.text.as_str()).collect();
    let want: Vec<&[f32]> = reference
        .items
        .iter()
        .map(|it| it.passage.as_slice())
        .collect();
    let got = model.embed(&texts).expect("embed");
    assert_close("passages", &got, &want, &texts);
    // One at a time (no batch) gives the same vectors.
    let single = model.with_batch_size(1);
    let got = single.embed(&texts).expect("embed");
    assert_close("passages one by one", &got, &want, &texts);
}

#[test]
fn xlmr_queries_carry_the_query_prompt() {
    let reference = embed_reference();
    let model = embedder(&data("xlmr-embedder"));
    let mut got = Vec::new();
    for item in &reference.items {
        let query = model
            .embed_query_with(&item.text, QueryWeights::F32)
            .expect("query");
        let passage = &model.embed(&[&item.text]).expect("passage")[0];
        // The prompts differ, so the vectors of one text do.
        assert!(cosine(&query, passage) < 0.999, "{:?}", item.text);
        assert!(
            cosine(&item.query, &item.passage) < 0.999,
            "{:?}",
            item.text
        );
        got.push(query);
    }
    let texts: Vec<&str> = reference.items.iter().map(|it| it.text.as_str()).collect();
    let want: Vec<&[f32]> = reference
        .items
        .iter()
        .map(|it| it.query.as_slice())
        .collect();
    assert_close("queries", &got, &want, &texts);
}

#[test]
fn xlmr_tokenization_matches_the_python_tokenizer() {
    let reference = embed_reference();
    let dir = data("xlmr-embedder");
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer");
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: reference.max_tokens,
            ..TruncationParams::default()
        }))
        .expect("truncation");
    let model = embedder(&dir);
    let counter = model.tokens();
    // `<s>`, `</s>` and the three tokens of `passage: ` on its own (`▁passage`, `:` and
    // a lone `▁` for the closing space, which the text's first word may take up).
    assert_eq!(counter.special_tokens(), 5);
    assert_eq!(counter.max_sequence_tokens(), reference.max_tokens);
    let mut truncated = 0;
    for item in &reference.items {
        let input = format!("{}{}", reference.prompts.passage, item.text);
        let encoding = tokenizer.encode(input.as_str(), true).expect("encode");
        assert_eq!(encoding.get_ids(), item.passage_ids.as_slice(), "{input:?}");
        assert_eq!(encoding.get_ids().first(), Some(&0), "<s> first");
        assert_eq!(encoding.get_ids().last(), Some(&2), "</s> last");
        let whole = tokenizer
            .encode_fast(input.as_str(), true)
            .map(|e| e.len() + e.get_overflowing().iter().map(|o| o.len()).sum::<usize>())
            .expect("encode");
        // The chunker's budget never falls short of the sequence the model reads.
        let budget = counter.count(&item.text) + counter.special_tokens();
        assert!(budget >= whole.min(reference.max_tokens), "{input:?}");
        if item.truncated {
            truncated += 1;
            assert_eq!(item.passage_ids.len(), reference.max_tokens);
            assert!(budget > reference.max_tokens, "{input:?}");
        } else {
            assert_eq!(item.passage_ids.len(), whole, "{input:?}");
        }
    }
    assert_eq!(truncated, 1, "one text is longer than the model reads");
}

#[test]
fn xlmr_sequences_are_capped_by_the_offset_positions() {
    // sentence_bert_config.json asking for more than the 66 - 2 positions.
    let reference = embed_reference();
    let dir = embedder_copy();
    std::fs::write(
        dir.path().join("sentence_bert_config.json"),
        r#"{"max_seq_length": 512}"#,
    )
    .expect("write");
    let model = embedder(dir.path());
    assert_eq!(model.max_seq_length(), reference.max_tokens);
    let long = reference
        .items
        .iter()
        .find(|it| it.truncated)
        .expect("a long text");
    let got = model.embed(&[&long.text]).expect("embed");
    assert_close("truncated text", &got, &[&long.passage], &[&long.text]);
}

#[test]
fn xlmr_cls_pooling_takes_the_first_token() {
    let reference = embed_reference();
    let dir = embedder_copy();
    std::fs::write(
        dir.path().join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": true,
            "pooling_mode_mean_tokens": false}"#,
    )
    .expect("write");
    let model = embedder(dir.path());
    assert_eq!(model.pooling(), Pooling::Cls);
    let texts: Vec<&str> = reference.items.iter().map(|it| it.text.as_str()).collect();
    let want: Vec<&[f32]> = reference
        .items
        .iter()
        .map(|it| it.passage_cls.as_slice())
        .collect();
    let got = model.embed(&texts).expect("embed");
    assert_close("CLS pooling", &got, &want, &texts);
}

#[test]
fn xlmr_without_prompts_embeds_the_bare_text_under_another_id() {
    let reference = embed_reference();
    let prompted = embedder(&data("xlmr-embedder"));
    let dir = embedder_copy();
    std::fs::remove_file(dir.path().join("config_sentence_transformers.json")).expect("rm");
    let bare = embedder(dir.path());
    assert_eq!((bare.query_prompt(), bare.passage_prompt()), (None, None));
    assert_eq!(bare.tokens().special_tokens(), 2);
    let texts: Vec<&str> = reference.items.iter().map(|it| it.text.as_str()).collect();
    let want: Vec<&[f32]> = reference
        .items
        .iter()
        .map(|it| it.no_prompt.as_slice())
        .collect();
    let got = bare.embed(&texts).expect("embed");
    assert_close("no prompt", &got, &want, &texts);
    let query = bare
        .embed_query_with(texts[0], QueryWeights::F32)
        .expect("query");
    assert!(cosine(&query, &got[0]) > MIN_COSINE);
    // The weights are the same, the vectors are not: the ids must differ.
    let id = |m: &LocalEmbedder| m.model_id().split('@').nth(1).map(str::to_owned);
    assert_ne!(id(&bare), id(&prompted));
}

#[test]
fn xlmr_span_pools_skip_the_prompt() {
    let reference = embed_reference();
    let model = embedder(&data("xlmr-embedder"));
    let items: Vec<&EmbedItem> = reference.items.iter().filter(|it| !it.truncated).collect();
    let texts: Vec<&str> = items.iter().map(|it| it.text.as_str()).collect();
    let spans: Vec<Vec<(usize, usize)>> =
        texts.iter().map(|t| vec![(0, t.len()), (0, 0)]).collect();
    let pooled = model
        .pool_spans(&texts, &spans)
        .expect("pool")
        .expect("local token vectors");
    let embedded = model.embed(&texts).expect("embed");
    let tokenizer = Tokenizer::from_file(data("xlmr-embedder/tokenizer.json")).expect("tokenizer");
    let prompt = reference.prompts.passage.as_str();
    for ((p, e), item) in pooled.iter().zip(&embedded).zip(&items) {
        assert!(cosine(&p.vector, e) > 0.99999, "{:?}", item.text);
        // The whole text's span holds the tokens that reach into the text: not the
        // prompt's (nor a lone `▁` standing for its closing space) or the specials.
        let input = format!("{prompt}{}", item.text);
        let encoding = tokenizer.encode(input.as_str(), true).expect("encode");
        let in_text = encoding
            .get_offsets()
            .iter()
            .zip(encoding.get_special_tokens_mask())
            .filter(|&(&(_, end), &special)| special == 0 && end > prompt.len())
            .count();
        assert!(in_text + 5 >= item.passage_ids.len(), "{:?}", item.text);
        assert_eq!(p.spans[0].tokens as usize, in_text, "{:?}", item.text);
        assert_eq!(p.spans[1].tokens, 0);
    }
}

#[test]
fn xlmr_reranker_scores_match_pytorch() {
    let reference = rerank_reference();
    let dir = data("xlmr-reranker");
    let reranker = match CrossEncoderReranker::load(&dir) {
        Ok(r) => r,
        Err(e) => panic!("cannot load the reranker: {e}"),
    };
    assert_eq!(reranker.num_labels(), 1);
    assert_eq!(reranker.max_length(), reference.max_tokens);

    // The pairs are tokenized as `<s> q </s></s> p </s>`, truncated longest-first.
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer");
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: reference.max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            ..TruncationParams::default()
        }))
        .expect("truncation");
    let mut gap: f64 = 0.0;
    for item in &reference.items {
        let encoding = tokenizer
            .encode((item.query.as_str(), item.passage.as_str()), true)
            .expect("encode");
        assert_eq!(encoding.get_ids(), item.ids.as_slice(), "{:?}", item.query);
        assert_eq!(item.truncated, item.ids.len() == reference.max_tokens);
        let score = reranker
            .rerank(&item.query, &[&item.passage])
            .expect("rerank")[0];
        let d = (f64::from(score) - item.score).abs();
        assert!(
            d <= MAX_SCORE_GAP,
            "score {score} vs {} for {:?}",
            item.score,
            item.query
        );
        gap = gap.max(d);
    }
    eprintln!("reranker: largest score gap to PyTorch {gap:.2e}");
    assert!(reference.items.iter().any(|it| it.truncated));

    // Several passages of one query in one batch score as they do alone.
    let query = &reference.items[0].query;
    let same: Vec<&RerankItem> = reference
        .items
        .iter()
        .filter(|it| &it.query == query)
        .collect();
    assert!(same.len() >= 2);
    let passages: Vec<&str> = same.iter().map(|it| it.passage.as_str()).collect();
    let scores = reranker.rerank(query, &passages).expect("rerank");
    for (score, item) in scores.iter().zip(&same) {
        assert!((f64::from(*score) - item.score).abs() <= MAX_SCORE_GAP);
    }
}
