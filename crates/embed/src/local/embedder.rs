//! The local embedder: a BERT or XLM-RoBERTa sentence-transformers model run on the
//! CPU by our own forward pass, and its tokenizer as a [`TokenCounter`].

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use excerpt_core::{normalize, EmbedError, Embedder, Pooled, SpanPool, TokenCounter};
use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

use super::bert::BertEncoder;
use super::config::{BertConfig, ModelFamily};
use super::files::{card_languages, load_error, model_id, read_json_opt, require_file, ModelKind};
use super::inference_error;
use super::sgemm::{KernelChoice, Precision};
use super::tokenize::{batch_longest_padding, encode_unpadded, encode_with_offsets};
use super::weights::Weights;

/// Texts embedded per forward pass unless [`LocalEmbedder::with_batch_size`] says
/// otherwise.
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// Sequence length used when the model directory has no `sentence_bert_config.json`
/// (capped by the model's `max_position_embeddings`).
const DEFAULT_MAX_SEQ_LENGTH: usize = 512;

/// Bytes hashed at each end of `model.safetensors` for [`LocalEmbedder::model_id`].
const HASH_WINDOW: u64 = 1 << 20;

/// What [`LocalEmbedder::load`] expects to find, for its error messages.
const KIND: ModelKind = ModelKind::SentenceTransformer;

/// How token vectors are pooled into one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the token vectors, padding excluded (sentence-transformers' default).
    Mean,
    /// The vector of the first (`[CLS]`) token.
    Cls,
}

/// A BERT-family sentence-transformers model on the CPU.
///
/// Load it with [`LocalEmbedder::load`]. Texts are truncated to the model's
/// `max_seq_length` (256 tokens for all-MiniLM-L6-v2) and embedded in batches (texts
/// are sorted by length within one call; the output keeps the input order) by our own
/// BERT forward pass, which packs the batch's tokens without padding. Token vectors
/// are pooled over each text's own tokens and L2-normalised. Work runs on all cores
/// (rayon's threads; set `RAYON_NUM_THREADS` to limit them).
pub struct LocalEmbedder {
    encoder: BertEncoder,
    /// Truncates to `max_seq_length` and pads to the longest text of a batch.
    tokenizer: Tokenizer,
    counter: LocalTokenCounter,
    pooling: Pooling,
    /// Put before queries and passages (e5's `query: ` and `passage: `).
    prompts: Prompts,
    dimension: usize,
    batch_size: usize,
    model_id: String,
    /// What the model card says the model reads ([`Embedder::languages`]).
    languages: Option<Vec<String>>,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model_id", &self.model_id)
            .field("dimension", &self.dimension)
            .field("pooling", &self.pooling)
            .field("max_seq_length", &self.counter.max_seq_length)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

/// `1_Pooling/config.json`; only the fields we act on.
#[derive(Debug, Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// `sentence_bert_config.json`.
#[derive(Debug, Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

/// `config_sentence_transformers.json`; only the prompts.
#[derive(Debug, Deserialize)]
struct SentenceTransformersConfig {
    /// Prompt name to the text put before an input: e5 models name `query` and
    /// `passage` (others `document`).
    #[serde(default)]
    prompts: std::collections::BTreeMap<String, String>,
}

/// The texts put before queries and passages, as the model directory's
/// `config_sentence_transformers.json` names them (none when it names none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Prompts {
    /// The `query` prompt.
    query: Option<String>,
    /// The `passage` prompt, else the `document` one.
    passage: Option<String>,
}

impl Prompts {
    /// Reads the prompts of `config_sentence_transformers.json` in `dir`; empty
    /// prompts count as none.
    fn read(dir: &Path) -> Result<Self, EmbedError> {
        let path = dir.join("config_sentence_transformers.json");
        let Some(config) = read_json_opt::<SentenceTransformersConfig>(&path)? else {
            return Ok(Self::default());
        };
        let prompt = |name: &str| config.prompts.get(name).filter(|p| !p.is_empty()).cloned();
        Ok(Self {
            query: prompt("query"),
            passage: prompt("passage").or_else(|| prompt("document")),
        })
    }

