//! Weight packing: [`Packed`](super::Packed) laid out once for its kernel (panels of
//! [`NR`] columns for our own tiles, the transpose for the `gemm` crate), and its
//! half-precision and 12-bit integer copies made on first use.

use std::sync::OnceLock;

use super::{quant, Kernel, Packed, NR};
use crate::local::math::has_f16c;

impl Packed {
    /// An empty matrix for `kernel`, to be filled by [`Packed::pack_rows`] or
    /// [`Packed::pack_cols`].
    pub(crate) fn new(kernel: Kernel) -> Self {
        Self {
            kernel,
            n: 0,
            k: 0,
            data: Vec::new(),
            half: OnceLock::new(),
            quant: OnceLock::new(),
        }
    }

    /// Packs `w`, `n` rows of `k` values with row stride `ldw` (a linear layer's
    /// weight is `n × k` row-major: `ldw = k`).
    pub(crate) fn from_rows(kernel: Kernel, w: &[f32], ldw: usize, n: usize, k: usize) -> Self {
        let mut packed = Self::new(kernel);
        packed.pack_rows(w, ldw, n, k);
        packed
    }

    /// Repacks in place from `n` rows of `k` values, row stride `ldw` (reusing the
    /// allocation).
    pub(crate) fn pack_rows(&mut self, w: &[f32], ldw: usize, n: usize, k: usize) {
        assert!(n == 0 || k == 0 || w.len() >= (n - 1) * ldw + k);
        self.reset(n, k);
        if self.kernel == Kernel::Gemm {
            // Wᵀ: written in order, read down the columns of `w`.
            for (p, out) in self.data.chunks_exact_mut(n).enumerate() {
                for (j, x) in out.iter_mut().enumerate() {
                    *x = w[j * ldw + p];
                }
            }
            return;
        }
        for (q, panel) in self.data.chunks_exact_mut(k * NR).enumerate() {
            let cols = NR.min(n - q * NR);
            let rows: [&[f32]; NR] = std::array::from_fn(|c| {
                if c < cols {
                    &w[(q * NR + c) * ldw..][..k]
                } else {
                    &[]
                }
            });
            // Written in order, read across the panel's rows.
            for (p, group) in panel.chunks_exact_mut(NR).enumerate() {
                for (out, row) in group.iter_mut().zip(&rows[..cols]) {
                    *out = row[p];
                }
            }
        }
    }

    /// Repacks in place from the transpose: `b` is `k` rows of `n` values with row
    /// stride `ldb`, and the packed matrix is `bᵀ` (so [`matmul`] computes `A · b`).
    pub(crate) fn pack_cols(&mut self, b: &[f32], ldb: usize, k: usize, n: usize) {
        assert!(n == 0 || k == 0 || b.len() >= (k - 1) * ldb + n);
        self.reset(n, k);
        if self.kernel == Kernel::Gemm {
            for (p, out) in self.data.chunks_exact_mut(n).enumerate() {
                out.copy_from_slice(&b[p * ldb..][..n]);
            }
            return;
        }
        for (q, panel) in self.data.chunks_exact_mut(k * NR).enumerate() {
            let cols = NR.min(n - q * NR);
            for (p, group) in panel.chunks_exact_mut(NR).enumerate() {
                let src = &b[p * ldb + q * NR..][..cols];
                if let (Ok(dst), Ok(src)) = (
                    <&mut [f32; NR]>::try_from(&mut *group),
                    <&[f32; NR]>::try_from(src),
                ) {
                    *dst = *src;
                } else {
                    group[..cols].copy_from_slice(src);
                }
            }
        }
    }

    /// The packed values in half precision, for our own kernels on a CPU with F16C
    /// (made once, then kept: half the memory of `data` again).
    pub(super) fn half(&self) -> Option<&[u16]> {
        if !self.kernel.panels() || !has_f16c() {
            return None;
        }
        let half = self.half.get_or_init(|| {
            self.data
                .iter()
                .map(|&x| half::f16::from_f32(x).to_bits())
                .collect()
        });
        Some(half)
    }

    /// The packed values rounded to 12-bit integers ([`quant`]; made once, then kept).
    /// Only for matrices packed in panels.
    pub(super) fn quant(&self) -> &quant::QuantPanels {
        debug_assert!(self.kernel.panels());
        self.quant.get_or_init(|| quant::QuantPanels::new(self))
    }

    fn reset(&mut self, n: usize, k: usize) {
        self.half = OnceLock::new();
        self.quant = OnceLock::new();
        self.n = n;
        self.k = k;
        self.data.clear();
        let len = if self.kernel.panels() {
            n.div_ceil(NR) * k * NR
        } else {
            n * k
        };
        self.data.resize(len, 0.0);
    }
}
