//! The PDF layout engine: pure functions over the [`Line`]s of each page (no PDFium),
//! which build the document text itself, so every offset is exact by construction.
//!
//! Running headers, footers and page numbers repeated on the pages are left out, words
//! hyphenated at a line end are joined, table rows given cell by cell are kept on one
//! line each (cells apart by ` | `), paragraphs are separated by a blank line. Headings
//! come from the PDF outline (bookmarks) when it matches lines of the text, else from the
//! layout: size relative to the body (of the document, or of a page set smaller
//! throughout), bold, a face other than the body's with space above, numbering ("3.2
//! Results"); captions, table cells, figure labels, addresses and subtitles are not
//! headings. [`assemble`] is the entry point.

use std::collections::{HashMap, HashSet};

use crate::parsed::{collapse_ws, Heading};

/// One line of a page as PDFium lays it out.
#[derive(Debug, Clone, Default)]
pub(crate) struct Line {
    /// The text, ligatures normalised, without the line break.
    pub text: String,
    /// The most common font size of its visible characters (points).
    pub size: f32,
    /// Set in a bold face (weight 600 or more) at its first visible character.
    pub bold: bool,
    /// Baseline of its first visible character (points from the bottom of the page).
    pub y: f32,
    /// Set in a fixed-pitch face at its first visible character (code, never a heading).
    pub mono: bool,
    /// Left edge: origin of its first visible character (points from the left).
    pub x: f32,
    /// Right edge of its last visible character (points from the left).
    pub x_end: f32,
    /// The font of its first visible character, without a subset prefix ("ABCDEF+").
    pub face: String,
    /// Every visible character is in that one font.
    pub uniform: bool,
}

/// A bookmark of the outline: title, depth (1 = top) and the page it points to.
#[derive(Debug, Clone)]
pub(crate) struct OutlineEntry {
    pub title: String,
    pub level: u8,
    pub page: Option<usize>,
}

/// The document text built from the pages' lines, with heading starts and the byte range
/// of each page (the ranges partition the text; an empty page has an empty range).
#[derive(Debug, Default)]
pub(crate) struct Assembled {
    pub text: String,
    pub headings: Vec<Heading>,
    pub pages: Vec<(usize, usize)>,
}

/// Lowercase, digit runs as `#`, whitespace collapsed: the key that running headers,
/// footers and page numbers share from page to page.
fn furniture_key(s: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
            continue;
        }
        in_digits = false;
        if c.is_whitespace() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out.trim_end().to_string()
}

/// Letters and digits only, lowercase: for matching outline titles to lines.
fn match_key(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The depth of a heading number ("3" → 1, "3.2" → 2, "A.1" → 2, "(2)" → 2), when `s`
/// starts with one followed by a space and a letter that is not lowercase (a capital, or
/// a letter of a script without case).
fn numbering_depth(s: &str) -> Option<u8> {
    let (num, rest) = s.split_once(' ')?;
    let first = rest.trim_start().chars().next()?;
    if first.is_lowercase() || first.is_ascii_digit() || first.is_whitespace() {
        return None;
    }
    if let Some(inner) = num.strip_prefix('(').and_then(|n| n.strip_suffix(')')) {
        let ok = (1..=2).contains(&inner.len()) && inner.chars().all(|c| c.is_ascii_digit());
        return ok.then_some(2);
    }
    let num = num.trim_end_matches('.');
    if num.is_empty() || num.len() > 12 {
        return None;
    }
    let parts: Vec<&str> = num.split('.').collect();
    let ok = parts.iter().enumerate().all(|(i, p)| {
        !p.is_empty()
            && (p.chars().all(|c| c.is_ascii_digit()) && p.len() <= if i == 0 { 2 } else { 3 }
                || i == 0
                    && p.len() == 1
                    && p.chars().all(|c| c.is_ascii_uppercase())
                    && parts.len() > 1)
    });
    ok.then(|| parts.len().min(6) as u8)
}

/// Plausible heading text: short, has letters, does not end like a sentence, names no
/// address (URL, e-mail).
fn heading_like(s: &str) -> bool {
    let t = s.trim();
    let letters = t.chars().filter(|c| c.is_alphabetic()).count();
    letters >= 2
        && !t.starts_with(|c: char| c.is_ascii_punctuation() && !"([\"'§#".contains(c))
        && t.chars().count() <= 150
        && !t.ends_with(['.', ',', ';', ':'])
        && letters * 2 >= t.chars().filter(|c| !c.is_whitespace()).count()
        && !t
            .split_whitespace()
            .any(|w| w.contains("://") || w.contains('@') || w.contains('/') && w.contains('.'))
}

/// Builds the text from the pages' lines: see the module documentation.
pub(crate) fn assemble(pages: &[Vec<Line>], outline: &[OutlineEntry]) -> Assembled {
    let drop = running_furniture(pages);
    let kept = |pi: usize, i: usize| !drop.contains(&(pi, i));
    let kept_ref: &dyn Fn(usize, usize) -> bool = &kept;
    let style = BodyStyle::of(pages, kept_ref);
    let cells = table_rows(pages, kept_ref);

    // Heading levels per line: (page, first line) → (level, number of lines).
    let from_outline = outline_headings(pages, outline, &kept);
    let heads = if !from_outline.is_empty() && from_outline.len() * 2 >= outline.len().min(50) {
        from_outline
    } else {
        layout_headings(pages, kept_ref, &style, &cells)
    };
    let mut out = Assembled::default();
    for (pi, p) in pages.iter().enumerate() {
        let start = out.text.len();
        let page = PageParts {
            kept: &|i: usize| kept(pi, i),
            heads: &|i: usize| heads.get(&(pi, i)).copied(),
            row: &|i: usize| cells.get(&(pi, i)),
        };
        write_page(p, &page, &mut out.text, &mut out.headings);
        let text = &mut out.text;
        if text.len() > start {
            paragraph_break(text);
        }
        out.pages.push((start, text.len()));
    }
    out
}

/// What [`write_page`] knows of a page's lines beyond their text: whether line `i` is
/// kept, the heading starting at it (level, lines), and the table row it starts.
struct PageParts<'a> {
    kept: &'a dyn Fn(usize) -> bool,
    heads: &'a dyn Fn(usize) -> Option<(u8, usize)>,
    row: &'a dyn Fn(usize) -> Option<&'a Vec<Vec<usize>>>,
}