    /// Whether there is any prompt to apply.
    fn is_empty(&self) -> bool {
        self.query.is_none() && self.passage.is_none()
    }

    /// What goes into the model id: the prompts change every vector.
    fn fingerprint(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for p in [&self.query, &self.passage] {
            let p = p.as_deref().unwrap_or_default();
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
            out.extend_from_slice(p.as_bytes());
        }
        out
    }
}

/// `texts` with `prompt` put before each (borrowed as they are without one).
fn prompted<'a>(prompt: Option<&str>, texts: &[&'a str]) -> Vec<Cow<'a, str>> {
    texts
        .iter()
        .map(|&t| match prompt {
            Some(p) => Cow::Owned(format!("{p}{t}")),
            None => Cow::Borrowed(t),
        })
        .collect()
}

/// One entry of `modules.json`.
#[derive(Debug, Deserialize)]
struct ModuleEntry {
    #[serde(default)]
    path: String,
    #[serde(rename = "type", default)]
    kind: String,
}

/// Where the pooling module's config lives: from `modules.json` if present, else
/// `1_Pooling/config.json`.
fn pooling_config_path(dir: &Path) -> Result<PathBuf, EmbedError> {
    let modules: Option<Vec<ModuleEntry>> = read_json_opt(&dir.join("modules.json"))?;
    let sub = modules
        .into_iter()
        .flatten()
        .find(|m| m.kind.ends_with(".Pooling") && !m.path.is_empty())
        .map(|m| m.path)
        .unwrap_or_else(|| "1_Pooling".to_string());
    Ok(dir.join(sub).join("config.json"))
}

fn read_pooling(dir: &Path) -> Result<Pooling, EmbedError> {
    let path = pooling_config_path(dir)?;
    let Some(cfg) = read_json_opt::<PoolingConfig>(&path)? else {
        return Ok(Pooling::Mean);
    };
    if cfg.pooling_mode_max_tokens || cfg.pooling_mode_mean_sqrt_len_tokens {
        return Err(load_error(
            &path,
            "unsupported pooling mode (only mean and CLS pooling are implemented)",
        ));
    }
    match (cfg.pooling_mode_mean_tokens, cfg.pooling_mode_cls_token) {
        (true, true) => Err(load_error(
            &path,
            "unsupported pooling: both mean and CLS pooling enabled",
        )),
        (false, true) => Ok(Pooling::Cls),
        _ => Ok(Pooling::Mean),
    }
}

/// `<dir name>@<12 hex digits>`: blake3 of the file size and its first and last MiB,
/// and of the prompts when the model has any. Cheap (2 MiB read) and changes whenever
/// the weights file is replaced in practice.
fn weights_fingerprint(
    dir: &Path,
    weights: &Path,
    prompts: &Prompts,
) -> Result<String, EmbedError> {
    let io_err = |e: std::io::Error| load_error(weights, format!("cannot read: {e}"));
    let mut file = File::open(weights).map_err(io_err)?;
    let size = file.metadata().map_err(io_err)?.len();
    let mut hasher = blake3::Hasher::new();
    hasher.update(&size.to_le_bytes());
    let mut buf = Vec::with_capacity(HASH_WINDOW as usize);
    (&mut file)
        .take(HASH_WINDOW)
        .read_to_end(&mut buf)
        .map_err(io_err)?;
    hasher.update(&buf);
    if size > HASH_WINDOW {
        let tail_start = size.saturating_sub(HASH_WINDOW).max(HASH_WINDOW);
        file.seek(SeekFrom::Start(tail_start)).map_err(io_err)?;
        buf.clear();
        file.read_to_end(&mut buf).map_err(io_err)?;
        hasher.update(&buf);
    }
    if !prompts.is_empty() {
        hasher.update(b"prompts");
        hasher.update(&prompts.fingerprint());
    }
    Ok(model_id(dir, &hasher.finalize(), KIND))
}

