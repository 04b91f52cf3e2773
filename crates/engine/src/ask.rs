//! Answers with checked citations: [`Engine::ask`] retrieves a context, numbers its
//! pieces `[1]`, `[2]`… in a prompt ([`ask_prompt`]) that asks an LLM for claims cited
//! by those numbers (and to say so when the pieces hold no answer), streams the answer,
//! then checks every citation ([`check_citations`]): a number that names no piece, or a
//! quoted phrase that is not in the piece it cites, is reported as [`Unsupported`],
//! never passed on silently.
//!
//! Which quotes a citation covers: the quoted phrases (`"…"` or `“…”`) of the same
//! sentence before the citation, after any earlier citation in it. A quote passes when
//! it is in one of the pieces its citation names, compared without regard to case,
//! runs of whitespace or the style of quotation marks; its exact offsets in the
//! document are then reported with the citation ([`QuoteSpan`]).

use std::ops::ControlFlow;
use std::time::Instant;

use excerpt_context::{Context, Piece, Timings};
use excerpt_embed::{ChatClient, ChatConfig};
use serde::Serialize;

use crate::{Engine, EngineError, QueryRequest};

/// What the model is told to answer, word for word, when the pieces hold no answer.
/// An answer containing it is reported as [`Answer::no_answer`].
pub const NO_ANSWER: &str = "The context does not answer this question.";

/// How [`Engine::ask`] asks.
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// The chat endpoint and model (retries, timeout and key as configured there).
    pub chat: ChatConfig,
    /// Ask the server to stream the answer (server-sent events); off: one response.
    pub stream: bool,
}

impl AskOptions {
    /// Streaming answers from `chat`.
    pub fn new(chat: ChatConfig) -> Self {
        AskOptions { chat, stream: true }
    }
}

/// A cited piece, once per piece however often it is cited.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Citation {
    /// The piece's number in the prompt (from 1).
    pub n: usize,
    /// Its document.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// Heading path of the section the piece starts in.
    pub section: String,
    /// Character offset of the piece in the document.
    pub start: usize,
    /// End of the piece (exclusive).
    pub end: usize,
    /// The piece's text.
    pub text: String,
    /// The page (1-based) the piece starts on, for paged documents (PDF).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_start: Option<u32>,
    /// The page (1-based) the piece ends on, for paged documents (PDF).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_end: Option<u32>,
    /// The quoted phrases found in the piece, with their exact document offsets.
    pub quotes: Vec<QuoteSpan>,
}

/// A quoted phrase of the answer located in the document.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuoteSpan {
    /// The document's own characters start..end (which may differ from the quote in
    /// case or whitespace).
    pub text: String,
    /// Character offset in the document.
    pub start: usize,
    /// End (exclusive).
    pub end: usize,
}

/// Why a citation is not supported.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsupportedReason {
    /// The number names no piece of the context.
    NoSuchPiece,
    /// A quoted phrase before the citation is in none of the pieces it names.
    QuoteNotInPiece,
}

/// A citation the check flags.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unsupported {
    /// Why.
    pub reason: UnsupportedReason,
    /// The piece numbers of the citation (`[2][5]` → 2, 5).
    pub n: Vec<usize>,
    /// The quoted phrase, for [`UnsupportedReason::QuoteNotInPiece`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// Character offset of the citation in the answer.
    pub at: usize,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let marks: String = self.n.iter().map(|n| format!("[{n}]")).collect();
        match (self.reason, &self.quote) {
            (UnsupportedReason::QuoteNotInPiece, Some(q)) => {
                write!(f, "{marks}: the quote \"{q}\" is not in the cited text")
            }
            _ => write!(f, "{marks}: no such piece in the context"),
        }
    }
}

/// The outcome of [`check_citations`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CitationCheck {
    /// The pieces cited, by number.
    pub citations: Vec<Citation>,
    /// The citations flagged, in answer order.
    pub unsupported: Vec<Unsupported>,
}

/// Token usage and timings of one answer.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AskUsage {
    /// Prompt tokens, as the server reported them.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens, as the server reported them.
    pub completion_tokens: Option<u64>,
    /// Seconds spent retrieving and assembling the context.
    pub retrieval_seconds: f64,
    /// Seconds from sending the prompt to the first text of the answer.
    pub first_token_seconds: Option<f64>,
    /// Seconds from sending the prompt to the end of the answer.
    pub answer_seconds: f64,
}

