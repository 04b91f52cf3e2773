//! Chunkers: from a [`ParsedDocument`] to a validated [`Document`] whose chunks partition
//! the text.

use excerpt_core::{
    content_hash, CharIndex, Chunk, ChunkerConfig, Document, Section, SectionId, TokenCounter,
};

use crate::parsed::ParsedDocument;
use crate::{split_sentences, IngestError};

/// Characters per token assumed by the token-budgeted chunkers when no
/// [`TokenCounter`] is given: `max_tokens` becomes a limit of `max_tokens * 4`
/// characters, and chunk `tokens` stay 0 (not counted).
pub const CHARS_PER_TOKEN_ESTIMATE: usize = 4;

/// Most characters a chunk may hold per token of its budget, whatever the tokenizer
/// counts. A word the tokenizer cannot split (a 20 MB string without spaces is one
/// unknown token to WordPiece) would otherwise make one chunk of any length: the model
/// reads only its first few hundred tokens, and everything after would be unreachable.
/// Real text runs 3 to 6 characters per token; 16 leaves room for the densest.
pub const MAX_CHARS_PER_TOKEN: usize = 16;

/// How [`chunk`] cuts a document: the chunker, the token counter, and the room to keep
/// free in every chunk's token budget for text indexed with the chunk.
///
/// `ChunkOptions::new(chunker)` (or [`Default`]) counts nothing and reserves nothing.
#[derive(Clone, Copy, Default)]
pub struct ChunkOptions<'a> {
    /// The chunker and its limit.
    pub chunker: ChunkerConfig,
    /// Counts tokens for the token-budgeted chunkers and fills every chunk's `tokens`.
    /// `None`: the limit is `max_tokens * CHARS_PER_TOKEN_ESTIMATE` characters and
    /// `tokens` stays 0.
    pub counter: Option<&'a dyn TokenCounter>,
    /// The index embeds a header with every chunk ([`excerpt_core::indexed_text`]): with
    /// a counter, the token budget of every chunk of the document shrinks by the tokens
    /// of its longest header, so header and chunk together still fit the model.
    pub headers: bool,
    /// Further tokens to keep free in every chunk's budget for other text indexed with
    /// it (the LLM-written context of `--contextualize`, capped at that many tokens).
    /// Applies to the token chunkers with a counter.
    pub extra_tokens: usize,
}

impl<'a> ChunkOptions<'a> {
    /// `chunker` without a counter, headers or extra tokens.
    pub fn new(chunker: ChunkerConfig) -> Self {
        ChunkOptions {
            chunker,
            ..ChunkOptions::default()
        }
    }

    /// Counts tokens with `counter` (or estimates them with `None`).
    pub fn counter(self, counter: Option<&'a dyn TokenCounter>) -> Self {
        ChunkOptions { counter, ..self }
    }

    /// Reserves room for the chunk header in every chunk's token budget.
    pub fn headers(self, headers: bool) -> Self {
        ChunkOptions { headers, ..self }
    }

    /// Reserves `extra_tokens` more tokens in every chunk's token budget.
    pub fn extra_tokens(self, extra_tokens: usize) -> Self {
        ChunkOptions {
            extra_tokens,
            ..self
        }
    }

    /// Tokens reserved in every chunk's budget for `parsed`: its longest header (with
    /// `headers` and a counter) plus `extra_tokens`.
    fn reserved_tokens(&self, parsed: &ParsedDocument) -> usize {
        let header_tokens = match (self.headers, self.counter) {
            (true, Some(c)) => std::iter::once(excerpt_core::header_text(&parsed.title, ""))
                .chain(
                    parsed
                        .sections
                        .iter()
                        .map(|s| excerpt_core::header_text(&parsed.title, &s.path_string())),
                )
                .map(|h| c.count(&h))
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        header_tokens.saturating_add(self.extra_tokens)
    }

    /// What the packing chunkers measure, with `reserved` tokens kept free: with a
    /// counter, `max_tokens` minus the counter's special tokens (at least 1), minus
    /// `reserved` but never below half of that (a giant title is truncated by the model
    /// rather than shredding the text); without one, characters.
    fn measure(&self, max_tokens: usize, reserved: usize) -> Measure<'a> {
        match self.counter {
            Some(c) => {
                let full = max_tokens.saturating_sub(c.special_tokens()).max(1);
                Measure::Tokens {
                    counter: c,
                    budget: full.saturating_sub(reserved).max(full / 2).max(1),
                }
            }
            None => Measure::Chars {
                limit: max_tokens.saturating_mul(CHARS_PER_TOKEN_ESTIMATE).max(1),
            },
        }
    }
}