impl LocalEmbedder {
    /// Loads a sentence-transformers model directory.
    ///
    /// Reads `config.json` (a BERT or XLM-RoBERTa config), `model.safetensors`,
    /// `tokenizer.json`, the pooling module's `config.json` (mean pooling if absent),
    /// `sentence_bert_config.json` (`max_seq_length`, 512 if absent, capped by the
    /// positions of the model: `max_position_embeddings`, less `pad_token_id + 1` for
    /// XLM-RoBERTa) and `config_sentence_transformers.json` when present (its `query`
    /// prompt is put before queries, its `passage` or `document` prompt before
    /// passages, as e5 models want `query: ` and `passage: `). The tokenizer's own
    /// truncation and padding settings are replaced: truncation to `max_seq_length`
    /// (prompt included), padding to the longest text of a batch.
    ///
    /// The matrix kernel is chosen by `EXCERPT_KERNEL` ([`KernelChoice::from_env`]).
    ///
    /// Fails with [`EmbedError::ModelLoad`] naming the missing or malformed file, or
    /// when `config.json` names a model family other than BERT or XLM-RoBERTa
    /// (`model_type`), or
    /// `EXCERPT_KERNEL` holds an unknown or unusable kernel.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let choice = KernelChoice::from_env().map_err(|e| load_error(dir, e))?;
        Self::load_with_kernel(dir, choice)
    }

    /// [`LocalEmbedder::load`] with the kernel given instead of read from
    /// `EXCERPT_KERNEL` (benchmarks compare kernels in one process this way).
    pub fn load_with_kernel(dir: &Path, choice: KernelChoice) -> Result<Self, EmbedError> {
        let kernel = choice.resolve().map_err(|e| load_error(dir, e))?;
        if !dir.is_dir() {
            return Err(load_error(dir, "model directory does not exist"));
        }
        let config_path = require_file(dir, "config.json", KIND)?;
        let weights_path = require_file(dir, "model.safetensors", KIND)?;
        let tokenizer_path = require_file(dir, "tokenizer.json", KIND)?;

        let family: Option<ModelFamily> = read_json_opt(&config_path)?;
        if let Some(message) = family.and_then(|f| f.unsupported()) {
            return Err(load_error(&config_path, message));
        }
        // `hidden_act` is honoured as written (the exact erf GELU for MiniLM).
        let config: BertConfig = read_json_opt(&config_path)?
            .ok_or_else(|| load_error(&config_path, "missing file `config.json`"))?;
        let pooling = read_pooling(dir)?;
        let sbert_path = dir.join("sentence_bert_config.json");
        let max_seq_length = read_max_seq_length(dir, &config, &config_path)?;
        if max_seq_length < 2 {
            return Err(load_error(&sbert_path, "max_seq_length must be at least 2"));
        }
        let prompts = Prompts::read(dir)?;

        let base = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| load_error(&tokenizer_path, format!("cannot parse tokenizer: {e}")))?;
        let counter = LocalTokenCounter::new(
            base.clone(),
            max_seq_length,
            prompts.passage.as_deref(),
            &tokenizer_path,
        )?;
        let tokenizer = embedding_tokenizer(base, max_seq_length, &config, &tokenizer_path)?;

        let model_id = weights_fingerprint(dir, &weights_path, &prompts)?;
        let bytes = std::fs::read(&weights_path)
            .map_err(|e| load_error(&weights_path, format!("cannot read weights: {e}")))?;
        let tensors = Weights::parse(&bytes)
            .map_err(|e| load_error(&weights_path, format!("cannot read weights: {e}")))?;
        let encoder = BertEncoder::load(&tensors, &config, kernel).map_err(|e| {
            load_error(
                &weights_path,
                format!("weights do not match the model config.json describes: {e}"),
            )
        })?;

        Ok(Self {
            encoder,
            tokenizer,
            counter,
            pooling,
            prompts,
            dimension: config.hidden_size,
            batch_size: DEFAULT_BATCH_SIZE,
            model_id,
            languages: card_languages(dir),
        })
    }

    /// Sets how many texts go through the model at once (at least 1; default
    /// [`DEFAULT_BATCH_SIZE`]).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The name of the matrix kernel in use: `avx2` (our own) or `gemm`.
    pub fn kernel(&self) -> &'static str {
        self.encoder.kernel().name()
    }

    /// The tile of the queries' integer products on this CPU (`avx2`, `avx512bw` or
    /// `avx512-vnni`; used when queries are embedded with 16-bit integer products).
    pub fn integer_tile(&self) -> &'static str {
        super::sgemm::integer_tile(self.encoder.kernel())
    }

    /// Floating-point operations of one forward pass over `tokens` tokens (special
    /// tokens included), as [`crate::encoder_flops`] counts them.
    pub fn flops(&self, tokens: usize) -> f64 {
        let (layers, intermediate) = self.encoder.depth();
        crate::encoder_flops(layers, self.encoder.hidden_size(), intermediate, tokens)
    }

    /// The batch size in use.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The pooling read from the model directory.
    pub fn pooling(&self) -> Pooling {
        self.pooling
    }

    /// Tokens per sequence, special tokens included; longer texts are truncated.
    pub fn max_seq_length(&self) -> usize {
        self.counter.max_seq_length
    }

    /// The prompt put before every query (`config_sentence_transformers.json`'s
    /// `query` prompt), if the model has one.
    pub fn query_prompt(&self) -> Option<&str> {
        self.prompts.query.as_deref()
    }

    /// The prompt put before every passage (its `passage` or `document` prompt).
    pub fn passage_prompt(&self) -> Option<&str> {
        self.prompts.passage.as_deref()
    }

    /// The tokenizer without truncation or padding, as a [`TokenCounter`].
    pub fn tokens(&self) -> &LocalTokenCounter {
        &self.counter
    }

    /// A query's vector, its products reading the weights as `weights` says (what
    /// [`Embedder::embed_query`] does with the choice of `EXCERPT_QUERY_WEIGHTS`).
    pub fn embed_query_with(
        &self,
        query: &str,
        weights: QueryWeights,
    ) -> Result<Vec<f32>, EmbedError> {
        // On one of the thread pool's workers: the forward pass has some forty parallel
        // steps, and a caller outside the pool would hand each one to a worker and sleep
        // until it is done; inside, the steps are shared out among the workers directly
        // (19-word questions embedded over HTTP, p50 8.3-8.5 -> 7.0-7.1 ms).
        let prompt = self.prompts.query.as_deref();
        let mut vectors =
            rayon::scope(|_| self.embed_batch(&[query], prompt, weights.precision()))?;
        vectors
            .pop()
            .ok_or_else(|| inference_error("model forward pass failed", "wrong number of vectors"))
    }

    /// Embeds one batch (already ordered), `prompt` put before each text, returning
    /// normalised vectors in its order. Padding added by the tokenizer is dropped:
    /// each text runs at its own length. The weights are read in `weights`
    /// ([`BertEncoder::forward`]).
    fn embed_batch(
        &self,
        texts: &[&str],
        prompt: Option<&str>,
        weights: Precision,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let n = texts.len();
        let unpadded = encode_unpadded(&self.tokenizer, prompted(prompt, texts))?;
        let seqs: Vec<(&[u32], &[u32])> = unpadded
            .iter()
            .map(|(ids, types)| (ids.as_slice(), types.as_slice()))
            .collect();
        let h = self.encoder.hidden_size();
        let pooling = self.pooling;
        let pool = |hidden: &[f32]| {
            let mut start = 0;
            let mut out = Vec::with_capacity(n);
            for (ids, _) in &seqs {
                let rows = &hidden[start * h..(start + ids.len()) * h];
                start += ids.len();
                out.push(pool_sequence(rows, h, pooling));
            }
            out
        };
        let out = self
            .encoder
            .forward(&seqs, weights, pool)
            .map_err(|e| inference_error("model forward pass failed", e))?;
        Ok(out)
    }
}