/// Appends the kept lines of page `p` to `text`: table rows with their cells on one
/// line, headings as their own paragraphs (recorded in `headings`), and body lines
/// joined into paragraphs where the vertical gap says so, a word hyphenated at a line
/// end joined.
fn write_page(p: &[Line], page: &PageParts<'_>, text: &mut String, headings: &mut Vec<Heading>) {
    let mut prev: Option<&Line> = None;
    let mut prev_row = false;
    let mut i = 0;
    while i < p.len() {
        if !(page.kept)(i) {
            i += 1;
            continue;
        }
        if let Some(row) = (page.row)(i) {
            // A table row: its cells on one line, in order, rows one under another.
            if prev_row {
                text.push('\n');
            } else {
                paragraph_break(text);
            }
            let cells: Vec<String> = row
                .iter()
                .map(|cell| join_lines(cell.iter().map(|&k| p[k].text.trim())))
                .collect();
            text.push_str(&cells.join(" | "));
            let last = row.iter().flatten().copied().max().unwrap_or(i);
            prev = Some(&p[last]);
            prev_row = true;
            i = last + 1;
            continue;
        }
        if prev_row {
            paragraph_break(text);
            prev = None;
            prev_row = false;
        }
        if let Some((level, n)) = (page.heads)(i) {
            paragraph_break(text);
            let heading = (i..i + n)
                .filter(|&k| (page.kept)(k))
                .map(|k| p[k].text.trim())
                .collect::<Vec<_>>()
                .join(" ");
            headings.push(Heading {
                start: text.len(),
                level,
                text: collapse_ws(&heading),
            });
            text.push_str(&heading);
            text.push_str("\n\n");
            prev = None;
            i += n;
            continue;
        }
        let l = &p[i];
        let t = l.text.trim();
        if let Some(pr) = prev {
            let gap = pr.y - l.y;
            let hyphen = text.ends_with('-')
                && text[..text.len() - 1]
                    .chars()
                    .next_back()
                    .is_some_and(char::is_lowercase)
                && t.chars().next().is_some_and(char::is_lowercase);
            if hyphen {
                text.pop();
            } else if gap < 0.0 || gap > 1.6 * pr.size.max(l.size).max(1.0) {
                paragraph_break(text);
            } else {
                text.push('\n');
            }
        }
        text.push_str(t);
        prev = Some(l);
        i += 1;
    }
}

/// Running headers and footers: the first and last two lines of a page whose key is on
/// at least a quarter of the pages (and three of them), as (page, line).
pub(crate) fn running_furniture(pages: &[Vec<Line>]) -> HashSet<(usize, usize)> {
    let mut drop: HashSet<(usize, usize)> = HashSet::new();
    let with_text = pages.iter().filter(|p| !p.is_empty()).count();
    if with_text >= 3 {
        let edge = |p: &Vec<Line>| -> Vec<usize> {
            let n = p.len();
            let mut v: Vec<usize> = (0..n.min(2)).chain(n.saturating_sub(2)..n).collect();
            v.dedup();
            v
        };
        let mut count: HashMap<String, usize> = HashMap::new();
        for p in pages {
            let keys: HashSet<String> =
                edge(p).iter().map(|&i| furniture_key(&p[i].text)).collect();
            for k in keys {
                *count.entry(k).or_default() += 1;
            }
        }
        // A quarter of the pages: running heads often alternate between left and
        // right pages (a title on one, the chapter on the other).
        let threshold = with_text.div_ceil(4).max(3);
        for (pi, p) in pages.iter().enumerate() {
            for i in edge(p) {
                if count
                    .get(&furniture_key(&p[i].text))
                    .is_some_and(|&c| c >= threshold)
                {
                    drop.insert((pi, i));
                }
            }
        }
    }
    drop
}