/// An answer with its sources.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The question.
    pub question: String,
    /// The model's answer as it wrote it.
    pub answer: String,
    /// Whether the model said the context holds no answer ([`NO_ANSWER`]), or the
    /// context was empty and no model was asked.
    pub no_answer: bool,
    /// The pieces the answer cites.
    pub citations: Vec<Citation>,
    /// Citations that the context does not support.
    pub unsupported: Vec<Unsupported>,
    /// Every piece of the context, piece `n` at position `n - 1`.
    pub pieces: Vec<Piece>,
    /// The strategy that assembled the context.
    pub strategy: String,
    /// The chat model.
    pub model: String,
    /// Why the server stopped (`stop`, `length`, ...), when it said.
    pub finish_reason: Option<String>,
    /// Tokens and timings.
    pub usage: AskUsage,
    /// Where the context's time went, stage by stage, when the request asked for it
    /// (`"timings": true`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
}

/// The system and user messages asking for an answer to `question` from `pieces`,
/// numbered from 1 in order, each headed by its document, section and character range.
pub fn ask_prompt(question: &str, pieces: &[Piece]) -> (String, String) {
    let system = format!(
        "You answer questions using only the numbered context pieces the user gives you. \
After every claim, cite the piece or pieces that support it by number in square brackets, \
like [1] or [2][3]. When you quote, copy the words exactly, inside double quotes, followed by \
the citation of the piece they come from. Use no outside knowledge. If the pieces do not \
contain the answer, reply exactly: {NO_ANSWER}"
    );
    let mut user = String::from("Context pieces:\n");
    for (i, p) in pieces.iter().enumerate() {
        user.push_str(&format!("\n[{}] {} — {}", i + 1, p.doc_id, p.title));
        if !p.section.is_empty() {
            user.push_str(&format!(" › {}", p.section));
        }
        user.push_str(&format!(" (characters {}–{})\n", p.start, p.end));
        user.push_str(p.text.trim_end());
        user.push('\n');
    }
    user.push_str(&format!("\nQuestion: {question}"));
    (system, user)
}

/// A run of citation marks in an answer: `[1]`, `[1, 3]`, `[2][4]`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marks {
    /// Character offset of the first `[`.
    at: usize,
    /// Character offset just past the last `]`.
    end: usize,
    /// The numbers, in order.
    numbers: Vec<usize>,
}

/// The citation marks of `answer`, adjacent marks (`[1][2]`, `[1] [2]`) merged.
fn find_marks(chars: &[char]) -> Vec<Marks> {
    let mut out: Vec<Marks> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '[' {
            i += 1;
            continue;
        }
        let close = chars[i + 1..]
            .iter()
            .take(64)
            .position(|&c| c == ']')
            .map(|p| i + 1 + p);
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let inner: String = chars[i + 1..close].iter().collect();
        let valid = inner.chars().any(|c| c.is_ascii_digit())
            && inner
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, ',' | ';' | ' '));
        if !valid {
            i += 1;
            continue;
        }
        let numbers: Vec<usize> = inner
            .split([',', ';', ' '])
            .filter_map(|s| s.parse().ok())
            .collect();
        let adjacent = out
            .last()
            .is_some_and(|m| chars[m.end..i].iter().all(|c| *c == ' ') && i - m.end <= 1);
        match out.last_mut() {
            Some(m) if adjacent => {
                m.numbers.extend(numbers);
                m.end = close + 1;
            }
            _ => out.push(Marks {
                at: i,
                end: close + 1,
                numbers,
            }),
        }
        i = close + 1;
    }
    out
}

/// Whether `c` opens or closes a quotation.
fn is_quote_mark(c: char) -> bool {
    matches!(c, '"' | '“' | '”' | '„')
}

