//! Sentence units: a document's sentences with the chunk each starts in, and the blocks
//! that are one unit (code blocks, tables, tables of figures cut between rows, sentences
//! hard-wrapped over several lines), remembered per document.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use excerpt_core::{Document, TextRange};

use crate::sentences::clauses::starts_with_enumerator;

/// One sentence of a candidate document as a selection unit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    /// The sentence's text range.
    pub range: TextRange,
    /// The chunk it lies in (the chunk containing its first byte).
    pub chunk: usize,
}

/// The sentences of `doc` with the chunk each starts in, clipped so units partition the
/// text exactly like the sentences do.
pub(crate) fn units_of(doc: &Document) -> Vec<Unit> {
    let mut out = Vec::with_capacity(doc.sentences.len());
    let mut c = 0usize;
    for s in &doc.sentences {
        while c + 1 < doc.chunks.len() && doc.chunks[c].range.byte_end <= s.byte_start {
            c += 1;
        }
        out.push(Unit {
            range: *s,
            chunk: c,
        });
    }
    out
}

/// Longest code block or table, in characters, that sentence-level `topk` takes as one
/// unit; a longer one stays cut into its lines.
const MAX_BLOCK_CHARS: usize = 1500;

/// Documents whose [`block_spans`] are remembered ([`block_units`]).
const UNIT_MEMO_DOCS: usize = 256;

/// A document's identity for [`block_units`]: its content hash (of its text, title,
/// metadata and chunker) and the lengths of what the units are made of.
type UnitKey = (String, usize, usize);

/// Recently used documents' block units, and a use counter for eviction.
type UnitMemo = (HashMap<UnitKey, (Arc<BTreeMap<usize, usize>>, u64)>, u64);

static UNIT_MEMO: Mutex<Option<UnitMemo>> = Mutex::new(None);

