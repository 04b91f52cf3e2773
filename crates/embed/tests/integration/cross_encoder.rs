//! The local cross-encoder on tiny randomly initialised BERT sequence-classification
//! models written by the test (no real cross-encoder weights are available offline):
//! loading, score range, determinism, batching, order, truncation, heads, errors, and
//! agreement with candle's `BertModel` + pooler + classifier as a reference.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{Module, VarBuilder};
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use excerpt_embed::{CrossEncoderReranker, EmbedError, Reranker};
use serde_json::json;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::bert::BertProcessing;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// Sizes of a tiny model.
#[derive(Debug, Clone, Copy)]
struct Dims {
    hidden: usize,
    heads: usize,
    layers: usize,
    intermediate: usize,
    max_positions: usize,
}

/// Sizes that fill the matrix kernel's tiles. `max_positions` is small on purpose, so
/// that truncation is exercised by modest passages.
const TINY: Dims = Dims {
    hidden: 32,
    heads: 2,
    layers: 2,
    intermediate: 64,
    max_positions: 64,
};

/// Sizes that leave tails everywhere in the matrix kernel (6-row by 16-column tiles,
/// 384-deep blocks, 8-lane vectors): hidden 39, head_dim 13, an odd intermediate size
/// deeper than one block, and pairs up to 80 tokens.
const AWKWARD: Dims = Dims {
    hidden: 39,
    heads: 3,
    layers: 2,
    intermediate: 397,
    max_positions: 80,
};

const WORDS: &[&str] = &[
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "what",
    "how",
    "why",
    "rust",
    "python",
    "memory",
    "safety",
    "ownership",
    "borrow",
    "checker",
    "garbage",
    "collector",
    "language",
    "fast",
    "slow",
    "cat",
    "dog",
    "weather",
    "rain",
    "sun",
    "cooking",
    "pasta",
    "recipe",
    "compiler",
    "error",
    "type",
    "system",
    "does",
    "work",
];

/// A WordPiece vocabulary: specials, whole words, letters and continuation letters
/// (so any lowercase ASCII word tokenizes without [UNK]).
fn vocab() -> HashMap<String, u32> {
    let mut tokens: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    tokens.extend(WORDS.iter().map(|s| s.to_string()));
    for c in ('a'..='z').chain('0'..='9') {
        tokens.push(c.to_string());
        tokens.push(format!("##{c}"));
    }
    tokens.extend([".", ",", "?", "!", "'"].iter().map(|s| s.to_string()));
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, i as u32))
        .collect()
}

fn write_tokenizer(dir: &Path, vocab: HashMap<String, u32>) {
    // vocab.txt: one token per line, in id order (as BERT models ship it).
    let mut tokens: Vec<(&String, &u32)> = vocab.iter().collect();
    tokens.sort_by_key(|(_, &id)| id);
    let lines: Vec<&str> = tokens.iter().map(|(t, _)| t.as_str()).collect();
    let vocab_path = dir.join("vocab.txt");
    std::fs::write(&vocab_path, lines.join("\n") + "\n").expect("vocab.txt");
    let wordpiece = WordPiece::builder()
        .files(vocab_path.to_string_lossy().into_owned())
        .unk_token("[UNK]".into())
        .build()
        .expect("wordpiece");
    let mut tokenizer = Tokenizer::new(wordpiece);
    tokenizer
        .with_normalizer(Some(BertNormalizer::default()))
        .expect("normalizer");
    tokenizer.with_pre_tokenizer(Some(BertPreTokenizer));
    tokenizer.with_post_processor(Some(BertProcessing::new(
        ("[SEP]".into(), 3),
        ("[CLS]".into(), 2),
    )));
    tokenizer
        .save(dir.join("tokenizer.json"), false)
        .expect("save tokenizer");
}

/// Deterministic pseudo-random values in [-scale, scale] (an LCG seeded by name).
fn values(name: &str, n: usize, scale: f32) -> Vec<f32> {
    let mut state: u64 = name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
            (unit * 2.0 - 1.0) * scale
        })
        .collect()
}

struct Weights(HashMap<String, Tensor>);

impl Weights {
    fn random(&mut self, name: &str, shape: &[usize]) {
        let n = shape.iter().product();
        let t = Tensor::from_vec(values(name, n, 0.3), shape, &Device::Cpu).expect("tensor");
        self.0.insert(name.to_string(), t);
    }

    fn constant(&mut self, name: &str, shape: &[usize], value: f32) {
        let n = shape.iter().product();
        let t = Tensor::from_vec(vec![value; n], shape, &Device::Cpu).expect("tensor");
        self.0.insert(name.to_string(), t);
    }

