//! Fusion of ranked lists (dense, BM25, …) into one ranking.
//!
//! Every function here is pure and deterministic: the output depends only on the *set* of
//! `(key, score)` pairs in each list and on the list order, never on the order of the items
//! inside a list, on hashing, or on the platform.
//!
//! # Input
//!
//! A list is a slice of `(ChunkKey, f32)` pairs, higher score = better. Lists are usually
//! given in descending score order, but any order is accepted: each list is first put in
//! canonical order (score descending, then [`ChunkKey`] ascending). A key repeated within one
//! list counts once, at its best score. Scores must be finite.
//!
//! # Methods
//!
//! For list `i` with weight `w_i` and a key `d`, let `n_i(d)` be the normalised contribution
//! of list `i` (0 when `d` is absent from list `i`). The fused score is
//!
//! ```text
//! score(d) = Σ_i w_i · n_i(d)
//! ```
//!
//! with, per [`Normalization`]:
//!
//! - **RRF** (reciprocal rank fusion): `n_i(d) = 1 / (k + rank_i(d))`, `rank` 1-based.
//!   Items with equal scores share the same rank ("competition" ranking, `1 2 2 4`):
//!   `rank_i(d) = 1 + |{e in list i : s_i(e) > s_i(d)}|`. RRF therefore only depends on the
//!   order of the scores, so it is invariant to any strictly increasing score transform.
//! - **MinMax**: `n_i(d) = (s_i(d) − min_i) / (max_i − min_i)`; a list whose scores are all
//!   equal (including a one-item list) gives `n_i = 1` to all its items.
//! - **DBSF** (distribution-based score fusion): with `μ_i`, `σ_i` the mean and *population*
//!   standard deviation of list `i`'s scores,
//!   `n_i(d) = clamp((s_i(d) − (μ_i − 3σ_i)) / (6σ_i), 0, 1)`; a list whose scores are all
//!   equal (`σ_i = 0`, including a one-item list) gives `n_i = 0.5` to all its items (the
//!   value at the mean, i.e. the limit of the formula).
//!
//! [`FusionMethod`] is the hybrid (dense + BM25) configuration: weights `[alpha, 1 − alpha]`
//! for MinMax and DBSF, `[1, 1]` for RRF.
//!
//! # Relevance
//!
//! Each [`Fused`] also carries `relevance ∈ [0, 1]`, the score divided by the maximum score
//! achievable from the lists given:
//!
//! ```text
//! MinMax, DBSF: relevance = score / Σ_{i non-empty} w_i
//! RRF:          relevance = score / Σ_{i non-empty} w_i / (k + 1)
//! ```
//!
//! (`relevance = 0` for every key when the non-empty lists all have weight 0). It is 1 exactly
//! for a key that tops every non-empty, positively weighted list. This is the calibration used
//! by downstream thresholds (e.g. segment extraction subtracts a threshold from it). Its
//! limits: it is *relative to the candidate set*, not an absolute probability of
//! relevance. MinMax always gives 1 to the best item of each list even when every candidate
//! is poor, and 0 to the worst even when every candidate is good; DBSF depends on the spread
//! of the candidates; RRF ignores score gaps altogether and decays slowly with rank (with
//! `k = 60`, rank 10 in every list still gets `61/70 ≈ 0.87`). Thresholds on it should be
//! tuned per method and per candidate-list depth.
//!
//! # Output
//!
//! One [`Fused`] per distinct key present in any list (a key with weight-0 contributions only
//! still appears, with score 0), sorted by score descending, ties by key ascending.
//! Arithmetic is done in `f64` and rounded to `f32` at the end; ties are decided on the
//! rounded `f32` score.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use excerpt_core::ChunkKey;
use excerpt_core::ErrorKind;

/// One fused result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fused {
    /// The chunk.
    pub key: ChunkKey,
    /// Fused score `Σ_i w_i · n_i(key)` (see the module docs); higher is better.
    pub score: f32,
    /// Score divided by the maximum achievable score, in `[0, 1]` (see the module docs:
    /// relative to the candidate set, not an absolute probability).
    pub relevance: f32,
}