/// A stretch of the text no chunk crosses: the text before the first heading or one
/// section's `own` range (byte offsets), with the innermost section holding it.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    section: Option<SectionId>,
}

/// One chunk before it becomes a [`Chunk`]: byte offsets, its token count when the
/// packer already counted it exactly, and its section.
#[derive(Debug, Clone, Copy)]
struct Piece {
    start: usize,
    end: usize,
    tokens: Option<usize>,
    section: Option<SectionId>,
}

/// Chunks a parsed document into a full [`Document`] that passes
/// [`Document::validate`].
///
/// The text is first cut into *regions*: the text before the first heading (no section)
/// and each section's `own` range. No chunk crosses a region boundary. Within a region:
///
/// - [`ChunkerConfig::Tokens`] and [`ChunkerConfig::Section`]: greedy packing. A chunk
///   takes the rest of the region when it fits; otherwise it ends at the farthest break
///   that fits, preferring (in order) a blank-line paragraph boundary, a line end, a
///   sentence end, the whitespace between words, then token starts and finally character
///   boundaries (a single giant word). Breaks lie after whitespace (whitespace belongs to
///   the chunk before it) and, for lines, at line starts (indentation stays with its
///   line). A higher-preference break is skipped when it would leave a chunk under 1/8
///   of the limit while a lower-preference break fills it better (so a heading line is
///   not left alone). Breaks strictly inside an atomic range (a code block) are not used
///   when the range fits in one chunk; larger ones are split, preferably at lines.
///   With a counter, chunk content is at most `max_tokens - counter.special_tokens()`
///   tokens (at least 1), less the tokens [`ChunkOptions::headers`] and
///   [`ChunkOptions::extra_tokens`] reserve (never less than half of it): each region is
///   tokenized once and candidate chunks measured with prefix counts over token offsets;
///   each chosen chunk is then counted once more exactly (and shrunk in the rare case
///   that tokenizing it alone gives more tokens). Without a counter the limit is
///   `max_tokens * CHARS_PER_TOKEN_ESTIMATE` characters. `Section` behaves as `Tokens`:
///   one chunk per region, split only when over the limit.
/// - [`ChunkerConfig::Chars`]: the same packing with a limit of `size` characters.
/// - [`ChunkerConfig::Sentence`]: one chunk per sentence (cut at region boundaries),
///   except that sentences inside an atomic range stay together.
///
/// A whitespace-only piece at the end of a region joins the chunk before it when the
/// limit allows. `tokens` is filled for every chunk when a counter is given. Empty text
/// gives no chunks and no sentences. The hash covers id, title, metadata (JSON), text and
/// the chunker config. The document's language is recorded in its metadata
/// ([`excerpt_analysis::LANGUAGE_KEY`]) unless the metadata names one: detected from the
/// text, after the hash is taken.
pub fn chunk(parsed: ParsedDocument, opts: &ChunkOptions<'_>) -> Result<Document, IngestError> {
    let reserved = opts.reserved_tokens(&parsed);
    let ParsedDocument {
        id,
        title,
        source,
        mut metadata,
        text,
        sections,
        atomic,
        pages,
    } = parsed;
    let invalid = |source: excerpt_core::Error| IngestError::Invalid {
        doc_id: id.clone(),
        source,
    };
    let idx = CharIndex::new(&text);
    let sentence_bytes = split_sentences(&text);
    let sentences = sentence_bytes
        .iter()
        .map(|&(a, b)| idx.range(a, b))
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    let atomics = normalise_atomics(&text, &atomic);
    let regions = regions(&text, &sections);

    let pieces = match opts.chunker {
        ChunkerConfig::Sentence => regions
            .iter()
            .flat_map(|r| {
                sentence_pieces(&text, r.start, r.end, &sentence_bytes, &atomics)
                    .into_iter()
                    .map(|(start, end)| Piece {
                        start,
                        end,
                        tokens: None,
                        section: r.section,
                    })
            })
            .collect(),
        ChunkerConfig::Tokens { max_tokens } | ChunkerConfig::Section { max_tokens } => {
            let measure = opts.measure(max_tokens, reserved);
            pack_all(&text, &idx, &regions, &sentence_bytes, &atomics, &measure)
        }
        ChunkerConfig::Chars { size } => {
            let measure = Measure::Chars { limit: size.max(1) };
            pack_all(&text, &idx, &regions, &sentence_bytes, &atomics, &measure)
        }
    };

    let mut chunks = Vec::with_capacity(pieces.len());
    for (i, piece) in pieces.into_iter().enumerate() {
        let tokens = match (piece.tokens, opts.counter) {
            (Some(n), _) => n,
            (None, Some(c)) => c.count(&text[piece.start..piece.end]),
            (None, None) => 0,
        };
        chunks.push(Chunk {
            ordinal: u32::try_from(i).unwrap_or(u32::MAX),
            range: idx.range(piece.start, piece.end).map_err(invalid)?,
            section: piece.section,
            tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
            context: None,
        });
    }

    let hash = document_hash(&id, &title, &metadata, &text, &opts.chunker);
    drop(idx);
    // The language is recorded after the hash: a document ingested before languages
    // were keeps its hash (and is not re-embedded); one set by the user is kept.
    if !metadata.contains_key(excerpt_analysis::LANGUAGE_KEY) {
        let language = excerpt_analysis::detect(&text);
        metadata.insert(
            excerpt_analysis::LANGUAGE_KEY.into(),
            serde_json::Value::String(language.code().into()),
        );
    }
    let doc = Document {
        id,
        title,
        source,
        metadata,
        text: text.into(),
        hash,
        sections,
        chunks,
        sentences,
        pages,
    };
    doc.validate().map_err(|source| IngestError::Invalid {
        doc_id: doc.id.clone(),
        source,
    })?;
    Ok(doc)
}