/// Lines joined with spaces, a word hyphenated at a line end joined.
fn join_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for t in lines {
        if out.is_empty() {
            out.push_str(t);
            continue;
        }
        let hyphen = out.ends_with('-')
            && out[..out.len() - 1]
                .chars()
                .next_back()
                .is_some_and(char::is_lowercase)
            && t.chars().next().is_some_and(char::is_lowercase);
        if hyphen {
            out.pop();
        } else {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// The body text's size and face, over the document and per page.
#[derive(Debug)]
pub(crate) struct BodyStyle {
    /// The most common size, weighted by characters.
    pub size: f32,
    /// The most common font among lines at that size.
    pub face: String,
    /// Per page: its own most common size when the page is set smaller than the
    /// document (enough text at one smaller size), else the document's.
    pub page: Vec<f32>,
}

impl BodyStyle {
    /// Characters at one size a page needs for its own body size.
    const PAGE_MIN_CHARS: usize = 400;

    pub(crate) fn of(pages: &[Vec<Line>], kept: &dyn Fn(usize, usize) -> bool) -> Self {
        let key = |s: f32| (s * 2.0).round() as i32;
        let top = |w: &HashMap<i32, usize>| {
            w.iter()
                .max_by_key(|&(&k, &n)| (n, -k))
                .map(|(&k, &n)| (k as f32 / 2.0, n))
        };
        let mut all: HashMap<i32, usize> = HashMap::new();
        let mut per_page: Vec<HashMap<i32, usize>> = vec![HashMap::new(); pages.len()];
        for (pi, p) in pages.iter().enumerate() {
            for (i, l) in p.iter().enumerate() {
                if kept(pi, i) {
                    let n = l.text.chars().filter(|c| !c.is_whitespace()).count();
                    *all.entry(key(l.size)).or_default() += n;
                    *per_page[pi].entry(key(l.size)).or_default() += n;
                }
            }
        }
        let size = top(&all).map_or(10.0, |(s, _)| s);
        let mut faces: HashMap<&str, usize> = HashMap::new();
        for (pi, p) in pages.iter().enumerate() {
            for (i, l) in p.iter().enumerate() {
                if kept(pi, i) && key(l.size) == key(size) {
                    *faces.entry(l.face.as_str()).or_default() += l.text.chars().count();
                }
            }
        }
        let face = faces
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
            .map(|(f, _)| f.to_string())
            .unwrap_or_default();
        // A page gets its own body size when it is set in a smaller size throughout:
        // enough text at that size and hardly any at the document's.
        let page = per_page
            .iter()
            .map(|w| {
                let total: usize = w.values().sum();
                let at_body = w.get(&key(size)).copied().unwrap_or(0);
                match top(w) {
                    Some((s, n))
                        if n >= Self::PAGE_MIN_CHARS && s < size - 0.25 && at_body * 10 < total =>
                    {
                        s
                    }
                    _ => size,
                }
            })
            .collect();
        BodyStyle { size, face, page }
    }
}

/// Table rows: (page, first line) → the row's cells, each the indices of its lines.
/// The lines of a row are consecutive in reading order.
pub(crate) type Rows = HashMap<(usize, usize), Vec<Vec<usize>>>;

/// Most lines in one cell of a table row.
const MAX_CELL_LINES: usize = 6;

/// Table rows from the layout: PDFium gives a table cell by cell, each cell's lines one
/// under another; a row is a run of such blocks that start at about the same height,
/// each to the right of the one before with a gutter between them.
pub(crate) fn table_rows(pages: &[Vec<Line>], kept: &dyn Fn(usize, usize) -> bool) -> Rows {
    let mut rows = Rows::new();
    for (pi, p) in pages.iter().enumerate() {
        // Blocks: consecutive lines going down the page at one left edge (continuation
        // lines may be indented a little).
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        for i in (0..p.len()).filter(|&i| kept(pi, i)) {
            let l = &p[i];
            let joins = blocks.last().is_some_and(|b| {
                let (first, last) = (&p[b[0]], &p[b[b.len() - 1]]);
                let gap = last.y - l.y;
                gap > 0.0
                    && gap <= 1.6 * last.size.max(l.size).max(1.0)
                    && l.x >= first.x - 2.0
                    && l.x <= first.x + 1.5 * first.size.max(1.0)
            });
            match blocks.last_mut() {
                Some(b) if joins => b.push(i),
                _ => blocks.push(vec![i]),
            }
        }
        let right = |b: &Vec<usize>| b.iter().map(|&k| p[k].x_end).fold(f32::MIN, f32::max);
        // Candidate rows as block ranges [k, m).
        let mut found: Vec<(usize, usize)> = Vec::new();
        let mut k = 0;
        while k < blocks.len() {
            let first = &p[blocks[k][0]];
            let mut edge = right(&blocks[k]);
            let mut m = k + 1;
            while m < blocks.len() {
                let b = &p[blocks[m][0]];
                let tol = first.size.min(b.size).max(1.0);
                let alike = first.size.max(b.size) <= 1.3 * tol;
                if alike && (b.y - first.y).abs() <= tol && b.x >= edge + 0.8 * tol {
                    edge = right(&blocks[m]);
                    m += 1;
                } else {
                    break;
                }
            }
            if m - k >= 2 && blocks[k..m].iter().all(|b| b.len() <= MAX_CELL_LINES) {
                found.push((k, m));
            }
            k = m;
        }
        // A table has two rows or more with as many cells, one right after the other
        // (a lone "row" is more likely two columns of text side by side).
        for (r, &(k, m)) in found.iter().enumerate() {
            let twin = |o: Option<&(usize, usize)>| {
                o.is_some_and(|&(k2, m2)| (m2 == k || m == k2) && m2 - k2 == m - k)
            };
            if twin(r.checked_sub(1).and_then(|q| found.get(q))) || twin(found.get(r + 1)) {
                rows.insert((pi, blocks[k][0]), blocks[k..m].to_vec());
            }
        }
    }
    rows
}

/// "Figure 3", "Table 2-1:", "Fig. 7.2": a caption's opening (a word, then a number).
fn caption_like(s: &str) -> bool {
    let mut words = s.split_whitespace();
    let (Some(w), Some(n)) = (words.next(), words.next()) else {
        return false;
    };
    let w = w.trim_end_matches('.');
    let n = n.trim_end_matches([':', '.']);
    w.chars().count() >= 3
        && w.chars().all(char::is_alphabetic)
        && n.starts_with(|c: char| c.is_ascii_digit())
        && n.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '.' | '–'))
}

