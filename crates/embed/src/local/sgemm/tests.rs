//! The products of every kernel against a reference in f64.

use super::dispatch::avx512_agrees;
use super::driver::{panel_product, TileKernel, MIN_SPLIT_WORK, ROW_SPLIT_BLOCKS};
use super::*;
use crate::local::math::{activate, has_avx512, has_f16c};

use crate::local::test_values as values;

/// `act(A · Wᵀ + C? + bias?)` in f64, the reference.
#[allow(clippy::too_many_arguments)]
fn naive(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &[f32],
    n: usize,
    k: usize,
    c: &[f32],
    ldc: usize,
    ep: Epilogue<'_>,
) -> Vec<f32> {
    let mut out = c.to_vec();
    for i in 0..m {
        let mut row: Vec<f32> = (0..n)
            .map(|j| {
                let mut s: f64 = (0..k)
                    .map(|p| a[i * lda + p] as f64 * w[j * k + p] as f64)
                    .sum();
                if let Some(scale) = ep.row_scale {
                    s *= scale[i] as f64;
                }
                if ep.accumulate {
                    s += c[i * ldc + j] as f64;
                }
                if let Some(b) = ep.bias {
                    s += b[j] as f64;
                }
                s as f32
            })
            .collect();
        if let Some(act) = ep.activation {
            activate(&mut row, act);
        }
        out[i * ldc..][..n].copy_from_slice(&row);
    }
    out
}

