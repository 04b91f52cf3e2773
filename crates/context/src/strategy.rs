//! The closed set of assembly strategies and their parameters.
//!
//! Every parameter struct implements [`Default`] with the documented defaults and
//! deserialises with missing fields filled from them (`#[serde(default)]`), so a JSON
//! config may name only what it changes. `validate()` rejects out-of-range values with
//! a message naming the parameter.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ContextError;

/// The strategies, by CLI name (`topk`, `adjacent`, `rse`, `window`, `section`, `auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Ranked chunks in rank order until the budget is full.
    Topk,
    /// Each hit with its ±`window` neighbours (seed 004).
    Adjacent,
    /// Relevant Segment Extraction: best contiguous runs of chunks (seed 000, dsRAG).
    Rse,
    /// Sentence-granular semantic window around the best sentence of each hit (seed 003).
    Window,
    /// Whole sections, whole documents when several sections match (seed 001).
    Section,
    /// Query-dependent k, budget share and score-gap cut, then `adjacent` or `rse`.
    Auto,
}

impl Strategy {
    /// Every strategy, in declaration order.
    pub const ALL: [Strategy; 6] = [
        Strategy::Topk,
        Strategy::Adjacent,
        Strategy::Rse,
        Strategy::Window,
        Strategy::Section,
        Strategy::Auto,
    ];

    /// The CLI / serde name.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Topk => "topk",
            Strategy::Adjacent => "adjacent",
            Strategy::Rse => "rse",
            Strategy::Window => "window",
            Strategy::Section => "section",
            Strategy::Auto => "auto",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = ContextError;
    fn from_str(s: &str) -> Result<Self, ContextError> {
        let lower = s.trim().to_ascii_lowercase();
        Strategy::ALL
            .into_iter()
            .find(|st| st.name() == lower || (lower == "top_k" && *st == Strategy::Topk))
            .ok_or_else(|| ContextError::UnknownStrategy(s.to_string()))
    }
}

fn invalid(strategy: &'static str, param: &'static str, message: String) -> ContextError {
    ContextError::InvalidParams {
        strategy,
        param,
        message,
    }
}

fn check_range(
    strategy: &'static str,
    param: &'static str,
    v: f32,
    lo: f32,
    hi: f32,
) -> Result<(), ContextError> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(invalid(
            strategy,
            param,
            format!("must be in [{lo}, {hi}], got {v}"),
        ))
    }
}

fn check_min(
    strategy: &'static str,
    param: &'static str,
    v: usize,
    min: usize,
) -> Result<(), ContextError> {
    if v >= min {
        Ok(())
    } else {
        Err(invalid(
            strategy,
            param,
            format!("must be >= {min}, got {v}"),
        ))
    }
}

/// Parameters of [`Strategy::Topk`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TopkParams {
    /// At most this many hits are considered (default 50: more than any budget of a few
    /// thousand tokens holds, so the budget is the real limit).
    pub max_chunks: usize,
}

impl Default for TopkParams {
    fn default() -> Self {
        TopkParams { max_chunks: 50 }
    }
}

impl TopkParams {
    /// `max_chunks ≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_min("topk", "max_chunks", self.max_chunks, 1)
    }
}

/// Parameters of [`Strategy::Adjacent`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdjacentParams {
    /// Neighbours taken on each side of a hit (default 1, as in seed 004). At most 32.
    pub window: usize,
    /// Score factor per step away from the hit (default 0.8, seed 004): the neighbour at
    /// distance `d` scores `score·decay^d` and has relevance `relevance·decay^d`. In (0, 1].
    pub decay: f32,
    /// Hits considered, best first (default 20).
    pub max_hits: usize,
    /// Default true: every hit is offered to the budget (in rank order) before any
    /// neighbour; false: hits and neighbours compete by score alone.
    pub hits_first: bool,
}

impl Default for AdjacentParams {
    fn default() -> Self {
        AdjacentParams {
            window: 1,
            decay: 0.8,
            max_hits: 20,
            hits_first: true,
        }
    }
}

