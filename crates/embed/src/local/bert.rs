//! Our own BERT encoder forward pass for CPU inference; it also runs the RoBERTa family
//! (XLM-RoBERTa), whose encoder differs only in how tokens are numbered into the
//! position table ([`Family`]).
//!
//! Compared with a general tensor-library model it
//! - runs on unpadded sequences: the tokens of a batch are packed into one
//!   `(tokens, hidden)` matrix for the dense layers, and attention runs per sequence,
//!   so no work is spent on padding and no attention mask is needed;
//! - computes Q, K and V with one matrix product (their weights are concatenated at
//!   load) and folds the `1/sqrt(head_dim)` score scale into the query weights;
//! - adds bias and residual inside the output products (accumulating into the
//!   residual stream), applies bias + GELU inside the intermediate product, and runs
//!   layer norm as one pass per row on all cores;
//! - computes attention head by head in parallel (single-threaded products per
//!   head), softmax in one pass per row;
//! - reuses a handful of buffers per batch instead of allocating per operation.
//!
//! Matrix products use our own AVX2 kernel or the `gemm` crate ([`super::sgemm`])
//! with the weights packed once at load; biases, residuals and the feed-forward
//! activation are applied in its epilogue. GELU is the exact (erf) form, with a vectorisable erf whose absolute
//! error is below 2e-7.

use std::sync::Mutex;

use rayon::prelude::*;

use super::config::{BertConfig, Family, HiddenAct};
use super::math::{has_avx512, with_simd, Activation};
use super::sgemm::{matmul, matmul_to, Epilogue, Kernel, Packed, Precision, SendPtr};
use super::weights::Weights;

/// Rows handled per parallel task in row-wise passes (layer norm).
const ROWS_PER_TASK: usize = 16;

/// One encoder layer's weights, laid out for the forward pass.
struct Layer {
    /// Q, K and V weights stacked: `3 * hidden` outputs of `hidden` inputs. The Q
    /// part is pre-scaled by `1/sqrt(head_dim)`.
    qkv_w: Packed,
    /// `3 * hidden` biases, Q part pre-scaled like the weights.
    qkv_b: Vec<f32>,
    attn_out_w: Packed,
    attn_out_b: Vec<f32>,
    attn_ln_g: Vec<f32>,
    attn_ln_b: Vec<f32>,
    inter_w: Packed,
    inter_b: Vec<f32>,
    out_w: Packed,
    out_b: Vec<f32>,
    out_ln_g: Vec<f32>,
    out_ln_b: Vec<f32>,
}

impl Layer {
    /// Reads layer `i` through `get` (tensor name without the model's prefix, and the
    /// expected shape), packing its weights for `kernel`.
    fn load(
        get: &impl Fn(&str, &[usize]) -> Result<Vec<f32>, String>,
        i: usize,
        hidden: usize,
        head_dim: usize,
        inter: usize,
        kernel: Kernel,
    ) -> Result<Self, String> {
        let scale = 1.0 / (head_dim as f32).sqrt();
        let p = format!("encoder.layer.{i}.");
        let mut qkv_w = get(
            &format!("{p}attention.self.query.weight"),
            &[hidden, hidden],
        )?;
        let mut qkv_b = get(&format!("{p}attention.self.query.bias"), &[hidden])?;
        qkv_w.iter_mut().for_each(|w| *w *= scale);
        qkv_b.iter_mut().for_each(|b| *b *= scale);
        for part in ["key", "value"] {
            qkv_w.extend(get(
                &format!("{p}attention.self.{part}.weight"),
                &[hidden, hidden],
            )?);
            qkv_b.extend(get(&format!("{p}attention.self.{part}.bias"), &[hidden])?);
        }
        let linear = |name: &str, n: usize, k: usize| -> Result<Packed, String> {
            Ok(Packed::from_rows(
                kernel,
                &get(&format!("{p}{name}"), &[n, k])?,
                k,
                n,
                k,
            ))
        };
        Ok(Layer {
            qkv_w: Packed::from_rows(kernel, &qkv_w, hidden, 3 * hidden, hidden),
            qkv_b,
            attn_out_w: linear("attention.output.dense.weight", hidden, hidden)?,
            attn_out_b: get(&format!("{p}attention.output.dense.bias"), &[hidden])?,
            attn_ln_g: get(&format!("{p}attention.output.LayerNorm.weight"), &[hidden])?,
            attn_ln_b: get(&format!("{p}attention.output.LayerNorm.bias"), &[hidden])?,
            inter_w: linear("intermediate.dense.weight", inter, hidden)?,
            inter_b: get(&format!("{p}intermediate.dense.bias"), &[inter])?,
            out_w: linear("output.dense.weight", hidden, inter)?,
            out_b: get(&format!("{p}output.dense.bias"), &[hidden])?,
            out_ln_g: get(&format!("{p}output.LayerNorm.weight"), &[hidden])?,
            out_ln_b: get(&format!("{p}output.LayerNorm.bias"), &[hidden])?,
        })
    }
}

