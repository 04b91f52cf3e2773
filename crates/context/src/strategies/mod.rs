//! The closed set of assembly strategies: one file per strategy, one enum arm each.
//!
//! Each strategy lives in its own module with its parameter struct. A parameter struct
//! implements [`Default`] with the documented defaults, deserialises with missing fields
//! filled from them (`#[serde(default)]`, so a JSON config may name only what it
//! changes), has a `validate()` that rejects out-of-range values with a message naming
//! the parameter, and implements the crate's assembler interface (the budget it works
//! within and how it offers candidates to the selection).
//!
//! The list at the bottom of this file (`strategies!`) is the only place the set of
//! strategies is written down: it generates [`StrategyConfig`] (a strategy with its
//! parameters), its name-only twin [`Strategy`], the names, the serde spellings and the
//! dispatch. Adding a strategy is a new module here plus one line in that list.
//!
//! `auto` assembles with `rse`, `section` or `topk` and `window` falls back to
//! `adjacent`, by calling them directly; no strategy calls back into a strategy that uses
//! it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ContextError;
use crate::selection::Assembler;

mod adjacent;
pub(crate) mod auto;
mod rse;
mod section;
mod statements;
mod topk;
mod window;

pub use adjacent::AdjacentParams;
pub use auto::AutoParams;
pub use rse::{RseParams, RsePreset, RseUnit};
pub use section::SectionParams;
pub use topk::{TopkParams, TopkUnit};
pub use window::{WindowExpand, WindowParams, WindowSeeds};

/// Generates [`Strategy`], [`StrategyConfig`] and their name, default and dispatch
/// functions from one list of `Variant(Params) = "name"` arms (documentation comments
/// on an arm document the strategy).
macro_rules! strategies {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident($params:ident) = $name:literal,
    )+) => {
        /// How many strategies there are.
        const COUNT: usize = [$($name),+].len();

        /// The strategies, by CLI name: the name-only twin of [`StrategyConfig`],
        /// generated from the same list so the two cannot drift.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        pub enum Strategy {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $name)]
                $variant,
            )+
        }

        impl Strategy {
            /// Every strategy, in declaration order.
            pub const ALL: [Strategy; COUNT] = [$(Strategy::$variant),+];

            /// Every strategy's name, in declaration order.
            pub const NAMES: [&'static str; COUNT] = [$($name),+];

            /// The CLI / serde name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Strategy::$variant => $name,)+
                }
            }
        }

        /// A strategy with its parameters: what [`crate::assemble`] takes.
        ///
        /// Serialised with a `strategy` tag: `{"strategy": "rse", "threshold": 0.25}`;
        /// missing parameters take their defaults.
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "strategy")]
        pub enum StrategyConfig {
            $(
                #[doc = concat!("See [`Strategy::", stringify!($variant), "`].")]
                #[serde(rename = $name)]
                $variant($params),
            )+
        }

        impl StrategyConfig {
            /// The strategy with default parameters.
            pub fn default_for(s: Strategy) -> Self {
                match s {
                    $(Strategy::$variant => StrategyConfig::$variant($params::default()),)+
                }
            }

            /// Which strategy this is.
            pub fn strategy(&self) -> Strategy {
                match self {
                    $(StrategyConfig::$variant(_) => Strategy::$variant,)+
                }
            }

            /// Validates the parameters.
            pub fn validate(&self) -> Result<(), ContextError> {
                match self {
                    $(StrategyConfig::$variant(p) => p.validate(),)+
                }
            }

            /// The parameters as the assembler that runs them.
            pub(crate) fn assembler(&self) -> &dyn Assembler {
                match self {
                    $(StrategyConfig::$variant(p) => p,)+
                }
            }
        }
    };
}

strategies! {
    /// Ranked chunks in rank order until the budget is full.
    Topk(TopkParams) = "topk",
    /// Each hit with its ±`window` neighbouring chunks, scores decaying with distance.
    Adjacent(AdjacentParams) = "adjacent",
    /// Relevant Segment Extraction: best contiguous runs of chunks.
    Rse(RseParams) = "rse",
    /// Sentence-granular semantic window around the best sentence of each hit.
    Window(WindowParams) = "window",
    /// Whole sections, whole documents when several sections match.
    Section(SectionParams) = "section",
    /// A planner: `rse` for passage questions, `section` or `topk` for the others.
    Auto(AutoParams) = "auto",
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for a strategy name that is not one of [`Strategy::NAMES`], listing them
/// (with `rse`'s presets).
fn unknown_strategy(name: &str) -> ContextError {
    let names: Vec<String> = Strategy::NAMES
        .iter()
        .map(|&n| {
            if n == "rse" {
                "rse[:balanced|precision|find_all]".to_string()
            } else {
                n.to_string()
            }
        })
        .collect();
    let expected = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    };
    ContextError::UnknownStrategy {
        name: name.to_string(),
        expected,
    }
}

impl FromStr for Strategy {
    type Err = ContextError;
    fn from_str(s: &str) -> Result<Self, ContextError> {
        let lower = s.trim().to_ascii_lowercase();
        Strategy::ALL
            .into_iter()
            .find(|st| st.name() == lower || (lower == "top_k" && *st == Strategy::Topk))
            .ok_or_else(|| unknown_strategy(s))
    }
}