impl AdjacentParams {
    /// `window ≤ 32`, `decay ∈ (0, 1]`, `max_hits ≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        if self.window > 32 {
            return Err(invalid(
                "adjacent",
                "window",
                format!("must be <= 32, got {}", self.window),
            ));
        }
        if !(self.decay.is_finite() && self.decay > 0.0 && self.decay <= 1.0) {
            return Err(invalid(
                "adjacent",
                "decay",
                format!("must be in (0, 1], got {}", self.decay),
            ));
        }
        check_min("adjacent", "max_hits", self.max_hits, 1)
    }
}

/// Named RSE parameter sets, in the spirit of dsRAG's presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RsePreset {
    /// General use: segments up to 15 chunks, threshold 0.2.
    Balanced,
    /// Tighter segments: threshold 0.3, up to 8 chunks, at most 5 segments, at most 2,000
    /// tokens even under a larger budget.
    Precision,
    /// Exhaustive questions: threshold 0.1, segments up to 40 chunks, 200 candidate
    /// documents, slow rank decay.
    FindAll,
}

impl RsePreset {
    /// The preset's name (`balanced`, `precision`, `find_all`).
    pub fn name(self) -> &'static str {
        match self {
            RsePreset::Balanced => "balanced",
            RsePreset::Precision => "precision",
            RsePreset::FindAll => "find_all",
        }
    }
}

impl FromStr for RsePreset {
    type Err = ContextError;
    fn from_str(s: &str) -> Result<Self, ContextError> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "balanced" => Ok(RsePreset::Balanced),
            "precision" => Ok(RsePreset::Precision),
            "find_all" | "findall" => Ok(RsePreset::FindAll),
            _ => Err(ContextError::UnknownStrategy(format!("rse:{s}"))),
        }
    }
}

/// Parameters of [`Strategy::Rse`].
///
/// Chunk values (only documents of the top `max_docs` hits are searched):
///
/// ```text
/// retrieved chunk at rank r (0-based):   v = relevance · exp(−r / rank_decay) − threshold
/// other chunk of a candidate document:   v = rel(cos(chunk, query)) · exp(−N / rank_decay) − threshold
/// ... without a query vector:            v = −threshold
/// ```
///
/// `N` is the number of hits (an unretrieved chunk ranks after all of them), and `rel`
/// maps cosine similarity onto the hits' relevance scale (see `crate::rse`). Then
/// [`crate::select_segments`] picks non-overlapping segments of at most `max_len_chunks`
/// chunks with value `≥ min_value`, at most `max_segments`, within the token budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RseParams {
    /// Subtracted from every chunk's relevance; in [0, 1). Balanced default 0.2 (dsRAG's
    /// irrelevant-chunk penalty is 0.18 on the same [0, 1] relevance scale).
    pub threshold: f32,
    /// Rank decay constant of `exp(−rank / rank_decay)`, `> 0` (default 30, dsRAG's).
    pub rank_decay: f32,
    /// Maximum segment length in chunks, `≥ 1` (default 15).
    pub max_len_chunks: usize,
    /// Minimum segment value (default 0.5: one hit of relevance ≥ 0.7 at the top, or a
    /// run of moderately relevant chunks).
    pub min_value: f32,
    /// Maximum number of segments (default 10).
    pub max_segments: usize,
    /// Candidate documents: the distinct documents of the hits, best first (default 10).
    pub max_docs: usize,
    /// A cap below the request's budget (default none: the request's budget).
    pub max_tokens: Option<usize>,
    /// After the segments, offer the remaining hits in rank order as single chunks
    /// while budget is left (default on for `balanced` and `find_all`, off for
    /// `precision`). Segments are few and long; filling spends what they leave on the
    /// breadth `topk` would have had.
    pub fill: bool,
}

impl Default for RseParams {
    fn default() -> Self {
        RseParams::preset(RsePreset::Balanced)
    }
}

impl RseParams {
    /// The parameters of a preset.
    pub fn preset(p: RsePreset) -> Self {
        match p {
            RsePreset::Balanced => RseParams {
                threshold: 0.2,
                rank_decay: 30.0,
                max_len_chunks: 15,
                min_value: 0.5,
                max_segments: 10,
                max_docs: 10,
                max_tokens: None,
                fill: true,
            },
            RsePreset::Precision => RseParams {
                threshold: 0.3,
                rank_decay: 20.0,
                max_len_chunks: 8,
                min_value: 0.5,
                max_segments: 5,
                max_docs: 5,
                max_tokens: Some(2000),
                fill: false,
            },
            RsePreset::FindAll => RseParams {
                threshold: 0.1,
                rank_decay: 200.0,
                max_len_chunks: 40,
                min_value: 0.5,
                max_segments: 50,
                max_docs: 200,
                max_tokens: None,
                fill: true,
            },
        }
    }

