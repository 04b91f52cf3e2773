//! A local cross-encoder reranker: a BERT or XLM-RoBERTa sequence-classification model
//! scoring (query, passage) pairs on the CPU by our own forward pass.

use std::path::Path;

use excerpt_core::{EmbedError, Reranker};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::BertEncoder;
use super::config::{BertConfig, Family};
use super::files::{load_error, model_id, require_file, ModelKind};
use super::inference_error;
use super::sgemm::{KernelChoice, Precision};
use super::tokenize::{batch_longest_padding, encode_unpadded};
use super::weights::Weights;
use crate::score::sigmoid;

/// Pairs scored per forward pass unless [`CrossEncoderReranker::with_batch_size`] says
/// otherwise.
pub const DEFAULT_CROSS_ENCODER_BATCH_SIZE: usize = 16;

/// Longest pair a cross-encoder sees unless the model allows fewer positions.
const DEFAULT_MAX_LENGTH: usize = 512;

/// Fewest tokens a pair may be truncated to: `[CLS] q [SEP] p [SEP]` for BERT.
const MIN_MAX_LENGTH: usize = 5;

/// The same for the RoBERTa family: `<s> q </s></s> p </s>`.
const MIN_MAX_LENGTH_ROBERTA: usize = 6;

/// What [`CrossEncoderReranker::load`] expects to find, for its error messages.
const KIND: ModelKind = ModelKind::CrossEncoder;

/// The fields of `config.json` checked beyond [`BertConfig`].
#[derive(Deserialize)]
struct HeadConfig {
    #[serde(default)]
    architectures: Option<Vec<String>>,
    #[serde(default)]
    model_type: Option<String>,
}

/// A local cross-encoder: a BERT or XLM-RoBERTa sequence-classification model scoring
/// (query, passage) pairs on the CPU, e.g. `cross-encoder/ms-marco-MiniLM-L-6-v2` or
/// `BAAI/bge-reranker-v2-m3`.
///
/// Load a Hugging Face model directory with [`CrossEncoderReranker::load`]
/// (`config.json` with `architectures: ["BertForSequenceClassification"]` or
/// `["XLMRobertaForSequenceClassification"]`, `model.safetensors`, `tokenizer.json`).
/// Each pair is tokenized by the model's tokenizer (`[CLS] query [SEP] passage [SEP]`
/// with segment ids 0 and 1 for BERT, `<s> query </s></s> passage </s>` for
/// XLM-RoBERTa) and truncated longest-first to 512 tokens (or the model's positions
/// when fewer). A batch of pairs runs through our own encoder forward pass (the one
/// the embedder uses), each pair at its own length (no padding). The first token's
/// hidden state goes through a dense layer and tanh, then a linear layer to the
/// labels: for BERT the pooler (`bert.pooler.dense`) and `classifier`, for
/// XLM-RoBERTa `classifier.dense` and `classifier.out_proj`. One label is turned into
/// a score by the sigmoid, two labels by the softmax probability of label 1 (as
/// sentence-transformers' `CrossEncoder` does). Passages are sorted by length into
/// batches; scores come back in input order.
pub struct CrossEncoderReranker {
    encoder: BertEncoder,
    /// The `hidden x hidden` layer before the tanh (BERT's pooler, XLM-RoBERTa's
    /// `classifier.dense`), row per output (as stored), and biases.
    pooler: Dense,
    /// The `num_labels x hidden` output layer (BERT's `classifier`, XLM-RoBERTa's
    /// `classifier.out_proj`) and biases.
    classifier: Dense,
    num_labels: usize,
    /// Truncates pairs to `max_length`; pads to the longest pair of a batch (the
    /// padding is dropped before the forward pass).
    tokenizer: Tokenizer,
    max_length: usize,
    batch_size: usize,
    model_id: String,
}

/// A dense layer `y = W x + b` with `W` stored row-major, one row per output.
struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

impl Dense {
    /// Reads `{name}.weight` (`outputs x inputs`) and `{name}.bias` (`outputs`).
    fn load(
        tensors: &Weights<'_>,
        name: &str,
        outputs: usize,
        inputs: usize,
    ) -> Result<Self, String> {
        if inputs == 0 {
            return Err(format!("`{name}` has no inputs"));
        }
        let get = |suffix: &str, shape: &[usize]| tensors.f32(&format!("{name}.{suffix}"), shape);
        Ok(Self {
            weight: get("weight", &[outputs, inputs])?,
            bias: get("bias", &[outputs])?,
            inputs,
        })
    }