/// One sequence's vector from its final token vectors `rows` (`h` values each), pooled
/// as the model says and normalised.
fn pool_sequence(rows: &[f32], h: usize, pooling: Pooling) -> Vec<f32> {
    let mut v = vec![0f32; h];
    match pooling {
        Pooling::Cls => {
            if let Some(first) = rows.chunks_exact(h).next() {
                v.copy_from_slice(first);
            }
        }
        Pooling::Mean => {
            for row in rows.chunks_exact(h) {
                v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
            }
            let count = (rows.len() / h).max(1) as f32;
            v.iter_mut().for_each(|a| *a /= count);
        }
    }
    normalize(&mut v);
    v
}

/// The tokens of one input that overlap each byte span, added up (see
/// [`Embedder::pool_spans`]): `rows` is the input's final token vectors, `offsets` each
/// token's byte range (`None`: a special token).
fn pool_rows(
    rows: &[f32],
    h: usize,
    offsets: &[Option<(usize, usize)>],
    spans: &[(usize, usize)],
) -> Vec<SpanPool> {
    spans
        .iter()
        .map(|&(start, end)| {
            let mut pool = SpanPool {
                sum: vec![0f32; h],
                tokens: 0,
            };
            for (row, o) in rows.chunks_exact(h).zip(offsets) {
                if let Some((a, b)) = *o {
                    // Overlap: a token inside the span, or one the span cuts (an
                    // empty span holds none).
                    if a < end && b > start && start < end {
                        pool.sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
                        pool.tokens += 1;
                    }
                }
            }
            pool
        })
        .collect()
}

