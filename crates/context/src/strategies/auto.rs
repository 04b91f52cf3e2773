//! `auto`: a query planner without an LLM — rules classify the query as narrow, normal or
//! broad, the class picks k and the share of the budget, a relevance gap cuts the hit
//! list, then `adjacent` (or `rse`) assembles the kept hits. See [`AutoParams`] for the
//! rules.

use serde::{Deserialize, Serialize};

use crate::context::AssembleRequest;
use crate::error::{check_min, check_range, invalid, ContextError};
use crate::selection::{Assembler, RHit, Selection};
use crate::strategies::adjacent::{adjacent, AdjacentParams};
use crate::strategies::rse::{rse, RseParams, RsePreset};

/// What `auto` assembles with once it has chosen the hits and the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoInner {
    /// [`Strategy::Adjacent`](crate::Strategy::Adjacent) with [`AutoParams::adjacent`].
    Adjacent,
    /// [`Strategy::Rse`](crate::Strategy::Rse), balanced preset for narrow/normal,
    /// find_all for broad queries.
    Rse,
}

/// Parameters of [`Strategy::Auto`](crate::Strategy::Auto).
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

impl Assembler for AutoParams {
    fn budget(&self, req: &AssembleRequest<'_>) -> usize {
        plan_budget(self, req)
    }

    fn assemble(
        &self,
        hits: &[RHit],
        req: &AssembleRequest<'_>,
        sel: &mut Selection<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), ContextError> {
        auto(self, hits, req, sel, notes)
    }
}

/// Words that make a query broad (enumeration, comparison, exhaustiveness).
const BROAD_CUES: &[&str] = &[
    "all",
    "compare",
    "compared",
    "comparing",
    "comparison",
    "contrast",
    "difference",
    "differences",
    "differ",
    "versus",
    "vs",
    "every",
    "each",
    "list",
    "enumerate",
    "overview",
    "summarize",
    "summarise",
    "summary",
    "both",
    "between",
    "pros",
    "cons",
    "advantages",
    "disadvantages",
    "types",
    "kinds",
    "ways",
    "steps",
];

/// Query class: index into [`AutoParams`]' per-class arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryClass {
    Narrow = 0,
    Normal = 1,
    Broad = 2,
}

impl QueryClass {
    fn name(self) -> &'static str {
        match self {
            QueryClass::Narrow => "narrow",
            QueryClass::Normal => "normal",
            QueryClass::Broad => "broad",
        }
    }
}

/// The class and the reason (the cue word, or the word count).
fn classify(query: &str) -> (QueryClass, String) {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if let Some(cue) = words.iter().find(|w| BROAD_CUES.contains(&w.as_str())) {
        return (QueryClass::Broad, format!("cue {cue:?}"));
    }
    let n = words.len();
    let class = match n {
        0..=8 => QueryClass::Narrow,
        9..=20 => QueryClass::Normal,
        _ => QueryClass::Broad,
    };
    (class, format!("{n} words"))
}

/// The budget `auto` assembles within: `⌊budget · budget_share[class]⌋`.
fn plan_budget(p: &AutoParams, req: &AssembleRequest<'_>) -> usize {
    let (class, _) = classify(req.query);
    (req.budget as f64 * f64::from(p.budget_share[class as usize])).floor() as usize
}

fn auto(
    p: &AutoParams,
    hits: &[RHit],
    req: &AssembleRequest<'_>,
    sel: &mut Selection<'_>,
    notes: &mut Vec<String>,
) -> Result<(), ContextError> {
    let (class, why) = classify(req.query);
    let c = class as usize;
    let n = p.k[c].min(hits.len());
    let min_keep = p.min_keep[c];
    let mut cut: Option<(usize, f32)> = None;
    for i in min_keep..n {
        let prev = hits[i - 1].relevance;
        let gap = if prev > 0.0 {
            (prev - hits[i].relevance) / prev
        } else {
            0.0
        };
        if cut.is_none_or(|(_, g)| gap > g) {
            cut = Some((i, gap));
        }
    }
    let (kept, gap_note) = match cut {
        Some((i, g)) if g >= p.min_relative_gap => (i, format!("gap {g:.2} after rank {i}")),
        _ => (n, "no cut".to_string()),
    };
    let inner = match p.inner {
        AutoInner::Adjacent => format!("adjacent w={}", p.adjacent.window),
        AutoInner::Rse if class == QueryClass::Broad => "rse find_all".to_string(),
        AutoInner::Rse => "rse balanced".to_string(),
    };
    notes.push(format!(
        "auto: {} query ({why}), k={}, budget {} of {} ({:.0}%), kept {kept} hit(s) ({gap_note}), {inner}",
        class.name(),
        p.k[c],
        plan_budget(p, req),
        req.budget,
        p.budget_share[c] * 100.0
    ));
    let kept = &hits[..kept];
    match p.inner {
        AutoInner::Adjacent => adjacent(&p.adjacent, kept, req, sel, notes),
        AutoInner::Rse => {
            let preset = if class == QueryClass::Broad {
                RsePreset::FindAll
            } else {
                RsePreset::Balanced
            };
            rse(&RseParams::preset(preset), kept, req, sel, notes)?;
        }
    }
    Ok(())
}