    fn linear(&mut self, prefix: &str, input: usize, output: usize) {
        self.random(&format!("{prefix}.weight"), &[output, input]);
        self.random(&format!("{prefix}.bias"), &[output]);
    }

    fn layer_norm(&mut self, prefix: &str, width: usize) {
        self.constant(&format!("{prefix}.weight"), &[width], 1.0);
        self.constant(&format!("{prefix}.bias"), &[width], 0.0);
    }
}

/// The weights of a `BertForSequenceClassification` of sizes `dims` with `num_labels`
/// labels, named as Hugging Face saves them (`bert.` prefix, pooler, classifier).
fn weights_of(dims: Dims, vocab_size: usize, num_labels: usize) -> Weights {
    let h = dims.hidden;
    let mut w = Weights(HashMap::new());
    w.random("bert.embeddings.word_embeddings.weight", &[vocab_size, h]);
    w.random(
        "bert.embeddings.position_embeddings.weight",
        &[dims.max_positions, h],
    );
    w.random("bert.embeddings.token_type_embeddings.weight", &[2, h]);
    w.layer_norm("bert.embeddings.LayerNorm", h);
    for l in 0..dims.layers {
        let p = format!("bert.encoder.layer.{l}");
        for m in ["query", "key", "value"] {
            w.linear(&format!("{p}.attention.self.{m}"), h, h);
        }
        w.linear(&format!("{p}.attention.output.dense"), h, h);
        w.layer_norm(&format!("{p}.attention.output.LayerNorm"), h);
        w.linear(&format!("{p}.intermediate.dense"), h, dims.intermediate);
        w.linear(&format!("{p}.output.dense"), dims.intermediate, h);
        w.layer_norm(&format!("{p}.output.LayerNorm"), h);
    }
    w.linear("bert.pooler.dense", h, h);
    // A larger scale on the head spreads the scores out.
    let t = Tensor::from_vec(
        values("classifier.weight", num_labels * h, 2.0),
        &[num_labels, h],
        &Device::Cpu,
    )
    .expect("tensor");
    w.0.insert("classifier.weight".into(), t);
    w.constant("classifier.bias", &[num_labels], 0.0);
    w
}

/// [`weights_of`] the [`TINY`] model.
fn weights(vocab_size: usize, num_labels: usize) -> Weights {
    weights_of(TINY, vocab_size, num_labels)
}

/// Writes a complete [`TINY`] model directory.
fn write_model(dir: &Path, weights: &Weights, num_labels: usize) {
    write_model_of(dir, TINY, weights, num_labels);
}

