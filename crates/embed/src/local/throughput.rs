//! The encoder's throughput next to the machine's measured FMA peak, so that the share
//! of the peak it reaches is read in one run (`excerpt bench --encoder`, and the
//! `embed_bench` example).

use std::time::Instant;

use serde::Serialize;

use super::peak::{fma_peak_avx512_gflops, fma_peak_gflops};
use super::LocalEmbedder;
use crate::{EmbedError, Embedder, TokenCounter};

/// Tokens per passage, about what the chunker makes.
pub const PASSAGE_TOKENS: usize = 250;

/// `n` passages of `tokens` tokens (by `counter`) cut in order from `sources`, from
/// generated text when `sources` has none long enough. Passages repeat when the
/// sources hold fewer than `n`.
pub fn passages(
    counter: &dyn TokenCounter,
    sources: &[String],
    n: usize,
    tokens: usize,
) -> Vec<String> {
    let cut = |sources: &[String]| {
        let mut out = Vec::with_capacity(n);
        for text in sources {
            if out.len() == n {
                break;
            }
            let spans = counter.token_spans(text);
            for chunk in spans.chunks(tokens.max(1)) {
                if chunk.len() < tokens || out.len() == n {
                    break;
                }
                out.push(text[chunk[0].0..chunk[chunk.len() - 1].1].to_string());
            }
        }
        out
    };
    let mut out = cut(sources);
    if out.is_empty() {
        out = cut(&[generated_text((tokens * n.min(64)).max(tokens) * 2)]);
    }
    let distinct = out.len();
    if distinct == 0 {
        // A counter that finds no `tokens`-token passage even in generated text.
        return out;
    }
    for i in 0..n.saturating_sub(distinct) {
        let again = out[i % distinct].clone();
        out.push(again);
    }
    out.truncate(n);
    out
}