/// The content hash of a document: id, title, metadata (JSON), text and the chunker
/// config.
fn document_hash(
    id: &str,
    title: &str,
    metadata: &serde_json::Map<String, serde_json::Value>,
    text: &str,
    chunker: &ChunkerConfig,
) -> String {
    let meta_json = serde_json::to_string(metadata).unwrap_or_default();
    let config_str = chunker.to_string();
    content_hash(&[
        id.as_bytes(),
        title.as_bytes(),
        meta_json.as_bytes(),
        text.as_bytes(),
        config_str.as_bytes(),
    ])
}

/// Sorted, merged, in-bounds atomic ranges.
fn normalise_atomics(text: &str, atomic: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = atomic
        .iter()
        .map(|&(a, b)| (a.min(text.len()), b.min(text.len())))
        .filter(|&(a, b)| a < b)
        .collect();
    v.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a < last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The atomic range strictly containing `p` (`start < p < end`), if any.
fn containing_atomic(atomics: &[(usize, usize)], p: usize) -> Option<(usize, usize)> {
    let i = atomics.partition_point(|a| a.0 < p);
    (i > 0 && atomics[i - 1].1 > p).then(|| atomics[i - 1])
}

/// Cuts the text at every section's `own` boundary, each span with its innermost section.
fn regions(text: &str, sections: &[Section]) -> Vec<Span> {
    let len = text.len();
    let mut cuts = vec![0, len];
    for s in sections {
        for b in [s.own.byte_start, s.own.byte_end] {
            if b <= len && text.is_char_boundary(b) {
                cuts.push(b);
            }
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| (sections[i].own.byte_start, i));
    let mut out = Vec::with_capacity(cuts.len());
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let upto = order.partition_point(|&i| sections[i].own.byte_start <= a);
        let sec = order[..upto]
            .iter()
            .rev()
            .find(|&&i| sections[i].own.byte_end >= b)
            .and_then(|&i| SectionId::try_from(i).ok());
        out.push(Span {
            start: a,
            end: b,
            section: sec,
        });
    }
    out
}

/// Sentence chunks of one region: cut at sentence starts not inside an atomic range;
/// whitespace-only pieces joined to a neighbour.
fn sentence_pieces(
    text: &str,
    rs: usize,
    re: usize,
    sentences: &[(usize, usize)],
    atomics: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    let mut bounds = vec![rs];
    let from = sentences.partition_point(|s| s.0 <= rs);
    for &(s, _) in &sentences[from..] {
        if s >= re {
            break;
        }
        if containing_atomic(atomics, s).is_none() {
            bounds.push(s);
        }
    }
    bounds.push(re);
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(bounds.len());
    let mut lead: Option<usize> = None;
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        if text[a..b].trim().is_empty() {
            match out.last_mut() {
                Some(last) => last.1 = b,
                None => {
                    lead.get_or_insert(a);
                }
            }
        } else {
            out.push((lead.take().unwrap_or(a), b));
        }
    }
    if let Some(a) = lead {
        out.push((a, re));
    }
    out
}