/// The quoted phrases in `chars[from..to]` that belong to the citation at `to`: those
/// after the last sentence end outside quotes.
fn quotes_before(chars: &[char], from: usize, to: usize) -> Vec<String> {
    let mut quotes = Vec::new();
    let mut open: Option<usize> = None;
    for i in from..to {
        let c = chars[i];
        if is_quote_mark(c) {
            match open {
                None => open = Some(i + 1),
                Some(s) => {
                    let q: String = chars[s..i].iter().collect();
                    let q = q.trim().trim_end_matches([',', '.']).trim().to_string();
                    if !q.is_empty() {
                        quotes.push(q);
                    }
                    open = None;
                }
            }
        } else if open.is_none()
            && matches!(c, '.' | '!' | '?' | '\n')
            && chars.get(i + 1).is_none_or(|n| n.is_whitespace())
        {
            // A new sentence: earlier quotes belong to it, not to this citation.
            quotes.clear();
        }
    }
    quotes
}

/// A text folded for comparison: lower case, whitespace runs as one space, curly
/// quotes and apostrophes straight; with, for every folded character, the character
/// offset it came from.
fn fold(text: &str) -> (Vec<char>, Vec<usize>) {
    let mut out = Vec::new();
    let mut from = Vec::new();
    let mut last_space = true;
    for (i, c) in text.chars().enumerate() {
        if c.is_whitespace() {
            if !last_space {
                out.push(' ');
                from.push(i);
                last_space = true;
            }
            continue;
        }
        last_space = false;
        let c = match c {
            '“' | '”' | '„' => '"',
            '‘' | '’' => '\'',
            c => c,
        };
        for l in c.to_lowercase() {
            out.push(l);
            from.push(i);
        }
    }
    if out.last() == Some(&' ') {
        out.pop();
        from.pop();
    }
    (out, from)
}

/// Where `quote` is in `piece`, as a span of the piece's document; `None` when absent.
fn locate(quote: &str, piece: &Piece) -> Option<QuoteSpan> {
    let (needle, _) = fold(quote);
    if needle.is_empty() {
        return None;
    }
    let (hay, from) = fold(&piece.text);
    let pos = hay
        .windows(needle.len())
        .position(|w| w == needle.as_slice())?;
    let first = from[pos];
    let last = from[pos + needle.len() - 1];
    let text: String = piece
        .text
        .chars()
        .skip(first)
        .take(last + 1 - first)
        .collect();
    Some(QuoteSpan {
        text,
        start: piece.start + first,
        end: piece.start + last + 1,
    })
}

/// Checks the citations of `answer` against the context's `pieces` (piece `n` is
/// `pieces[n - 1]`): every cited piece once, with the quotes found in it, and every
/// citation naming no piece or quoting what its pieces do not say.
pub fn check_citations(answer: &str, pieces: &[Piece]) -> CitationCheck {
    let chars: Vec<char> = answer.chars().collect();
    let mut check = CitationCheck::default();
    let mut cited: Vec<Citation> = Vec::new();
    let mut from = 0;
    for marks in find_marks(&chars) {
        let quotes = quotes_before(&chars, from, marks.at);
        from = marks.end;
        let mut valid = Vec::new();
        for &n in &marks.numbers {
            match n.checked_sub(1).and_then(|i| pieces.get(i)) {
                Some(p) => valid.push((n, p)),
                None => check.unsupported.push(Unsupported {
                    reason: UnsupportedReason::NoSuchPiece,
                    n: vec![n],
                    quote: None,
                    at: marks.at,
                }),
            }
        }
        for &(n, p) in &valid {
            if !cited.iter().any(|c| c.n == n) {
                cited.push(Citation {
                    n,
                    doc_id: p.doc_id.clone(),
                    title: p.title.clone(),
                    section: p.section.clone(),
                    start: p.start,
                    end: p.end,
                    text: p.text.clone(),
                    page_start: p.page_start,
                    page_end: p.page_end,
                    quotes: Vec::new(),
                });
            }
        }
        if valid.is_empty() {
            continue;
        }
        for quote in quotes {
            let found = valid
                .iter()
                .find_map(|&(n, p)| locate(&quote, p).map(|span| (n, span)));
            match found {
                Some((n, span)) => {
                    if let Some(c) = cited.iter_mut().find(|c| c.n == n) {
                        if !c.quotes.contains(&span) {
                            c.quotes.push(span);
                        }
                    }
                }
                None => check.unsupported.push(Unsupported {
                    reason: UnsupportedReason::QuoteNotInPiece,
                    n: valid.iter().map(|&(n, _)| n).collect(),
                    quote: Some(quote),
                    at: marks.at,
                }),
            }
        }
    }
    cited.sort_by_key(|c| c.n);
    check.citations = cited;
    check
}

