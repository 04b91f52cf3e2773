//! Our own BERT encoder forward pass for CPU inference.
//!
//! Compared with a general tensor-library model it
//! - runs on unpadded sequences: the tokens of a batch are packed into one
//!   `(tokens, hidden)` matrix for the dense layers, and attention runs per sequence,
//!   so no work is spent on padding and no attention mask is needed;
//! - computes Q, K and V with one matrix product (their weights are concatenated at
//!   load) and folds the `1/sqrt(head_dim)` score scale into the query weights;
//! - adds the residual inside the output products (`gemm` accumulating into the
//!   residual stream) and fuses bias + residual + layer norm, and bias + GELU, into
//!   single passes that run on all cores;
//! - computes attention head by head in parallel (single-threaded products per
//!   head), softmax in one pass per row;
//! - reuses a handful of buffers per batch instead of allocating per operation.
//!
//! Matrix products use the `gemm` crate (the one candle uses on the CPU). GELU is the
//! exact (erf) form, with a vectorisable erf whose absolute error is below 2e-7.

use std::collections::HashMap;
use std::sync::Mutex;

use candle_core::{DType, Tensor};
use candle_transformers::models::bert::{Config, HiddenAct};
use gemm::Parallelism;
use rayon::prelude::*;

/// Rows handled per parallel task in row-wise passes (layer norm, GELU).
const ROWS_PER_TASK: usize = 16;

/// One encoder layer's weights, laid out for the forward pass.
struct Layer {
    /// Q, K and V weights stacked: `(3 * hidden, hidden)`, row-major (output-major).
    /// The Q part is pre-scaled by `1/sqrt(head_dim)`.
    qkv_w: Vec<f32>,
    /// `3 * hidden` biases, Q part pre-scaled like the weights.
    qkv_b: Vec<f32>,
    attn_out_w: Vec<f32>,
    attn_out_b: Vec<f32>,
    attn_ln_g: Vec<f32>,
    attn_ln_b: Vec<f32>,
    inter_w: Vec<f32>,
    inter_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: Vec<f32>,
    out_ln_g: Vec<f32>,
    out_ln_b: Vec<f32>,
}

#[derive(Debug, Clone, Copy)]
enum Activation {
    GeluErf,
    GeluTanh,
    Relu,
}

/// A BERT encoder (embeddings + transformer layers), producing token vectors.
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
    max_positions: usize,
    type_vocab: usize,
    eps: f32,
    activation: Activation,
    scratch: Mutex<Vec<Scratch>>,
}

/// Work buffers of a forward pass, kept between batches.
#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    inter: Vec<f32>,
}

/// A raw pointer that may cross threads; every user writes a disjoint region.
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: used only to hand disjoint output regions to parallel tasks.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// The pointer (a method, so closures capture the whole `Send` wrapper).
    fn get(self) -> *mut f32 {
        self.0
    }
}