/// What a chunk limit counts.
enum Measure<'a> {
    /// At most `limit` characters.
    Chars { limit: usize },
    /// At most `budget` tokens of `counter`.
    Tokens {
        counter: &'a dyn TokenCounter,
        budget: usize,
    },
}

impl Measure<'_> {
    fn limit(&self) -> usize {
        match self {
            Measure::Chars { limit } => *limit,
            Measure::Tokens { budget, .. } => *budget,
        }
    }
}

/// Break candidates over the whole text, by preference.
struct Candidates {
    /// After the last `\n` of a whitespace run holding two or more.
    para: Vec<usize>,
    /// After the last `\n` of any whitespace run holding one; also atomic starts/ends.
    line: Vec<usize>,
    /// Sentence ends.
    sentence: Vec<usize>,
    /// Ends of whitespace runs (starts of words).
    word: Vec<usize>,
}

impl Candidates {
    fn new(text: &str, sentences: &[(usize, usize)], atomics: &[(usize, usize)]) -> Self {
        let mut c = Candidates {
            para: Vec::new(),
            line: Vec::new(),
            sentence: sentences.iter().map(|s| s.1).collect(),
            word: Vec::new(),
        };
        let mut run_newlines = 0usize;
        let mut last_nl_end = 0usize;
        let mut in_run = false;
        for (i, ch) in text.char_indices() {
            if ch.is_whitespace() {
                in_run = true;
                if ch == '\n' {
                    run_newlines += 1;
                    last_nl_end = i + 1;
                }
            } else if in_run {
                c.word.push(i);
                if run_newlines >= 2 {
                    c.para.push(last_nl_end);
                }
                if run_newlines >= 1 {
                    c.line.push(last_nl_end);
                }
                in_run = false;
                run_newlines = 0;
            }
        }
        for &(a, b) in atomics {
            c.line.push(a);
            c.line.push(b);
        }
        c.line.sort_unstable();
        c.line.dedup();
        c
    }
}

