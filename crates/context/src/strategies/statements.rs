//! The names a financial statement goes by. Filings title their statements in several
//! ways ("Consolidated Statements of Earnings", "… of Operations", "… of Income") and
//! questions use others ("the income statement", "the P&L"), so a question that names a
//! statement by one name must also name the sections titled by the others for `auto`'s
//! named sections ([`super::auto`]) to find it.

use std::collections::BTreeSet;

use crate::sentences::lexical::terms;

/// The names of each statement, lower-case; a question holding one also names the
/// others. Comprehensive income, equity and segment statements have one name each.
const NAMES: [&[&str]; 3] = [
    &[
        "income statement",
        "statement of income",
        "statements of income",
        "statement of operations",
        "statements of operations",
        "statement of earnings",
        "statements of earnings",
        "p&l",
        "profit and loss",
    ],
    &[
        "balance sheet",
        "statement of financial position",
        "statements of financial position",
        "statement of financial condition",
        "statements of financial condition",
    ],
    &[
        "cash flow statement",
        "statement of cash flows",
        "statements of cash flows",
    ],
];

/// The term sets of `query` (`terms`, already stemmed) with a statement name it uses
/// replaced by each other name of that statement: one set per other name, without
/// duplicates, none equal to `terms` itself. Empty when the query names no statement.
pub(crate) fn name_variants(query: &str, query_terms: &BTreeSet<String>) -> Vec<BTreeSet<String>> {
    let lower = query.to_lowercase();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for names in NAMES {
        let Some(used) = names.iter().find(|n| contains_words(&lower, n)) else {
            continue;
        };
        let own: BTreeSet<String> = terms(used).into_iter().collect();
        for other in names.iter().filter(|n| *n != used) {
            let mut v: BTreeSet<String> = query_terms.difference(&own).cloned().collect();
            v.extend(terms(other));
            if v != *query_terms && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// Whether `name` occurs in `text` between word boundaries.
fn contains_words(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> BTreeSet<String> {
        terms(text).into_iter().collect()
    }

    #[test]
    fn a_named_statement_also_names_its_other_titles() {
        let q = "What was the FY2019 COGS, according to the income statement?";
        let variants = name_variants(q, &set(q));
        assert!(variants.contains(&set(
            "What was the FY2019 COGS, according to the statements of earnings?"
        )));
        assert!(variants.contains(&set(
            "What was the FY2019 COGS, according to the statement of operations?"
        )));
        assert!(variants.iter().all(|v| v.contains("cog")), "{variants:?}");
        // The P&L, a word of its own.
        let q = "Using the P&L statement, what is the margin?";
        assert!(name_variants(q, &set(q)).contains(&set(
            "Using the statement of income statement, what is the margin?"
        )));
        // No statement named, or a name inside another word: nothing.
        for q in [
            "What does the balance of trade say?",
            "Summarise the op&l plan.",
        ] {
            assert!(name_variants(q, &set(q)).is_empty(), "{q}");
        }
    }
}
