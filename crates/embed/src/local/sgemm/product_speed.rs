//! A manual benchmark of the encoder's product shapes (prints GFLOP/s single- and
//! multi-threaded for each kernel the CPU can run, asserts nothing):
//! `cargo test --release -p excerpt-embed --lib product_speed -- --ignored --nocapture`

use super::*;

#[test]
#[ignore = "benchmark: prints figures"]
fn gflops() {
    for &(m, n, k) in &[
        (8000, 1152, 384),
        (8000, 384, 384),
        (8000, 1536, 384),
        (8000, 384, 1536),
        (252, 252, 32),
        (252, 32, 252),
        (30, 1152, 384),
        (30, 384, 384),
        (30, 1536, 384),
        (30, 384, 1536),
        (25, 1536, 384),
        (72, 1536, 384),
    ] {
        let a = vec![0.5f32; m * k];
        let mut c = vec![0f32; m * n];
        let mut line = format!("{m}x{n}x{k}:");
        // A query's few rows read the weights rounded: in half precision, and
        // (`/int16`) to 12-bit integers in integer products.
        let rounded = if m < 100 {
            Precision::Half
        } else {
            Precision::F32
        };
        for (kernel, par, weights) in [
            (Kernel::Avx512, false, rounded),
            (Kernel::Avx512, true, rounded),
            (Kernel::Avx2, false, rounded),
            (Kernel::Avx2, true, rounded),
            (Kernel::Avx2, false, Precision::Int16),
            (Kernel::Avx2, true, Precision::Int16),
            (Kernel::Gemm, false, rounded),
            (Kernel::Gemm, true, rounded),
        ] {
            if !kernel.runs_here() || (weights == Precision::Int16 && m >= 100) {
                continue;
            }
            let w = Packed::from_rows(kernel, &vec![0.25f32; n * k], k, n, k);
            let reps = if m < 1000 { 400 } else { 1 };
            let mut s = f64::MAX;
            for _ in 0..8 {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    let ep = Epilogue {
                        weights,
                        ..Epilogue::STORE
                    };
                    matmul(&a, k, m, &w, &mut c, n, ep, par);
                }
                s = s.min(t.elapsed().as_secs_f64());
            }
            let gflops = 2.0 * (m * n * k * reps) as f64 / s / 1e9;
            let threads = if par { "all" } else { "1" };
            let int = if weights == Precision::Int16 {
                "/int16"
            } else {
                ""
            };
            line += &format!(" {}{int}/{threads} {gflops:.1}", kernel.name());
        }
        println!("{line}");
    }
}