/// One region's measuring context.
struct Region<'a> {
    text: &'a str,
    idx: &'a CharIndex<'a>,
    rs: usize,
    re: usize,
    /// The innermost section holding the region.
    section: Option<SectionId>,
    measure: &'a Measure<'a>,
    /// Absolute token starts and ends (ends at least start + 1), each sorted.
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Region<'_> {
    /// Size of `a..b` in the measure's units (tokens overlapping it, or characters).
    fn cost(&self, a: usize, b: usize) -> usize {
        match self.measure {
            Measure::Chars { .. } => {
                let ca = self.idx.char_offset(a).unwrap_or(0);
                let cb = self.idx.char_offset(b).unwrap_or(ca);
                cb.saturating_sub(ca)
            }
            Measure::Tokens { .. } => {
                let before_end = self.starts.partition_point(|&s| s < b);
                let done = self.ends.partition_point(|&e| e <= a);
                before_end.saturating_sub(done)
            }
        }
    }

    /// The farthest char boundary `p` (`s < p <= re`) with `cost(s, p) <= budget`; at
    /// least one character.
    fn reach(&self, s: usize, budget: usize) -> usize {
        let p = match self.measure {
            Measure::Chars { .. } => {
                let c = self.idx.char_offset(s).unwrap_or(0);
                self.idx
                    .byte_offset(c.saturating_add(budget))
                    .unwrap_or(self.text.len())
            }
            Measure::Tokens { .. } => {
                let k = budget.saturating_add(self.ends.partition_point(|&e| e <= s));
                let by_tokens = self.starts.get(k).copied().unwrap_or(self.re);
                let c = self.idx.char_offset(s).unwrap_or(0);
                let by_chars = self
                    .idx
                    .byte_offset(c.saturating_add(budget.saturating_mul(MAX_CHARS_PER_TOKEN)))
                    .unwrap_or(self.text.len());
                by_tokens.min(by_chars)
            }
        };
        let p = floor_boundary(self.text, p.min(self.re));
        if p <= s {
            next_boundary(self.text, s).min(self.re)
        } else {
            p
        }
    }

    fn atomic_fits(&self, a: (usize, usize), budget: usize) -> bool {
        let (s, e) = (a.0.max(self.rs), a.1.min(self.re));
        s >= e || self.cost(s, e) <= budget
    }

    /// Farthest candidate in `level` within `(s, reach]` that is not strictly inside an
    /// atomic range that fits.
    fn best_in(
        &self,
        level: &[usize],
        s: usize,
        reach: usize,
        atomics: &[(usize, usize)],
        budget: usize,
    ) -> Option<usize> {
        let mut hi = level.partition_point(|&x| x <= reach);
        while hi > 0 {
            let p = level[hi - 1];
            if p <= s {
                return None;
            }
            match containing_atomic(atomics, p) {
                Some(a) if self.atomic_fits(a, budget) => {
                    hi = level[..hi - 1].partition_point(|&x| x <= a.0);
                }
                _ => {
                    if self.text.is_char_boundary(p) {
                        return Some(p);
                    }
                    hi -= 1;
                }
            }
        }
        None
    }

    /// End of the chunk starting at `s` under `budget`.
    fn choose(
        &self,
        cands: &Candidates,
        atomics: &[(usize, usize)],
        s: usize,
        budget: usize,
    ) -> usize {
        let reach = self.reach(s, budget);
        if reach >= self.re {
            return self.re;
        }
        let min_fill = budget.div_ceil(8);
        let mut first_found = None;
        for level in [&cands.para, &cands.line, &cands.sentence, &cands.word] {
            if let Some(p) = self.best_in(level, s, reach, atomics, budget) {
                if self.cost(s, p) >= min_fill {
                    return p;
                }
                first_found.get_or_insert(p);
            }
        }
        if let Some(p) = first_found {
            return p;
        }
        if matches!(self.measure, Measure::Tokens { .. }) {
            if let Some(p) = self.best_in(&self.starts, s, reach, atomics, budget) {
                return p;
            }
        }
        reach
    }

    /// The next chunk from `s`: its end and, with a counter, its exact token count.
    fn next_chunk(
        &self,
        cands: &Candidates,
        atomics: &[(usize, usize)],
        s: usize,
    ) -> (usize, Option<usize>) {
        let full = self.measure.limit();
        let mut budget = full;
        let mut forced: Option<usize> = None;
        loop {
            let p = match forced {
                Some(f) => f,
                None => self.choose(cands, atomics, s, budget),
            };
            let Measure::Tokens { counter, .. } = self.measure else {
                return (p, None);
            };
            let n = counter.count(&self.text[s..p]);
            let one = next_boundary(self.text, s);
            if n <= full || p <= one {
                return (p, Some(n));
            }
            if forced.is_none() && budget > 1 {
                budget = budget.saturating_sub((n - full).max(1)).max(1);
            } else {
                forced = Some(floor_boundary(self.text, s + (p - s) / 2).max(one));
            }
        }
    }

    /// The region's chunks, in order.
    fn pack(&self, cands: &Candidates, atomics: &[(usize, usize)]) -> Vec<Piece> {
        let piece = |start, end, tokens| Piece {
            start,
            end,
            tokens,
            section: self.section,
        };
        let mut out: Vec<Piece> = Vec::new();
        let mut s = self.rs;
        while s < self.re {
            let (p, n) = self.next_chunk(cands, atomics, s);
            out.push(piece(s, p, n));
            s = p;
        }
        // A whitespace-only tail joins the chunk before it when that still fits.
        while out.len() >= 2 {
            let last = out[out.len() - 1];
            if !self.text[last.start..last.end].trim().is_empty() {
                break;
            }
            let prev = out[out.len() - 2];
            let merged = match self.measure {
                Measure::Chars { limit } => {
                    (self.cost(prev.start, last.end) <= *limit).then_some(None)
                }
                Measure::Tokens { counter, budget } => {
                    let n = counter.count(&self.text[prev.start..last.end]);
                    (n <= *budget).then_some(Some(n))
                }
            };
            match merged {
                Some(n) => {
                    out.pop();
                    if let Some(p) = out.last_mut() {
                        *p = piece(prev.start, last.end, n);
                    }
                }
                None => break,
            }
        }
        out
    }
}