/// A BERT or RoBERTa-family encoder (embeddings + transformer layers), producing token
/// vectors.
pub(crate) struct BertEncoder {
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    head_dim: usize,
    intermediate: usize,
    vocab: usize,
    /// Longest sequence: the position rows from `position_offset` on.
    max_tokens: usize,
    /// Row of the position table of a sequence's first token (0 for BERT,
    /// `pad_token_id + 1` for the RoBERTa family).
    position_offset: usize,
    /// The padding token: the RoBERTa family gives it the position row below the
    /// first (`position_offset - 1`) wherever it occurs.
    pad_id: u32,
    family: Family,
    type_vocab: usize,
    eps: f32,
    activation: Activation,
    /// The kernel the weights are packed for; also decides whether the element-wise
    /// steps use their AVX2 builds.
    kernel: Kernel,
    scratch: Mutex<Vec<Scratch>>,
}

/// Work buffers of a forward pass, kept between batches.
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    inter: Vec<f32>,
}

impl BertEncoder {
    /// Builds the encoder from safetensors tensors named as in Hugging Face BERT and
    /// (XLM-)RoBERTa checkpoints (`embeddings.*`, `encoder.layer.N.*`, optionally under
    /// `bert.` or `roberta.` as the family's task models put them), with the weights
    /// packed for `kernel`.
    pub(crate) fn load(
        tensors: &Weights<'_>,
        config: &BertConfig,
        kernel: Kernel,
    ) -> Result<Self, String> {
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            return Err(format!(
                "hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
            ));
        }
        let head_dim = hidden / heads;
        let inter = config.intermediate_size;
        let family = config.family()?;
        let position_offset = config.position_offset()?;
        let max_tokens = config.max_tokens()?;
        let pad_id = u32::try_from(config.pad_token_id)
            .map_err(|_| format!("pad_token_id {} is out of range", config.pad_token_id))?;
        let prefix = if tensors.contains("embeddings.word_embeddings.weight") {
            ""
        } else {
            family.task_prefix()
        };
        let get = |name: &str, shape: &[usize]| tensors.f32(&format!("{prefix}{name}"), shape);
        let activation = match config.hidden_act {
            HiddenAct::Gelu => Activation::GeluErf,
            HiddenAct::GeluApproximate => Activation::GeluTanh,
            HiddenAct::Relu => Activation::Relu,
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            layers.push(Layer::load(&get, i, hidden, head_dim, inter, kernel)?);
        }
        Ok(Self {
            word: get(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            position: get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_type: get(
                "embeddings.token_type_embeddings.weight",
                &[config.type_vocab_size, hidden],
            )?,
            emb_ln_g: get("embeddings.LayerNorm.weight", &[hidden])?,
            emb_ln_b: get("embeddings.LayerNorm.bias", &[hidden])?,
            layers,
            hidden,
            heads,
            head_dim,
            intermediate: inter,
            vocab: config.vocab_size,
            max_tokens,
            position_offset,
            pad_id,
            family,
            type_vocab: config.type_vocab_size,
            eps: config.layer_norm_eps as f32,
            activation,
            kernel,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The kernel running the products.
    pub(crate) fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Width of the token vectors.
    pub(crate) fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Layers and the feed-forward width.
    pub(crate) fn depth(&self) -> (usize, usize) {
        (self.layers.len(), self.intermediate)
    }

    /// Runs the encoder over unpadded sequences given as `(token ids, type ids)` and
    /// hands `read` the final token vectors of all sequences packed row after row:
    /// `(sum of lengths) * hidden` values, sequence by sequence (the buffer is reused
    /// by later calls, so `read` copies out what it keeps). The layers' weights are
    /// read in `weights` ([`Precision`]: a query's few rows may read them rounded).
    pub(crate) fn forward<T>(
        &self,
        seqs: &[(&[u32], &[u32])],
        weights: Precision,
        read: impl FnOnce(&[f32]) -> T,
    ) -> Result<T, String> {
        let h = self.hidden;
        let offsets = self.offsets(seqs)?;
        let total = offsets[offsets.len() - 1];
        if total == 0 {
            return Ok(read(&[]));
        }

        // Reuse the previous batch's buffers when no other call holds them (their old
        // contents are fully overwritten before being read).
        let mut scratch = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut pool| pool.pop())
            .unwrap_or_default();
        scratch.x.resize(total * h, 0.0);
        scratch.qkv.resize(total * 3 * h, 0.0);
        scratch.ctx.resize(total * h, 0.0);
        scratch.inter.resize(total * self.intermediate, 0.0);
        let Scratch { x, qkv, ctx, inter } = &mut scratch;

        self.embeddings(seqs, &offsets, x)?;
        layer_norm(x, h, &self.emb_ln_g, &self.emb_ln_b, self.eps, self.kernel);
        for layer in &self.layers {
            self.layer(layer, &offsets, x, qkv, ctx, inter, weights);
        }
        let result = read(x);
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(scratch);
        }
        Ok(result)
    }

    /// Where each sequence starts in the packed rows, and the end of the last: the
    /// sequences checked (ids and type ids of one length, within the positions).
    fn offsets(&self, seqs: &[(&[u32], &[u32])]) -> Result<Vec<usize>, String> {
        let mut offsets = Vec::with_capacity(seqs.len() + 1);
        offsets.push(0usize);
        for (ids, types) in seqs {
            if ids.len() != types.len() {
                return Err("token ids and type ids differ in length".into());
            }
            if ids.len() > self.max_tokens {
                return Err(format!(
                    "sequence of {} tokens exceeds the {} positions of the model",
                    ids.len(),
                    self.max_tokens
                ));
            }
            offsets.push(offsets[offsets.len() - 1] + ids.len());
        }
        Ok(offsets)
    }

    /// The input rows: word + position + token type embeddings of every token.
    ///
    /// BERT numbers the tokens 0, 1, 2, ...; the RoBERTa family numbers them as
    /// `transformers`' `create_position_ids_from_input_ids` does: the padding token
    /// gets row `pad_token_id`, every other token `pad_token_id` plus its count among
    /// the non-padding tokens so far (the sequences here carry no padding, so that is
    /// `pad_token_id + 1 + index`). The RoBERTa family's segment is 0 for every token.
    fn embeddings(
        &self,
        seqs: &[(&[u32], &[u32])],
        offsets: &[usize],
        x: &mut [f32],
    ) -> Result<(), String> {
        let h = self.hidden;
        for (s, (ids, types)) in seqs.iter().enumerate() {
            let mut real = 0usize;
            for (p, (&id, &tt)) in ids.iter().zip(types.iter()).enumerate() {
                let position = match self.family {
                    Family::Bert => p,
                    Family::Roberta if id == self.pad_id => self.position_offset - 1,
                    Family::Roberta => {
                        real += 1;
                        self.position_offset - 1 + real
                    }
                };
                let tt = match self.family {
                    Family::Bert => tt as usize,
                    Family::Roberta => 0,
                };
                let id = id as usize;
                if id >= self.vocab || tt >= self.type_vocab {
                    return Err(format!("token id {id} or type id {tt} out of range"));
                }
                let row = &mut x[(offsets[s] + p) * h..][..h];
                let w = &self.word[id * h..][..h];
                let pos = &self.position[position * h..][..h];
                let ty = &self.token_type[tt * h..][..h];
                for i in 0..h {
                    row[i] = w[i] + pos[i] + ty[i];
                }
            }
        }
        Ok(())
    }

    /// One encoder layer over the packed rows `x` (in place), with its scratch buffers;
    /// `weights` as in [`BertEncoder::forward`].
    #[allow(clippy::too_many_arguments)]
    fn layer(
        &self,
        layer: &Layer,
        offsets: &[usize],
        x: &mut [f32],
        qkv: &mut [f32],
        ctx: &mut [f32],
        inter: &mut [f32],
        weights: Precision,
    ) {
        let h = self.hidden;
        let total = offsets[offsets.len() - 1];
        let kernel = self.kernel;
        let inter_width = self.intermediate;
        // Q, K and V (with their biases) in one product.
        let with_bias = |bias| Epilogue {
            bias: Some(bias),
            weights,
            ..Epilogue::STORE
        };
        matmul(
            x,
            h,
            total,
            &layer.qkv_w,
            qkv,
            3 * h,
            with_bias(&layer.qkv_b),
            true,
        );
        self.attention(qkv, offsets, ctx);
        // x = LN(x + ctx · Woᵀ + bo)
        let residual = |bias| Epilogue {
            accumulate: true,
            bias: Some(bias),
            weights,
            ..Epilogue::STORE
        };
        matmul(
            ctx,
            h,
            total,
            &layer.attn_out_w,
            x,
            h,
            residual(&layer.attn_out_b),
            true,
        );
        layer_norm(x, h, &layer.attn_ln_g, &layer.attn_ln_b, self.eps, kernel);
        // inter = act(x · Wiᵀ + bi); x = LN(x + inter · Woᵀ + bo)
        let feed_forward = Epilogue {
            activation: Some(self.activation),
            ..with_bias(&layer.inter_b)
        };
        matmul(
            x,
            h,
            total,
            &layer.inter_w,
            inter,
            inter_width,
            feed_forward,
            true,
        );
        matmul(
            inter,
            inter_width,
            total,
            &layer.out_w,
            x,
            h,
            residual(&layer.out_b),
            true,
        );
        layer_norm(x, h, &layer.out_ln_g, &layer.out_ln_b, self.eps, kernel);
    }

    /// Self-attention of every sequence and head, in parallel over (sequence, head).
    /// `qkv` rows are `[q | k | v]` (q already scaled); writes `ctx` `(tokens, hidden)`.
    fn attention(&self, qkv: &[f32], offsets: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let d = self.head_dim;
        let heads = self.heads;
        let stride = 3 * h;
        let out = SendPtr(ctx.as_mut_ptr());
        let n_seqs = offsets.len() - 1;
        let kernel = self.kernel;
        (0..n_seqs * heads).into_par_iter().for_each_init(
            || AttentionScratch::new(kernel),
            |scratch, task| {
                let (s, head) = (task / heads, task % heads);
                let (start, len) = (offsets[s], offsets[s + 1] - offsets[s]);
                if len == 0 {
                    return;
                }
                let AttentionScratch {
                    scores,
                    row_scale,
                    keys,
                    values,
                } = scratch;
                // Fully overwritten by the product below.
                scores.resize(len * len, 0f32);
                row_scale.resize(len, 0f32);
                let rows = &qkv[start * stride..(start + len) * stride];
                let q = &rows[head * d..];
                keys.pack_rows(&rows[h + head * d..], stride, len, d);
                values.pack_cols(&rows[2 * h + head * d..], stride, len, d);
                // scores = Q Kᵀ  (len x d) · (d x len)
                matmul(q, stride, len, keys, scores, len, Epilogue::STORE, false);
                // Softmax: exponentials here, their normalisation in the next product.
                for (row, scale) in scores.chunks_exact_mut(len).zip(row_scale.iter_mut()) {
                    *scale = exp_shifted_row(row, kernel);
                }
                // ctx block = softmax(S) V  (len x len) · (len x d), into this task's own rows
                // and head columns of `ctx`.
                // SAFETY: `matmul_to`'s contract. `out` points at `ctx`, which is
                // borrowed mutably for the whole parallel loop and holds `total` rows of
                // `h` values; this task writes rows start..start+len (< total) and
                // columns head*d..head*d+d (<= h) at stride h, a region no other
                // (sequence, head) task reads or writes.
                unsafe {
                    matmul_to(
                        scores,
                        len,
                        len,
                        values,
                        out.get().add(start * h + head * d),
                        h,
                        Epilogue {
                            row_scale: Some(row_scale),
                            ..Epilogue::STORE
                        },
                        false,
                    );
                }
            },
        );
    }
}

/// Per-thread buffers of the attention tasks.
struct AttentionScratch {
    scores: Vec<f32>,
    /// `1 / Σ` of each softmax row.
    row_scale: Vec<f32>,
    keys: Packed,
    values: Packed,
}

impl AttentionScratch {
    fn new(kernel: Kernel) -> Self {
        Self {
            scores: Vec::new(),
            row_scale: Vec::new(),
            keys: Packed::new(kernel),
            values: Packed::new(kernel),
        }
    }
}

/// Layer norm of every row of width `h`, in parallel, by the build of `kernel`: on
/// sixteen lanes for the AVX-512 kernel, the AVX2 build for the AVX2 kernel, the
/// portable code for `gemm`.
fn layer_norm(xs: &mut [f32], h: usize, gamma: &[f32], beta: &[f32], eps: f32, kernel: Kernel) {
    xs.par_chunks_mut(h * ROWS_PER_TASK).for_each(|rows| {
        for row in rows.chunks_exact_mut(h) {
            #[cfg(target_arch = "x86_64")]
            if kernel == Kernel::Avx512 && has_avx512() {
                // SAFETY: the CPU has AVX-512F, AVX2, FMA and F16C (just checked).
                unsafe { super::lanes::layer_norm_row_avx512(row, gamma, beta, eps) };
                continue;
            }
            with_simd!(allowed: kernel.simd(), layer_norm_row(row, gamma, beta, eps));
        }
    });
}

/// The softmax exponentials of one row (`math::exp_shifted_row`), by the build of
/// `kernel`, as [`layer_norm`].
fn exp_shifted_row(row: &mut [f32], kernel: Kernel) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx512 && has_avx512() {
        // SAFETY: the CPU has AVX-512F, AVX2, FMA and F16C (just checked).
        return unsafe { super::lanes::exp_shifted_row_avx512(row) };
    }
    with_simd!(allowed: kernel.simd(), exp_shifted_row(row))
}