/// Hybrid (dense + BM25) fusion configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum FusionMethod {
    /// Reciprocal rank fusion, `Σ_i 1 / (k + rank_i)`, both lists weighted 1. `k > 0`.
    Rrf {
        /// Rank offset; larger flattens the rank curve. Default [`FusionMethod::DEFAULT_RRF_K`].
        k: f32,
    },
    /// Min-max normalised scores, `alpha · dense + (1 − alpha) · bm25`. `alpha ∈ [0, 1]`.
    MinMax {
        /// Weight of the dense list.
        alpha: f32,
    },
    /// Distribution-based score fusion (μ ± 3σ normalisation),
    /// `alpha · dense + (1 − alpha) · bm25`. `alpha ∈ [0, 1]`.
    Dbsf {
        /// Weight of the dense list.
        alpha: f32,
    },
}

impl Default for FusionMethod {
    fn default() -> Self {
        FusionMethod::Rrf {
            k: Self::DEFAULT_RRF_K,
        }
    }
}

/// A method as front ends spell it (`--fusion`, a request's `fusion`): `rrf[:K]`,
/// `minmax[:ALPHA]` (or `min_max`), `dbsf[:ALPHA]`; without a parameter, RRF's `k` is
/// [`FusionMethod::DEFAULT_RRF_K`] and `alpha` is 0.5. The value is validated.
impl std::str::FromStr for FusionMethod {
    type Err = FusionError;

    fn from_str(s: &str) -> Result<Self, FusionError> {
        let (name, arg) = s.split_once(':').unwrap_or((s, ""));
        let num = |default: f32| -> Result<f32, FusionError> {
            if arg.is_empty() {
                return Ok(default);
            }
            arg.trim()
                .parse::<f32>()
                .map_err(|_| FusionError::NotANumber(arg.to_string()))
        };
        let m = match name {
            "rrf" => FusionMethod::Rrf {
                k: num(FusionMethod::DEFAULT_RRF_K)?,
            },
            "minmax" | "min_max" => FusionMethod::MinMax { alpha: num(0.5)? },
            "dbsf" => FusionMethod::Dbsf { alpha: num(0.5)? },
            _ => return Err(FusionError::UnknownMethod(s.to_string())),
        };
        m.validate().map_err(|e| FusionError::OutOfRange {
            spelled: s.to_string(),
            reason: Box::new(e),
        })?;
        Ok(m)
    }
}

impl FusionMethod {
    /// The customary RRF constant.
    pub const DEFAULT_RRF_K: f32 = 60.0;

    /// Checks `k` is finite and `> 0` (RRF) or `alpha` is in `[0, 1]` (MinMax, DBSF).
    pub fn validate(&self) -> Result<(), FusionError> {
        match *self {
            FusionMethod::Rrf { k } => Normalization::ReciprocalRank { k }.validate(),
            FusionMethod::MinMax { alpha } | FusionMethod::Dbsf { alpha } => {
                if (0.0..=1.0).contains(&alpha) {
                    Ok(())
                } else {
                    Err(FusionError::InvalidAlpha(alpha))
                }
            }
        }
    }

    /// The per-list normalisation this method uses.
    pub fn normalization(&self) -> Normalization {
        match *self {
            FusionMethod::Rrf { k } => Normalization::ReciprocalRank { k },
            FusionMethod::MinMax { .. } => Normalization::MinMax,
            FusionMethod::Dbsf { .. } => Normalization::Dbsf,
        }
    }

    /// Weights of `[dense, bm25]`: `[1, 1]` for RRF, `[alpha, 1 − alpha]` otherwise.
    pub fn hybrid_weights(&self) -> [f32; 2] {
        match *self {
            FusionMethod::Rrf { .. } => [1.0, 1.0],
            FusionMethod::MinMax { alpha } | FusionMethod::Dbsf { alpha } => [alpha, 1.0 - alpha],
        }
    }
}

