//! Which kernel computes the products: [`Kernel`] (what runs) and [`KernelChoice`]
//! (what `EXCERPT_KERNEL` asks for), resolved against the CPU's features, the AVX-512
//! tile only after its self-check agrees with the AVX2 tile on this CPU.

use std::sync::OnceLock;

#[cfg(target_arch = "x86_64")]
use super::wide;
use crate::local::math::{has_avx2_fma, has_avx512};

/// Which code computes the products (and, with it, whether the element-wise kernels
/// use their AVX2 + FMA builds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Our own AVX-512 kernel (8 × 32 register tiles, [`wide`]) on the same packed
    /// panels as [`Kernel::Avx2`], with the AVX2 element-wise steps. Only chosen on a
    /// CPU with AVX-512F, AVX2, FMA and F16C; [`matmul`] refuses it elsewhere.
    Avx512,
    /// Our own AVX2 + FMA kernel. Only chosen on a CPU with both features
    /// ([`KernelChoice::resolve`] checks); [`matmul`] refuses it elsewhere.
    Avx2,
    /// The `gemm` crate's kernel and the portable element-wise code: the path of every
    /// CPU without AVX2 + FMA.
    Gemm,
}

impl Kernel {
    /// The name used by `EXCERPT_KERNEL` and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Avx512 => "avx512",
            Self::Avx2 => "avx2",
            Self::Gemm => "gemm",
        }
    }

    /// Whether the element-wise kernels may use their AVX2 + FMA builds.
    pub(crate) fn simd(self) -> bool {
        self != Self::Gemm
    }

    /// Whether the weights are packed in panels of [`NR`] columns (our own kernels)
    /// rather than transposed for the `gemm` crate.
    pub(super) fn panels(self) -> bool {
        self != Self::Gemm
    }

    /// Whether this CPU can run the kernel.
    pub(super) fn runs_here(self) -> bool {
        match self {
            Self::Avx512 => has_avx512(),
            Self::Avx2 => has_avx2_fma(),
            Self::Gemm => true,
        }
    }
}

/// Which kernel the local models use: the value of `EXCERPT_KERNEL` or of
/// [`LocalEmbedder::load_with_kernel`](crate::LocalEmbedder::load_with_kernel).
///
/// - `auto` (the default): the best of our own kernels the CPU runs (AVX-512, then
///   AVX2 + FMA), else the `gemm` crate's. The AVX-512 kernel is taken only after a
///   self-check on this CPU gives the same bits as its AVX2 twin (else `auto` says so
///   on standard error and takes AVX2);
/// - `avx512`: our own AVX-512 kernel, refused on a CPU without AVX-512F;
/// - `avx2`: our own AVX2 kernel, refused on a CPU without AVX2 and FMA;
/// - `gemm`: the path every CPU without AVX2 + FMA takes (products by the `gemm`
///   crate, element-wise steps in portable code), forced, for measuring and testing
///   it on any machine. On x86-64 the `gemm` crate still picks its own SIMD build at
///   run time, so this measures the integration, not an older CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// Our best kernel for this CPU, else `gemm`.
    #[default]
    Auto,
    /// Our own AVX-512 kernel.
    Avx512,
    /// Our own AVX2 + FMA kernel.
    Avx2,
    /// The `gemm` crate and portable element-wise code.
    Gemm,
}

impl KernelChoice {
    /// The environment variable [`KernelChoice::from_env`] reads.
    pub const ENV: &'static str = "EXCERPT_KERNEL";

    /// The accepted spellings, in order.
    pub const NAMES: [&'static str; 4] = ["auto", "avx512", "avx2", "gemm"];

    /// Parses `EXCERPT_KERNEL` (unset or empty: [`KernelChoice::Auto`]). The error
    /// names the value and the accepted ones.
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(Self::ENV) {
            Ok(value) if !value.trim().is_empty() => value.parse(),
            _ => Ok(Self::Auto),
        }
    }

    /// The kernel this choice means on this CPU; the error says why a forced kernel
    /// cannot run.
    pub(crate) fn resolve(self) -> Result<Kernel, String> {
        match self {
            Self::Auto if has_avx512() && avx512_agrees() => Ok(Kernel::Avx512),
            Self::Auto if has_avx2_fma() => Ok(Kernel::Avx2),
            Self::Auto | Self::Gemm => Ok(Kernel::Gemm),
            Self::Avx512 if has_avx512() => Ok(Kernel::Avx512),
            Self::Avx512 => Err(format!(
                "{}=avx512 needs a CPU with AVX-512F, AVX2, FMA and F16C, which this one lacks \
                 (use auto, avx2 or gemm)",
                Self::ENV
            )),
            Self::Avx2 if has_avx2_fma() => Ok(Kernel::Avx2),
            Self::Avx2 => Err(format!(
                "{}=avx2 needs a CPU with AVX2 and FMA, which this one lacks (use auto or gemm)",
                Self::ENV
            )),
        }
    }
}

/// Whether the AVX-512 tile gives the same bits as its AVX2 twin on this CPU
/// ([`wide::excerpt_avx512_self_check`]), checked once per process; a disagreement is
/// reported on standard error, and `auto` then keeps to AVX2.
pub(super) fn avx512_agrees() -> bool {
    static AGREES: OnceLock<bool> = OnceLock::new();
    *AGREES.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: called only where `has_avx512` holds (the caller's guard).
            let differing = unsafe { wide::excerpt_avx512_self_check() };
            if differing != 0 {
                eprintln!(
                    "excerpt: the AVX-512 kernel gave {differing} values unlike its AVX2 \
                     twin on this CPU; using the AVX2 kernel (set {}=avx512 to force it)",
                    KernelChoice::ENV
                );
            }
            differing == 0
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

impl std::str::FromStr for KernelChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "avx512" => Ok(Self::Avx512),
            "avx2" => Ok(Self::Avx2),
            "gemm" => Ok(Self::Gemm),
            other => Err(format!(
                "{}=`{other}` is not a kernel (expected one of {})",
                Self::ENV,
                Self::NAMES.join(", ")
            )),
        }
    }
}