/// Whether two results are equal bit for bit.
fn same_bits(x: &[f32], y: &[f32]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The kernels this CPU can run (saying which it cannot).
fn kernels() -> Vec<Kernel> {
    let all = [Kernel::Avx512, Kernel::Avx2, Kernel::Gemm];
    for kernel in all.iter().filter(|k| !k.runs_here()) {
        eprintln!(
            "this CPU cannot run the {} kernel: its cases skipped",
            kernel.name()
        );
    }
    all.into_iter().filter(|k| k.runs_here()).collect()
}

#[allow(clippy::too_many_arguments)]
fn check(kernel: Kernel, m: usize, n: usize, k: usize, ep: Epilogue<'_>, parallel: bool) {
    let (lda, ldc) = (k + 3, n + 5);
    let a = values(m * lda, 1);
    let w = values(n * k, 2);
    let c0 = values(m * ldc, 3);
    let packed = Packed::from_rows(kernel, &w, k, n, k);
    let mut c = c0.clone();
    matmul(&a, lda, m, &packed, &mut c, ldc, ep, parallel);
    let want = naive(&a, lda, m, &w, n, k, &c0, ldc, ep);
    for (idx, (got, want)) in c.iter().zip(&want).enumerate() {
        let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
        assert!(
            (got - want).abs() <= tol,
            "{kernel:?}: m {m} n {n} k {k} at {idx}: {got} vs {want}"
        );
    }
}

#[test]
fn products_match_naive_for_odd_shapes() {
    let bias = values(64, 9);
    let scales = values(200, 10);
    for &(m, n, k) in &[
        (1, 1, 1),
        (5, 17, 3),
        (6, 16, 256),
        (7, 33, 257),
        (97, 48, 600),
        (200, 40, 40),
    ] {
        for ep in [
            Epilogue::STORE,
            Epilogue {
                accumulate: true,
                bias: Some(&bias[..n]),
                activation: None,
                row_scale: None,
                weights: Precision::F32,
            },
            Epilogue {
                accumulate: false,
                bias: Some(&bias[..n]),
                activation: Some(Activation::GeluErf),
                row_scale: Some(&scales[..m]),
                weights: Precision::F32,
            },
            Epilogue {
                accumulate: true,
                bias: None,
                activation: Some(Activation::Relu),
                row_scale: None,
                weights: Precision::F32,
            },
            Epilogue {
                row_scale: Some(&scales[..m]),
                ..Epilogue::STORE
            },
        ] {
            for kernel in kernels() {
                check(kernel, m, n, k, ep, false);
                check(kernel, m, n, k, ep, true);
            }
        }
    }
}

/// With `half`, the AVX2 kernel reads the weights rounded to half precision: the
/// naive product of the rounded weights, on one thread or shared out by columns, in
/// one row block or several; without F16C (or on the `gemm` path) the flag is
/// ignored and the product is the f32 one.
#[test]
fn short_strips_give_the_bits_of_full_ones() {
    // A product of `m` rows ends with a strip of `m % MR` rows, which the narrow
    // tiles compute: each row must come out exactly as it does inside a full strip.
    let bias = values(64, 21);
    let scales = values(2 * MR, 22);
    for &(n, k) in &[(40, 50), (48, 384), (33, 800)] {
        let lda = k + 1;
        let a = values(2 * MR * lda, 23);
        let w = values(n * k, 24);
        let c0 = values(2 * MR * n, 25);
        for weights in [Precision::F32, Precision::Half] {
            let eps = [
                Epilogue {
                    weights,
                    ..Epilogue::STORE
                },
                Epilogue {
                    accumulate: true,
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::GeluErf),
                    row_scale: None,
                    weights,
                },
                Epilogue {
                    accumulate: false,
                    bias: Some(&bias[..n]),
                    activation: Some(Activation::Relu),
                    row_scale: Some(&scales),
                    weights,
                },
            ];
            for ep in eps {
                // Our own tiles (the `gemm` crate blocks rows its own way).
                for kernel in kernels().into_iter().filter(|k| k.panels()) {
                    let packed = Packed::from_rows(kernel, &w, k, n, k);
                    let mut full = c0.clone();
                    matmul(&a, lda, 2 * MR, &packed, &mut full, n, ep, false);
                    for m in 1..2 * MR {
                        let mut c = c0[..m * n].to_vec();
                        matmul(&a, lda, m, &packed, &mut c, n, ep, false);
                        assert!(
                            same_bits(&c, &full[..m * n]),
                            "{kernel:?} {weights:?}: {m} rows of {n}x{k}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn half_weights_give_the_product_of_the_rounded_weights() {
    let bias = values(1536, 21);
    for &(m, n, k) in &[(1, 17, 3), (7, 1152, 384), (12, 384, 1536), (97, 48, 600)] {
        let ep = Epilogue {
            accumulate: true,
            bias: Some(&bias[..n]),
            activation: Some(Activation::GeluErf),
            row_scale: None,
            weights: Precision::Half,
        };
        let a = values(m * k, 22);
        let w = values(n * k, 23);
        let rounded: Vec<f32> = w.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect();
        assert!(rounded != w, "the rounding must change the weights");
        let c0 = values(m * n, 24);
        for kernel in kernels() {
            let packed = Packed::from_rows(kernel, &w, k, n, k);
            let halved = kernel.panels() && has_f16c();
            let want = naive(
                &a,
                k,
                m,
                if halved { &rounded } else { &w },
                n,
                k,
                &c0,
                n,
                ep,
            );
            for parallel in [false, true] {
                let mut c = c0.clone();
                matmul(&a, k, m, &packed, &mut c, n, ep, parallel);
                for (idx, (got, want)) in c.iter().zip(&want).enumerate() {
                    let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
                    assert!(
                        (got - want).abs() <= tol,
                        "{kernel:?} half {halved}: m {m} n {n} k {k} at {idx}: {got} vs {want}"
                    );
                }
            }
        }
        if !has_f16c() {
            eprintln!("no F16C on this CPU: the half-precision kernel was not run");
        }
    }
}

/// A product of one row block (a query's few tokens) is shared out by column
/// panels: the same bits as computing it on one thread, and the naive product.
#[test]
fn few_row_blocks_shared_by_columns_give_the_same_bits() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let bias = values(1536, 12);
    // One block of rows, then two, three and eleven blocks (fewer than
    // `ROW_SPLIT_BLOCKS` per thread of the three): all shared out by columns.
    for &(m, n, k) in &[
        (12, 1152, 384),
        (12, 384, 1536),
        (3, 1536, 384),
        (47, 1000, 1100),
        (60, 384, 384),
        (2 * MC + 5, 1536, 384),
        (11 * MC - 1, 400, 64),
    ] {
        assert!(
            m.div_ceil(MC) < ROW_SPLIT_BLOCKS * 3 && m * n * k >= MIN_SPLIT_WORK,
            "{m} {n} {k}"
        );
        let ep = Epilogue {
            accumulate: true,
            bias: Some(&bias[..n]),
            activation: Some(Activation::GeluErf),
            row_scale: None,
            weights: Precision::F32,
        };
        for kernel in kernels() {
            let a = values(m * k, 13);
            let w = values(n * k, 14);
            let packed = Packed::from_rows(kernel, &w, k, n, k);
            let c0 = values(m * n, 15);
            let (mut one, mut shared) = (c0.clone(), c0.clone());
            matmul(&a, k, m, &packed, &mut one, n, ep, false);
            pool.install(|| matmul(&a, k, m, &packed, &mut shared, n, ep, true));
            assert!(same_bits(&one, &shared), "{kernel:?} {m}x{n}x{k}");
            pool.install(|| check(kernel, m, n, k, ep, true));
        }
    }
}

#[test]
fn column_packing_is_the_transpose() {
    let (k, n) = (19, 21);
    let b = values(k * n, 4);
    let mut bt = vec![0f32; n * k];
    for p in 0..k {
        for j in 0..n {
            bt[j * k + p] = b[p * n + j];
        }
    }
    for kernel in [Kernel::Avx512, Kernel::Avx2, Kernel::Gemm] {
        let mut from_cols = Packed::new(kernel);
        from_cols.pack_cols(&b, n, k, n);
        let from_rows = Packed::from_rows(kernel, &bt, k, n, k);
        assert_eq!(from_cols.data, from_rows.data, "{kernel:?}");
    }
    // The gemm layout is the transpose itself.
    assert_eq!(Packed::from_rows(Kernel::Gemm, &bt, k, n, k).data, b);
}

#[test]
fn avx2_and_gemm_kernels_agree() {
    // The shapes of the encoder (rows of a batch, hidden 384, feed-forward 1536)
    // and of attention (a sequence's scores, head width 32), every epilogue.
    if !has_avx2_fma() {
        return;
    }
    let bias = values(1536, 7);
    let scales = values(300, 11);
    for &(m, n, k) in &[
        (300, 1152, 384),
        (300, 384, 1536),
        (250, 250, 32),
        (250, 32, 250),
    ] {
        let a = values(m * k, 5);
        let w = values(n * k, 6);
        let c0 = values(m * n, 8);
        for ep in [
            Epilogue::STORE,
            Epilogue {
                accumulate: true,
                bias: Some(&bias[..n]),
                ..Epilogue::STORE
            },
            Epilogue {
                bias: Some(&bias[..n]),
                activation: Some(Activation::GeluErf),
                ..Epilogue::STORE
            },
            Epilogue {
                accumulate: true,
                bias: Some(&bias[..n]),
                activation: Some(Activation::GeluTanh),
                row_scale: Some(&scales[..m]),
                weights: Precision::F32,
            },
            Epilogue {
                row_scale: Some(&scales[..m]),
                ..Epilogue::STORE
            },
        ] {
            let run = |kernel| {
                let packed = Packed::from_rows(kernel, &w, k, n, k);
                let mut c = c0.clone();
                matmul(&a, k, m, &packed, &mut c, n, ep, true);
                c
            };
            let (own, gemm) = (run(Kernel::Avx2), run(Kernel::Gemm));
            for (x, y) in own.iter().zip(&gemm) {
                let tol = 1e-5 * (k as f32).sqrt() * x.abs().max(1.0);
                assert!((x - y).abs() <= tol, "{m}x{n}x{k}: {x} vs {y}");
            }
            // The AVX-512 tiles agree with the AVX2 ones within the same tolerance
            // as the `gemm` crate's. (On a Zen 4 CPU they do not give the same bits
            // on every shape, as the emulator did.)
            if has_avx512() {
                let wide = run(Kernel::Avx512);
                for (x, y) in wide.iter().zip(&own) {
                    let tol = 1e-5 * (k as f32).sqrt() * x.abs().max(1.0);
                    assert!(
                        (x - y).abs() <= tol,
                        "avx512 and avx2 differ: {m}x{n}x{k}: {x} vs {y}"
                    );
                }
            }
        }
    }
}

/// The wide tile's AVX2 twin, as a tile family: the AVX-512 tile's logic (eight
/// rows, two panels a call, masked edges) on any CPU with AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
const TWIN: TileKernel = TileKernel {
    rows: wide::MR,
    panels: 2,
    full: [wide::twin_1, wide::twin_2],
    half: [wide::twin_1_f16, wide::twin_2_f16],
    short: None,
};

/// The wide tiles, run here through their AVX2 twin: the naive product for odd
/// shapes (short strips, an odd number of panels, a narrow last panel, several `k`
/// blocks, one thread or shared out by columns), and the AVX2 kernel's bits
/// wherever the epilogue has no activation (the AVX2 kernel finishes a narrow
/// panel's activation in scalar code, the wide tile in vector code).
#[cfg(target_arch = "x86_64")]
#[test]
fn the_wide_tile_matches_the_naive_product_and_the_avx2_bits() {
    if !has_f16c() {
        eprintln!("no AVX2 + FMA + F16C on this CPU: the wide tile's twin was not run");
        return;
    }
    let bias = values(1536, 31);
    let scales = values(300, 32);
    for &(m, n, k) in &[
        (1, 1, 1),
        (5, 17, 3),
        (8, 32, 256),
        (9, 48, 257),
        (97, 33, 600),
        (23, 1152, 384),
        (3, 1536, 384),
    ] {
        let (lda, ldc) = (k + 3, n + 5);
        let a = values(m * lda, 33);
        let w = values(n * k, 34);
        let c0 = values(m * ldc, 35);
        let packed = Packed::from_rows(Kernel::Avx2, &w, k, n, k);
        for ep in [
            Epilogue::STORE,
            Epilogue {
                accumulate: true,
                bias: Some(&bias[..n]),
                row_scale: Some(&scales[..m]),
                ..Epilogue::STORE
            },
            Epilogue {
                bias: Some(&bias[..n]),
                activation: Some(Activation::GeluErf),
                ..Epilogue::STORE
            },
            Epilogue {
                accumulate: true,
                activation: Some(Activation::GeluTanh),
                weights: Precision::Half,
                ..Epilogue::STORE
            },
        ] {
            let run = |tiles: TileKernel, parallel: bool| {
                let mut c = c0.clone();
                // SAFETY: `c` holds m rows of ldc >= n values, `a` m rows of lda >=
                // k, the bias n values, the scales m; the CPU has AVX2, FMA and
                // F16C (checked above), which both tile families need.
                unsafe {
                    panel_product(
                        &a,
                        lda,
                        m,
                        &packed,
                        c.as_mut_ptr(),
                        ldc,
                        ep,
                        parallel,
                        tiles,
                    )
                };
                c
            };
            let rounded: Vec<f32>;
            let weights = if ep.weights == Precision::Half {
                rounded = w.iter().map(|&x| half::f16::from_f32(x).to_f32()).collect();
                &rounded
            } else {
                &w
            };
            let want = naive(&a, lda, m, weights, n, k, &c0, ldc, ep);
            let own = run(TileKernel::AVX2, false);
            for parallel in [false, true] {
                let twin = run(TWIN, parallel);
                for (idx, (got, want)) in twin.iter().zip(&want).enumerate() {
                    let tol = 1e-5 * (k as f32).sqrt() * want.abs().max(1.0);
                    assert!(
                        (got - want).abs() <= tol,
                        "m {m} n {n} k {k} at {idx}: {got} vs {want}"
                    );
                }
                if ep.activation.is_none() || n % NR == 0 {
                    assert!(
                        same_bits(&twin, &own),
                        "the twin and the avx2 kernel differ: m {m} n {n} k {k}"
                    );
                }
            }
        }
    }
}

/// The self-check the kernel choice runs before taking AVX-512 passes wherever
/// the CPU can run it.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_avx512_self_check_passes_where_it_runs() {
    if !has_avx512() {
        eprintln!("no AVX-512F on this CPU: the AVX-512 self-check was not run");
        return;
    }
    // SAFETY: the CPU has AVX-512F, AVX2, FMA and F16C (`has_avx512`).
    assert_eq!(unsafe { wide::excerpt_avx512_self_check() }, 0);
    assert!(avx512_agrees());
}

#[test]
fn kernel_choices_parse_and_resolve() {
    for (text, want) in [
        ("auto", KernelChoice::Auto),
        (" GEMM ", KernelChoice::Gemm),
        ("avx2", KernelChoice::Avx2),
        ("AVX512", KernelChoice::Avx512),
    ] {
        assert_eq!(text.parse::<KernelChoice>(), Ok(want));
    }
    let err = "blas".parse::<KernelChoice>().expect_err("unknown");
    assert!(err.contains("EXCERPT_KERNEL=`blas`"), "{err}");
    assert!(err.contains("auto, avx512, avx2, gemm"), "{err}");
    assert_eq!(KernelChoice::Gemm.resolve(), Ok(Kernel::Gemm));
    let auto = KernelChoice::Auto.resolve().expect("auto always resolves");
    let avx2 = KernelChoice::Avx2.resolve();
    let avx512 = KernelChoice::Avx512.resolve();
    if has_avx512() {
        assert_eq!(
            (auto, avx2, avx512),
            (Kernel::Avx512, Ok(Kernel::Avx2), Ok(Kernel::Avx512))
        );
    } else {
        let err = avx512.expect_err("no AVX-512");
        assert!(
            err.contains("EXCERPT_KERNEL=avx512 needs a CPU with AVX-512F"),
            "{err}"
        );
        if has_avx2_fma() {
            assert_eq!((auto, avx2), (Kernel::Avx2, Ok(Kernel::Avx2)));
        } else {
            assert_eq!(auto, Kernel::Gemm);
            assert!(avx2.expect_err("no AVX2").contains("needs a CPU with AVX2"));
        }
    }
}