impl BertEncoder {
    /// Builds the encoder from safetensors tensors named as in Hugging Face BERT
    /// checkpoints (`embeddings.*`, `encoder.layer.N.*`, optionally under `bert.`).
    pub(crate) fn load(tensors: &HashMap<String, Tensor>, config: &Config) -> Result<Self, String> {
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            return Err(format!(
                "hidden_size {hidden} is not a multiple of num_attention_heads {heads}"
            ));
        }
        let head_dim = hidden / heads;
        let inter = config.intermediate_size;
        let prefix = if tensors.contains_key("embeddings.word_embeddings.weight") {
            ""
        } else {
            "bert."
        };
        let get = |name: &str, shape: &[usize]| -> Result<Vec<f32>, String> {
            let full = format!("{prefix}{name}");
            let t = tensors
                .get(&full)
                .ok_or_else(|| format!("missing tensor `{full}`"))?;
            if t.dims() != shape {
                return Err(format!(
                    "tensor `{full}` has shape {:?}, expected {shape:?}",
                    t.dims()
                ));
            }
            t.to_dtype(DType::F32)
                .and_then(|t| t.flatten_all())
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| format!("tensor `{full}`: {e}"))
        };
        let activation = match config.hidden_act {
            HiddenAct::Gelu => Activation::GeluErf,
            HiddenAct::GeluApproximate => Activation::GeluTanh,
            HiddenAct::Relu => Activation::Relu,
        };
        let scale = 1.0 / (head_dim as f32).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
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
            layers.push(Layer {
                qkv_w,
                qkv_b,
                attn_out_w: get(
                    &format!("{p}attention.output.dense.weight"),
                    &[hidden, hidden],
                )?,
                attn_out_b: get(&format!("{p}attention.output.dense.bias"), &[hidden])?,
                attn_ln_g: get(&format!("{p}attention.output.LayerNorm.weight"), &[hidden])?,
                attn_ln_b: get(&format!("{p}attention.output.LayerNorm.bias"), &[hidden])?,
                inter_w: get(&format!("{p}intermediate.dense.weight"), &[inter, hidden])?,
                inter_b: get(&format!("{p}intermediate.dense.bias"), &[inter])?,
                out_w: get(&format!("{p}output.dense.weight"), &[hidden, inter])?,
                out_b: get(&format!("{p}output.dense.bias"), &[hidden])?,
                out_ln_g: get(&format!("{p}output.LayerNorm.weight"), &[hidden])?,
                out_ln_b: get(&format!("{p}output.LayerNorm.bias"), &[hidden])?,
            });
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
            max_positions: config.max_position_embeddings,
            type_vocab: config.type_vocab_size,
            eps: config.layer_norm_eps as f32,
            activation,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// Width of the token vectors.
    pub(crate) fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Runs the encoder over unpadded sequences given as `(token ids, type ids)`.
    /// Returns the final token vectors of all sequences packed row after row:
    /// `(sum of lengths) * hidden` values, sequence by sequence.
    pub(crate) fn forward(&self, seqs: &[(&[u32], &[u32])]) -> Result<Vec<f32>, String> {
        let h = self.hidden;
        let mut offsets = Vec::with_capacity(seqs.len() + 1);
        offsets.push(0usize);
        for (ids, types) in seqs {
            if ids.len() != types.len() {
                return Err("token ids and type ids differ in length".into());
            }
            if ids.len() > self.max_positions {
                return Err(format!(
                    "sequence of {} tokens exceeds max_position_embeddings {}",
                    ids.len(),
                    self.max_positions
                ));
            }
            offsets.push(offsets[offsets.len() - 1] + ids.len());
        }
        let total = offsets[offsets.len() - 1];
        if total == 0 {
            return Ok(Vec::new());
        }

        // Embeddings: word + position + token type, then layer norm.
        let mut x = vec![0f32; total * h];
        for (s, (ids, types)) in seqs.iter().enumerate() {
            for (p, (&id, &tt)) in ids.iter().zip(types.iter()).enumerate() {
                let (id, tt) = (id as usize, tt as usize);
                if id >= self.vocab || tt >= self.type_vocab {
                    return Err(format!("token id {id} or type id {tt} out of range"));
                }
                let row = &mut x[(offsets[s] + p) * h..][..h];
                let w = &self.word[id * h..][..h];
                let pos = &self.position[p * h..][..h];
                let ty = &self.token_type[tt * h..][..h];
                for i in 0..h {
                    row[i] = w[i] + pos[i] + ty[i];
                }
            }
        }
        let zeros = vec![0f32; h];
        add_bias_layer_norm(&mut x, h, &zeros, &self.emb_ln_g, &self.emb_ln_b, self.eps);

        // Reuse the previous batch's buffers when no other call holds them (their old
        // contents are fully overwritten before being read).
        let mut scratch = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut pool| pool.pop())
            .unwrap_or_default();
        scratch.qkv.resize(total * 3 * h, 0.0);
        scratch.ctx.resize(total * h, 0.0);
        scratch.inter.resize(total * self.intermediate, 0.0);
        let Scratch { qkv, ctx, inter } = &mut scratch;
        for layer in &self.layers {
            // Q, K and V in one product, then their biases.
            matmul(&x, total, h, &layer.qkv_w, 3 * h, qkv, false);
            add_bias_rows(qkv, &layer.qkv_b);
            self.attention(qkv, &offsets, ctx);
            // x += ctx · Woᵀ, then x = LN(x + bo).
            matmul(ctx, total, h, &layer.attn_out_w, h, &mut x, true);
            add_bias_layer_norm(
                &mut x,
                h,
                &layer.attn_out_b,
                &layer.attn_ln_g,
                &layer.attn_ln_b,
                self.eps,
            );
            matmul(
                &x,
                total,
                h,
                &layer.inter_w,
                self.intermediate,
                inter,
                false,
            );
            add_bias_activation(inter, &layer.inter_b, self.activation);
            matmul(
                inter,
                total,
                self.intermediate,
                &layer.out_w,
                h,
                &mut x,
                true,
            );
            add_bias_layer_norm(
                &mut x,
                h,
                &layer.out_b,
                &layer.out_ln_g,
                &layer.out_ln_b,
                self.eps,
            );
        }
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(scratch);
        }
        Ok(x)
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
        (0..n_seqs * heads)
            .into_par_iter()
            .for_each_init(Vec::new, |scores, task| {
                let (s, head) = (task / heads, task % heads);
                let (start, len) = (offsets[s], offsets[s + 1] - offsets[s]);
                if len == 0 {
                    return;
                }
                scores.clear();
                scores.resize(len * len, 0f32);
                let base = start * stride + head * d;
                let q = qkv[base..].as_ptr();
                let k = qkv[base + h..].as_ptr();
                let v = qkv[base + 2 * h..].as_ptr();
                // SAFETY: all reads stay inside `qkv` (rows start..start+len, columns of
                // this head), writes go to `scores` (len x len) and to this task's own
                // (rows, head columns) block of `ctx`, which no other task touches.
                unsafe {
                    // scores = Q Kᵀ  (len x d) · (d x len)
                    gemm::gemm(
                        len,
                        len,
                        d,
                        scores.as_mut_ptr(),
                        1,
                        len as isize,
                        false,
                        q,
                        1,
                        stride as isize,
                        k,
                        stride as isize,
                        1,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
                for row in scores.chunks_exact_mut(len) {
                    with_simd!(softmax_row(row));
                }
                // SAFETY: as above.
                unsafe {
                    // ctx block = P V  (len x len) · (len x d)
                    gemm::gemm(
                        len,
                        d,
                        len,
                        out.get().add(start * h + head * d),
                        1,
                        h as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        len as isize,
                        v,
                        1,
                        stride as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        Parallelism::None,
                    );
                }
            });
    }
}