    /// `threshold ∈ [0, 1)`, `rank_decay > 0`, `min_value` finite, counts `≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        if !(self.threshold.is_finite() && (0.0..1.0).contains(&self.threshold)) {
            return Err(invalid(
                "rse",
                "threshold",
                format!("must be in [0, 1), got {}", self.threshold),
            ));
        }
        if !(self.rank_decay.is_finite() && self.rank_decay > 0.0) {
            return Err(invalid(
                "rse",
                "rank_decay",
                format!("must be > 0, got {}", self.rank_decay),
            ));
        }
        if !self.min_value.is_finite() {
            return Err(invalid(
                "rse",
                "min_value",
                format!("must be finite, got {}", self.min_value),
            ));
        }
        check_min("rse", "max_len_chunks", self.max_len_chunks, 1)?;
        check_min("rse", "max_segments", self.max_segments, 1)?;
        check_min("rse", "max_docs", self.max_docs, 1)?;
        if let Some(t) = self.max_tokens {
            check_min("rse", "max_tokens", t, 1)?;
        }
        Ok(())
    }
}

/// Parameters of [`Strategy::Window`].
///
/// For each of the top `max_hits` hits: the seed is the sentence of the hit chunk most
/// similar to the query; the window grows left (then right) one sentence at a time while
/// `cos(neighbour, current edge sentence) ≥ threshold` (and, when set,
/// `cos(neighbour, query) ≥ query_threshold`), at most `max_expand` sentences per side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WindowParams {
    /// Minimum cosine between a neighbour and the window's edge sentence, in [−1, 1].
    /// Default 0.3, chosen on the development set (QMSum, all-MiniLM-L6-v2): 0.3 beat
    /// 0.5 on recall at every budget (0.177 against 0.127 at 4000 tokens, docs/EVAL.md);
    /// the seed's 0.75 almost never lets a window grow with MiniLM-class models. Tune it
    /// on your data.
    pub threshold: f32,
    /// Optional query guidance: neighbours must also have `cos(neighbour, query) ≥` this
    /// (default none).
    pub query_threshold: Option<f32>,
    /// Sentences added at most per side (default 3).
    pub max_expand: usize,
    /// Hits expanded at most, best first (default 100); expansion also stops when the
    /// budget is full.
    pub max_hits: usize,
    /// Without an embedder: chunks taken on each side of a hit, as `adjacent` (default 1).
    pub fallback_window: usize,
}

impl Default for WindowParams {
    fn default() -> Self {
        WindowParams {
            threshold: 0.3,
            query_threshold: None,
            max_expand: 3,
            max_hits: 100,
            fallback_window: 1,
        }
    }
}

impl WindowParams {
    /// Thresholds in [−1, 1], `max_expand ≤ 64`, `max_hits ≥ 1`, `fallback_window ≤ 32`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_range("window", "threshold", self.threshold, -1.0, 1.0)?;
        if let Some(q) = self.query_threshold {
            check_range("window", "query_threshold", q, -1.0, 1.0)?;
        }
        if self.max_expand > 64 {
            return Err(invalid(
                "window",
                "max_expand",
                format!("must be <= 64, got {}", self.max_expand),
            ));
        }
        if self.fallback_window > 32 {
            return Err(invalid(
                "window",
                "fallback_window",
                format!("must be <= 32, got {}", self.fallback_window),
            ));
        }
        check_min("window", "max_hits", self.max_hits, 1)
    }
}

/// Parameters of [`Strategy::Section`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SectionParams {
    /// Hits considered, best first (default 10).
    pub max_hits: usize,
    /// Distinct matching sections of one document that promote it to the whole document
    /// (default 2, seed 001). `≥ 1`.
    pub multi_section_threshold: usize,
    /// Whether promotion to whole documents happens at all (default true).
    pub full_documents: bool,
    /// Spend the budget the sections leave on the hits beyond `max_hits`, as single
    /// chunks in rank order (default true), so `section` never returns less than `topk`
    /// would on documents without useful sections.
    pub fill: bool,
}

