//! What the machine could do, to read the encoder's speed against: the measured peak
//! of fused multiply-adds, and the arithmetic of one forward pass.

use std::time::Instant;

/// Independent FMA chains per thread: more than the FMA latency (4-5 cycles) times the
/// units (2), so the loop is bound by throughput, not by waiting on a result.
const CHAINS: usize = 10;

/// Steps of the timed loop per thread (each does `CHAINS` FMAs on one vector).
const STEPS: usize = 20_000_000;

/// The measured AVX2 + FMA peak, in GFLOP/s (an FMA on 8 floats counts 16), of
/// `threads` threads running the FMA loop at once; `None` on a CPU without AVX2 and FMA.
/// Takes about a quarter of a second.
pub fn fma_peak_gflops(threads: usize) -> Option<f64> {
    fma_peak(threads, Isa::Avx2)
}

/// The measured AVX-512 FMA peak, in GFLOP/s (an FMA on 16 floats counts 32), of
/// `threads` threads running the FMA loop at once; `None` on a CPU without AVX-512F.
/// Where the CPU has one 512-bit FMA unit (or splits 512-bit work in two halves), this is
/// about the AVX2 peak; with two full-width units, about twice it.
pub fn fma_peak_avx512_gflops(threads: usize) -> Option<f64> {
    fma_peak(threads, Isa::Avx512)
}

/// The vector instruction set of an FMA loop.
#[derive(Clone, Copy)]
enum Isa {
    Avx2,
    Avx512,
}

fn fma_peak(threads: usize, isa: Isa) -> Option<f64> {
    let (present, lanes) = match isa {
        Isa::Avx2 => (super::math::has_avx2_fma(), 8),
        Isa::Avx512 => (super::math::has_avx512(), 16),
    };
    if !present {
        return None;
    }
    let threads = threads.max(1);
    let start = Instant::now();
    let sums: Vec<f32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || fma_loop(t as f32, isa)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(0.0))
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    // The sums are used, so the loop cannot be optimised away.
    std::hint::black_box(sums);
    Some((threads * STEPS * CHAINS * lanes * 2) as f64 / seconds / 1e9)
}

/// The FMA loop of one thread (the caller checked the instruction set); returns a sum
/// of its accumulators.
fn fma_loop(seed: f32, isa: Isa) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `fma_peak` calls this only on a CPU with the instruction set.
        unsafe {
            match isa {
                Isa::Avx2 => fma_loop_avx2(seed),
                Isa::Avx512 => fma_loop_avx512(seed),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        seed
    }
}

/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_loop_avx512(seed: f32) -> f32 {
    use std::arch::x86_64::*;
    let a = _mm512_set1_ps(0.999_999);
    let b = _mm512_set1_ps(1e-7);
    let mut acc = [_mm512_set1_ps(seed); CHAINS];
    for _ in 0..STEPS {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_ps(*x, a, b);
        }
    }
    let mut total = _mm512_setzero_ps();
    for x in acc {
        total = _mm512_add_ps(total, x);
    }
    _mm512_reduce_add_ps(total)
}

/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_loop_avx2(seed: f32) -> f32 {
    use std::arch::x86_64::*;
    let a = _mm256_set1_ps(0.999_999);
    let b = _mm256_set1_ps(1e-7);
    let mut acc = [_mm256_set1_ps(seed); CHAINS];
    for _ in 0..STEPS {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_ps(*x, a, b);
        }
    }
    let mut out = [0f32; 8];
    let mut total = _mm256_setzero_ps();
    for x in acc {
        total = _mm256_add_ps(total, x);
    }
    // SAFETY: `out` holds 8 floats, what one unaligned store writes.
    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), total) };
    out.iter().sum()
}

/// Floating-point operations of one encoder pass over a sequence of `tokens` tokens:
/// per layer the Q/K/V, output and two feed-forward products (`2 · tokens · hidden ·
/// (4 · hidden + 2 · intermediate)`) and the attention's scores and weighted sums
/// (`4 · tokens² · hidden`); element-wise steps are not counted.
pub fn encoder_flops(layers: usize, hidden: usize, intermediate: usize, tokens: usize) -> f64 {
    let (l, h, i, t) = (
        layers as f64,
        hidden as f64,
        intermediate as f64,
        tokens as f64,
    );
    l * (2.0 * t * h * (4.0 * h + 2.0 * i) + 4.0 * t * t * h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_of_a_minilm_pass() {
        // all-MiniLM-L6-v2 over 256 tokens: 6 layers of 2·256·384·(4·384 + 2·1536)
        // + 4·256²·384.
        let f = encoder_flops(6, 384, 1536, 256);
        assert_eq!(
            f,
            6.0 * (2.0 * 256.0 * 384.0 * 4608.0 + 4.0 * 65536.0 * 384.0)
        );
        assert!((f / 1e9 - 6.04).abs() < 0.01, "{f}");
    }

    #[test]
    fn the_fma_peak_is_measured_where_the_cpu_has_fma() {
        match fma_peak_gflops(1) {
            Some(g) => assert!(g > 1.0 && g < 10_000.0, "{g} GFLOP/s"),
            None => eprintln!("no AVX2 + FMA on this CPU: no peak to measure"),
        }
        match fma_peak_avx512_gflops(1) {
            Some(g) => assert!(g > 1.0 && g < 20_000.0, "{g} GFLOP/s"),
            None => eprintln!("no AVX-512F on this CPU: no AVX-512 peak to measure"),
        }
    }
}