/// Writes a complete model directory of sizes `dims`.
fn write_model_of(dir: &Path, dims: Dims, weights: &Weights, num_labels: usize) {
    let vocab = vocab();
    let vocab_size = vocab.len();
    write_tokenizer(dir, vocab);
    let id2label: serde_json::Map<String, serde_json::Value> = (0..num_labels)
        .map(|i| (i.to_string(), json!(format!("LABEL_{i}"))))
        .collect();
    let config = json!({
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": vocab_size,
        "hidden_size": dims.hidden,
        "num_hidden_layers": dims.layers,
        "num_attention_heads": dims.heads,
        "intermediate_size": dims.intermediate,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": dims.max_positions,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "id2label": id2label,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).expect("config");
    candle_core::safetensors::save(&weights.0, dir.join("model.safetensors")).expect("weights");
}

fn tiny_model(num_labels: usize) -> (tempfile::TempDir, CrossEncoderReranker) {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = weights(vocab().len(), num_labels);
    write_model(dir.path(), &w, num_labels);
    let model = CrossEncoderReranker::load(dir.path()).expect("loads");
    (dir, model)
}

const QUERY: &str = "how does rust memory safety work?";

fn passages() -> Vec<&'static str> {
    vec![
        "rust ownership and the borrow checker give memory safety.",
        "the weather is rain and sun.",
        "a pasta recipe for cooking.",
        "python has a garbage collector.",
        "what is a compiler error?",
        "cat",
        "the dog and the cat.",
    ]
}

#[test]
fn scores_are_in_unit_interval_distinct_and_deterministic() {
    let (dir, model) = tiny_model(1);
    assert_eq!(model.num_labels(), 1);
    assert_eq!(model.max_length(), TINY.max_positions);
    let name = dir
        .path()
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    assert!(
        model.model_id().starts_with(&format!("{name}@")),
        "{}",
        model.model_id()
    );
    let passages = passages();
    let scores = model.rerank(QUERY, &passages).expect("scores");
    assert_eq!(scores.len(), passages.len());
    assert!(
        scores
            .iter()
            .all(|s| (0.0..=1.0).contains(s) && s.is_finite()),
        "{scores:?}"
    );
    let distinct = {
        let mut s: Vec<u32> = scores.iter().map(|x| x.to_bits()).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    assert!(distinct > 1, "all scores equal: {scores:?}");
    assert_eq!(model.rerank(QUERY, &passages).expect("again"), scores);
    // A second load of the same directory: same id, same scores.
    let again = CrossEncoderReranker::load(dir.path()).expect("reloads");
    assert_eq!(again.model_id(), model.model_id());
    assert_eq!(again.rerank(QUERY, &passages).expect("scores"), scores);
    assert!(model.rerank(QUERY, &[]).expect("empty").is_empty());
}

#[test]
fn batching_and_order_do_not_change_scores() {
    let (_dir, model) = tiny_model(1);
    let passages = passages();
    let batched = model.rerank(QUERY, &passages).expect("scores");
    let one_by_one: Vec<f32> = passages
        .iter()
        .map(|p| model.rerank(QUERY, &[p]).expect("single")[0])
        .collect();
    let small_batches = {
        let (_d, m) = tiny_model(1);
        m.with_batch_size(2)
            .rerank(QUERY, &passages)
            .expect("scores")
    };
    for ((a, b), c) in batched.iter().zip(&one_by_one).zip(&small_batches) {
        assert!((a - b).abs() < 1e-5, "batched {a} vs single {b}");
        assert!((a - c).abs() < 1e-5, "batch 16 {a} vs batch 2 {c}");
    }
    let mut reversed = passages.clone();
    reversed.reverse();
    let mut rev_scores = model.rerank(QUERY, &reversed).expect("scores");
    rev_scores.reverse();
    for (a, b) in batched.iter().zip(&rev_scores) {
        assert!((a - b).abs() < 1e-5, "order changed the score: {a} vs {b}");
    }
    // The query matters.
    let other = model.rerank("pasta recipe", &passages).expect("scores");
    assert_ne!(other, batched);
}

#[test]
fn long_pairs_are_truncated() {
    let (_dir, model) = tiny_model(1);
    let long_passage = "rust memory safety and ownership ".repeat(100);
    let long_query = "what is the borrow checker ".repeat(50);
    let scores = model
        .rerank(QUERY, &[long_passage.as_str(), "cat"])
        .expect("long passage is truncated");
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
    let scores = model
        .rerank(&long_query, &[long_passage.as_str(), "cat", ""])
        .expect("long query and passage are truncated");
    assert_eq!(scores.len(), 3);
    // Past the limit, more text changes nothing (the pair is cut at the same place).
    let longer = format!("{long_passage} and more words at the end");
    let a = model.rerank(QUERY, &[long_passage.as_str()]).expect("a");
    let b = model.rerank(QUERY, &[longer.as_str()]).expect("b");
    assert!((a[0] - b[0]).abs() < 1e-6);
}

#[test]
fn two_label_head_scores_label_one_probability() {
    // Label 0 all zeros and label 1 equal to the one-label head: softmax(l)[1] =
    // sigmoid(l1 - 0), the same score as the one-label model.
    let (_dir1, one) = tiny_model(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = weights(vocab().len(), 1);
    let head = w.0["classifier.weight"].clone();
    let zeros = head.zeros_like().expect("zeros");
    let two = Tensor::cat(&[&zeros, &head], 0).expect("cat");
    w.0.insert("classifier.weight".into(), two);
    w.constant("classifier.bias", &[2], 0.0);
    write_model(dir.path(), &w, 2);
    let model = CrossEncoderReranker::load(dir.path()).expect("loads");
    assert_eq!(model.num_labels(), 2);
    let passages = passages();
    let a = one.rerank(QUERY, &passages).expect("one label");
    let b = model.rerank(QUERY, &passages).expect("two labels");
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-5, "{x} vs {y}");
    }
}

#[test]
fn weights_without_bert_prefix_load_too() {
    let (_dir1, prefixed) = tiny_model(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let w = weights(vocab().len(), 1);
    let bare = Weights(
        w.0.into_iter()
            .map(|(k, v)| (k.strip_prefix("bert.").map(str::to_string).unwrap_or(k), v))
            .collect(),
    );
    write_model(dir.path(), &bare, 1);
    let model = CrossEncoderReranker::load(dir.path()).expect("loads");
    let passages = passages();
    assert_eq!(
        model.rerank(QUERY, &passages).expect("scores"),
        prefixed.rerank(QUERY, &passages).expect("scores")
    );
}

fn load_error(dir: &Path) -> String {
    match CrossEncoderReranker::load(dir) {
        Err(e @ EmbedError::ModelLoad { .. }) => e.to_string(),
        Err(other) => panic!("expected ModelLoad, got {other:?}"),
        Ok(_) => panic!("expected a load error"),
    }
}

#[test]
fn missing_or_wrong_weights_are_clear_load_errors() {
    // No classifier: an embedding model, not a cross-encoder.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = weights(vocab().len(), 1);
    w.0.remove("classifier.weight");
    w.0.remove("classifier.bias");
    write_model(dir.path(), &w, 1);
    let msg = load_error(dir.path());
    assert!(
        msg.contains("classifier.weight") && msg.contains("model.safetensors"),
        "{msg}"
    );

    // No pooler.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = weights(vocab().len(), 1);
    w.0.remove("bert.pooler.dense.weight");
    write_model(dir.path(), &w, 1);
    assert!(load_error(dir.path()).contains("pooler"));

    // Three labels: not a relevance head.
    let dir = tempfile::tempdir().expect("tempdir");
    write_model(dir.path(), &weights(vocab().len(), 3), 3);
    assert!(load_error(dir.path()).contains("3 labels"));

    // Encoder weights of the wrong size for config.json.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut w = weights(vocab().len(), 1);
    w.random(
        "bert.encoder.layer.1.intermediate.dense.weight",
        &[TINY.intermediate + 1, TINY.hidden],
    );
    write_model(dir.path(), &w, 1);
    assert!(load_error(dir.path()).contains("encoder weights"));

    // Missing files and a missing directory.
    let dir = tempfile::tempdir().expect("tempdir");
    write_model(dir.path(), &weights(vocab().len(), 1), 1);
    std::fs::remove_file(dir.path().join("tokenizer.json")).expect("rm");
    assert!(load_error(dir.path()).contains("tokenizer.json"));
    assert!(load_error(&dir.path().join("nope")).contains("does not exist"));

    // Neither a BERT nor an XLM-RoBERTa model.
    let dir = tempfile::tempdir().expect("tempdir");
    write_model(dir.path(), &weights(vocab().len(), 1), 1);
    let path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&path).expect("read");
    let text = text.replace("\"model_type\":\"bert\"", "\"model_type\":\"mpnet\"");
    std::fs::write(&path, text).expect("write");
    let message = load_error(dir.path());
    assert!(
        message.contains("model_type `mpnet` is not supported"),
        "{message}"
    );

    // An XLM-RoBERTa config over BERT weights: the `classifier.dense` head is missing.
    let dir = tempfile::tempdir().expect("tempdir");
    write_model(dir.path(), &weights(vocab().len(), 1), 1);
    let path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&path).expect("read");
    let text = text
        .replace("\"model_type\":\"bert\"", "\"model_type\":\"xlm-roberta\"")
        .replace(
            "BertForSequenceClassification",
            "XLMRobertaForSequenceClassification",
        );
    std::fs::write(&path, text).expect("write");
    let message = load_error(dir.path());
    assert!(
        message.contains("missing classifier.dense weights `classifier.dense.weight`"),
        "{message}"
    );
}