impl Default for SectionParams {
    fn default() -> Self {
        SectionParams {
            max_hits: 10,
            multi_section_threshold: 2,
            full_documents: true,
            fill: true,
        }
    }
}

impl SectionParams {
    /// `max_hits ≥ 1`, `multi_section_threshold ≥ 1`.
    pub fn validate(&self) -> Result<(), ContextError> {
        check_min("section", "max_hits", self.max_hits, 1)?;
        check_min(
            "section",
            "multi_section_threshold",
            self.multi_section_threshold,
            1,
        )
    }
}

/// What `auto` assembles with once it has chosen the hits and the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoInner {
    /// [`Strategy::Adjacent`] with [`AutoParams::adjacent`].
    Adjacent,
    /// [`Strategy::Rse`], balanced preset for narrow/normal, find_all for broad queries.
    Rse,
}

/// Parameters of [`Strategy::Auto`].
///
/// The query is classified by rules: **broad** when it contains an enumeration or
/// comparison cue (`compare`, `differences`, `all`, `every`, `list`, `versus`, …) or has
/// more than 20 words; **narrow** when it has at most 8 words and no such cue; otherwise
/// **normal**. The class picks k and the share of the budget; the kept hits are then cut
/// at the largest relative relevance gap `(r[i−1] − r[i]) / r[i−1]` among the top k (only
/// after at least `min_keep` hits, only when the gap is `≥ min_relative_gap`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AutoParams {
    /// k for narrow, normal and broad queries (default 4, 8, 16).
    pub k: [usize; 3],
    /// Share of the budget for narrow, normal and broad queries (default 0.5, 0.75, 1.0):
    /// a factoid needs less context, and less context is cheaper and less distracting.
    pub budget_share: [f32; 3],
    /// Hits always kept before a gap cut is considered (default 1, 2, 3).
    pub min_keep: [usize; 3],
    /// Smallest relative gap that cuts (default 0.25).
    pub min_relative_gap: f32,
    /// The strategy that assembles the kept hits (default adjacent).
    pub inner: AutoInner,
    /// Parameters when `inner` is adjacent (default [`AdjacentParams::default`]).
    pub adjacent: AdjacentParams,
}

impl Default for AutoParams {
    fn default() -> Self {
        AutoParams {
            k: [4, 8, 16],
            budget_share: [0.5, 0.75, 1.0],
            min_keep: [1, 2, 3],
            min_relative_gap: 0.25,
            inner: AutoInner::Adjacent,
            adjacent: AdjacentParams::default(),
        }
    }
}

impl AutoParams {
    /// `k ≥ 1`, shares in (0, 1], `min_keep ≥ 1`, `min_relative_gap ∈ [0, 1]`, valid
    /// adjacent parameters.
    pub fn validate(&self) -> Result<(), ContextError> {
        for k in self.k {
            check_min("auto", "k", k, 1)?;
        }
        for m in self.min_keep {
            check_min("auto", "min_keep", m, 1)?;
        }
        for s in self.budget_share {
            if !(s.is_finite() && s > 0.0 && s <= 1.0) {
                return Err(invalid(
                    "auto",
                    "budget_share",
                    format!("must be in (0, 1], got {s}"),
                ));
            }
        }
        check_range("auto", "min_relative_gap", self.min_relative_gap, 0.0, 1.0)?;
        self.adjacent.validate()
    }
}

/// A strategy with its parameters: what [`crate::assemble`] takes.
///
/// Serialised with a `strategy` tag: `{"strategy": "rse", "threshold": 0.25}`; missing
/// parameters take their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case")]
pub enum StrategyConfig {
    /// See [`Strategy::Topk`].
    Topk(TopkParams),
    /// See [`Strategy::Adjacent`].
    Adjacent(AdjacentParams),
    /// See [`Strategy::Rse`].
    Rse(RseParams),
    /// See [`Strategy::Window`].
    Window(WindowParams),
    /// See [`Strategy::Section`].
    Section(SectionParams),
    /// See [`Strategy::Auto`].
    Auto(AutoParams),
}