    /// `W x + b`, accumulated in f64, then `f` applied to each output.
    fn apply(&self, x: &[f32], f: impl Fn(f64) -> f64) -> Vec<f32> {
        self.weight
            .chunks_exact(self.inputs)
            .zip(&self.bias)
            .map(|(row, &b)| {
                let dot: f64 = row
                    .iter()
                    .zip(x)
                    .map(|(&w, &v)| f64::from(w) * f64::from(v))
                    .sum();
                f(dot + f64::from(b)) as f32
            })
            .collect()
    }
}

impl std::fmt::Debug for CrossEncoderReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoderReranker")
            .field("model_id", &self.model_id)
            .field("num_labels", &self.num_labels)
            .field("max_length", &self.max_length)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl CrossEncoderReranker {
    /// Loads a BERT or XLM-RoBERTa sequence-classification model directory.
    ///
    /// Accepts encoder weights with or without the `bert.` prefix of Hugging Face's
    /// `BertForSequenceClassification` (`bert.embeddings.*`, `bert.encoder.*`,
    /// `bert.pooler.dense.*`, `classifier.*`) or the `roberta.` prefix of
    /// `XLMRobertaForSequenceClassification` (`roberta.embeddings.*`,
    /// `roberta.encoder.*`, `classifier.dense.*`, `classifier.out_proj.*`). Fails with
    /// [`EmbedError::ModelLoad`] naming the file when a file is missing or malformed,
    /// the architecture is neither, or the head's weights are absent (an embedding
    /// model is not a cross-encoder) or the classifier has more than two labels.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        if !dir.is_dir() {
            return Err(load_error(dir, "model directory does not exist"));
        }
        let config_path = require_file(dir, "config.json", KIND)?;
        let weights_path = require_file(dir, "model.safetensors", KIND)?;
        let tokenizer_path = require_file(dir, "tokenizer.json", KIND)?;
        let kernel = KernelChoice::from_env()
            .and_then(KernelChoice::resolve)
            .map_err(|e| load_error(dir, e))?;

        let (config, family, max_length) = read_config(&config_path)?;

        let tokenizer = pair_tokenizer(&tokenizer_path, max_length, &config)?;

        let bytes = std::fs::read(&weights_path)
            .map_err(|e| load_error(&weights_path, format!("cannot read: {e}")))?;
        let model_id = model_id(dir, &blake3::hash(&bytes), KIND);
        let tensors = Weights::parse(&bytes)
            .map_err(|e| load_error(&weights_path, format!("cannot read weights: {e}")))?;

        // Hugging Face nests the encoder under `bert.` or `roberta.`; bare encoder
        // exports do not.
        let task_prefix = family.task_prefix();
        let prefix = if tensors.contains(&format!("{task_prefix}embeddings.word_embeddings.weight"))
        {
            task_prefix
        } else {
            ""
        };
        let names = HeadNames::of(family, prefix);
        let num_labels = classifier_labels(&tensors, &names, config.hidden_size, &weights_path)?;

        let weights_err = |what: &str, e: String| {
            load_error(
                &weights_path,
                format!("{what} weights do not match config.json: {e}"),
            )
        };
        let hidden = config.hidden_size;
        let encoder =
            BertEncoder::load(&tensors, &config, kernel).map_err(|e| weights_err("encoder", e))?;
        let pooler = Dense::load(&tensors, &names.dense, hidden, hidden)
            .map_err(|e| weights_err(names.dense_role, e))?;
        let classifier = Dense::load(&tensors, &names.out, num_labels, hidden)
            .map_err(|e| weights_err("classifier", e))?;

        Ok(Self {
            encoder,
            pooler,
            classifier,
            num_labels,
            tokenizer,
            max_length,
            batch_size: DEFAULT_CROSS_ENCODER_BATCH_SIZE,
            model_id,
        })
    }

    /// Sets how many pairs go through the model at once (at least 1; default
    /// [`DEFAULT_CROSS_ENCODER_BATCH_SIZE`]).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The batch size in use.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Tokens per pair, special tokens included; longer pairs are truncated.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// Labels of the classifier head (1 or 2).
    pub fn num_labels(&self) -> usize {
        self.num_labels
    }

    /// Scores one batch of passages against `query`, in batch order.
    fn score_batch(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let n = passages.len();
        let pairs: Vec<tokenizers::EncodeInput> =
            passages.iter().map(|&p| (query, p).into()).collect();
        let unpadded = encode_unpadded(&self.tokenizer, pairs)?;
        if unpadded.iter().any(|(ids, _)| ids.is_empty()) {
            return Err(inference_error("tokenization failed", "empty encoding"));
        }
        let seqs: Vec<(&[u32], &[u32])> = unpadded
            .iter()
            .map(|(ids, types)| (ids.as_slice(), types.as_slice()))
            .collect();
        let h = self.encoder.hidden_size();
        // Pooler and classifier on each pair's first (`[CLS]` or `<s>`) row.
        let head = |hidden: &[f32]| -> Vec<Vec<f32>> {
            let mut start = 0;
            let mut logits = Vec::with_capacity(n);
            for (ids, _) in &seqs {
                let cls = &hidden[start * h..][..h];
                start += ids.len();
                let pooled = self.pooler.apply(cls, f64::tanh);
                logits.push(self.classifier.apply(&pooled, |x| x));
            }
            logits
        };
        let logits = self
            .encoder
            .forward(&seqs, Precision::F32, head)
            .map_err(|e| inference_error("model forward pass failed", e))?;
        logits
            .iter()
            .map(|row| {
                let score = match row.as_slice() {
                    [logit] => sigmoid(f64::from(*logit)),
                    [l0, l1] => sigmoid(f64::from(*l1) - f64::from(*l0)),
                    _ => {
                        return Err(inference_error(
                            "model forward pass failed",
                            "unexpected classifier output width",
                        ))
                    }
                };
                if score.is_finite() {
                    Ok(score as f32)
                } else {
                    Err(inference_error(
                        "model forward pass failed",
                        "non-finite score",
                    ))
                }
            })
            .collect()
    }
}