/// How each list's scores are turned into contributions `n_i(d)` before weighting.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Normalization {
    /// `n = 1 / (k + rank)`, rank 1-based, equal scores share a rank. `k` finite, `> 0`.
    ReciprocalRank {
        /// Rank offset.
        k: f32,
    },
    /// `n = (s − min) / (max − min)`, or 1 when all scores of the list are equal.
    MinMax,
    /// `n = clamp((s − (μ − 3σ)) / (6σ), 0, 1)`, or 0.5 when `σ = 0`.
    Dbsf,
}

impl Normalization {
    /// Checks the RRF `k` is finite and `> 0`.
    pub fn validate(&self) -> Result<(), FusionError> {
        match *self {
            Normalization::ReciprocalRank { k } if !(k.is_finite() && k > 0.0) => {
                Err(FusionError::InvalidK(k))
            }
            _ => Ok(()),
        }
    }
}

/// One input list with its weight.
#[derive(Debug, Clone, Copy)]
pub struct WeightedList<'a> {
    /// Weight `w_i`: finite, `≥ 0`.
    pub weight: f32,
    /// `(key, score)` pairs, higher score = better, any order.
    pub items: &'a [(ChunkKey, f32)],
}

/// Invalid fusion parameters or input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FusionError {
    /// A spelled method (`FusionMethod`'s `FromStr`) names no method.
    #[error("unknown fusion {0:?}: expected rrf[:K], minmax[:ALPHA] or dbsf[:ALPHA]")]
    UnknownMethod(String),
    /// A spelled method's parameter is not a number.
    #[error("fusion parameter {0:?} is not a number")]
    NotANumber(String),
    /// A spelled method's parameter is out of its range.
    #[error("fusion {spelled:?}: {reason}")]
    OutOfRange {
        /// The method as spelled.
        spelled: String,
        /// What is wrong with its parameter.
        reason: Box<FusionError>,
    },
    /// RRF `k` must be finite and `> 0`.
    #[error("RRF k must be finite and > 0, got {0}")]
    InvalidK(f32),
    /// `alpha` must be in `[0, 1]`.
    #[error("fusion alpha must be in [0, 1], got {0}")]
    InvalidAlpha(f32),
    /// A list weight is negative or not finite.
    #[error("weight of list {list} must be finite and >= 0, got {weight}")]
    InvalidWeight {
        /// Index of the list.
        list: usize,
        /// The weight given.
        weight: f32,
    },
    /// All weights are 0 (only checked when at least one list is given).
    #[error("at least one list weight must be > 0")]
    ZeroTotalWeight,
    /// A score is NaN or infinite.
    #[error("score of {key:?} in list {list} is not finite: {score}")]
    NonFiniteScore {
        /// Index of the list.
        list: usize,
        /// The key carrying the score.
        key: ChunkKey,
        /// The score given.
        score: f32,
    },
}

impl FusionError {
    /// Whose fault it is: fusion parameters are the request's
    /// ([`ErrorKind::BadInput`]); a score that is not finite came from a search, so it is
    /// the system's ([`ErrorKind::Internal`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            FusionError::UnknownMethod(_)
            | FusionError::NotANumber(_)
            | FusionError::OutOfRange { .. }
            | FusionError::InvalidK(_)
            | FusionError::InvalidAlpha(_)
            | FusionError::InvalidWeight { .. }
            | FusionError::ZeroTotalWeight => ErrorKind::BadInput,
            FusionError::NonFiniteScore { .. } => ErrorKind::Internal,
        }
    }
}

/// Fuses a dense and a BM25 list with a hybrid [`FusionMethod`]
/// (weights from [`FusionMethod::hybrid_weights`]).
pub fn fuse_hybrid(
    dense: &[(ChunkKey, f32)],
    bm25: &[(ChunkKey, f32)],
    method: FusionMethod,
) -> Result<Vec<Fused>, FusionError> {
    method.validate()?;
    let [wd, wb] = method.hybrid_weights();
    fuse(
        &[
            WeightedList {
                weight: wd,
                items: dense,
            },
            WeightedList {
                weight: wb,
                items: bm25,
            },
        ],
        method.normalization(),
    )
}