/// Headings from the layout when there is no usable outline: lines set larger than the
/// body, bold lines standing alone, lines in another face than the body with space above
/// that lead into the text below, and numbered bold lines. Table cells, captions and
/// lines that do not lead into text below them (figure labels) are not headings.
fn layout_headings(
    pages: &[Vec<Line>],
    kept: &dyn Fn(usize, usize) -> bool,
    style: &BodyStyle,
    rows: &Rows,
) -> HashMap<(usize, usize), (u8, usize)> {
    let in_table: HashSet<(usize, usize)> = rows
        .iter()
        .flat_map(|(&(pi, _), cells)| cells.iter().flatten().map(move |&i| (pi, i)))
        .collect();
    let usable = |pi: usize, i: usize| kept(pi, i) && !in_table.contains(&(pi, i));
    // A heading leads into what follows: the next line is not just above it (figure
    // labels and diagram boxes go back up the page a little; a new column or a block
    // placed later in the file goes up a long way, three line heights or more).
    let leads_down = |pi: usize, k: usize| {
        let p = &pages[pi];
        (k + 1..p.len())
            .find(|&j| kept(pi, j) && p[j].text.chars().any(char::is_alphanumeric))
            .is_none_or(|j| {
                let up = p[j].y - p[k].y;
                up < 0.5 * p[k].size || up > 3.0 * p[k].size.max(p[j].size)
            })
    };
    // Size-based headings: (page, first line, lines, size).
    let mut sized: Vec<(usize, usize, usize, f32)> = Vec::new();
    for (pi, p) in pages.iter().enumerate() {
        let kept_here = |j: usize| kept(pi, j);
        let usable_here = |j: usize| usable(pi, j);
        let leads_down_here = |k: usize| leads_down(pi, k);
        for (i, n, size) in sized_runs(
            p,
            style,
            style.page[pi],
            &kept_here,
            &usable_here,
            &leads_down_here,
        ) {
            sized.push((pi, i, n, size));
        }
    }
    let mut heads = HashMap::new();
    let mut sizes: Vec<i32> = sized.iter().map(|s| (s.3 * 2.0).round() as i32).collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    for (pi, i, n, size) in sized {
        let rank = sizes
            .iter()
            .position(|&s| s == (size * 2.0).round() as i32)
            .unwrap_or(0);
        let level = numbering_depth(pages[pi][i].text.trim()).unwrap_or((rank + 1).min(6) as u8);
        heads.insert((pi, i), (level, n));
    }
    numbered_headings(pages, style, &usable, &leads_down, &mut heads);
    page_titles(pages, style, &usable, &mut heads);
    heads
}