/// `words` words of meeting-like English from a small vocabulary, in a fixed order.
fn generated_text(words: usize) -> String {
    const VOCABULARY: [&str; 24] = [
        "the",
        "committee",
        "discussed",
        "budget",
        "remote",
        "control",
        "design",
        "professor",
        "agreed",
        "that",
        "speech",
        "recognition",
        "results",
        "improved",
        "after",
        "training",
        "on",
        "new",
        "data",
        "and",
        "marketing",
        "wants",
        "colour",
        "next",
    ];
    (0..words)
        .map(|i| VOCABULARY[(i * 7 + i / 13) % VOCABULARY.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A measured FMA peak of one instruction set.
#[derive(Debug, Clone, Serialize)]
pub struct FmaPeak {
    /// `AVX2 + FMA` or `AVX-512`.
    pub isa: &'static str,
    /// GFLOP/s of one thread.
    pub one_core_gflops: f64,
    /// GFLOP/s of `threads` threads at once.
    pub all_cores_gflops: f64,
}

/// The peaks of the instruction sets this CPU has, `threads` threads at once.
fn peaks(threads: usize) -> Vec<FmaPeak> {
    type Measure = fn(usize) -> Option<f64>;
    let sets: [(&'static str, Measure); 2] = [
        ("AVX2 + FMA", fma_peak_gflops),
        ("AVX-512", fma_peak_avx512_gflops),
    ];
    sets.into_iter()
        .filter_map(|(isa, peak)| {
            Some(FmaPeak {
                isa,
                one_core_gflops: peak(1)?,
                all_cores_gflops: peak(threads)?,
            })
        })
        .collect()
}

/// What [`measure`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// The model's id.
    pub model: String,
    /// The products' kernel (`avx512`, `avx2` or `gemm`).
    pub kernel: &'static str,
    /// Threads of the pool that embedded the passages.
    pub threads: usize,
    /// Passages embedded (after one batch of warm-up).
    pub passages: usize,
    /// Their mean length in tokens, special tokens excluded.
    pub tokens_per_passage: f64,
    /// Passages per forward pass.
    pub batch: usize,
    /// Seconds the embedding took.
    pub seconds: f64,
    /// Passages a second.
    pub passages_per_second: f64,
    /// The encoder's arithmetic a second (multiply-adds count two).
    pub gflops: f64,
    /// The peaks of the CPU's instruction sets, measured just before and after the
    /// embedding (the higher of each kept: the clock moves).
    pub peaks: Vec<FmaPeak>,
    /// `gflops` over the highest all-cores peak: the share of the machine used.
    pub share_of_peak: Option<f64>,
}

/// Embeds `texts` with `embedder` (after embedding one batch of them to warm up) and
/// measures the FMA peaks around it.
pub fn measure(embedder: &LocalEmbedder, texts: &[&str]) -> Result<Throughput, EmbedError> {
    let batch = embedder.batch_size();
    embedder.embed(&texts[..texts.len().min(batch)])?;
    let threads = rayon::current_num_threads();
    let before = peaks(threads);
    let tokens: Vec<usize> = texts.iter().map(|t| embedder.tokens().count(t)).collect();
    let flops: f64 = tokens.iter().map(|&n| embedder.flops(n + 2)).sum();
    let started = Instant::now();
    embedder.embed(texts)?;
    let seconds = started.elapsed().as_secs_f64();
    let peaks: Vec<FmaPeak> = before
        .into_iter()
        .zip(self::peaks(threads))
        .map(|(b, a)| FmaPeak {
            isa: b.isa,
            one_core_gflops: b.one_core_gflops.max(a.one_core_gflops),
            all_cores_gflops: b.all_cores_gflops.max(a.all_cores_gflops),
        })
        .collect();
    let gflops = flops / seconds.max(f64::MIN_POSITIVE) / 1e9;
    let best = peaks.iter().map(|p| p.all_cores_gflops).fold(0.0, f64::max);
    Ok(Throughput {
        model: embedder.model_id().to_string(),
        kernel: embedder.kernel(),
        threads,
        passages: texts.len(),
        tokens_per_passage: tokens.iter().sum::<usize>() as f64 / texts.len().max(1) as f64,
        batch,
        seconds,
        passages_per_second: texts.len() as f64 / seconds.max(f64::MIN_POSITIVE),
        gflops,
        share_of_peak: (best > 0.0).then(|| gflops / best),
        peaks,
    })
}

impl std::fmt::Display for Throughput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "encoder      {} ({} kernel, {} threads)",
            self.model, self.kernel, self.threads
        )?;
        writeln!(
            f,
            "passages     {} of {:.0} tokens, batch {}",
            self.passages, self.tokens_per_passage, self.batch
        )?;
        writeln!(
            f,
            "throughput   {:.1} passages/s, {:.0} GFLOP/s ({:.2} s)",
            self.passages_per_second, self.gflops, self.seconds
        )?;
        if self.peaks.is_empty() {
            writeln!(f, "FMA peak     not measured on this CPU (no AVX2 + FMA)")?;
        }
        for p in &self.peaks {
            writeln!(
                f,
                "FMA peak     {}: one core {:.0} GFLOP/s, {} threads {:.0} GFLOP/s: the encoder at {:.0} % of it",
                p.isa,
                p.one_core_gflops,
                self.threads,
                p.all_cores_gflops,
                100.0 * self.gflops / p.all_cores_gflops
            )?;
        }
        if !self.peaks.is_empty() && !self.peaks.iter().any(|p| p.isa == "AVX-512") {
            writeln!(f, "FMA peak     AVX-512: not on this CPU")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A counter of whitespace-separated words, for cutting passages without a model.
    use excerpt_testkit::WhitespaceCounter as Words;

    #[test]
    fn passages_are_cut_in_order_and_repeated_or_generated_as_needed() {
        // The words `w{i}` for each `i` of `r`, one space apart.
        let run =
            |r: std::ops::Range<usize>| r.map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        let got = passages(&Words, &[run(0..25)], 5, 10);
        assert_eq!(got[0], run(0..10));
        assert_eq!(got[1], run(10..20));
        // Two whole passages in the source (the last five words are too few): repeated.
        assert_eq!(got.len(), 5);
        assert_eq!((&got[2], &got[3], &got[4]), (&got[0], &got[1], &got[0]));
        // No source long enough: generated text, every passage of the length asked.
        let got = passages(&Words, &["too short".into()], 3, 40);
        assert_eq!(got.len(), 3);
        assert!(
            got.iter().all(|p| Words.token_spans(p).len() == 40),
            "{got:?}"
        );
    }
}
