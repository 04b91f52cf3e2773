//! Lead-ins and what they introduce: the sentence ending with a colon that governs a list
//! item, and the block that follows such a sentence.

use excerpt_core::{Document, TextRange};

use crate::memo::Memo;
use crate::sentences::clauses::starts_with_enumerator;

/// The lead-in of a list item: when sentence `i` of `doc` opens with an enumerator, the
/// nearest of the `window` sentences before it that ends with a colon (`"Each party
/// shall:"`), so an item is never handed over without the words that govern it.
pub(crate) fn lead_in(doc: &Document, i: usize, window: usize) -> Option<usize> {
    let text = doc.sentences.get(i)?.slice(&doc.text);
    if !starts_with_enumerator(text) {
        return None;
    }
    (i.saturating_sub(window)..i)
        .rev()
        .find(|&j| doc.sentences[j].slice(&doc.text).trim_end().ends_with(':'))
}

/// The block a lead-in introduces: when `unit` (a range of whole sentences of `doc`)
/// ends with a colon (`"… were as follows:"`, `"Revenue by category ($ in millions):"`),
/// what follows it: the block unit ([`Memo::block_units`]: a table part, a code block) that
/// starts at the next sentence, or else the next sentences up to the first blank line,
/// as long as they fit in `max_chars` characters (a longer first block gives `None`),
/// unless it is an enumerated item.
/// A lead-in promises what comes after it; handed over alone it answers nothing.
pub(crate) fn lead_out(
    memo: &Memo,
    doc: &Document,
    unit: TextRange,
    max_chars: usize,
) -> Option<TextRange> {
    let text = doc.text.as_str();
    if !unit.slice(text).trim_end().ends_with(':') {
        return None;
    }
    let first = doc
        .sentences
        .partition_point(|s| s.byte_start < unit.byte_end);
    let start = *doc.sentences.get(first)?;
    // Enumerated items (`(a)`, `4.1.1`) are provisions the sentence route judges one by
    // one, each bringing its lead-in ([`lead_in`]); a lead-in does not bring them all.
    if starts_with_enumerator(start.slice(text)) {
        return None;
    }
    let fits = |last: usize| {
        text[start.byte_start..doc.sentences[last].byte_end]
            .chars()
            .count()
            <= max_chars
    };
    if let Some(&last) = memo.block_units(doc).get(&first) {
        return fits(last).then(|| start.cover(&doc.sentences[last]));
    }
    let mut last = first;
    if !fits(last) {
        return None;
    }
    while let Some(next) = doc.sentences.get(last + 1) {
        // The whitespace between the last sentence's words and the next sentence.
        let words_end =
            doc.sentences[last].byte_start + doc.sentences[last].slice(text).trim_end().len();
        let blank = text[words_end..next.byte_start].matches('\n').count() > 1;
        if blank || !fits(last + 1) {
            break;
        }
        last += 1;
    }
    Some(start.cover(&doc.sentences[last]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentences::lines_doc;

    #[test]
    fn lead_ins_bring_the_block_they_introduce() {
        // Sentences are lines, blank lines belonging to the line above, as the sentence
        // splitter leaves them.
        let text = "Revenue by category was as follows:\n\nPhones 41 % 42 %\nAudio 30 % 30 %\n\
            Games 6 % 5 %\n\nNotable changes were as follows:\n\n- Phones fell.\n\
            - Games rose.\n\nThe end came as follows:\n\nA sentence far too long to come \
            along with the lead-in above it.\n";
        let mut doc = lines_doc(text, "h-lead-out-test");
        let mut merged: Vec<TextRange> = Vec::new();
        for s in doc.sentences.drain(..) {
            match merged.last_mut() {
                Some(last) if s.slice(text).trim().is_empty() => *last = last.cover(&s),
                _ => merged.push(s),
            }
        }
        doc.sentences = merged;
        let at = |needle: &str| {
            doc.sentences
                .iter()
                .position(|s| s.slice(text).starts_with(needle))
                .unwrap()
        };
        let out = |needle: &str, max: usize| {
            lead_out(&Memo::default(), &doc, doc.sentences[at(needle)], max)
                .map(|r| r.slice(text).to_string())
        };
        // A table of figures: the table part, whole.
        assert_eq!(
            out("Revenue by", 600).as_deref(),
            Some("Phones 41 % 42 %\nAudio 30 % 30 %\nGames 6 % 5 %\n\n")
        );
        // A list: its lines up to the blank line.
        assert_eq!(
            out("Notable", 600).as_deref(),
            Some("- Phones fell.\n- Games rose.\n\n")
        );
        // Within the limit only; nothing when even the first line is longer.
        assert_eq!(out("Notable", 20).as_deref(), Some("- Phones fell.\n"));
        assert_eq!(out("The end", 20), None);
        // Not a lead-in: nothing.
        assert_eq!(out("Phones", 600), None);
        // Enumerated items are not brought by their lead-in.
        let clauses = "Each party shall:\n(a) keep it secret;\n(b) return it.\n";
        let doc = lines_doc(clauses, "h-lead-out-enumerated");
        assert_eq!(
            lead_out(&Memo::default(), &doc, doc.sentences[0], 600),
            None
        );
    }
}
