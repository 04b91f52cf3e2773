//! Reading model weights from a `model.safetensors` file.
//!
//! The format is an 8-byte little-endian header length, a JSON header giving each
//! tensor's dtype, shape and byte range, then the raw little-endian data. The
//! `safetensors` crate parses and validates the header (ranges inside the file, no
//! overlaps, sizes matching shapes); this module converts the tensors the encoder
//! asks for to f32.

use safetensors::{Dtype, SafeTensors};

/// The tensors of one safetensors file, borrowed from its bytes.
pub(crate) struct Weights<'a> {
    tensors: SafeTensors<'a>,
}

impl<'a> Weights<'a> {
    /// Parses the header of a whole safetensors file held in memory.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, safetensors::SafeTensorError> {
        Ok(Self {
            tensors: SafeTensors::deserialize(bytes)?,
        })
    }

    /// Whether the file holds a tensor called `name`.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.tensors.tensor(name).is_ok()
    }

    /// The shape of tensor `name`, if the file holds it.
    pub(crate) fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.tensors.tensor(name).ok().map(|t| t.shape().to_vec())
    }

    /// The values of tensor `name`, checked to have `shape`, as f32 row-major.
    /// Floating-point tensors (f64, f32, f16, bf16) are converted exactly or, for
    /// f64, rounded to nearest; other dtypes are refused.
    pub(crate) fn f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let t = self
            .tensors
            .tensor(name)
            .map_err(|_| format!("missing tensor `{name}`"))?;
        if t.shape() != shape {
            return Err(format!(
                "tensor `{name}` has shape {:?}, expected {shape:?}",
                t.shape()
            ));
        }
        let data = t.data();
        Ok(match t.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F64 => data
                .chunks_exact(8)
                .map(|b| {
                    f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
                })
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| bf16_to_f32(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            other => {
                return Err(format!(
                    "tensor `{name}` has dtype {other}, expected a floating-point type"
                ))
            }
        })
    }
}

/// An IEEE 754 half-precision value (1 sign, 5 exponent, 10 fraction bits) widened
/// to f32, exactly: every f16 value, subnormals, infinities and NaN payloads included,
/// is representable in f32.
fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exp = u32::from((bits >> 10) & 0x1f);
    let frac = u32::from(bits & 0x3ff);
    let magnitude = match exp {
        // Zero or subnormal: frac · 2^-24, exact in f32 (and 0 stays ±0).
        0 => (frac as f32 * f32::from_bits(0x3380_0000)).to_bits(),
        // Infinity or NaN: all-ones exponent, fraction moved to the top bits.
        0x1f => 0x7f80_0000 | (frac << 13),
        // Normal: rebias the exponent from 15 to 127.
        _ => ((exp + 127 - 15) << 23) | (frac << 13),
    };
    f32::from_bits(sign | magnitude)
}

/// A bfloat16 value (the upper half of an f32) widened to f32, exactly.
fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

#[cfg(test)]
mod tests {
    use super::{bf16_to_f32, f16_to_f32, Weights};

    /// The value of every f16 bit pattern from its definition, in f64.
    fn f16_value(bits: u16) -> f64 {
        let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
        let exp = i32::from((bits >> 10) & 0x1f);
        let frac = f64::from(bits & 0x3ff);
        sign * match exp {
            0 => frac / 1024.0 * 2f64.powi(-14),
            0x1f if frac == 0.0 => f64::INFINITY,
            0x1f => f64::NAN,
            _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
        }
    }

    #[test]
    fn every_f16_widens_exactly() {
        for bits in 0..=u16::MAX {
            let got = f16_to_f32(bits);
            let want = f16_value(bits);
            if want.is_nan() {
                assert!(got.is_nan(), "{bits:#06x}");
                // The payload is kept in the top fraction bits.
                assert_eq!(got.to_bits() & 0x007f_e000, u32::from(bits & 0x3ff) << 13);
            } else {
                assert_eq!(f64::from(got), want, "{bits:#06x}");
                assert_eq!(got.is_sign_negative(), bits >> 15 == 1, "{bits:#06x}");
            }
        }
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
    }

    #[test]
    fn bf16_is_the_upper_half_of_f32() {
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc040), -3.0);
        assert_eq!(bf16_to_f32(0x7f80), f32::INFINITY);
    }

    /// A safetensors file with the given `(name, dtype, shape, bytes)` tensors.
    fn file(tensors: &[(&str, &str, &[usize], Vec<u8>)]) -> Vec<u8> {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            header.insert(
                (*name).to_string(),
                serde_json::json!({
                    "dtype": dtype,
                    "shape": shape,
                    "data_offsets": [data.len(), data.len() + bytes.len()],
                }),
            );
            data.extend_from_slice(bytes);
        }
        let header = serde_json::Value::Object(header).to_string();
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&data);
        out
    }

    #[test]
    fn reads_float_tensors_of_every_width() {
        let f32s: Vec<u8> = [1.5f32, -2.0, 0.25, 3.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let f64s: Vec<u8> = [0.1f64, 1e300]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let f16s: Vec<u8> = [0x3c00u16, 0xc000]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bf16s: Vec<u8> = [0x3f80u16, 0x4040]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bytes = file(&[
            ("a", "F32", &[2, 2], f32s),
            ("b", "F64", &[2], f64s),
            ("c", "F16", &[2], f16s),
            ("d", "BF16", &[1, 2], bf16s),
            ("ids", "I64", &[1], 7i64.to_le_bytes().to_vec()),
        ]);
        let w = Weights::parse(&bytes).expect("parses");
        assert_eq!(w.f32("a", &[2, 2]).expect("a"), [1.5, -2.0, 0.25, 3.0]);
        assert_eq!(w.f32("b", &[2]).expect("b"), [0.1f64 as f32, f32::INFINITY]);
        assert_eq!(w.f32("c", &[2]).expect("c"), [1.0, -2.0]);
        assert_eq!(w.f32("d", &[1, 2]).expect("d"), [1.0, 3.0]);
        assert!(w.contains("a") && !w.contains("e"));
        assert_eq!(w.shape("d"), Some(vec![1, 2]));
        assert_eq!(w.shape("e"), None);

        let err = w.f32("a", &[4]).expect_err("shape");
        assert!(err.contains("has shape [2, 2], expected [4]"), "{err}");
        let err = w.f32("e", &[1]).expect_err("missing");
        assert!(err.contains("missing tensor `e`"), "{err}");
        let err = w.f32("ids", &[1]).expect_err("integers");
        assert!(err.contains("floating-point"), "{err}");
    }

    #[test]
    fn truncated_files_are_refused() {
        let bytes = file(&[("a", "F32", &[2], vec![0; 8])]);
        assert!(Weights::parse(&bytes[..bytes.len() - 1]).is_err());
        assert!(Weights::parse(&bytes[..4]).is_err());
    }
}