/// The tokenizer used for embedding: truncation to `max_seq_length`, padding to the
/// batch's longest sequence (overriding whatever `tokenizer.json` ships, e.g. fixed 128).
fn embedding_tokenizer(
    mut tokenizer: Tokenizer,
    max_seq_length: usize,
    config: &BertConfig,
    path: &Path,
) -> Result<Tokenizer, EmbedError> {
    let padding = batch_longest_padding(&tokenizer, config.pad_token_id);
    let truncation = TruncationParams {
        max_length: max_seq_length,
        ..tokenizer.get_truncation().cloned().unwrap_or_default()
    };
    tokenizer
        .with_truncation(Some(TruncationParams {
            stride: 0,
            ..truncation
        }))
        .map_err(|e| load_error(path, format!("cannot set truncation: {e}")))?;
    tokenizer.with_padding(Some(padding));
    Ok(tokenizer)
}

impl Embedder for LocalEmbedder {
    /// `<directory name>@<12 hex digits of a hash of the weights file>`.
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    /// The `language` of the model directory's `README.md` (its model card), unless
    /// it says `multilingual`.
    fn languages(&self) -> Option<&[String]> {
        self.languages.as_deref()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Sort by length so each batch pads little; write results back in input order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors =
                self.embed_batch(&batch, self.prompts.passage.as_deref(), Precision::F32)?;
            if vectors.len() != chunk.len() {
                return Err(inference_error(
                    "model forward pass failed",
                    "wrong number of vectors",
                ));
            }
            for (&i, v) in chunk.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// A query's vector, with the weights read as `EXCERPT_QUERY_WEIGHTS` says
    /// ([`QueryWeights`]; by default in 16-bit integer products).
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed_query_with(query, QueryWeights::from_env())
    }

    fn token_counter(&self) -> Option<&dyn TokenCounter> {
        Some(&self.counter)
    }

    /// Token vectors in f32, as [`Embedder::embed`] computes them (the passage prompt
    /// before each text, its tokens in no span), `batch_size` texts per forward pass.
    fn pool_spans(
        &self,
        texts: &[&str],
        spans: &[Vec<(usize, usize)>],
    ) -> Result<Option<Vec<Pooled>>, EmbedError> {
        if spans.len() != texts.len() {
            return Err(inference_error(
                "late chunking failed",
                "one list of spans per text is needed",
            ));
        }
        let h = self.encoder.hidden_size();
        let pooling = self.pooling;
        let mut out: Vec<Pooled> = Vec::with_capacity(texts.len());
        for (group, group_spans) in texts
            .chunks(self.batch_size.max(1))
            .zip(spans.chunks(self.batch_size.max(1)))
        {
            let prompt = self.prompts.passage.as_deref();
            let encoded = encode_with_offsets(&self.tokenizer, prompted(prompt, group))?;
            // The spans are byte ranges of the text: after the prompt in the input.
            let shift = prompt.map_or(0, str::len);
            let group_spans: Vec<Vec<(usize, usize)>> = group_spans
                .iter()
                .map(|sp| sp.iter().map(|&(a, b)| (a + shift, b + shift)).collect())
                .collect();
            let seqs: Vec<(&[u32], &[u32])> = encoded
                .iter()
                .map(|e| (e.ids.as_slice(), e.types.as_slice()))
                .collect();
            let pools = self
                .encoder
                .forward(&seqs, Precision::F32, |hidden| {
                    let mut start = 0;
                    let mut pools = Vec::with_capacity(encoded.len());
                    for (e, sp) in encoded.iter().zip(&group_spans) {
                        let rows = &hidden[start * h..(start + e.ids.len()) * h];
                        start += e.ids.len();
                        pools.push(Pooled {
                            vector: pool_sequence(rows, h, pooling),
                            spans: pool_rows(rows, h, &e.offsets, sp),
                        });
                    }
                    pools
                })
                .map_err(|e| inference_error("model forward pass failed", e))?;
            out.extend(pools);
        }
        Ok(Some(out))
    }
}