/// [`block_spans`] of `doc`, remembered for the [`UNIT_MEMO_DOCS`] documents used last.
/// Finding the units reads the whole text (about 10 ms for an annual report of half a
/// million characters) while a query reads a few chunks of it, and the same documents
/// come back query after query. The result depends on the document alone, so
/// remembering it changes no output. Documents without a content hash are not
/// remembered.
pub(crate) fn block_units(doc: &Document) -> Arc<BTreeMap<usize, usize>> {
    if doc.hash.is_empty() {
        return Arc::new(block_spans(doc));
    }
    let key: UnitKey = (doc.hash.clone(), doc.text.len(), doc.sentences.len());
    let lock = || {
        UNIT_MEMO
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    {
        let mut memo = lock();
        let (map, clock) = memo.get_or_insert_with(Default::default);
        *clock += 1;
        if let Some((units, used)) = map.get_mut(&key) {
            *used = *clock;
            return units.clone();
        }
    }
    let units = Arc::new(block_spans(doc));
    let mut memo = lock();
    let (map, clock) = memo.get_or_insert_with(Default::default);
    if map.len() >= UNIT_MEMO_DOCS && !map.contains_key(&key) {
        if let Some(oldest) = map
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
    }
    map.insert(key, (units.clone(), *clock));
    units
}

/// The units of sentence-level `topk` that span several sentences: the fenced code blocks
/// (between lines opening with three backticks or tildes) and tables (runs of lines
/// opening with `|`) of `doc` of at most [`MAX_BLOCK_CHARS`] characters, and the
/// sentences hard-wrapped over several lines ([`wrapped_runs`]), as a map from a unit's
/// first sentence to its last. Sentences break at every line end, so each is a whole run
/// of sentences.
pub(crate) fn block_spans(doc: &Document) -> BTreeMap<usize, usize> {
    let text = doc.text.as_str();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut fence: Option<usize> = None;
    let mut table: Option<(usize, usize)> = None;
    let mut at = 0usize;
    for line in text.split_inclusive('\n') {
        let (start, end) = (at, at + line.len());
        at = end;
        let t = line.trim_start();
        let is_fence = t.starts_with("```") || t.starts_with("~~~");
        if let Some(open) = fence {
            if is_fence {
                spans.push((open, end));
                fence = None;
            }
            continue;
        }
        if t.starts_with('|') {
            table = Some(table.map_or((start, end), |(s, _)| (s, end)));
            continue;
        }
        if let Some(tb) = table.take() {
            spans.push(tb);
        }
        if is_fence {
            fence = Some(start);
        }
    }
    spans.extend(table);
    // Tables set as plain lines of figures (financial statements extracted from PDFs),
    // cut between rows into parts of at most FIGURE_PART_CHARS.
    for (start, end) in figure_tables(text) {
        let mut part = start;
        let mut last_row = start;
        for line in text[start..end].split_inclusive('\n') {
            let row_end = last_row + line.len();
            if text[part..row_end].chars().count() > FIGURE_PART_CHARS && last_row > part {
                spans.push((part, last_row));
                part = last_row;
            }
            last_row = row_end;
        }
        spans.push((part, end));
    }
    let mut out = wrapped_runs(doc);
    for (start, end) in spans {
        if text[start..end].chars().count() > MAX_BLOCK_CHARS {
            continue;
        }
        let first = doc.sentences.partition_point(|s| s.byte_end <= start);
        let last = doc
            .sentences
            .partition_point(|s| s.byte_start < end)
            .saturating_sub(1);
        if last > first {
            // A block replaces the units it overlaps. The units in `out` are disjoint,
            // so those overlapping first..=last are the last ones starting at or before
            // `last`, back to the first that ends before `first`.
            let overlapping: Vec<usize> = out
                .range(..=last)
                .rev()
                .take_while(|&(_, &b)| b >= first)
                .map(|(&a, _)| a)
                .collect();
            for a in overlapping {
                out.remove(&a);
            }
            out.insert(first, last);
        }
    }
    out
}

/// Longest part, in characters, of a table of figures ([`figure_tables`]) that
/// sentence-level `topk` takes as one unit; a longer table is cut between rows. A few
/// rows with their headings read as a table where single rows do not, and a part this
/// size leaves room for other evidence under a small budget: on the annual reports of
/// financebench-dev (docs/EVAL.md, session 15), parts of 300 to 1,000 characters moved
/// text recall by −1.4 to +2.4 points against cutting tables into rows, 500 the most
/// even (+0.6 / +1.6 / +1.6 points at 2,000 / 4,000 / 8,000 characters).
const FIGURE_PART_CHARS: usize = 500;

/// Fewest figure lines ([`figure_line`]) in a table of figures.
const MIN_FIGURE_ROWS: usize = 3;

/// Whether `line` is a row of figures: it ends with two or more numeric cells (`1,228`,
/// `(13)`, `4.7 %`, `$ 3.74`; a dash stands for an empty cell and counts as one) and not
/// with a full stop, as the rows of a financial statement or a table of measurements do
/// once extracted as plain text.
fn figure_line(line: &str) -> bool {
    // A sentence that ends with figures ends with a full stop; a row does not.
    !line.trim_end().ends_with('.') && excerpt_core::trailing_figures(line) >= 2
}

/// Byte ranges of the tables of figures in `text`: runs of at least [`MIN_FIGURE_ROWS`]
/// figure lines, with the blank lines and the short label lines (row groups such as
/// `Current assets`) between them, and up to two label lines right above the first row
/// (the column headings). A run ends at a line of prose (a long line, or one ending with
/// a full stop) or after three lines without figures.
fn figure_tables(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // (start, end of the last figure line, figure lines, lines since the last figure line)
    let mut run: Option<(usize, usize, usize, usize)> = None;
    // Label lines just above, as (start of the first of at most two).
    let mut labels: Vec<usize> = Vec::new();
    let mut at = 0usize;
    let close = |run: Option<(usize, usize, usize, usize)>, out: &mut Vec<(usize, usize)>| {
        if let Some((start, end, rows, _)) = run {
            if rows >= MIN_FIGURE_ROWS {
                out.push((start, end));
            }
        }
    };
    for line in text.split_inclusive('\n') {
        let (start, end) = (at, at + line.len());
        at = end;
        let t = line.trim();
        if figure_line(t) {
            run = Some(match run {
                Some((s, _, rows, _)) => (s, end, rows + 1, 0),
                None => (labels.first().copied().unwrap_or(start), end, 1, 0),
            });
            labels.clear();
            continue;
        }
        let label =
            !t.is_empty() && t.chars().count() <= 100 && !t.ends_with(['.', '!', '?', ':', ';']);
        match run.as_mut() {
            Some(r) if (t.is_empty() || label) && r.3 < 3 => r.3 += 1,
            _ => {
                close(run.take(), &mut out);
            }
        }
        if run.is_none() {
            if label {
                labels.push(start);
                if labels.len() > 2 {
                    labels.remove(0);
                }
            } else if !t.is_empty() {
                labels.clear();
            }
        }
    }
    close(run, &mut out);
    out
}

/// Runs of sentences that are one sentence hard-wrapped over several lines (Markdown and
/// plain text wrapped at a fixed width, which the sentence splitter breaks at every line
/// end), as a map from a run's first sentence to its last. A line continues into the
/// next when it ends without a full stop, question or exclamation mark, colon or
/// semicolon, is not a heading, is followed by no blank line, and the next line starts
/// with a lower-case letter, or is itself at least 50 characters long (a wrapped line,
/// not a title); and when the next line opens no list item, heading, quote, table or
/// code fence. Runs stop at [`MAX_BLOCK_CHARS`].
fn wrapped_runs(doc: &Document) -> BTreeMap<usize, usize> {
    let text = doc.text.as_str();
    let s = &doc.sentences;
    let continues = |i: usize| -> bool {
        let cur = s[i].slice(text);
        let Some(next) = s.get(i + 1).map(|r| r.slice(text)) else {
            return false;
        };
        // Exactly one line end in the trailing whitespace: the line ends, no blank line
        // (even one of spaces) follows.
        let t = cur.trim_end();
        if cur[t.len()..].matches('\n').count() != 1 {
            return false;
        }
        let line_start = text[..s[i].byte_start].rfind('\n').map_or(0, |p| p + 1);
        let line = text[line_start..s[i].byte_end].trim();
        if t.trim_start().is_empty()
            || t.ends_with(['.', '!', '?', ':', ';'])
            || line.starts_with('#')
        {
            return false;
        }
        let n = next.trim_start();
        let opens_block = n.starts_with(['#', '>', '|', '-', '*', '+'])
            || n.starts_with("```")
            || n.starts_with("~~~")
            || starts_with_enumerator(n);
        let lower = n.chars().next().is_some_and(char::is_lowercase);
        !opens_block && (lower || line.chars().count() >= 50)
    };
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < s.len() {
        let first = i;
        let mut chars = s[i].char_end - s[i].char_start;
        while continues(i) && chars + (s[i + 1].char_end - s[i + 1].char_start) <= MAX_BLOCK_CHARS {
            i += 1;
            chars += s[i].char_end - s[i].char_start;
        }
        if i > first {
            out.insert(first, i);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sentences::lines_doc;

    #[test]
    fn tables_of_figures_are_found_with_their_column_headings() {
        let statement = "The statements follow.\n\
            Consolidated Statements of Earnings\n\
            Fiscal Years Ended 2017 2016 2015\n\
            Revenue $ 39,403 $ 39,528 $ 40,339\n\
            Cost of goods sold 29,963 30,334 31,292\n\
            \n\
            Operating expenses\n\
            Restructuring charges (1) — 4\n\
            Operating income as a % of revenue 4.7 % 3.5 % 3.6 %\n\
            See Notes to Consolidated Financial Statements, which are an integral part.\n";
        let found = figure_tables(statement);
        assert_eq!(found.len(), 1);
        let (a, b) = found[0];
        assert!(statement[a..b].starts_with("Consolidated Statements of Earnings\n"));
        assert!(statement[a..b].ends_with("3.6 %\n"));
        // Prose with numbers in it, and two rows only, are not tables.
        for text in [
            "In 2017 we opened 12 stores, 3 of them in 2016 2015.\nSales rose 4 5.\n",
            "Revenue 1 2\nCosts 3 4\nA sentence that ends here.\n",
        ] {
            assert!(figure_tables(text).is_empty(), "{text:?}");
        }
        assert!(figure_line(
            "Diluted earnings per share $ 3.81 $ 2.56 $ 3.49"
        ));
        assert!(figure_line("Discontinued operations 0.07 0.26 (0.04)"));
        assert!(!figure_line("Item 7 of Part 2"));
    }

    #[test]
    fn block_units_are_remembered_by_content_and_equal_block_spans() {
        let text = "Intro line that is long enough to wrap onto the next line of the\n\
            paragraph, which continues here.\n\n```\ncode one\ncode two\n```\n\n\
            | a | b |\n| 1 | 2 |\n\nRevenue $ 1 $ 2\nCosts 3 4\nProfit 5 6\nThe end.\n";
        let doc = lines_doc(text, "h-units-test");
        let spans = block_spans(&doc);
        assert!(spans.len() >= 3, "{spans:?}");
        let first = block_units(&doc);
        assert_eq!(*first, spans);
        assert!(Arc::ptr_eq(&first, &block_units(&doc)), "remembered");
        // Same hash, other text: another key.
        let other = lines_doc("One line.\n", "h-units-test");
        assert!(block_units(&other).is_empty());
        // No hash: computed every time.
        let unhashed = lines_doc(text, "");
        assert!(!Arc::ptr_eq(
            &block_units(&unhashed),
            &block_units(&unhashed)
        ));
        assert_eq!(*block_units(&unhashed), spans);
    }
}