impl StrategyConfig {
    /// The strategy with default parameters.
    pub fn default_for(s: Strategy) -> Self {
        match s {
            Strategy::Topk => StrategyConfig::Topk(TopkParams::default()),
            Strategy::Adjacent => StrategyConfig::Adjacent(AdjacentParams::default()),
            Strategy::Rse => StrategyConfig::Rse(RseParams::default()),
            Strategy::Window => StrategyConfig::Window(WindowParams::default()),
            Strategy::Section => StrategyConfig::Section(SectionParams::default()),
            Strategy::Auto => StrategyConfig::Auto(AutoParams::default()),
        }
    }

    /// Which strategy this is.
    pub fn strategy(&self) -> Strategy {
        match self {
            StrategyConfig::Topk(_) => Strategy::Topk,
            StrategyConfig::Adjacent(_) => Strategy::Adjacent,
            StrategyConfig::Rse(_) => Strategy::Rse,
            StrategyConfig::Window(_) => Strategy::Window,
            StrategyConfig::Section(_) => Strategy::Section,
            StrategyConfig::Auto(_) => Strategy::Auto,
        }
    }

    /// Validates the parameters.
    pub fn validate(&self) -> Result<(), ContextError> {
        match self {
            StrategyConfig::Topk(p) => p.validate(),
            StrategyConfig::Adjacent(p) => p.validate(),
            StrategyConfig::Rse(p) => p.validate(),
            StrategyConfig::Window(p) => p.validate(),
            StrategyConfig::Section(p) => p.validate(),
            StrategyConfig::Auto(p) => p.validate(),
        }
    }
}

impl Default for StrategyConfig {
    /// `rse` with the `balanced` preset: the best recall at every budget on the
    /// development set (docs/EVAL.md), ahead of `topk` at each of 500-4000 tokens.
    fn default() -> Self {
        StrategyConfig::default_for(Strategy::Rse)
    }
}

impl fmt::Display for StrategyConfig {
    /// The strategy name (parameters are not shown).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.strategy().name())
    }
}

impl FromStr for StrategyConfig {
    type Err = ContextError;
    /// `NAME` with default parameters; `NAME:key=value,key=value` to change parameters;
    /// for `rse` also `rse:PRESET` (`balanced`, `precision`, `find_all`), optionally
    /// followed by overrides (`rse:precision,max_tokens=1000`). Keys are the parameter
    /// names of the strategy's params struct; values are numbers, `true`/`false`, or
    /// `none` for optional parameters. Unknown keys and wrong types are errors.
    fn from_str(s: &str) -> Result<Self, ContextError> {
        let Some((name, rest)) = s.split_once(':') else {
            return Ok(StrategyConfig::default_for(s.parse()?));
        };
        let strategy: Strategy = name.parse()?;
        let bad = |message: String| ContextError::BadSpec {
            spec: s.to_string(),
            message,
        };
        let mut base = StrategyConfig::default_for(strategy);
        let mut pairs = Vec::new();
        for (i, part) in rest.split(',').map(str::trim).enumerate() {
            match part.split_once('=') {
                Some((k, v)) => pairs.push((k.trim(), v.trim())),
                None if i == 0 && strategy == Strategy::Rse => {
                    base = StrategyConfig::Rse(RseParams::preset(part.parse()?));
                }
                None if i == 0 => return Err(ContextError::UnknownStrategy(s.to_string())),
                None => return Err(bad(format!("expected key=value, got {part:?}"))),
            }
        }
        if pairs.is_empty() {
            return Ok(base);
        }
        let mut obj = match serde_json::to_value(base) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return Err(bad("internal: parameters do not serialise".into())),
        };
        for (k, v) in pairs {
            if k == "strategy" || !obj.contains_key(k) {
                let mut known: Vec<&str> = obj
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != "strategy")
                    .collect();
                known.sort_unstable();
                return Err(bad(format!(
                    "unknown parameter {k:?} (parameters of {name}: {})",
                    known.join(", ")
                )));
            }
            let value = match v.to_ascii_lowercase().as_str() {
                "none" | "null" => serde_json::Value::Null,
                "true" => serde_json::Value::Bool(true),
                "false" => serde_json::Value::Bool(false),
                _ => match v.parse::<serde_json::Number>() {
                    Ok(n) => serde_json::Value::Number(n),
                    Err(_) => serde_json::Value::String(v.to_string()),
                },
            };
            obj.insert(k.to_string(), value);
        }
        serde_json::from_value(serde_json::Value::Object(obj)).map_err(|e| bad(e.to_string()))
    }
}