/// The model's tokenizer without truncation or padding, counting tokens for the
/// chunker. Spans are byte ranges into the text given.
#[derive(Clone)]
pub struct LocalTokenCounter {
    tokenizer: Tokenizer,
    max_seq_length: usize,
    /// Tokens of the passage prompt, which every passage's sequence also holds.
    prompt_tokens: usize,
}

impl std::fmt::Debug for LocalTokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTokenCounter")
            .field("max_seq_length", &self.max_seq_length)
            .field("prompt_tokens", &self.prompt_tokens)
            .finish_non_exhaustive()
    }
}

impl LocalTokenCounter {
    /// The counter of `tokenizer` (its truncation and padding removed), for sequences
    /// of `max_seq_length` tokens that start with `passage_prompt`.
    fn new(
        mut tokenizer: Tokenizer,
        max_seq_length: usize,
        passage_prompt: Option<&str>,
        path: &Path,
    ) -> Result<Self, EmbedError> {
        tokenizer
            .with_truncation(None)
            .map_err(|e| load_error(path, format!("cannot disable truncation: {e}")))?;
        tokenizer.with_padding(None);
        let prompt_tokens = match passage_prompt {
            Some(p) => tokenizer
                .encode_fast(p, false)
                .map_err(|e| load_error(path, format!("cannot tokenize the prompt: {e}")))?
                .len(),
            None => 0,
        };
        Ok(Self {
            tokenizer,
            max_seq_length,
            prompt_tokens,
        })
    }

    /// Loads just the tokenizer of a model directory (`tokenizer.json`, and
    /// `max_seq_length` and the passage prompt as [`LocalEmbedder::load`] reads them),
    /// without the weights.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let config_path = require_file(dir, "config.json", KIND)?;
        let tokenizer_path = require_file(dir, "tokenizer.json", KIND)?;
        let config: BertConfig = read_json_opt(&config_path)?
            .ok_or_else(|| load_error(&config_path, "missing file `config.json`"))?;
        let max_seq_length = read_max_seq_length(dir, &config, &config_path)?;
        let prompts = Prompts::read(dir)?;
        let tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| load_error(&tokenizer_path, format!("cannot parse tokenizer: {e}")))?;
        Self::new(
            tokenizer,
            max_seq_length,
            prompts.passage.as_deref(),
            &tokenizer_path,
        )
    }
}

/// `max_seq_length` of `sentence_bert_config.json` in `dir` (512 if absent), capped by
/// the positions of the model `config` (read from `config_path`) describes.
fn read_max_seq_length(
    dir: &Path,
    config: &BertConfig,
    config_path: &Path,
) -> Result<usize, EmbedError> {
    let positions = config
        .max_tokens()
        .map_err(|e| load_error(config_path, e))?;
    Ok(
        read_json_opt::<SentenceBertConfig>(&dir.join("sentence_bert_config.json"))?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(DEFAULT_MAX_SEQ_LENGTH)
            .min(positions),
    )
}