/// The config of a cross-encoder at `config_path` (refused when it names another
/// model type or architecture), its family and the longest pair it reads.
fn read_config(config_path: &Path) -> Result<(BertConfig, Family, usize), EmbedError> {
    let config_text = std::fs::read_to_string(config_path)
        .map_err(|e| load_error(config_path, format!("cannot read: {e}")))?;
    let head: HeadConfig = serde_json::from_str(&config_text)
        .map_err(|e| load_error(config_path, format!("malformed JSON: {e}")))?;
    let Some(family) = Family::of(head.model_type.as_deref()) else {
        return Err(load_error(
            config_path,
            format!(
                "model_type `{}` is not supported (only BERT and XLM-RoBERTa \
                 cross-encoders: model_type `bert`, `xlm-roberta`, `roberta`)",
                head.model_type.as_deref().unwrap_or_default()
            ),
        ));
    };
    if let Some(archs) = &head.architectures {
        let known = |a: &String| match family {
            Family::Bert => a.starts_with("Bert"),
            Family::Roberta => a.starts_with("XLMRoberta") || a.starts_with("Roberta"),
        };
        if !archs.is_empty() && !archs.iter().any(known) {
            return Err(load_error(
                config_path,
                format!(
                    "architecture {archs:?} is not supported (expected \
                     BertForSequenceClassification or XLMRobertaForSequenceClassification)"
                ),
            ));
        }
    }
    let config: BertConfig = serde_json::from_str(&config_text).map_err(|e| {
        load_error(
            config_path,
            format!("not a BERT or XLM-RoBERTa config: {e}"),
        )
    })?;
    let positions = config
        .max_tokens()
        .map_err(|e| load_error(config_path, e))?;
    let max_length = DEFAULT_MAX_LENGTH.min(positions);
    let least = match family {
        Family::Bert => MIN_MAX_LENGTH,
        Family::Roberta => MIN_MAX_LENGTH_ROBERTA,
    };
    if max_length < least {
        return Err(load_error(
            config_path,
            format!(
                "the model has {positions} positions (max_position_embeddings {}); a pair \
                 needs at least {least}",
                config.max_position_embeddings
            ),
        ));
    }
    Ok((config, family, max_length))
}

