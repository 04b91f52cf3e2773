//! Sentence units: a document's sentences with the chunk each starts in, and the blocks
//! that are one unit (code blocks, tables, tables of figures cut between rows, sentences
//! hard-wrapped over several lines), remembered per document with the collection
//! ([`crate::memo::Memo`]).

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

/// Documents whose [`block_spans`] a [`UnitMemo`] remembers ([`block_units`]).
const UNIT_MEMO_DOCS: usize = 256;

/// A document's identity for [`block_units`]: its content hash (of its text, title,
/// metadata and chunker) and the lengths of what the units are made of.
type UnitKey = (String, usize, usize);

/// Recently used documents' block units, and a use counter for eviction.
pub(crate) type UnitMemo = (HashMap<UnitKey, (Arc<BTreeMap<usize, usize>>, u64)>, u64);

/// [`block_spans`] of `doc`, remembered in `slot` for the [`UNIT_MEMO_DOCS`] documents
/// used last.
/// Finding the units reads the whole text (about 1.5 ms for an annual report of half a
/// million characters) while a query reads a few chunks of it, and the same documents
/// come back query after query. The result depends on the document alone, so
/// remembering it changes no output. Documents without a content hash are not
/// remembered.
pub(crate) fn block_units(
    slot: &Mutex<Option<UnitMemo>>,
    doc: &Document,
) -> Arc<BTreeMap<usize, usize>> {
    if doc.hash.is_empty() {
        return Arc::new(block_spans(doc));
    }
    let key: UnitKey = (doc.hash.clone(), doc.text.len(), doc.sentences.len());
    let lock = || slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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
    let lines = line_ranges(text);
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut fence: Option<usize> = None;
    let mut table: Option<(usize, usize)> = None;
    for &(start, end) in &lines {
        let t = trim_start(&text[start..end]);
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
    for rows in figure_table_lines(text, &lines) {
        let (start, _) = lines[rows.start];
        let mut part = start;
        let mut last_row = start;
        // Characters of text[part..last_row].
        let mut part_chars = 0usize;
        for &(line_start, line_end) in &lines[rows] {
            let line_chars = text[line_start..line_end].chars().count();
            if part_chars + line_chars > FIGURE_PART_CHARS && last_row > part {
                spans.push((part, last_row));
                part = last_row;
                part_chars = 0;
            }
            part_chars += line_chars;
            last_row = line_end;
        }
        spans.push((part, last_row));
    }
    let mut out = wrapped_runs(doc);
    for (start, end) in spans {
        if !at_most_chars(&text[start..end], MAX_BLOCK_CHARS) {
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
/// financebench-dev (docs/history/eval-2026-11-26.md), parts of 300 to 1,000 characters moved
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
    let line = line.trim_end();
    // A sentence that ends with figures ends with a full stop; a row does not. A line
    // ending with a letter ends with a word, not a cell (most lines: checked first).
    !line.ends_with('.')
        && !line.ends_with(|c: char| c.is_ascii_alphabetic())
        && excerpt_core::trailing_figures(line) >= 2
}

/// `s.chars().count() <= n`, without counting when the length in bytes decides it (a
/// character is one to four bytes).
fn at_most_chars(s: &str, n: usize) -> bool {
    s.len() <= n || (s.len() <= 4 * n && s.chars().count() <= n)
}

/// The lines of `text` as byte ranges, each with its line end: the pieces of
/// `text.split_inclusive('\n')`, found in bulk.
fn line_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(text.len() / 40 + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
        out.push((start, end + 1));
        start = end + 1;
    }
    if start < text.len() {
        out.push((start, text.len()));
    }
    out
}

/// `s.trim()`, by [`trim_start`] and [`trim_end`].
fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
}

/// `s.trim_start()`. Without the Unicode whitespace tables in the common case: ASCII
/// whitespace trimmed, the start left is ASCII and not a vertical tab (the one ASCII
/// whitespace character `trim_ascii_start` keeps).
fn trim_start(s: &str) -> &str {
    let t = s.trim_ascii_start();
    match t.as_bytes().first() {
        Some(&b) if !b.is_ascii() || b == 0x0B => t.trim_start(),
        _ => t,
    }
}

/// `s.trim_end()`, as [`trim_start`].
fn trim_end(s: &str) -> &str {
    let t = s.trim_ascii_end();
    match t.as_bytes().last() {
        Some(&b) if !b.is_ascii() || b == 0x0B => t.trim_end(),
        _ => t,
    }
}

/// Byte ranges of the tables of figures in `text` ([`figure_table_lines`]).
#[cfg(test)]
fn figure_tables(text: &str) -> Vec<(usize, usize)> {
    let lines = line_ranges(text);
    figure_table_lines(text, &lines)
        .into_iter()
        .map(|rows| (lines[rows.start].0, lines[rows.end - 1].1))
        .collect()
}

/// The tables of figures in `text`, as ranges of its `lines` ([`line_ranges`]): runs of
/// at least [`MIN_FIGURE_ROWS`] figure lines, with the blank lines and the short label
/// lines (row groups such as `Current assets`) between them, and up to two label lines
/// right above the first row (the column headings). A run ends at a line of prose (a
/// long line, or one ending with a full stop) or after three lines without figures.
fn figure_table_lines(text: &str, lines: &[(usize, usize)]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    // (first line, end of the last figure line, figure lines, lines since the last
    // figure line)
    let mut run: Option<(usize, usize, usize, usize)> = None;
    // Label lines just above (at most two).
    let mut labels: Vec<usize> = Vec::new();
    let close = |run: Option<(usize, usize, usize, usize)>, out: &mut Vec<_>| {
        if let Some((first, end, rows, _)) = run {
            if rows >= MIN_FIGURE_ROWS {
                out.push(first..end);
            }
        }
    };
    for (i, &(start, end)) in lines.iter().enumerate() {
        let t = trim(&text[start..end]);
        if figure_line(t) {
            run = Some(match run {
                Some((first, _, rows, _)) => (first, i + 1, rows + 1, 0),
                None => (labels.first().copied().unwrap_or(i), i + 1, 1, 0),
            });
            labels.clear();
            continue;
        }
        let label =
            !t.is_empty() && !t.ends_with(['.', '!', '?', ':', ';']) && at_most_chars(t, 100);
        match run.as_mut() {
            Some(r) if (t.is_empty() || label) && r.3 < 3 => r.3 += 1,
            _ => {
                close(run.take(), &mut out);
            }
        }
        if run.is_none() {
            if label {
                labels.push(i);
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
/// next when it ends without a full stop, question or exclamation mark (and without a
/// colon or semicolon unless the next line starts in lower case), is not a heading, is
/// followed by no blank line, and the next line starts with a lower-case letter, or is
/// itself at least 50 characters long (a wrapped line, not a title); and when the next
/// line opens no list item, heading, quote, table or code fence. Runs stop at
/// [`MAX_BLOCK_CHARS`].
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
        let t = trim_end(cur);
        if cur.as_bytes()[t.len()..]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            != 1
        {
            return false;
        }
        let line_start = text[..s[i].byte_start].rfind('\n').map_or(0, |p| p + 1);
        let line = trim(&text[line_start..s[i].byte_end]);
        let n = trim_start(next);
        let lower = n.chars().next().is_some_and(char::is_lowercase);
        // A colon or semicolon ends a line inside a sentence when the next line goes on
        // in lower case ("… is the commit point:\n  if the ingest is killed …").
        let clause_end = t.ends_with([':', ';']) && lower;
        if trim_start(t).is_empty()
            || t.ends_with(['.', '!', '?'])
            || t.ends_with([':', ';']) && !clause_end
            || line.starts_with('#')
        {
            return false;
        }
        // At least 50 characters: `!at_most_chars(line, 49)`.
        if !lower && at_most_chars(line, 49) {
            return false;
        }
        let opens_block = n.starts_with(['#', '>', '|', '-', '*', '+'])
            || n.starts_with("```")
            || n.starts_with("~~~")
            || starts_with_enumerator(n);
        !opens_block
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
        let slot = Mutex::new(None);
        let spans = block_spans(&doc);
        assert!(spans.len() >= 3, "{spans:?}");
        let first = block_units(&slot, &doc);
        assert_eq!(*first, spans);
        assert!(Arc::ptr_eq(&first, &block_units(&slot, &doc)), "remembered");
        // Same hash, other text: another key.
        let other = lines_doc("One line.\n", "h-units-test");
        assert!(block_units(&slot, &other).is_empty());
        // No hash: computed every time.
        let unhashed = lines_doc(text, "");
        assert!(!Arc::ptr_eq(
            &block_units(&slot, &unhashed),
            &block_units(&slot, &unhashed)
        ));
        assert_eq!(*block_units(&slot, &unhashed), spans);
    }

    /// Characters for the fast string helpers: ASCII whitespace including the vertical
    /// tab (which `trim_ascii` keeps), whitespace outside ASCII, line ends, and letters
    /// of one to four bytes.
    const CHARS: &[char] = &[
        ' ', '\t', '\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{a0}', '\u{2003}', '\u{3000}', 'a',
        '7', '.', 'é', '€', '🙂',
    ];

    proptest::proptest! {
        /// The byte-level shortcuts give what the standard library's functions give.
        #[test]
        fn fast_string_helpers_match_the_standard_ones(
            picks in proptest::collection::vec(0..CHARS.len(), 0..40),
            n in 0usize..24,
        ) {
            let s: String = picks.iter().map(|&i| CHARS[i]).collect();
            proptest::prop_assert_eq!(trim(&s), s.trim());
            proptest::prop_assert_eq!(trim_start(&s), s.trim_start());
            proptest::prop_assert_eq!(trim_end(&s), s.trim_end());
            proptest::prop_assert_eq!(at_most_chars(&s, n), s.chars().count() <= n);
            let lines: Vec<&str> = line_ranges(&s).iter().map(|&(a, b)| &s[a..b]).collect();
            proptest::prop_assert_eq!(lines, s.split_inclusive('\n').collect::<Vec<_>>());
        }
    }
}