/// The size-based heading runs of one page `p` (body size `local` there): lines set
/// larger than the body, bold lines standing alone, lines in another face than the body
/// with space above that lead into the text below; runs of up to three lines of one
/// size make one heading. Each as (first line, lines, size).
fn sized_runs(
    p: &[Line],
    style: &BodyStyle,
    local: f32,
    kept: &dyn Fn(usize) -> bool,
    usable: &dyn Fn(usize) -> bool,
    leads_down: &dyn Fn(usize) -> bool,
) -> Vec<(usize, usize, f32)> {
    let body = style.size;
    let mut sized = Vec::new();
    // Neighbouring kept lines with a letter or digit (stray marks do not count).
    let prev_of = |k: usize| {
        (0..k)
            .rev()
            .find(|&j| kept(j) && p[j].text.chars().any(char::is_alphanumeric))
    };
    let next_of = |k: usize| {
        (k + 1..p.len()).find(|&j| kept(j) && p[j].text.chars().any(char::is_alphanumeric))
    };
    // How far line b is below line a (negative when above).
    let drop_to = |a: usize, b: usize| p[a].y - p[b].y;
    let far = |g: Option<f32>, size: f32| g.is_none_or(|g| g < 0.0 || g > 1.8 * size);
    let alone = |k: usize| {
        far(prev_of(k).map(|j| drop_to(j, k)), p[k].size)
            && far(next_of(k).map(|j| drop_to(k, j)), p[k].size)
    };
    let space_above = |k: usize| far(prev_of(k).map(|j| drop_to(j, k)), p[k].size);
    let leads_in = |k: usize| {
        next_of(k).is_some_and(|j| {
            let g = drop_to(k, j);
            g > 0.0 && g <= 2.5 * p[k].size.max(1.0) && (p[j].face != p[k].face || !p[j].uniform)
        })
    };
    // The last heading run accepted on this page: its last line and size.
    let mut last_head: Option<(usize, f32)> = None;
    let mut i = 0;
    while i < p.len() {
        let l = &p[i];
        let t = l.text.trim();
        let chars = t.chars().count();
        let larger =
            l.size >= local * 1.12 && (local >= body - 0.25 || (l.size - body).abs() > 0.25);
        let bold_larger = l.bold && l.size >= local * 1.05;
        let weak = !larger && !bold_larger;
        let bold_alone = l.bold && l.size >= local * 0.95 && chars <= 80 && alone(i);
        let face_change = l.uniform
            && !l.face.is_empty()
            && l.face != style.face
            && l.size >= local * 0.95
            && chars <= 80
            && space_above(i)
            && leads_in(i);
        // A line set tight under a larger heading is its subtitle, not a heading.
        let subtitle = last_head.is_some_and(|(end, size)| {
            prev_of(i) == Some(end)
                && l.size < size - 0.25
                && drop_to(end, i) > 0.0
                && drop_to(end, i) < 1.3 * l.size
                && numbering_depth(t).is_none()
        });
        let candidate = usable(i)
            && !l.mono
            && t.chars().any(char::is_alphabetic)
            && (larger || bold_larger || bold_alone || face_change)
            && !(weak && caption_like(t))
            && !subtitle;
        if !candidate {
            i += 1;
            continue;
        }
        // Runs of up to three lines of the same size (or, for display sizes, a near
        // size one under another) make one heading.
        let mut j = i + 1;
        while j < p.len() && usable(j) && p[j].bold == l.bold && l.size >= local * 1.05 {
            let same = (p[j].size - l.size).abs() < 0.25;
            let ratio = p[j].size / l.size.max(0.1);
            let g = drop_to(j - 1, j);
            let display = l.size >= local * 1.5
                && (0.85..=1.18).contains(&ratio)
                && g > 0.0
                && g <= 1.6 * l.size.max(p[j].size);
            if !(same || display) {
                break;
            }
            j += 1;
        }
        let joined = (i..j)
            .map(|k| p[k].text.trim())
            .collect::<Vec<_>>()
            .join(" ");
        if j - i <= 3 && heading_like(&joined) && leads_down(j - 1) {
            sized.push((i, j - i, l.size));
            last_head = Some((j - 1, l.size));
        }
        i = j;
    }
    sized
}

/// Numbered headings in bold at about the body size, or a little larger, that no
/// earlier rule took.
fn numbered_headings(
    pages: &[Vec<Line>],
    style: &BodyStyle,
    usable: &dyn Fn(usize, usize) -> bool,
    leads_down: &dyn Fn(usize, usize) -> bool,
    heads: &mut HashMap<(usize, usize), (u8, usize)>,
) {
    for (pi, p) in pages.iter().enumerate() {
        let local = style.page[pi];
        for (i, l) in p.iter().enumerate() {
            let t = l.text.trim();
            if usable(pi, i)
                && !l.mono
                && !heads.contains_key(&(pi, i))
                && (l.bold && l.size >= local * 0.95 || l.size >= local * 1.05)
                && t.chars().count() <= 100
                && heading_like(t)
                && leads_down(pi, i)
            {
                if let Some(d) = numbering_depth(t) {
                    heads.insert((pi, i), (d, 1));
                }
            }
        }
    }
}

