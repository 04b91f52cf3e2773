//! `auto`: seed 001's planner without an LLM — rules pick k and the budget share, a score
//! gap cuts the hit list, then `adjacent` (or `rse`) assembles. See
//! [`crate::AutoParams`] for the rules.

use crate::assemble::{adjacent, AssembleRequest, RHit, Selection};
use crate::error::ContextError;
use crate::strategy::{AutoInner, AutoParams, RseParams, RsePreset};

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
pub(crate) enum QueryClass {
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
pub(crate) fn classify(query: &str) -> (QueryClass, String) {
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
pub(crate) fn plan_budget(p: &AutoParams, req: &AssembleRequest<'_>) -> usize {
    let (class, _) = classify(req.query);
    (req.budget as f64 * f64::from(p.budget_share[class as usize])).floor() as usize
}

pub(crate) fn auto(
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
            crate::rse::rse(&RseParams::preset(preset), kept, req, sel, notes)?;
        }
    }
    Ok(())
}