/// The tensor names of a family's classification head.
struct HeadNames {
    /// The dense layer before the tanh (without `.weight`).
    dense: String,
    /// What that layer is called in messages.
    dense_role: &'static str,
    /// The output layer (without `.weight`).
    out: String,
    /// The architecture, for messages.
    architecture: &'static str,
}

impl HeadNames {
    /// The names in a `family` model whose encoder tensors start with `prefix`.
    fn of(family: Family, prefix: &str) -> Self {
        match family {
            Family::Bert => Self {
                dense: format!("{prefix}pooler.dense"),
                dense_role: "pooler",
                out: "classifier".into(),
                architecture: "BertForSequenceClassification",
            },
            Family::Roberta => Self {
                dense: "classifier.dense".into(),
                dense_role: "classifier.dense",
                out: "classifier.out_proj".into(),
                architecture: "XLMRobertaForSequenceClassification",
            },
        }
    }
}

/// The number of labels of the classifier in `tensors` (1 or 2), after checking the
/// dense layer before it is there: an embedding model has neither.
fn classifier_labels(
    tensors: &Weights<'_>,
    names: &HeadNames,
    hidden_size: usize,
    weights_path: &Path,
) -> Result<usize, EmbedError> {
    let dense_name = format!("{}.weight", names.dense);
    if !tensors.contains(&dense_name) {
        return Err(load_error(
            weights_path,
            format!(
                "missing {} weights `{dense_name}`: not a {} (cross-encoder) model",
                names.dense_role, names.architecture
            ),
        ));
    }
    let out_name = format!("{}.weight", names.out);
    let num_labels = match tensors.shape(&out_name) {
        Some(dims) if dims.len() == 2 && dims[1] == hidden_size => dims[0],
        Some(dims) => {
            return Err(load_error(
                weights_path,
                format!(
                    "{out_name} has shape {dims:?}, expected [num_labels, {}]",
                    hidden_size
                ),
            ))
        }
        None => {
            return Err(load_error(
                weights_path,
                format!(
                    "missing classifier weights `{out_name}`: not a sequence-\
                     classification (cross-encoder) model; an embedding model cannot rerank"
                ),
            ))
        }
    };
    if !(1..=2).contains(&num_labels) {
        return Err(load_error(
            weights_path,
            format!("the classifier has {num_labels} labels; only 1 or 2 are supported"),
        ));
    }
    Ok(num_labels)
}

/// The tokenizer for pairs: longest-first truncation to `max_length`, padding to the
/// longest pair of a batch (overriding whatever `tokenizer.json` ships).
fn pair_tokenizer(
    path: &Path,
    max_length: usize,
    config: &BertConfig,
) -> Result<Tokenizer, EmbedError> {
    let mut tokenizer = Tokenizer::from_file(path)
        .map_err(|e| load_error(path, format!("cannot parse tokenizer: {e}")))?;
    if tokenizer.get_post_processor().is_none() {
        return Err(load_error(
            path,
            "the tokenizer has no post-processor, so it cannot add its special tokens \
             ([CLS] and [SEP], or <s> and </s>) to sentence pairs",
        ));
    }
    let padding = batch_longest_padding(&tokenizer, config.pad_token_id);
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }))
        .map_err(|e| load_error(path, format!("cannot set truncation: {e}")))?;
    tokenizer.with_padding(Some(padding));
    Ok(tokenizer)
}

impl Reranker for CrossEncoderReranker {
    /// `<directory name>@<12 hex digits of a hash of the weights file>`.
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn rerank(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        // Sort by length so the tokenizer pads each batch little (the padding is dropped
        // before the forward pass); write scores back in input order.
        let mut order: Vec<usize> = (0..passages.len()).collect();
        order.sort_by_key(|&i| passages[i].len());
        let mut out = vec![0.0f32; passages.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&str> = chunk.iter().map(|&i| passages[i]).collect();
            let scores = self.score_batch(query, &batch)?;
            if scores.len() != chunk.len() {
                return Err(inference_error(
                    "model forward pass failed",
                    "wrong number of scores",
                ));
            }
            for (&i, s) in chunk.iter().zip(scores) {
                out[i] = s;
            }
        }
        Ok(out)
    }
}