impl TokenCounter for LocalTokenCounter {
    /// Byte ranges of the tokens of `text`, in order, without special tokens and
    /// without truncation. Returns no spans if the tokenizer fails (it does not on
    /// valid UTF-8 with a well-formed `tokenizer.json`).
    fn token_spans(&self, text: &str) -> Vec<(usize, usize)> {
        // `Tokenizer::encode` reports byte offsets into the original `&str`.
        let Ok(encoding) = self.tokenizer.encode(text, false) else {
            return Vec::new();
        };
        encoding
            .get_offsets()
            .iter()
            .zip(encoding.get_special_tokens_mask())
            .filter(|(_, &special)| special == 0)
            .map(|(&(start, end), _)| (start.min(text.len()), end.min(text.len())))
            .collect()
    }

    fn max_sequence_tokens(&self) -> usize {
        self.max_seq_length
    }

    /// `<s>`/`[CLS]` and `</s>`/`[SEP]`, and the tokens of the passage prompt that
    /// [`LocalEmbedder`] puts before every passage (none for most models).
    fn special_tokens(&self) -> usize {
        2 + self.prompt_tokens
    }

    fn count(&self, text: &str) -> usize {
        self.tokenizer
            .encode_fast(text, false)
            .map(|e| e.len())
            .unwrap_or(0)
    }
}

/// How a query's products read the model's weights ([`LocalEmbedder::embed_query_with`];
/// `EXCERPT_QUERY_WEIGHTS` chooses it for [`Embedder::embed_query`]). Documents are
/// always embedded in f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryWeights {
    /// Weights rounded to 12-bit integers (one scale per column and 128 inner
    /// positions), the rows to 14-bit ones, multiplied and added as 16-bit integers
    /// (the default): more multiply-adds per instruction than f32, cosine 0.99999 to
    /// the f32 vector, every dev-set figure as with f16 (docs/history/eval-2026-11-28.md).
    /// Needs AVX2 and FMA (our own kernels); elsewhere the products are f32.
    #[default]
    Int16,
    /// Weights rounded to half precision, products in f32. Needs F16C (our own
    /// kernels); elsewhere f32.
    F16,
    /// The model's f32 weights, as documents are embedded.
    F32,
}

impl QueryWeights {
    /// The environment variable [`QueryWeights::from_env`] reads.
    pub const ENV: &'static str = "EXCERPT_QUERY_WEIGHTS";

    /// `EXCERPT_QUERY_WEIGHTS` = `int16` (the default), `f16` or `f32`;
    /// `EXCERPT_QUERY_F32=1`, an older switch, still means `f32`. An unknown value is
    /// reported once on standard error and the default used.
    pub fn from_env() -> Self {
        if std::env::var_os("EXCERPT_QUERY_F32").is_some_and(|v| v == "1") {
            return Self::F32;
        }
        Self::from_value(std::env::var(Self::ENV).ok().as_deref())
    }

    /// The choice a value of `EXCERPT_QUERY_WEIGHTS` names (none or empty: the
    /// default); an unknown one is reported once on standard error.
    fn from_value(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some("f16") => Self::F16,
            Some("f32") => Self::F32,
            Some("int16") | Some("") | None => Self::Int16,
            Some(other) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!(
                        "excerpt: {}=`{other}` is not one of int16, f16, f32; using int16",
                        Self::ENV
                    )
                });
                Self::Int16
            }
        }
    }

    fn precision(self) -> Precision {
        match self {
            Self::Int16 => Precision::Int16,
            Self::F16 => Precision::Half,
            Self::F32 => Precision::F32,
        }
    }
}

#[cfg(test)]
mod query_weights_tests {
    use super::QueryWeights;

    #[test]
    fn query_weights_parse_with_integer_products_the_default() {
        assert_eq!(QueryWeights::default(), QueryWeights::Int16);
        for (value, want) in [
            (None, QueryWeights::Int16),
            (Some(""), QueryWeights::Int16),
            (Some(" f16 "), QueryWeights::F16),
            (Some("int16"), QueryWeights::Int16),
            (Some("f32"), QueryWeights::F32),
            (Some("int8"), QueryWeights::Int16),
        ] {
            assert_eq!(QueryWeights::from_value(value), want, "{value:?}");
        }
    }
}
