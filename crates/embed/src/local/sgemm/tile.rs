//! What one register-tile call computes, shared by every tile family: the panel block
//! ([`Tile`]), the rows ([`Strip`]) and the scalar finish of a partial row
//! ([`finish_row`]).

use super::NR;
use crate::local::math::{activate, Activation};

/// A register-tile kernel: the functions computing one tile, by panels per call
/// and weight precision.
pub(super) type TileFn = unsafe fn(&Tile, Strip);

/// What one register tile computes, shared by the row tiles of a panel.
pub(super) struct Tile {
    /// Inner-dimension length of this block.
    pub(super) kc: usize,
    /// The packed panel at this block: `kc` groups of `NR` values.
    pub(super) b: *const f32,
    /// The same panel in half precision, or null (then `b` is read).
    pub(super) half: *const u16,
    /// Values from one panel to the next (`k · NR`), for tiles of several panels.
    pub(super) stride: usize,
    /// Valid columns of the tile (`NR` except in the last panel).
    pub(super) nr: usize,
    /// Add the tile to what `C` holds.
    pub(super) load_c: bool,
    /// `nr` bias values to add, or null.
    pub(super) bias: *const f32,
    pub(super) activation: Option<Activation>,
}

/// The rows of one kernel call: `rows` (at most `MR`) rows of `A` from `a` (stride
/// `lda`), their row scales from `scale` (or null) and their rows of `C` from `c`
/// (stride `ldc`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Strip {
    pub(super) a: *const f32,
    pub(super) lda: usize,
    pub(super) rows: usize,
    pub(super) scale: *const f32,
    pub(super) c: *mut f32,
    pub(super) ldc: usize,
}

/// Adds `C`, the bias and the activation to one accumulated tile row and stores it.
///
/// # Safety
/// `row` must hold `tile.nr` writable values, `tile.bias` (if not null) `tile.nr`.
#[inline(always)]
pub(super) unsafe fn finish_row(tile: &Tile, acc: &mut [f32; NR], row: *mut f32) {
    // SAFETY: the caller guarantees `row` holds `tile.nr` writable values and
    // `tile.bias`, when not null, `tile.nr` readable ones; `acc` holds NR >= nr values
    // and is a separate array, so the copy does not overlap.
    unsafe {
        let nr = tile.nr;
        if tile.load_c {
            let old = std::slice::from_raw_parts(row, nr);
            acc.iter_mut().zip(old).for_each(|(x, c)| *x += c);
        }
        if !tile.bias.is_null() {
            let bias = std::slice::from_raw_parts(tile.bias, nr);
            acc.iter_mut().zip(bias).for_each(|(x, b)| *x += b);
        }
        if let Some(act) = tile.activation {
            activate(acc, act);
        }
        std::ptr::copy_nonoverlapping(acc.as_ptr(), row, nr);
    }
}
