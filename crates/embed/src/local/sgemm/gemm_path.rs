//! The `gemm` crate's path, for CPUs without our kernels: `W` stored transposed and the
//! epilogue as passes over the rows of `C` (bias before the product, row scales and the
//! activation after it, in the portable element-wise code of [`math`](crate::local::math)).

use rayon::prelude::*;

use super::{Epilogue, Packed, SendPtr};
use crate::local::math::activate;

/// Rows per parallel task of the `gemm` path's passes over `C`.
const PASS_ROWS: usize = 32;

/// The product by the `gemm` crate, with the epilogue as passes over `C`: the bias
/// is written (or added) into `C` before the product, which then accumulates into
/// it; row scales and the activation are applied after it. A row-scaled product
/// that also adds `C` or the bias goes through a scratch matrix.
///
/// # Safety
/// As [`matmul_to`]; `w` is packed for [`Kernel::Gemm`] and the lengths of `a`, the
/// bias and the row scales have been checked by the caller.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm_product(
    a: &[f32],
    lda: usize,
    m: usize,
    w: &Packed,
    c: *mut f32,
    ldc: usize,
    ep: Epilogue<'_>,
    parallel: bool,
) {
    let (n, k) = (w.n, w.k);
    let parallelism = if parallel {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    let out = SendPtr(c);
    // SAFETY: rows 0..m of `C` hold `n` writable values at stride `ldc` that nothing
    // else accesses during this call (the contract).
    let rows_pass =
        |f: &(dyn Fn(usize, &mut [f32]) + Sync)| unsafe { rows_pass(out, m, n, ldc, parallel, f) };
    // SAFETY: `dst` holds `m` rows of `n` writable values at stride `ld`, nothing else
    // accesses them during the call; `a` holds `m` rows of `k` values at stride `lda`
    // (checked by the caller) and `w.data` is `k` rows of `n` values.
    let product = |dst: *mut f32, ld: usize, read_dst: bool| unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            ld as isize,
            read_dst,
            a.as_ptr(),
            1,
            lda as isize,
            w.data.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            parallelism,
        )
    };
    let adds = ep.accumulate || ep.bias.is_some();
    match ep.row_scale {
        Some(scale) if adds => {
            let mut scratch = vec![0f32; m * n];
            product(scratch.as_mut_ptr(), n, false);
            rows_pass(&|i, c_row| {
                let s = scale[i];
                let p = &scratch[i * n..][..n];
                if !ep.accumulate {
                    c_row.fill(0.0);
                }
                c_row.iter_mut().zip(p).for_each(|(c, p)| *c += s * p);
                if let Some(bias) = ep.bias {
                    c_row.iter_mut().zip(bias).for_each(|(c, b)| *c += b);
                }
            });
        }
        _ => {
            if let Some(bias) = ep.bias {
                let bias = &bias[..n];
                rows_pass(&|_, c_row| {
                    if ep.accumulate {
                        c_row.iter_mut().zip(bias).for_each(|(c, b)| *c += b);
                    } else {
                        c_row.copy_from_slice(bias);
                    }
                });
            }
            product(c, ldc, adds);
            if let Some(scale) = ep.row_scale {
                rows_pass(&|i, c_row| {
                    let s = scale[i];
                    c_row.iter_mut().for_each(|c| *c *= s);
                });
            }
        }
    }
    if let Some(act) = ep.activation {
        rows_pass(&|_, c_row| activate(c_row, act));
    }
}

/// Calls `f` with each row `i` of the `m` rows of `C` (`n` values each, at stride `ldc`
/// from `c`), as a slice; across threads, in blocks of [`PASS_ROWS`] rows, when
/// `parallel` and there are more rows than that.
///
/// # Safety
/// Rows 0..m of `C` hold `n` writable values at stride `ldc` that nothing else accesses
/// during the call.
unsafe fn rows_pass(
    c: SendPtr,
    m: usize,
    n: usize,
    ldc: usize,
    parallel: bool,
    f: &(dyn Fn(usize, &mut [f32]) + Sync),
) {
    // Row `i` of `C` as a slice.
    let row = |i: usize| {
        // SAFETY: i < m (every caller below), and rows 0..m of `C` hold `n` writable
        // values at stride `ldc` that nothing else accesses during this call (the
        // contract); the pass hands every row to one call of `f` only.
        unsafe { std::slice::from_raw_parts_mut(c.get().add(i * ldc), n) }
    };
    if parallel && m > PASS_ROWS {
        (0..m.div_ceil(PASS_ROWS)).into_par_iter().for_each(|b| {
            for i in b * PASS_ROWS..m.min((b + 1) * PASS_ROWS) {
                f(i, row(i));
            }
        });
    } else {
        (0..m).for_each(|i| f(i, row(i)));
    }
}