/// Scores computed with candle's `BertModel`, the pooler (`Linear` + tanh) and the
/// classifier `Linear`, one pair at a time without padding: the reference for our own
/// forward pass. Pairs are tokenized with the same longest-first truncation.
fn reference_scores(dir: &Path, query: &str, passages: &[&str]) -> Vec<f32> {
    let config: BertConfig =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).expect("config"))
            .expect("bert config");
    let device = Device::Cpu;
    let tensors =
        candle_core::safetensors::load(dir.join("model.safetensors"), &device).expect("weights");
    let vb = VarBuilder::from_tensors(tensors, DType::F32, &device);
    let bert = vb.pp("bert");
    let model = BertModel::load(bert.clone(), &config).expect("bert");
    let h = config.hidden_size;
    let pooler = candle_nn::linear(h, h, bert.pp("pooler").pp("dense")).expect("pooler");
    let labels = vb
        .get_unchecked("classifier.bias")
        .expect("classifier bias")
        .dims1()
        .expect("1-d");
    let classifier = candle_nn::linear(h, labels, vb.pp("classifier")).expect("classifier");
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).expect("tokenizer");
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: config.max_position_embeddings.min(512),
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .expect("truncation");
    tokenizer.with_padding(None);
    passages
        .iter()
        .map(|&p| {
            let enc = tokenizer.encode((query, p), true).expect("encode");
            let len = enc.len();
            let ids = Tensor::from_vec(enc.get_ids().to_vec(), (1, len), &device).expect("ids");
            let types =
                Tensor::from_vec(enc.get_type_ids().to_vec(), (1, len), &device).expect("types");
            let mask = Tensor::ones((1, len), DType::U32, &device).expect("mask");
            let hidden = model.forward(&ids, &types, Some(&mask)).expect("forward");
            let cls = hidden
                .narrow(1, 0, 1)
                .and_then(|t| t.squeeze(1))
                .expect("cls");
            let pooled = pooler.forward(&cls).and_then(|t| t.tanh()).expect("pooler");
            let logits = classifier
                .forward(&pooled)
                .and_then(|t| t.to_vec2::<f32>())
                .expect("classifier");
            let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
            let score = match logits[0].as_slice() {
                [l] => sigmoid(f64::from(*l)),
                [l0, l1] => sigmoid(f64::from(*l1) - f64::from(*l0)),
                other => panic!("unexpected logits {other:?}"),
            };
            score as f32
        })
        .collect()
}