/// `dst (m x n) = a (m x k) · wᵀ` with `w` stored `(n x k)` row-major; with
/// `accumulate`, adds to `dst` instead of overwriting it. Uses all rayon threads.
fn matmul(a: &[f32], m: usize, k: usize, w: &[f32], n: usize, dst: &mut [f32], accumulate: bool) {
    assert!(a.len() >= m * k && w.len() >= n * k && dst.len() >= m * n);
    let threads = rayon::current_num_threads();
    let parallelism = if threads > 1 {
        Parallelism::Rayon(threads)
    } else {
        Parallelism::None
    };
    // SAFETY: the assertion above bounds every access: dst is m x n row-major, a is
    // m x k row-major and w is n x k row-major (read as its k x n transpose).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.as_ptr(),
            1,
            k as isize,
            w.as_ptr(),
            k as isize,
            1,
            if accumulate { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Adds `bias` to every row of `xs` (rows of `bias.len()`), in parallel.
fn add_bias_rows(xs: &mut [f32], bias: &[f32]) {
    let n = bias.len();
    xs.par_chunks_mut(n * ROWS_PER_TASK).for_each(|rows| {
        for row in rows.chunks_exact_mut(n) {
            for (x, b) in row.iter_mut().zip(bias) {
                *x += b;
            }
        }
    });
}

/// `row = LN(row + bias) * gamma + beta` for every row of width `h`, in parallel.
fn add_bias_layer_norm(
    xs: &mut [f32],
    h: usize,
    bias: &[f32],
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    xs.par_chunks_mut(h * ROWS_PER_TASK).for_each(|rows| {
        for row in rows.chunks_exact_mut(h) {
            with_simd!(layer_norm_row(row, bias, gamma, beta, eps));
        }
    });
}

/// Calls `$f(args)` compiled for AVX2+FMA when the CPU has them (the `_avx2` twin
/// in [`avx2`]), else the portable build.
macro_rules! with_simd {
    ($f:ident($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2_fma() {
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                unsafe { avx2::$f($($arg),*) }
            } else {
                $f($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $f($($arg),*)
        }
    }};
}
use with_simd;

fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Sum of `xs` with 8 independent accumulators (vectorises; order differs from a
/// sequential sum only by rounding).
#[inline(always)]
fn sum_lanes(xs: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + rest
}

const LANES: usize = 8;

#[inline(always)]
fn layer_norm_row(row: &mut [f32], bias: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let h = row.len();
    for (x, b) in row.iter_mut().zip(bias) {
        *x += b;
    }
    let mean = sum_lanes(row) / h as f32;
    for x in row.iter_mut() {
        *x -= mean;
    }
    let mut acc = [0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().map(|x| x * x).sum();
    for c in chunks {
        for i in 0..LANES {
            acc[i] += c[i] * c[i];
        }
    }
    let var = (acc.iter().sum::<f32>() + rest) / h as f32;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = *x * inv * g + b;
    }
}

/// `x = act(x + bias)` over rows of `bias.len()`, in parallel.
fn add_bias_activation(xs: &mut [f32], bias: &[f32], act: Activation) {
    let n = bias.len();
    xs.par_chunks_mut(n * ROWS_PER_TASK).for_each(|rows| {
        for row in rows.chunks_exact_mut(n) {
            match act {
                Activation::GeluErf => with_simd!(bias_gelu_erf_row(row, bias)),
                Activation::GeluTanh => with_simd!(bias_gelu_tanh_row(row, bias)),
                Activation::Relu => row
                    .iter_mut()
                    .zip(bias)
                    .for_each(|(x, b)| *x = (*x + b).max(0.0)),
            }
        }
    });
}

/// `e^x` for f32, vectorisable (no calls, no branches): range reduction by `ln 2`
/// and a degree-6 polynomial; relative error around 2e-7 on the normal range.
/// Inputs below -87 give a tiny (possibly zero) result, above 88 are clamped.
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in a part exact in few bits and a remainder.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2E + MAGIC;
    let n = shifted - MAGIC;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // 2^n: the integer sits in the low bits of `shifted`.
    let ni = (shifted.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let scale = f32::from_bits(((ni + 127) << 23) as u32);
    p * scale
}

/// `x * Φ(x)` with `Φ` the standard normal CDF, via the erf approximation of
/// Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7).
#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A1: f32 = 0.254_829_6;
    const A2: f32 = -0.284_496_74;
    const A3: f32 = 1.421_413_7;
    const A4: f32 = -1.453_152_1;
    const A5: f32 = 1.061_405_4;
    let z = x.abs() * std::f32::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + P * z);
    let poly = ((((A5 * t + A4) * t + A3) * t + A2) * t + A1) * t;
    // q = (1 - erf(z)) / 2 = Φ(-|x|)
    let q = 0.5 * poly * exp_f32(-z * z);
    let phi = if x >= 0.0 { 1.0 - q } else { q };
    x * phi
}

#[inline(always)]
fn bias_gelu_erf_row(row: &mut [f32], bias: &[f32]) {
    for (x, b) in row.iter_mut().zip(bias) {
        *x = gelu_erf(*x + b);
    }
}

/// The tanh approximation of GELU (`gelu_new`), tanh written with `exp_f32`.
#[inline(always)]
fn bias_gelu_tanh_row(row: &mut [f32], bias: &[f32]) {
    const C: f32 = 0.797_884_6; // sqrt(2/pi)
    for (x, b) in row.iter_mut().zip(bias) {
        let v = *x + b;
        let u = C * (v + 0.044_715 * v * v * v);
        // tanh(u) = 1 - 2 / (e^{2u} + 1)
        let tanh = 1.0 - 2.0 / (exp_f32(2.0 * u) + 1.0);
        *x = 0.5 * v * (1.0 + tanh);
    }
}

/// Softmax of one row in place: max, then exp and sum in one pass, then scale.
#[inline(always)]
fn softmax_row(row: &mut [f32]) {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let mut max = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
    for c in chunks {
        for i in 0..LANES {
            lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
        }
    }
    for l in lanes {
        max = if l > max { l } else { max };
    }
    let mut acc = [0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            c[i] = exp_f32(c[i] - max);
            acc[i] += c[i];
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for x in chunks.into_remainder() {
        *x = exp_f32(*x - max);
        sum += *x;
    }
    let inv = 1.0 / sum;
    for x in row.iter_mut() {
        *x *= inv;
    }
}

/// AVX2+FMA builds of the row kernels (same code, compiled with the features on).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn softmax_row(row: &mut [f32]) {
        super::softmax_row(row)
    }
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn layer_norm_row(
        row: &mut [f32],
        bias: &[f32],
        gamma: &[f32],
        beta: &[f32],
        eps: f32,
    ) {
        super::layer_norm_row(row, bias, gamma, beta, eps)
    }
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn bias_gelu_erf_row(row: &mut [f32], bias: &[f32]) {
        super::bias_gelu_erf_row(row, bias)
    }
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn bias_gelu_tanh_row(row: &mut [f32], bias: &[f32]) {
        super::bias_gelu_tanh_row(row, bias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf to double precision by its Taylor series (|x| small) or continued
    /// fraction of erfc (|x| large), for checking the f32 approximation.
    fn erf_f64(x: f64) -> f64 {
        let a = x.abs();
        let r = if a < 3.0 {
            let mut term = a;
            let mut sum = a;
            let mut n = 0.0;
            while term.abs() > 1e-17 * sum.abs() {
                n += 1.0;
                term *= -a * a / n;
                sum += term / (2.0 * n + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc(a) = exp(-a²)/sqrt(pi) * 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...))))
            let mut f = a;
            for k in (1..60).rev() {
                f = a + (k as f64 / 2.0) / f;
            }
            1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / f
        };
        r.copysign(x)
    }

    #[test]
    fn exp_matches_std() {
        let mut worst = 0f64;
        let mut x = -80.0f32;
        while x < 80.0 {
            let got = exp_f32(x) as f64;
            let want = (x as f64).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.013;
        }
        assert!(worst < 5e-7, "relative error {worst}");
        assert!(exp_f32(-200.0) < 1e-37);
        assert!(exp_f32(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn gelu_matches_exact() {
        let mut xs: Vec<f32> = (-12000..12000).map(|i| i as f32 * 1e-3).collect();
        let exact: Vec<f64> = xs
            .iter()
            .map(|&x| {
                let x = x as f64;
                0.5 * x * (1.0 + erf_f64(x / std::f64::consts::SQRT_2))
            })
            .collect();
        let zeros = vec![0f32; xs.len()];
        let mut scalar = xs.clone();
        with_simd!(bias_gelu_erf_row(&mut xs, &zeros));
        bias_gelu_erf_row(&mut scalar, &zeros);
        for ((got, want), s) in xs.iter().zip(&exact).zip(&scalar) {
            let err = (*got as f64 - want).abs();
            assert!(err <= 1e-6 * want.abs().max(1.0), "gelu {got} vs {want}");
            assert!((got - s).abs() <= 1e-6 * s.abs().max(1.0));
        }
    }

    #[test]
    fn softmax_sums_to_one_and_orders() {
        let mut row: Vec<f32> = (0..257)
            .map(|i| ((i * 37) % 101) as f32 * 0.3 - 15.0)
            .collect();
        let orig = row.clone();
        with_simd!(softmax_row(&mut row));
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5);
        let max = orig.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let denom: f64 = orig.iter().map(|&x| ((x - max) as f64).exp()).sum();
        for (p, x) in row.iter().zip(&orig) {
            let want = ((x - max) as f64).exp() / denom;
            assert!((*p as f64 - want).abs() < 1e-6, "{p} vs {want}");
        }
    }

    #[test]
    fn matmul_matches_naive() {
        let (m, k, n) = (37, 29, 23);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
        let mut dst = vec![1f32; m * n];
        matmul(&a, m, k, &w, n, &mut dst, true);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = 1.0 + (0..k).map(|p| a[i * k + p] * w[j * k + p]).sum::<f32>();
                assert_eq!(dst[i * n + j], want);
            }
        }
        matmul(&a, m, k, &w, n, &mut dst, false);
        assert_eq!(dst[0], (0..k).map(|p| a[p] * w[p]).sum::<f32>());
    }
}