/// Whether `answer` says the context holds no answer.
fn says_no_answer(answer: &str) -> bool {
    let (a, _) = fold(answer);
    let (n, _) = fold(NO_ANSWER.trim_end_matches('.'));
    a.windows(n.len()).any(|w| w == n.as_slice())
}

impl Engine {
    /// Answers `req.text` from the context `req` retrieves: the pieces are numbered in
    /// a prompt ([`ask_prompt`]), the chat model's answer is handed to `on_delta` as it
    /// arrives (all at once without [`AskOptions::stream`]), and its citations are
    /// checked ([`check_citations`]).
    ///
    /// `on_delta` answers [`ControlFlow::Break`] when nobody wants the rest (the client
    /// went away, or its time is up): the model's stream is closed at once, so it stops
    /// spending tokens, and the result is [`EngineError::Cancelled`].
    ///
    /// An empty context asks no model: the answer is [`NO_ANSWER`]. A chat endpoint
    /// that fails after its retries is [`EngineError::Answer`].
    pub fn ask(
        &self,
        req: &QueryRequest,
        opts: &AskOptions,
        on_delta: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Answer, EngineError> {
        let model = opts.chat.endpoint.model.trim().to_string();
        let failed = |source| EngineError::Answer {
            model: model.clone(),
            source,
        };
        // A bad endpoint fails before any retrieval work.
        let client = ChatClient::new(opts.chat.clone()).map_err(failed)?;
        let t = Instant::now();
        let ctx: Context = self.query(req)?;
        let mut usage = AskUsage {
            retrieval_seconds: t.elapsed().as_secs_f64(),
            ..AskUsage::default()
        };
        let mut answer = Answer {
            question: req.text.clone(),
            answer: String::new(),
            no_answer: false,
            citations: Vec::new(),
            unsupported: Vec::new(),
            pieces: Vec::new(),
            strategy: ctx.strategy.clone(),
            model: model.clone(),
            finish_reason: None,
            usage: AskUsage::default(),
            timings: ctx.timings,
        };
        if ctx.pieces.is_empty() {
            // Nothing is left to stop: no model was asked.
            let _ = on_delta(NO_ANSWER);
            answer.answer = NO_ANSWER.to_string();
            answer.no_answer = true;
            answer.usage = usage;
            return Ok(answer);
        }
        let (system, user) = ask_prompt(&req.text, &ctx.pieces);
        let t = Instant::now();
        let mut first: Option<f64> = None;
        let mut stopped = false;
        let mut deliver = |d: &str| {
            first.get_or_insert_with(|| t.elapsed().as_secs_f64());
            let flow = on_delta(d);
            stopped |= flow.is_break();
            flow
        };
        let response = if opts.stream {
            client.complete_streaming(Some(&system), &user, &mut deliver)
        } else {
            client.complete(Some(&system), &user).inspect(|r| {
                let _ = deliver(&r.text);
            })
        }
        .map_err(failed)?;
        if stopped {
            return Err(EngineError::Cancelled);
        }
        usage.answer_seconds = t.elapsed().as_secs_f64();
        usage.first_token_seconds = first;
        usage.prompt_tokens = response.prompt_tokens;
        usage.completion_tokens = response.completion_tokens;
        let check = check_citations(&response.text, &ctx.pieces);
        answer.no_answer = says_no_answer(&response.text);
        answer.answer = response.text;
        answer.finish_reason = response.finish_reason;
        answer.citations = check.citations;
        answer.unsupported = check.unsupported;
        answer.pieces = ctx.pieces;
        answer.usage = usage;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(doc: &str, start: usize, text: &str) -> Piece {
        Piece {
            doc_id: doc.into(),
            title: doc.to_uppercase(),
            section: "Intro".into(),
            start,
            end: start + text.chars().count(),
            first_chunk: 0,
            last_chunk: 0,
            text: text.into(),
            score: 1.0,
            relevance: 1.0,
            tokens: 10,
            hits: vec![0],
            page_start: None,
            page_end: None,
        }
    }

    fn pieces() -> Vec<Piece> {
        vec![
            piece(
                "kettle",
                100,
                "The brass kettle whistles at exactly\nninety-eight degrees.",
            ),
            piece("heron", 0, "The grey heron nests in tall alder trees."),
        ]
    }

    #[test]
    fn the_prompt_numbers_the_pieces_and_names_their_sources() {
        let (system, user) = ask_prompt("When does it whistle?", &pieces());
        assert!(system.contains("[1]") && system.contains(NO_ANSWER));
        assert!(user.contains("[1] kettle — KETTLE › Intro (characters 100–158)\nThe brass"));
        assert!(user.contains("[2] heron — HERON"));
        assert!(user.ends_with("\nQuestion: When does it whistle?"));
    }

    #[test]
    fn marks_are_found_and_adjacent_ones_merged() {
        let chars: Vec<char> = "a [1] b [2][3] c [4, 5] d [x] [link](u) e [2023"
            .chars()
            .collect();
        let numbers: Vec<Vec<usize>> = find_marks(&chars).into_iter().map(|m| m.numbers).collect();
        assert_eq!(numbers, vec![vec![1], vec![2, 3], vec![4, 5]]);
    }

    #[test]
    fn supported_citations_list_each_piece_once_with_located_quotes() {
        let answer = "It whistles at \u{201c}exactly ninety-eight degrees\u{201d} [1]. \
                      Herons nest in alders [2][1]; again [1].";
        let check = check_citations(answer, &pieces());
        assert_eq!(check.unsupported, vec![]);
        let ns: Vec<usize> = check.citations.iter().map(|c| c.n).collect();
        assert_eq!(ns, [1, 2]);
        let kettle = &check.citations[0];
        assert_eq!(kettle.doc_id, "kettle");
        // The quote spans a line break in the source: found, with exact offsets.
        assert_eq!(
            kettle.quotes,
            vec![QuoteSpan {
                text: "exactly\nninety-eight degrees".into(),
                start: 100 + 29,
                end: 100 + 57,
            }]
        );
    }

    #[test]
    fn citations_carry_the_pages_of_their_piece() {
        let mut ps = pieces();
        ps[1].page_start = Some(3);
        ps[1].page_end = Some(4);
        let check = check_citations("Herons nest in alders [2]. It whistles [1].", &ps);
        let pages: Vec<(usize, Option<u32>, Option<u32>)> = check
            .citations
            .iter()
            .map(|c| (c.n, c.page_start, c.page_end))
            .collect();
        assert_eq!(pages, vec![(1, None, None), (2, Some(3), Some(4))]);
    }

    #[test]
    fn a_missing_piece_and_a_quote_not_in_its_piece_are_flagged() {
        let answer = "Kettles whistle at \"ninety degrees\" [1]. Herons fly south [7]. \
                      He said \"brass kettle\". Herons nest \"in tall alder trees\" [2].";
        let check = check_citations(answer, &pieces());
        assert_eq!(
            check.unsupported,
            vec![
                Unsupported {
                    reason: UnsupportedReason::QuoteNotInPiece,
                    n: vec![1],
                    quote: Some("ninety degrees".into()),
                    at: 36,
                },
                Unsupported {
                    reason: UnsupportedReason::NoSuchPiece,
                    n: vec![7],
                    quote: None,
                    at: 58,
                },
            ]
        );
        // "brass kettle" belongs to an uncited sentence: not checked against [2].
        assert_eq!(check.citations.len(), 2);
        assert_eq!(check.citations[1].quotes.len(), 1);
        assert_eq!(
            check.unsupported[0].to_string(),
            "[1]: the quote \"ninety degrees\" is not in the cited text"
        );
        assert_eq!(
            check.unsupported[1].to_string(),
            "[7]: no such piece in the context"
        );
        // [0] names no piece either.
        let zero = check_citations("x [0]", &pieces());
        assert_eq!(zero.unsupported[0].reason, UnsupportedReason::NoSuchPiece);
    }

    #[test]
    fn the_no_answer_phrase_is_recognised() {
        assert!(says_no_answer("The context does not answer this question."));
        assert!(says_no_answer(
            "Sorry. the context does not  answer this question"
        ));
        assert!(!says_no_answer("It whistles at 98 degrees [1]."));
    }
}
