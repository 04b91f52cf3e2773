//! What the AVX-512 self-checks share ([`super::wide::excerpt_avx512_self_check`] and
//! `quant::excerpt_int16_avx512_self_check`). Like them it allocates nothing and calls no
//! C library function, so that they also run in the CPU emulator of `scripts/avx512-emu`.

use crate::local::math::Activation;

/// The activations the checks finish their tiles with.
pub(super) const ACTIVATIONS: [Option<Activation>; 4] = [
    None,
    Some(Activation::GeluErf),
    Some(Activation::GeluTanh),
    Some(Activation::Relu),
];

/// The next value of a xorshift generator at `state`.
pub(super) fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A value in `[-1, 1)` from the generator at `state`.
pub(super) fn unit(state: &mut u64) -> f32 {
    (xorshift(state) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// How many of `x` differ in their bits from the values of `y` beside them.
pub(super) fn unlike(x: &[f32], y: &[f32]) -> u64 {
    x.iter()
        .zip(y)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count() as u64
}