/// Fuses any number of weighted lists: `score(d) = Σ_i w_i · n_i(d)` (see the module docs).
///
/// Output: one entry per distinct key, sorted by score descending then key ascending.
/// Errors on an invalid `k`, a negative or non-finite weight, all-zero weights, or a
/// non-finite score. No lists → empty output.
pub fn fuse(
    lists: &[WeightedList<'_>],
    normalization: Normalization,
) -> Result<Vec<Fused>, FusionError> {
    normalization.validate()?;
    for (list, l) in lists.iter().enumerate() {
        if !(l.weight.is_finite() && l.weight >= 0.0) {
            return Err(FusionError::InvalidWeight {
                list,
                weight: l.weight,
            });
        }
        if let Some(&(key, score)) = l.items.iter().find(|(_, s)| !s.is_finite()) {
            return Err(FusionError::NonFiniteScore { list, key, score });
        }
    }
    if !lists.is_empty() && lists.iter().all(|l| l.weight == 0.0) {
        return Err(FusionError::ZeroTotalWeight);
    }

    // Accumulate per key, in list order: the summation order per key is fixed.
    let mut acc: BTreeMap<ChunkKey, f64> = BTreeMap::new();
    let mut max_possible = 0.0f64;
    for l in lists {
        let canon = canonical(l.items);
        if canon.is_empty() {
            continue;
        }
        let w = f64::from(l.weight);
        max_possible += w * best_contribution(normalization);
        for (key, n) in normalize(&canon, normalization) {
            *acc.entry(key).or_insert(0.0) += w * n;
        }
    }

    let mut out: Vec<Fused> = acc
        .into_iter()
        .map(|(key, s)| {
            let relevance = if max_possible > 0.0 {
                (s / max_possible).clamp(0.0, 1.0)
            } else {
                0.0
            };
            Fused {
                key,
                // `+ 0.0` turns a possible -0.0 into +0.0 so `total_cmp` ties are real ties.
                score: s as f32 + 0.0,
                relevance: relevance as f32 + 0.0,
            }
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    Ok(out)
}

/// The list in canonical order (score desc, key asc), one entry per key at its best score.
fn canonical(items: &[(ChunkKey, f32)]) -> Vec<(ChunkKey, f32)> {
    let mut v = items.to_vec();
    // Best score first per key, so dedup keeps it; then canonical order.
    v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    v.dedup_by_key(|e| e.0);
    v.sort_by(|a, b| by_score_desc(a.1, b.1).then(a.0.cmp(&b.0)));
    v
}

/// Descending score order in which `0.0` and `-0.0` are equal (scores are finite).
fn by_score_desc(a: f32, b: f32) -> Ordering {
    b.partial_cmp(&a).unwrap_or(Ordering::Equal)
}

/// The largest `n_i` a normalisation can give (to the top item of a non-empty list).
fn best_contribution(normalization: Normalization) -> f64 {
    match normalization {
        Normalization::ReciprocalRank { k } => 1.0 / (f64::from(k) + 1.0),
        Normalization::MinMax | Normalization::Dbsf => 1.0,
    }
}

/// `n_i(d)` for each item of a canonical, non-empty list.
fn normalize(canon: &[(ChunkKey, f32)], normalization: Normalization) -> Vec<(ChunkKey, f64)> {
    match normalization {
        Normalization::ReciprocalRank { k } => {
            let k = f64::from(k);
            let mut rank = 1usize;
            canon
                .iter()
                .enumerate()
                .map(|(pos, &(key, s))| {
                    if pos > 0 && s < canon[pos - 1].1 {
                        rank = pos + 1;
                    }
                    (key, 1.0 / (k + rank as f64))
                })
                .collect()
        }
        Normalization::MinMax => {
            // Canonical order: first is max, last is min.
            let max = f64::from(canon[0].1);
            let min = f64::from(canon[canon.len() - 1].1);
            canon
                .iter()
                .map(|&(key, s)| {
                    let n = if max > min {
                        ((f64::from(s) - min) / (max - min)).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    (key, n)
                })
                .collect()
        }
        Normalization::Dbsf => {
            let max = f64::from(canon[0].1);
            let min = f64::from(canon[canon.len() - 1].1);
            let len = canon.len() as f64;
            let mean = canon.iter().map(|&(_, s)| f64::from(s)).sum::<f64>() / len;
            let var = canon
                .iter()
                .map(|&(_, s)| (f64::from(s) - mean).powi(2))
                .sum::<f64>()
                / len;
            let sigma = var.sqrt();
            canon
                .iter()
                .map(|&(key, s)| {
                    let n = if max > min && sigma > 0.0 {
                        ((f64::from(s) - (mean - 3.0 * sigma)) / (6.0 * sigma)).clamp(0.0, 1.0)
                    } else {
                        0.5
                    };
                    (key, n)
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap};

    fn k(doc: u32, ordinal: u32) -> ChunkKey {
        ChunkKey::new(doc, ordinal)
    }

    #[test]
    fn spelled_methods_parse_with_their_defaults_and_are_validated() {
        let parse = |s: &str| s.parse::<FusionMethod>();
        assert_eq!(parse("rrf").unwrap(), FusionMethod::default());
        assert_eq!(parse("rrf:20").unwrap(), FusionMethod::Rrf { k: 20.0 });
        assert_eq!(
            parse("minmax").unwrap(),
            FusionMethod::MinMax { alpha: 0.5 }
        );
        assert_eq!(
            parse("min_max: 0.3").unwrap(),
            FusionMethod::MinMax { alpha: 0.3 }
        );
        assert_eq!(parse("dbsf:1").unwrap(), FusionMethod::Dbsf { alpha: 1.0 });
        assert_eq!(
            parse("borda").unwrap_err().to_string(),
            "unknown fusion \"borda\": expected rrf[:K], minmax[:ALPHA] or dbsf[:ALPHA]"
        );
        assert_eq!(
            parse("rrf:x").unwrap_err().to_string(),
            "fusion parameter \"x\" is not a number"
        );
        assert_eq!(
            parse("minmax:1.5").unwrap_err().to_string(),
            "fusion \"minmax:1.5\": fusion alpha must be in [0, 1], got 1.5"
        );
        assert!(matches!(
            parse("rrf:0"),
            Err(FusionError::OutOfRange { reason, .. }) if *reason == FusionError::InvalidK(0.0)
        ));
    }

    #[test]
    fn rrf_hand_computed() {
        let dense = [(k(0, 0), 0.9), (k(0, 1), 0.8), (k(1, 0), 0.1)];
        let bm25 = [(k(1, 0), 12.0), (k(0, 0), 3.0)];
        let out = fuse_hybrid(&dense, &bm25, FusionMethod::default()).unwrap();
        let keys: Vec<_> = out.iter().map(|f| f.key).collect();
        assert_eq!(keys, vec![k(0, 0), k(1, 0), k(0, 1)]);
        // (0,0): 1/61 + 1/62 ; (1,0): 1/63 + 1/61 ; (0,1): 1/62
        let expect = 1.0 / 61.0 + 1.0 / 62.0;
        assert!((f64::from(out[0].score) - expect).abs() < 1e-7);
        let rel = expect / (2.0 / 61.0);
        assert!((f64::from(out[0].relevance) - rel).abs() < 1e-6);
    }

    #[test]
    fn rrf_ties_share_rank() {
        let a = [(k(0, 2), 1.0), (k(0, 1), 1.0), (k(0, 0), 0.5)];
        let out = fuse(
            &[WeightedList {
                weight: 1.0,
                items: &a,
            }],
            Normalization::ReciprocalRank { k: 1.0 },
        )
        .unwrap();
        assert_eq!(out[0].key, k(0, 1));
        assert_eq!(out[1].key, k(0, 2));
        assert_eq!(out[0].score, 0.5);
        assert_eq!(out[1].score, 0.5);
        assert_eq!(out[2].score, 0.25); // rank 3 (competition ranking)
        assert_eq!(out[0].relevance, 1.0);
    }

    #[test]
    fn minmax_and_dbsf_degenerate_lists() {
        let single = [(k(3, 3), 0.2)];
        let mm = fuse_hybrid(&single, &[], FusionMethod::MinMax { alpha: 0.5 }).unwrap();
        assert_eq!(mm[0].score, 0.5);
        assert_eq!(mm[0].relevance, 1.0); // the empty list does not count in the maximum
        let db = fuse_hybrid(&single, &[], FusionMethod::Dbsf { alpha: 0.5 }).unwrap();
        assert_eq!(db[0].score, 0.25);
        assert_eq!(db[0].relevance, 0.5);
    }

    #[test]
    fn validation() {
        assert_eq!(
            FusionMethod::Rrf { k: 0.0 }.validate(),
            Err(FusionError::InvalidK(0.0))
        );
        assert!(FusionMethod::Rrf { k: f32::NAN }.validate().is_err());
        assert!(FusionMethod::MinMax { alpha: 1.5 }.validate().is_err());
        assert!(FusionMethod::Dbsf { alpha: -0.1 }.validate().is_err());
        assert!(FusionMethod::Dbsf { alpha: f32::NAN }.validate().is_err());
        assert!(FusionMethod::MinMax { alpha: 1.0 }.validate().is_ok());
        let bad = [(k(0, 0), f32::NAN)];
        assert!(matches!(
            fuse_hybrid(&bad, &[], FusionMethod::default()),
            Err(FusionError::NonFiniteScore { list: 0, .. })
        ));
        let a = [(k(0, 0), 1.0)];
        let zero = [WeightedList {
            weight: 0.0,
            items: &a,
        }];
        assert_eq!(
            fuse(&zero, Normalization::MinMax),
            Err(FusionError::ZeroTotalWeight)
        );
        let neg = [WeightedList {
            weight: -1.0,
            items: &a,
        }];
        assert!(matches!(
            fuse(&neg, Normalization::MinMax),
            Err(FusionError::InvalidWeight { list: 0, .. })
        ));
        assert_eq!(fuse(&[], Normalization::Dbsf), Ok(vec![]));
    }

    #[test]
    fn serde_round_trip() {
        let m = FusionMethod::MinMax { alpha: 0.25 };
        let s = serde_json::to_string(&m).unwrap();
        assert_eq!(s, r#"{"method":"min_max","alpha":0.25}"#);
        assert_eq!(serde_json::from_str::<FusionMethod>(&s).unwrap(), m);
    }

    // ---- property tests -------------------------------------------------------------

    /// A list of distinct keys with scores from a small set (to force ties).
    fn list_strategy() -> impl Strategy<Value = Vec<(ChunkKey, f32)>> {
        prop::collection::btree_map((0u32..4, 0u32..6), -20i32..20, 0..12).prop_map(|m| {
            m.into_iter()
                .map(|((d, o), s)| (k(d, o), s as f32 * 0.25))
                .collect()
        })
    }

    fn method_strategy() -> impl Strategy<Value = FusionMethod> {
        prop_oneof![
            (0.5f32..100.0).prop_map(|k| FusionMethod::Rrf { k }),
            (0.0f32..=1.0).prop_map(|alpha| FusionMethod::MinMax { alpha }),
            (0.0f32..=1.0).prop_map(|alpha| FusionMethod::Dbsf { alpha }),
        ]
    }

    fn sorted_desc(v: &mut [(ChunkKey, f32)]) {
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }

    /// Straightforward MinMax oracle on two lists.
    fn minmax_oracle(
        dense: &[(ChunkKey, f32)],
        bm25: &[(ChunkKey, f32)],
        alpha: f32,
    ) -> HashMap<ChunkKey, (f64, f64)> {
        let norm = |l: &[(ChunkKey, f32)]| -> HashMap<ChunkKey, f64> {
            let mx = l.iter().map(|e| e.1).fold(f32::NEG_INFINITY, f32::max);
            let mn = l.iter().map(|e| e.1).fold(f32::INFINITY, f32::min);
            l.iter()
                .map(|&(key, s)| {
                    let n = if mx == mn {
                        1.0
                    } else {
                        (f64::from(s) - f64::from(mn)) / (f64::from(mx) - f64::from(mn))
                    };
                    (key, n)
                })
                .collect()
        };
        let (nd, nb) = (norm(dense), norm(bm25));
        let (wd, wb) = (f64::from(alpha), f64::from(1.0 - alpha));
        let mut maxw = 0.0;
        if !dense.is_empty() {
            maxw += wd;
        }
        if !bm25.is_empty() {
            maxw += wb;
        }
        let keys: BTreeSet<ChunkKey> = nd.keys().chain(nb.keys()).copied().collect();
        keys.into_iter()
            .map(|key| {
                let s = wd * nd.get(&key).copied().unwrap_or(0.0)
                    + wb * nb.get(&key).copied().unwrap_or(0.0);
                let rel = if maxw > 0.0 { s / maxw } else { 0.0 };
                (key, (s, rel))
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn sorted_complete_bounded_deterministic(
            mut dense in list_strategy(),
            mut bm25 in list_strategy(),
            method in method_strategy(),
        ) {
            sorted_desc(&mut dense);
            sorted_desc(&mut bm25);
            let out = fuse_hybrid(&dense, &bm25, method).unwrap();
            // sorted
            for w in out.windows(2) {
                prop_assert!(w[0].score > w[1].score
                    || (w[0].score == w[1].score && w[0].key < w[1].key), "{:?}", w);
            }
            // every input key exactly once
            let expected: BTreeSet<ChunkKey> =
                dense.iter().chain(bm25.iter()).map(|e| e.0).collect();
            let got: Vec<ChunkKey> = out.iter().map(|f| f.key).collect();
            let got_set: BTreeSet<ChunkKey> = got.iter().copied().collect();
            prop_assert_eq!(got.len(), got_set.len());
            prop_assert_eq!(got_set, expected);
            // relevance in [0, 1], scores non-negative and finite
            for f in &out {
                prop_assert!((0.0..=1.0).contains(&f.relevance), "{:?}", f);
                prop_assert!(f.score.is_finite() && f.score >= 0.0);
            }
            // deterministic
            let again = fuse_hybrid(&dense, &bm25, method).unwrap();
            prop_assert_eq!(out, again);
        }

        #[test]
        fn key_first_everywhere_ranks_first(
            dense in list_strategy(),
            bm25 in list_strategy(),
            both_lists in any::<bool>(),
            method in method_strategy(),
        ) {
            // The champion has a strictly higher score than everything else in each list.
            let champ = k(9, 9);
            let add = |l: &[(ChunkKey, f32)]| {
                let top = l.iter().map(|e| e.1).fold(0.0f32, f32::max) + 1.0;
                let mut v = vec![(champ, top)];
                v.extend_from_slice(l);
                v
            };
            let d = add(&dense);
            let b = if both_lists { add(&bm25) } else { vec![] };
            // With only the dense list, it must carry some weight for a strict winner.
            prop_assume!(both_lists || method.hybrid_weights()[0] > 0.0);
            let out = fuse_hybrid(&d, &b, method).unwrap();
            let champ_score = out.iter().find(|f| f.key == champ).unwrap().score;
            prop_assert_eq!(out[0].score, champ_score);
            // Strictly first for RRF and MinMax (DBSF clamps, so others may tie at 1).
            if !matches!(method, FusionMethod::Dbsf { .. }) {
                prop_assert_eq!(out[0].key, champ);
                if let Some(second) = out.get(1) {
                    prop_assert!(second.score < champ_score, "{:?}", out);
                }
                prop_assert!((out[0].relevance - 1.0).abs() < 1e-6);
            }
        }

        #[test]
        fn rrf_invariant_to_monotone_transforms(
            dense in list_strategy(),
            bm25 in list_strategy(),
            kk in 0.5f32..100.0,
            which in 0usize..3,
        ) {
            // Scores are multiples of 0.25 in [-5, 5): these transforms are exact in f32,
            // hence strictly increasing on them.
            let t = |s: f32| -> f32 {
                match which {
                    0 => s * 8.0 + 100.0,
                    1 => s * s * s,
                    _ => if s < 0.0 { s * 3.0 } else { s * 0.5 },
                }
            };
            let tf = |l: &[(ChunkKey, f32)]| l.iter().map(|&(key, s)| (key, t(s))).collect::<Vec<_>>();
            let m = FusionMethod::Rrf { k: kk };
            let a = fuse_hybrid(&dense, &bm25, m).unwrap();
            let b = fuse_hybrid(&tf(&dense), &tf(&bm25), m).unwrap();
            prop_assert_eq!(a, b);
        }

        #[test]
        fn minmax_matches_oracle(
            dense in list_strategy(),
            bm25 in list_strategy(),
            alpha in 0.0f32..=1.0,
        ) {
            let out = fuse_hybrid(&dense, &bm25, FusionMethod::MinMax { alpha }).unwrap();
            let oracle = minmax_oracle(&dense, &bm25, alpha);
            prop_assert_eq!(out.len(), oracle.len());
            for f in &out {
                let (s, rel) = oracle[&f.key];
                prop_assert!((f64::from(f.score) - s).abs() < 1e-6, "{:?} vs {}", f, s);
                prop_assert!((f64::from(f.relevance) - rel).abs() < 1e-6, "{:?} vs {}", f, rel);
            }
        }

        #[test]
        fn input_order_does_not_matter(
            dense in list_strategy(),
            bm25 in list_strategy(),
            method in method_strategy(),
            seed in any::<u64>(),
        ) {
            // Permute items arbitrarily (this includes permuting equal-score items of a
            // descending list, and leaving the list unsorted altogether).
            fn shuffle(v: &mut [(ChunkKey, f32)], mut seed: u64) {
                for i in (1..v.len()).rev() {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let j = ((seed >> 33) as usize) % (i + 1);
                    v.swap(i, j);
                }
            }
            let (mut d1, mut b1) = (dense.clone(), bm25.clone());
            sorted_desc(&mut d1);
            sorted_desc(&mut b1);
            let reference = fuse_hybrid(&d1, &b1, method).unwrap();

            // Equal-score items permuted, lists still descending.
            let (mut d2, mut b2) = (d1.clone(), b1.clone());
            shuffle(&mut d2, seed);
            shuffle(&mut b2, seed ^ 0xdead_beef);
            d2.sort_by(|a, b| b.1.total_cmp(&a.1)); // stable: ties keep the shuffled order
            b2.sort_by(|a, b| b.1.total_cmp(&a.1));
            prop_assert_eq!(&reference, &fuse_hybrid(&d2, &b2, method).unwrap());

            // Fully shuffled.
            let (mut d3, mut b3) = (dense, bm25);
            shuffle(&mut d3, seed.rotate_left(7));
            shuffle(&mut b3, seed.rotate_left(13));
            prop_assert_eq!(&reference, &fuse_hybrid(&d3, &b3, method).unwrap());
        }

        #[test]
        fn duplicate_key_counts_once_at_best_score(
            dense in list_strategy(),
            method in method_strategy(),
        ) {
            prop_assume!(!dense.is_empty());
            let mut dup = dense.clone();
            let (key, s) = dense[0];
            dup.push((key, s - 100.0));
            // The lower duplicate is dropped before any statistic is computed.
            let out = fuse_hybrid(&dup, &[], method).unwrap();
            prop_assert_eq!(out.iter().filter(|f| f.key == key).count(), 1);
            prop_assert_eq!(out, fuse_hybrid(&dense, &[], method).unwrap());
        }
    }
}