/// Page titles over tables of figures ("Lockheed Martin Corporation / Consolidated
/// Balance Sheets" above the statement): the first one to three lines of a page,
/// centred on its text, often at the body's size and weight, which the rules above
/// miss. A units line such as "(in millions)" ends the title. They sit deepest, so
/// each ends at the next heading.
fn page_titles(
    pages: &[Vec<Line>],
    style: &BodyStyle,
    usable: &dyn Fn(usize, usize) -> bool,
    heads: &mut HashMap<(usize, usize), (u8, usize)>,
) {
    let deepest = heads.values().map(|h| h.0).max().unwrap_or(1);
    for (pi, p) in pages.iter().enumerate() {
        let local = style.page[pi];
        let lines: Vec<usize> = (0..p.len())
            .filter(|&i| usable(pi, i) && p[i].text.chars().any(char::is_alphanumeric))
            .collect();
        let left = lines.iter().map(|&i| p[i].x).fold(f32::MAX, f32::min);
        let right = lines.iter().map(|&i| p[i].x_end).fold(f32::MIN, f32::max);
        let width = right - left;
        if lines.is_empty() || width <= 0.0 {
            continue;
        }
        let centred = |k: usize| {
            let l = &p[k];
            let mid = (l.x + l.x_end) / 2.0;
            (mid - (left + right) / 2.0).abs() <= 0.06 * width
                && l.x_end - l.x <= 0.7 * width
                && l.x >= left + 0.1 * width
        };
        let run: Vec<usize> = lines
            .iter()
            .copied()
            .take(3)
            .take_while(|&k| {
                let t = p[k].text.trim();
                centred(k)
                    && !p[k].mono
                    && p[k].size >= local * 0.95
                    && !t.starts_with('(')
                    && heading_like(t)
            })
            .collect();
        let (Some(&first), Some(&last)) = (run.first(), run.last()) else {
            continue;
        };
        let figures = lines
            .iter()
            .filter(|&&k| k > last)
            .take(8)
            .filter(|&&k| excerpt_core::trailing_figures(&p[k].text) >= 2)
            .count();
        if figures < 2
            || last - first + 1 != run.len()
            || run.iter().any(|&k| heads.contains_key(&(pi, k)))
        {
            continue;
        }
        heads.insert((pi, first), (deepest, run.len()));
    }
}

/// Ends the text with a blank line (nothing at the very start).
fn paragraph_break(text: &mut String) {
    if text.is_empty() {
        return;
    }
    while text.ends_with([' ', '\n']) && !text.ends_with("\n\n") {
        if text.ends_with(' ') {
            text.pop();
        } else {
            text.push('\n');
        }
    }
    if !text.ends_with('\n') {
        text.push_str("\n\n");
    }
}