/// Packs every region with `measure` (see [`chunk`] for the rules).
fn pack_all(
    text: &str,
    idx: &CharIndex<'_>,
    regions: &[Span],
    sentences: &[(usize, usize)],
    atomics: &[(usize, usize)],
    measure: &Measure<'_>,
) -> Vec<Piece> {
    let cands = Candidates::new(text, sentences, atomics);
    let mut pieces = Vec::new();
    for &Span {
        start: rs,
        end: re,
        section,
    } in regions
    {
        let (starts, ends) = match measure {
            Measure::Tokens { counter, .. } => {
                let mut starts = Vec::new();
                let mut ends = Vec::new();
                for (a, b) in counter.token_spans(&text[rs..re]) {
                    let a = (rs + a).min(re);
                    starts.push(a);
                    ends.push((rs + b).max(a + 1));
                }
                starts.sort_unstable();
                ends.sort_unstable();
                (starts, ends)
            }
            Measure::Chars { .. } => (Vec::new(), Vec::new()),
        };
        let region = Region {
            text,
            idx,
            rs,
            re,
            section,
            measure,
            starts,
            ends,
        };
        pieces.extend(region.pack(&cands, atomics));
    }
    pieces
}

fn floor_boundary(text: &str, mut p: usize) -> usize {
    p = p.min(text.len());
    while p > 0 && !text.is_char_boundary(p) {
        p -= 1;
    }
    p
}