impl StrategyConfig {
    /// Every strategy with its default parameters, in declaration order.
    pub fn defaults() -> impl Iterator<Item = StrategyConfig> {
        Strategy::ALL.into_iter().map(StrategyConfig::default_for)
    }

    /// The strategy's CLI / serde name.
    pub fn name(&self) -> &'static str {
        self.strategy().name()
    }

    /// Whether assembly may read [`AssembleRequest::feedback`](crate::AssembleRequest):
    /// sentence-level `topk` with a feedback weight above 0, alone or as `auto`'s
    /// pinpoint route. A caller may skip computing feedback terms otherwise.
    pub fn uses_feedback(&self) -> bool {
        let reads = |p: &TopkParams| p.unit == TopkUnit::Sentence && p.feedback > 0.0;
        match self {
            StrategyConfig::Topk(p) => reads(p),
            StrategyConfig::Auto(p) => reads(&p.topk),
            _ => false,
        }
    }
}

impl Default for StrategyConfig {
    /// `auto`, the planner: on every development set at least as good as `topk` and as
    /// `rse` at every budget (docs/EVAL.md), where each fixed strategy loses on one.
    fn default() -> Self {
        StrategyConfig::default_for(Strategy::Auto)
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
    /// names of the strategy's params struct, dotted for a nested one
    /// (`auto:topk.pool=5`); values are numbers, `true`/`false`, or
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
                None if i == 0 => return Err(unknown_strategy(s)),
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
            let value = match v.to_ascii_lowercase().as_str() {
                "none" | "null" => serde_json::Value::Null,
                "true" => serde_json::Value::Bool(true),
                "false" => serde_json::Value::Bool(false),
                _ => match v.parse::<serde_json::Number>() {
                    Ok(n) => serde_json::Value::Number(n),
                    Err(_) => serde_json::Value::String(v.to_string()),
                },
            };
            // `route.key` sets a parameter of a nested parameter set (`auto:topk.pool=5`).
            let mut at = &mut obj;
            let mut owner = name.to_string();
            let mut parts = k.split('.').peekable();
            while let Some(part) = parts.next() {
                let known = |m: &serde_json::Map<String, serde_json::Value>| {
                    let mut keys: Vec<&str> = m
                        .keys()
                        .map(String::as_str)
                        .filter(|k| *k != "strategy")
                        .collect();
                    keys.sort_unstable();
                    keys.join(", ")
                };
                if part == "strategy" || !at.contains_key(part) {
                    return Err(bad(format!(
                        "unknown parameter {k:?} (parameters of {owner}: {})",
                        known(at)
                    )));
                }
                if parts.peek().is_none() {
                    at.insert(part.to_string(), value);
                    break;
                }
                owner = format!("{owner}.{part}");
                match at.get_mut(part) {
                    Some(serde_json::Value::Object(inner)) => at = inner,
                    _ => return Err(bad(format!("{owner} has no parameters of its own"))),
                }
            }
        }
        serde_json::from_value(serde_json::Value::Object(obj)).map_err(|e| bad(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_serde_spellings_and_defaults_come_from_one_list() {
        let defaults: Vec<StrategyConfig> = StrategyConfig::defaults().collect();
        assert_eq!(defaults.len(), Strategy::ALL.len());
        for ((s, name), cfg) in Strategy::ALL.into_iter().zip(Strategy::NAMES).zip(defaults) {
            assert_eq!(s.name(), name);
            assert_eq!(cfg.strategy(), s);
            assert_eq!(cfg.name(), name);
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::json!(name));
            let json = serde_json::to_value(cfg).unwrap();
            assert_eq!(json["strategy"], serde_json::json!(name));
            assert_eq!(name.parse::<StrategyConfig>().unwrap(), cfg);
            cfg.validate().unwrap();
        }
    }

    #[test]
    fn dotted_keys_set_nested_parameters() {
        let cfg: StrategyConfig = "auto:topk.lead_outs=false,extent_hits=5".parse().unwrap();
        let StrategyConfig::Auto(p) = cfg else {
            panic!("not auto: {cfg:?}")
        };
        assert!(!p.topk.lead_outs);
        assert_eq!(p.extent_hits, 5);
        // The rest of the nested set keeps auto's defaults, not topk's own.
        assert_eq!(p.topk.unit, topk::TopkUnit::Sentence);
        let err = "auto:topk.nope=1"
            .parse::<StrategyConfig>()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("parameters of auto.topk: ") && err.contains("lead_outs"),
            "{err}"
        );
        let err = "auto:extent.x=1"
            .parse::<StrategyConfig>()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("auto.extent has no parameters of its own"),
            "{err}"
        );
        assert!("auto:nope.x=1".parse::<StrategyConfig>().is_err());
    }

    #[test]
    fn unknown_strategy_message_lists_every_strategy() {
        let message = "nope".parse::<Strategy>().unwrap_err().to_string();
        assert!(
            message.starts_with(
                "unknown strategy \"nope\": expected topk, adjacent, rse[:balanced|precision|find_all], "
            ),
            "{message}"
        );
        let last = Strategy::NAMES[Strategy::NAMES.len() - 1];
        assert!(message.ends_with(&format!(" or {last}")), "{message}");
        for name in Strategy::NAMES {
            assert!(message.contains(name), "{name} missing from {message:?}");
        }
    }
}