/// Headings from the outline: each entry matched to a line (or up to three lines) of its
/// page, or of any page after the previous match when it names none.
fn outline_headings(
    pages: &[Vec<Line>],
    outline: &[OutlineEntry],
    kept: &dyn Fn(usize, usize) -> bool,
) -> HashMap<(usize, usize), (u8, usize)> {
    let mut heads = HashMap::new();
    let mut after = (0usize, 0usize);
    for e in outline {
        let key = match_key(&e.title);
        if key.is_empty() {
            continue;
        }
        let range: Vec<usize> = match e.page {
            Some(p) if p < pages.len() => vec![p],
            _ => (after.0..pages.len()).collect(),
        };
        'pages: for pi in range {
            let p = &pages[pi];
            let from = if pi == after.0 { after.1 } else { 0 };
            for i in from..p.len() {
                if !kept(pi, i) || heads.contains_key(&(pi, i)) {
                    continue;
                }
                let mut joined = String::new();
                for n in 1..=3.min(p.len() - i) {
                    joined.push_str(&match_key(&p[i + n - 1].text));
                    if joined == key {
                        heads.insert((pi, i), (e.level, n));
                        after = (pi, i + n);
                        break 'pages;
                    }
                    if !key.starts_with(&joined) {
                        break;
                    }
                }
            }
        }
    }
    heads
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, size: f32, y: f32) -> Line {
        Line {
            text: text.into(),
            size,
            y,
            ..Line::default()
        }
    }

    #[test]
    fn pages_partition_and_furniture_goes() {
        let page = |n: usize| {
            vec![
                line("ACME Annual Report", 8.0, 800.0),
                line(
                    &format!("{n} {}", ["Alpha", "Beta", "Gamma", "Delta"][n - 1]),
                    14.0,
                    760.0,
                ),
                line(
                    "Body text that is long enough to be the body of the page, and",
                    10.0,
                    740.0,
                ),
                line("continues here with a hyphen-", 10.0, 728.0),
                line(
                    &format!("ated word, {}.", ["one", "two", "three", "four"][n - 1]),
                    10.0,
                    716.0,
                ),
                line(&format!("{n}"), 8.0, 40.0),
            ]
        };
        let pages: Vec<Vec<Line>> = (1..=4).map(page).collect();
        let a = assemble(&pages, &[]);
        assert!(!a.text.contains("ACME"), "{}", a.text);
        assert!(a.text.contains("hyphenated word, two."), "{}", a.text);
        assert_eq!(a.headings.len(), 4);
        assert_eq!(a.headings[1].text, "2 Beta");
        assert_eq!(a.headings[1].level, 1);
        assert_eq!(a.pages[0].0, 0);
        assert_eq!(a.pages.last().unwrap().1, a.text.len());
        for w in a.pages.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
        assert!(!a.text.contains("\n4\n"));
        let h = &a.headings[2];
        assert!(a.text[h.start..].starts_with("3 Gamma\n\n"));
    }

    #[test]
    fn outline_titles_match_lines() {
        let pages = vec![vec![
            line("Intro", 10.0, 700.0),
            line("Some text.", 10.0, 690.0),
            line("Results and", 10.0, 600.0),
            line("Discussion", 10.0, 590.0),
            line("More text.", 10.0, 580.0),
        ]];
        let outline = vec![
            OutlineEntry {
                title: "Intro".into(),
                level: 1,
                page: Some(0),
            },
            OutlineEntry {
                title: "Results and Discussion".into(),
                level: 2,
                page: Some(0),
            },
        ];
        let a = assemble(&pages, &outline);
        assert_eq!(a.headings.len(), 2);
        assert_eq!(a.headings[1].text, "Results and Discussion");
        assert_eq!(a.headings[1].level, 2);
    }

    #[test]
    fn numbering() {
        assert_eq!(numbering_depth("3.2 Results"), Some(2));
        assert_eq!(numbering_depth("3. Results"), Some(1));
        assert_eq!(numbering_depth("A.1 Proofs"), Some(2));
        assert_eq!(numbering_depth("2019 was a year"), None);
        assert_eq!(numbering_depth("3 results"), None);
        assert_eq!(numbering_depth("(2) 감독당국의"), Some(2));
        assert_eq!(numbering_depth("1 들어가며"), Some(1));
        assert_eq!(furniture_key("Page 12 of 40"), "page # of #");
        assert_eq!(numbering_depth("124 Row and Column"), None);
    }

    #[test]
    fn captions_and_addresses() {
        assert!(caption_like("Figure 3-1 CREATE PERMISSION statement"));
        assert!(caption_like("Table 2: Results"));
        assert!(caption_like("Fig. 7.2 A nut"));
        assert!(!caption_like("Reading the table"));
        assert!(!caption_like("3 Results"));
        assert!(!heading_like("For more information: ibm.com/redbooks"));
        assert!(!heading_like("= #(pMLAST:<<MLAST>,<A,B>>)"));
        assert!(heading_like("Input/output"));
        assert!(heading_like("(2) Results"));
    }

    fn arb_line() -> impl proptest::strategy::Strategy<Value = Line> {
        use proptest::prelude::*;
        (
            "[a-zA-Z0-9 .:|(/@=-]{0,40}|[\u{600}-\u{6ff} ]{1,10}|[\u{ac00}-\u{ac20}]{1,8}",
            prop_oneof![Just(0.0f32), 6.0f32..40.0],
            any::<bool>(),
            // Baselines and left edges on a grid too, so that rows and columns line up.
            prop_oneof![-50.0f32..800.0, (0..60u8).prop_map(|k| f32::from(k) * 12.0)],
            prop_oneof![0.0f32..600.0, (0..6u8).prop_map(|k| f32::from(k) * 100.0)],
            0.0f32..200.0,
            0usize..3,
            any::<bool>(),
        )
            .prop_map(|(text, size, bold, y, x, w, face, uniform)| Line {
                text,
                size,
                bold,
                y,
                mono: face == 2 && bold,
                x,
                x_end: x + w,
                face: ["Times-Roman", "Times-Italic", "Courier"][face].into(),
                uniform,
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// Whatever lines PDFium gives, the text is built without a panic, the pages
        /// partition it and every heading starts inside it at a character boundary.
        #[test]
        fn any_lines_assemble(
            pages in proptest::collection::vec(proptest::collection::vec(arb_line(), 0..30), 0..5),
            with_outline in proptest::prelude::any::<bool>(),
        ) {
            let outline: Vec<OutlineEntry> = if with_outline {
                pages.iter().enumerate().flat_map(|(pi, p)| p.iter().take(2).map(move |l| OutlineEntry {
                    title: l.text.clone(),
                    level: 1 + (pi % 3) as u8,
                    page: Some(pi),
                })).collect()
            } else {
                Vec::new()
            };
            let a = assemble(&pages, &outline);
            proptest::prop_assert_eq!(a.pages.len(), pages.len());
            let mut at = 0;
            for &(s, e) in &a.pages {
                proptest::prop_assert_eq!(s, at);
                proptest::prop_assert!(e >= s);
                at = e;
            }
            proptest::prop_assert_eq!(at, a.text.len());
            for h in &a.headings {
                proptest::prop_assert!(h.start < a.text.len() && a.text.is_char_boundary(h.start));
            }
        }
    }

    fn placed(text: &str, x: f32, y: f32, face: &str) -> Line {
        Line {
            text: text.into(),
            size: 10.0,
            y,
            x,
            x_end: x + 5.0 * text.chars().count() as f32,
            face: face.into(),
            uniform: true,
            ..Line::default()
        }
    }

    #[test]
    fn page_titles_over_tables_of_figures_are_headings() {
        // A statement page: centred title lines at the body's size and weight, a units
        // line, then rows of figures across the page.
        let centred =
            |t: &str, y: f32| placed(t, 297.0 - 2.5 * t.chars().count() as f32, y, "Serif");
        let row = |label: &str, y: f32| {
            let t = format!("{label:.<70} $ 3,604 $ 3,160");
            placed(&t, 72.0, y, "Serif")
        };
        let statement = vec![
            centred("Acme Corporation", 760.0),
            centred("Consolidated Balance Sheets", 750.0),
            centred("(in millions)", 740.0),
            row("Cash and cash equivalents", 720.0),
            row("Receivables, net", 710.0),
            row("Inventories", 700.0),
        ];
        // The same title lines over prose: not a heading.
        let body =
            "Body text that runs the width of the page, long enough to be the body of it all.";
        let prose = vec![
            centred("Acme Corporation", 760.0),
            centred("Letter to Shareholders", 750.0),
            placed(body, 72.0, 730.0, "Serif"),
            placed(body, 72.0, 720.0, "Serif"),
            placed(body, 72.0, 710.0, "Serif"),
        ];
        // A left-aligned first line over figures: not a title.
        let left = vec![
            placed("Supplementary data", 72.0, 760.0, "Serif"),
            row("Cash and cash equivalents", 740.0),
            row("Receivables, net", 730.0),
        ];
        let a = assemble(&[statement, prose, left], &[]);
        let heads: Vec<&str> = a.headings.iter().map(|h| h.text.as_str()).collect();
        assert_eq!(
            heads,
            ["Acme Corporation Consolidated Balance Sheets"],
            "{}",
            a.text
        );
        assert!(
            a.text.contains("Balance Sheets\n\n(in millions)"),
            "{}",
            a.text
        );
    }

    #[test]
    fn face_change_headings_and_table_rows() {
        let body = "Body text set in the body face, long enough to be the body.";
        let mut page = vec![
            placed(body, 72.0, 700.0, "Times-Roman"),
            placed(body, 72.0, 688.0, "Times-Roman"),
            // Another face, space above, leading into the text below: a heading.
            placed("Elastic Stop Nut", 72.0, 663.0, "Times-Italic"),
            placed(body, 72.0, 649.0, "Times-Roman"),
            placed(body, 72.0, 637.0, "Times-Roman"),
            // Italic in the body's run of lines (no space above): not a heading.
            placed("an emphasised line", 72.0, 625.0, "Times-Italic"),
            placed(body, 72.0, 613.0, "Times-Roman"),
        ];
        // A table given cell by cell: a two-line first cell, then two cells to its right.
        for (r, (a, b, c, d)) in [
            ("Cork", "Ireland", "07:48", "14:02"),
            ("Brest", "France", "08:10", "14:30"),
        ]
        .into_iter()
        .enumerate()
        {
            let y = 580.0 - 30.0 * r as f32;
            page.push(placed(a, 72.0, y, "Times-Roman"));
            page.push(placed(b, 72.0, y - 12.0, "Times-Roman"));
            page.push(placed(c, 200.0, y, "Times-Roman"));
            page.push(placed(d, 300.0, y, "Times-Roman"));
        }
        page.push(placed(body, 72.0, 480.0, "Times-Roman"));
        let a = assemble(&[page], &[]);
        let heads: Vec<&str> = a.headings.iter().map(|h| h.text.as_str()).collect();
        assert_eq!(heads, ["Elastic Stop Nut"], "{}", a.text);
        assert!(
            a.text
                .contains("\n\nCork Ireland | 07:48 | 14:02\nBrest France | 08:10 | 14:30\n\n"),
            "{}",
            a.text
        );
    }
}