fn next_boundary(text: &str, s: usize) -> usize {
    let mut p = s + 1;
    while p < text.len() && !text.is_char_boundary(p) {
        p += 1;
    }
    p.min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load_str, DocFormat};

    // Alphanumeric runs and single punctuation chars are tokens.
    use excerpt_testkit::WordCounter as Words;

    fn parsed(text: &str) -> ParsedDocument {
        ParsedDocument {
            id: "d".into(),
            title: "D".into(),
            source: None,
            metadata: Default::default(),
            text: text.into(),
            sections: Vec::new(),
            atomic: Vec::new(),
            pages: Vec::new(),
        }
    }

    fn md(text: &str) -> ParsedDocument {
        load_str(DocFormat::Markdown, "d.md", text)
            .unwrap()
            .documents
            .remove(0)
    }

    fn texts(doc: &Document) -> Vec<&str> {
        (0..doc.chunks.len()).map(|i| doc.chunk_text(i)).collect()
    }

    #[test]
    fn headers_shrink_the_token_budget() {
        // Header "Document: A long title / Section: Part" is 8 Words tokens (':' and '/'
        // count); with a 20-token limit and 2 special tokens, chunks get 10 tokens.
        let text = "# Part\n\n".to_string() + &"word ".repeat(60);
        let mut p = md(&text);
        p.title = "A long title".into();
        let cfg = ChunkerConfig::Tokens { max_tokens: 20 };
        let plain = chunk(p.clone(), &ChunkOptions::new(cfg).counter(Some(&Words))).unwrap();
        let with = chunk(
            p,
            &ChunkOptions::new(cfg).counter(Some(&Words)).headers(true),
        )
        .unwrap();
        assert!(plain.chunks.iter().all(|c| c.tokens <= 18));
        assert!(plain.chunks.iter().any(|c| c.tokens > 10));
        for c in &with.chunks {
            let header = excerpt_core::chunk_header(&with, c);
            assert!(
                Words.count(&header) + c.tokens as usize <= 18,
                "{header:?} + {}",
                c.tokens
            );
        }
        assert!(with.chunks.len() > plain.chunks.len());
    }

    #[test]
    fn allowance_shrinks_the_budget_further() {
        // 60-token limit, 2 special tokens: 58; the header is 9 Words tokens, so chunks
        // get 49 tokens of text, and 39 with an allowance of 10.
        let text = "# Part\n\n".to_string() + &"word ".repeat(200);
        let mut p = md(&text);
        p.title = "A long title".into();
        let cfg = ChunkerConfig::Tokens { max_tokens: 60 };
        let with_opts = ChunkOptions::new(cfg).counter(Some(&Words)).headers(true);
        let with = chunk(p.clone(), &with_opts).unwrap();
        let more = chunk(p.clone(), &with_opts.extra_tokens(10)).unwrap();
        for c in &more.chunks {
            let header = excerpt_core::chunk_header(&more, c);
            assert!(Words.count(&header) + 10 + c.tokens as usize <= 58);
        }
        assert!(with.chunks.iter().any(|c| c.tokens > 39));
        assert!(more.chunks.len() > with.chunks.len());
        // The floor: a huge allowance still leaves half the limit (29 tokens).
        let floor = chunk(p, &with_opts.extra_tokens(1000)).unwrap();
        assert!(floor.chunks.iter().all(|c| c.tokens <= 29));
        assert!(floor.chunks.iter().any(|c| c.tokens > 20));
    }

    #[test]
    fn empty_and_whitespace_texts() {
        for cfg in [
            ChunkerConfig::Tokens { max_tokens: 8 },
            ChunkerConfig::Chars { size: 8 },
            ChunkerConfig::Sentence,
            ChunkerConfig::Section { max_tokens: 8 },
        ] {
            let d = chunk(parsed(""), &ChunkOptions::new(cfg).counter(Some(&Words))).unwrap();
            assert!(d.chunks.is_empty() && d.sentences.is_empty());
            let d = chunk(parsed(" \n\n "), &ChunkOptions::new(cfg)).unwrap();
            assert_eq!(d.chunks.len(), 1);
        }
    }

    #[test]
    fn tokens_prefer_paragraphs_and_respect_budget() {
        let text =
            "one two three.\n\nfour five six seven.\n\neight nine ten eleven twelve thirteen.";
        // 6 tokens of content (8 minus 2 special).
        let d = chunk(
            parsed(text),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 8 }).counter(Some(&Words)),
        )
        .unwrap();
        assert_eq!(
            texts(&d),
            vec![
                "one two three.\n\n",
                "four five six seven.\n\n",
                "eight nine ten eleven twelve ",
                "thirteen."
            ]
        );
        assert_eq!(
            d.chunks.iter().map(|c| c.tokens).collect::<Vec<_>>(),
            vec![4, 5, 5, 2]
        );
        // Whole text fits: one chunk.
        let d = chunk(
            parsed(text),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 64 }).counter(Some(&Words)),
        )
        .unwrap();
        assert_eq!(d.chunks.len(), 1);
        assert_eq!(d.chunks[0].tokens, 16);
    }

    #[test]
    fn without_counter_four_chars_per_token() {
        let text = "aaaa bbbb cccc dddd";
        let d = chunk(
            parsed(text),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 3 }),
        )
        .unwrap();
        assert_eq!(texts(&d), vec!["aaaa bbbb ", "cccc dddd"]);
        assert!(d.chunks.iter().all(|c| c.tokens == 0));
    }

    #[test]
    fn giant_word_split_at_chars() {
        let text = "é".repeat(25);
        let d = chunk(
            parsed(&text),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 10 }),
        )
        .unwrap();
        assert_eq!(
            d.chunks
                .iter()
                .map(|c| c.range.char_len())
                .collect::<Vec<_>>(),
            vec![10, 10, 5]
        );
    }

    #[test]
    fn a_word_the_tokenizer_cannot_split_is_cut_by_characters() {
        // `Words` counts "xxxx...x" as one token, as WordPiece counts an over-long word
        // as one unknown token: the token limit alone would keep it in one chunk.
        let text = format!(
            "Before the blob.\n\n{}\n\nAfter the blob.",
            "x".repeat(100_000)
        );
        let d = chunk(
            parsed(&text),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 32 }).counter(Some(&Words)),
        )
        .unwrap();
        let cap = 32 * MAX_CHARS_PER_TOKEN;
        assert!(d.chunks.len() >= 100_000 / cap, "{} chunks", d.chunks.len());
        for c in &d.chunks {
            assert!(
                c.range.char_len() <= cap,
                "a chunk of {} chars",
                c.range.char_len()
            );
        }
        let last = d.chunks.last().unwrap();
        assert!(text[last.range.byte_start..last.range.byte_end].contains("After the blob"));
    }

    #[test]
    fn heading_not_left_alone() {
        let body = "word ".repeat(40);
        let d = chunk(
            md(&format!("# Title\n\n{body}")),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 22 }).counter(Some(&Words)),
        )
        .unwrap();
        assert!(d.chunk_text(0).starts_with("# Title\n\nword word"));
        assert!(d.chunks.iter().all(|c| c.tokens <= 20));
    }

    #[test]
    fn chunks_never_cross_sections() {
        let d = chunk(
            md("intro text\n\n# A\nalpha\n## B\nbeta\n# C\ngamma"),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 256 }).counter(Some(&Words)),
        )
        .unwrap();
        assert_eq!(
            texts(&d),
            vec![
                "intro text\n\n",
                "# A\nalpha\n",
                "## B\nbeta\n",
                "# C\ngamma"
            ]
        );
        let secs: Vec<_> = d.chunks.iter().map(|c| c.section).collect();
        assert_eq!(secs, vec![None, Some(0), Some(1), Some(2)]);
        assert_eq!(d.section_path(Some(1)), "A > B");
        let s = chunk(
            md("intro text\n\n# A\nalpha\n## B\nbeta\n# C\ngamma"),
            &ChunkOptions::new(ChunkerConfig::Section { max_tokens: 256 }),
        )
        .unwrap();
        assert_eq!(s.chunks.len(), 4);
    }

    #[test]
    fn code_block_kept_whole_when_it_fits() {
        let code = "```\nline one here\nline two here\nline three here\n```\n";
        let text = format!("Some intro words here.\n{code}after");
        let d = chunk(
            md(&text),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 70 }),
        )
        .unwrap();
        assert!(
            texts(&d).iter().any(|t| t.contains(code)),
            "{:?}",
            texts(&d)
        );
        // Too big for one chunk: split at lines inside.
        let d = chunk(
            md(&text),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 20 }),
        )
        .unwrap();
        assert!(texts(&d).contains(&"line two here\n"), "{:?}", texts(&d));
    }

    #[test]
    fn sentence_chunker() {
        let text = "First one. Second one!\n\nThird\n```\na. b. c.\n```\n";
        let d = chunk(
            md(text),
            &ChunkOptions::new(ChunkerConfig::Sentence).counter(Some(&Words)),
        )
        .unwrap();
        assert_eq!(
            texts(&d),
            vec![
                "First one. ",
                "Second one!\n\n",
                "Third\n",
                "```\na. b. c.\n```\n"
            ]
        );
        assert_eq!(d.chunks[0].tokens, 3);
    }

    #[test]
    fn whitespace_tail_joins_previous() {
        let text = format!("abcdefgh{}", " ".repeat(3));
        let d = chunk(
            parsed(&text),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 9 }),
        )
        .unwrap();
        // 11 chars cannot be one chunk; the tail stays separate only because it must.
        assert_eq!(d.chunks.len(), 2);
        let d = chunk(
            parsed("abc def   "),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 10 }),
        )
        .unwrap();
        assert_eq!(texts(&d), vec!["abc def   "]);
    }

    #[test]
    fn hash_depends_on_config_and_content() {
        let a = chunk(
            parsed("x y"),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 10 }),
        )
        .unwrap();
        let b = chunk(
            parsed("x y"),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 11 }),
        )
        .unwrap();
        let c = chunk(
            parsed("x y"),
            &ChunkOptions::new(ChunkerConfig::Chars { size: 10 }),
        )
        .unwrap();
        assert_ne!(a.hash, b.hash);
        assert_eq!(a.hash, c.hash);
    }

    #[test]
    fn tiny_token_budget_terminates() {
        let d = chunk(
            parsed("a, b; c!! dd"),
            &ChunkOptions::new(ChunkerConfig::Tokens { max_tokens: 0 }).counter(Some(&Words)),
        )
        .unwrap();
        assert!(d.chunks.iter().all(|c| c.tokens <= 1));
    }
}