/// A model of sizes `dims` with non-trivial layer norms and classifier biases, so that
/// every weight of the reference shows in the scores.
fn reference_model(dims: Dims, num_labels: usize) -> tempfile::TempDir {
    let mut w = weights_of(dims, vocab().len(), num_labels);
    let norms: Vec<(String, usize)> =
        w.0.iter()
            .filter(|(k, _)| k.contains("LayerNorm"))
            .map(|(k, t)| (k.clone(), t.elem_count()))
            .collect();
    for (name, n) in norms {
        let offset = if name.ends_with(".weight") { 1.0 } else { 0.0 };
        let v: Vec<f32> = values(&name, n, 0.2).iter().map(|x| x + offset).collect();
        let t = Tensor::from_vec(v, n, &Device::Cpu).expect("tensor");
        w.0.insert(name, t);
    }
    // A head scale that keeps the logits of these pairs within a few units of 0.
    let h = dims.hidden;
    let head = values("reference classifier", num_labels * h, 0.5);
    let t = Tensor::from_vec(head, &[num_labels, h], &Device::Cpu).expect("tensor");
    w.0.insert("classifier.weight".into(), t);
    w.random("classifier.bias", &[num_labels]);
    let dir = tempfile::tempdir().expect("tempdir");
    write_model_of(dir.path(), dims, &w, num_labels);
    dir
}

#[test]
fn scores_match_candle_bert_reference() {
    let long = "rust memory safety and the borrow checker make the compiler fast ".repeat(12);
    let medium = "why does the python garbage collector work slow in the rain?";
    let passages: Vec<&str> = vec![
        "cat",
        medium,
        "",
        "rust ownership and the borrow checker give memory safety.",
        long.as_str(),
        "the weather is rain and sun, and a dog and a cat work in the sun.",
        "pasta",
        "how does a type system catch a compiler error in rust and python?",
        "a",
    ];
    let long_query = "what is the borrow checker and how does ownership work ".repeat(3);
    let queries = ["rust", QUERY, long_query.as_str()];
    for dims in [TINY, AWKWARD] {
        for num_labels in [1, 2] {
            let dir = reference_model(dims, num_labels);
            let model = CrossEncoderReranker::load(dir.path()).expect("loads");
            assert_eq!(model.num_labels(), num_labels);
            assert_eq!(model.max_length(), dims.max_positions);
            let mut spread = (1.0f32, 0.0f32);
            for query in queries {
                let expected = reference_scores(dir.path(), query, &passages);
                spread = expected
                    .iter()
                    .fold(spread, |(lo, hi), &s| (lo.min(s), hi.max(s)));
                for batch_size in [16, 3, 1] {
                    let model = CrossEncoderReranker::load(dir.path())
                        .expect("loads")
                        .with_batch_size(batch_size);
                    let scores = model.rerank(query, &passages).expect("scores");
                    assert_eq!(scores.len(), passages.len());
                    for (i, (got, want)) in scores.iter().zip(&expected).enumerate() {
                        assert!(
                            (got - want).abs() < 1e-4,
                            "{dims:?}, {num_labels} label(s), query {query:?}, batch \
                             {batch_size}, passage {i}: {got} vs reference {want}"
                        );
                    }
                }
            }
            // The scores vary with the pair and no sigmoid is saturated, so the
            // comparison above is a comparison of logits.
            assert!(
                spread.0 > 0.02 && spread.1 < 0.98 && spread.1 - spread.0 > 0.2,
                "{dims:?}, {num_labels} label(s): reference scores span {spread:?}"
            );
        }
    }
}
