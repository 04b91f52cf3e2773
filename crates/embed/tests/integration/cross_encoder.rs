//! The local cross-encoder on a tiny randomly initialised BERT sequence-classification
//! model written by the test (no real cross-encoder weights are available offline):
//! loading, score range, determinism, batching, order, truncation, heads and errors.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use excerpt_embed::{CrossEncoderReranker, EmbedError, Reranker};
use serde_json::json;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::BertNormalizer;
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::processors::bert::BertProcessing;
use tokenizers::Tokenizer;

const HIDDEN: usize = 32;
const LAYERS: usize = 2;
const INTERMEDIATE: usize = 64;
/// Small on purpose, so that truncation is exercised by modest passages.
const MAX_POSITIONS: usize = 64;

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

    fn layer_norm(&mut self, prefix: &str) {
        self.constant(&format!("{prefix}.weight"), &[HIDDEN], 1.0);
        self.constant(&format!("{prefix}.bias"), &[HIDDEN], 0.0);
    }
}

/// The weights of a `BertForSequenceClassification` with `num_labels` labels, named
/// as Hugging Face saves them (`bert.` prefix, pooler, classifier).
fn weights(vocab_size: usize, num_labels: usize) -> Weights {
    let mut w = Weights(HashMap::new());
    w.random(
        "bert.embeddings.word_embeddings.weight",
        &[vocab_size, HIDDEN],
    );
    w.random(
        "bert.embeddings.position_embeddings.weight",
        &[MAX_POSITIONS, HIDDEN],
    );
    w.random("bert.embeddings.token_type_embeddings.weight", &[2, HIDDEN]);
    w.layer_norm("bert.embeddings.LayerNorm");
    for l in 0..LAYERS {
        let p = format!("bert.encoder.layer.{l}");
        for m in ["query", "key", "value"] {
            w.linear(&format!("{p}.attention.self.{m}"), HIDDEN, HIDDEN);
        }
        w.linear(&format!("{p}.attention.output.dense"), HIDDEN, HIDDEN);
        w.layer_norm(&format!("{p}.attention.output.LayerNorm"));
        w.linear(&format!("{p}.intermediate.dense"), HIDDEN, INTERMEDIATE);
        w.linear(&format!("{p}.output.dense"), INTERMEDIATE, HIDDEN);
        w.layer_norm(&format!("{p}.output.LayerNorm"));
    }
    w.linear("bert.pooler.dense", HIDDEN, HIDDEN);
    // A larger scale on the head spreads the scores out.
    let t = Tensor::from_vec(
        values("classifier.weight", num_labels * HIDDEN, 2.0),
        &[num_labels, HIDDEN],
        &Device::Cpu,
    )
    .expect("tensor");
    w.0.insert("classifier.weight".into(), t);
    w.constant("classifier.bias", &[num_labels], 0.0);
    w
}

/// Writes a complete model directory; returns it.
fn write_model(dir: &Path, weights: &Weights, num_labels: usize) {
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
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 2,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAX_POSITIONS,
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
    assert_eq!(model.max_length(), MAX_POSITIONS);
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
        &[INTERMEDIATE + 1, HIDDEN],
    );
    write_model(dir.path(), &w, 1);
    assert!(load_error(dir.path()).contains("encoder weights"));

    // Missing files and a missing directory.
    let dir = tempfile::tempdir().expect("tempdir");
    write_model(dir.path(), &weights(vocab().len(), 1), 1);
    std::fs::remove_file(dir.path().join("tokenizer.json")).expect("rm");
    assert!(load_error(dir.path()).contains("tokenizer.json"));
    assert!(load_error(&dir.path().join("nope")).contains("does not exist"));

    // Not a BERT architecture.
    let dir = tempfile::tempdir().expect("tempdir");
    write_model(dir.path(), &weights(vocab().len(), 1), 1);
    let path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&path).expect("read");
    let text = text.replace("\"model_type\":\"bert\"", "\"model_type\":\"xlm-roberta\"");
    std::fs::write(&path, text).expect("write");
    assert!(load_error(dir.path()).contains("xlm-roberta"));
}
