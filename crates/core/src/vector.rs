//! Vector arithmetic shared by every crate that handles embeddings.

/// Norms at or below this are treated as zero by [`normalize`].
///
/// Real embeddings have norms many orders of magnitude above it (f32 components of
/// unit or layer-normed vectors), so for them the result is exactly `v / |v|`
/// whatever the threshold; it only decides what happens to vectors that are zero or
/// vanishingly small (left unchanged rather than blown up to unit length). 1e-12 is
/// the threshold the embedders have always applied to the vectors they return, so
/// stored vectors and search results are the same as before there was one shared
/// normaliser.
pub const NORM_EPSILON: f32 = 1e-12;

/// Scales `v` in place to unit L2 length: each component is divided by the square
/// root of the f32 sum of squares, summed in order.
///
/// A vector whose norm is not a finite number above [`NORM_EPSILON`] (all zeros,
/// vanishingly small, or with an infinite or NaN component) is left unchanged.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_finite() && norm > NORM_EPSILON {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn scales_to_unit_length() {
        let mut v = vec![3.0f32, 4.0];
        normalize(&mut v);
        assert_eq!(v, [0.6, 0.8]);
        let mut w = vec![1e-6f32, -2e-6, 2e-6];
        normalize(&mut w);
        let norm: f32 = w.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-6, "{norm}");
    }

    #[test]
    fn zero_tiny_and_non_finite_vectors_are_left_alone() {
        for v in [
            vec![0.0f32; 4],
            vec![1e-13, 0.0],
            vec![f32::INFINITY, 1.0],
            vec![f32::NAN, 1.0],
        ] {
            let mut w = v.clone();
            normalize(&mut w);
            assert_eq!(
                w.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
        }
    }
}
