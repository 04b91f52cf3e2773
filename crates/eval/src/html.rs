//! `excerpt eval --html OUT.html`: the evaluation report as one self-contained HTML
//! page: the run's figures per strategy and budget (as `report.json` has them), the
//! recall-vs-budget chart, a list of misses (for each budget and ordered pair of
//! strategies, the questions where the first lost to the second by more than
//! [`MISS_MARGIN`]), and per question its text, the gold evidence and every strategy's
//! pieces at every budget with the evidence highlighted in them.
//!
//! No script at all: the misses are static lists of links to the questions' anchors, and
//! the pieces sit in `<details>` elements, so the page needs nothing but a browser and
//! its own bytes. A Content-Security-Policy meta tag forbids every script, connection and
//! external load (the chart is an `<img>` with a `data:` URI). Every text, title, id and
//! query goes through [`escape_html`], which also shows bidi embedding, override and
//! isolate controls as visible markers; texts are in `unicode-bidi: isolate` boxes too.

use std::fmt::Write as _;

use crate::report::{EvalReport, Metrics};

/// A question is listed as a miss of strategy A against strategy B at a budget when its
/// recall under B exceeds its recall under A by more than this.
pub const MISS_MARGIN: f64 = 0.1;

/// One gold evidence item of a question, as shown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HtmlEvidence {
    /// The document.
    pub doc_id: String,
    /// Character span `[start, end)` in the document (span-format sets).
    pub span: Option<(i64, i64)>,
    /// 1-based page (page-format sets).
    pub page: Option<i64>,
    /// The evidence text (the corpus slice, or the annotators' extract).
    pub text: String,
}

/// One returned piece.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HtmlPiece {
    /// The document.
    pub doc_id: String,
    /// Character offsets `[start, end)` in the document.
    pub start: usize,
    /// End offset (exclusive).
    pub end: usize,
    /// The piece's text (the corpus slice).
    pub text: String,
}

/// The context one strategy gave at one budget.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HtmlRun {
    /// The strategy's label.
    pub strategy: String,
    /// The LLM-token budget.
    pub budget: usize,
    /// Share of the evidence characters the whole context covers.
    pub recall: f64,
    /// The same within the first budget × 4 characters.
    pub recall_at_chars: f64,
    /// LLM tokens of the context.
    pub tokens: usize,
    /// The pieces, in context order.
    pub pieces: Vec<HtmlPiece>,
}

/// One question with every context it got (a run whose assembly failed is absent).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HtmlQuestion {
    /// The query id.
    pub id: String,
    /// The query text.
    pub query: String,
    /// The gold evidence.
    pub evidence: Vec<HtmlEvidence>,
    /// The contexts, in run order.
    pub runs: Vec<HtmlRun>,
}

impl HtmlQuestion {
    fn run(&self, strategy: &str, budget: usize) -> Option<&HtmlRun> {
        self.runs
            .iter()
            .find(|r| r.strategy == strategy && r.budget == budget)
    }
}

/// Bidi embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069), which
/// could reorder the text around them.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `s` as HTML text or attribute value: `&`, `<`, `>`, `"` and `'` escaped, and each
/// bidi control shown as a visible `[U+XXXX]` marker instead of acting.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if is_bidi_control(c) => {
                let _ = write!(out, "[U+{:04X}]", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped, with the characters in `marks` (half-open character ranges, any
/// order, overlapping allowed) wrapped in `<mark>`.
pub fn highlight(text: &str, marks: &[(usize, usize)]) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut on = vec![false; chars.len()];
    for &(a, b) in marks {
        for flag in on.iter_mut().take(b.min(chars.len())).skip(a) {
            *flag = true;
        }
    }
    let mut out = String::with_capacity(text.len() + 32);
    let mut i = 0;
    while i < chars.len() {
        let mut j = i;
        while j < chars.len() && on[j] == on[i] {
            j += 1;
        }
        let segment = escape_html(&chars[i..j].iter().collect::<String>());
        if on[i] {
            let _ = write!(out, "<mark>{segment}</mark>");
        } else {
            out.push_str(&segment);
        }
        i = j;
    }
    out
}

/// The parts of `piece` inside the question's span evidence, as character ranges of the
/// piece's text.
fn evidence_marks(piece: &HtmlPiece, evidence: &[HtmlEvidence]) -> Vec<(usize, usize)> {
    evidence
        .iter()
        .filter(|e| e.doc_id == piece.doc_id)
        .filter_map(|e| e.span)
        .filter_map(|(s, e)| {
            let a = s.max(piece.start as i64);
            let b = e.min(piece.end as i64);
            (b > a).then(|| {
                (
                    (a - piece.start as i64) as usize,
                    (b - piece.start as i64) as usize,
                )
            })
        })
        .collect()
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;\
padding:0 1em;color:#222}table{border-collapse:collapse;margin:.5em 0}\
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}\
td.s,th.s{text-align:left}.t{unicode-bidi:isolate;white-space:pre-wrap;\
overflow-wrap:anywhere}mark{background:#ffe066}.piece{border-left:3px solid #bbb;\
margin:.4em 0;padding:.2em .6em}.piece.ev{border-left-color:#e0a800}.meta{color:#666;\
font-size:.9em}.q{border-top:2px solid #999;margin-top:1.5em}.q:target{background:#f6fbff}\
.lost{color:#b00}details{margin:.3em 0}summary{cursor:pointer}code{unicode-bidi:isolate}\
.wide{overflow-x:auto}img{max-width:100%;height:auto}";

/// The figures shown per strategy and budget: a header, the decimals shown, and how to
/// read it off [`Metrics`] (`None`: not measured; a column nobody has is left out).
type Column = (&'static str, usize, fn(&Metrics) -> Option<f64>);

const COLUMNS: [Column; 21] = [
    ("recall", 3, |m| Some(m.recall)),
    ("recall @chars", 3, |m| m.recall_at_chars),
    ("capped recall", 3, |m| m.capped_recall),
    ("K", 0, |m| m.max_pieces.map(|k| k as f64)),
    ("text recall", 3, |m| m.text_recall),
    ("page hit", 3, |m| m.page_hit),
    ("capped text recall", 3, |m| m.capped_text_recall),
    ("capped page hit", 3, |m| m.capped_page_hit),
    ("hit", 3, |m| Some(m.hit)),
    ("full", 3, |m| Some(m.full)),
    ("precision", 3, |m| Some(m.precision)),
    ("tokens", 1, |m| Some(m.tokens)),
    ("pieces", 2, |m| Some(m.pieces)),
    ("piece_chars", 1, |m| m.piece_chars),
    ("whole", 3, |m| m.whole),
    ("tiny", 3, |m| m.tiny),
    ("in_order", 3, |m| m.in_order),
    ("grouped", 3, |m| m.grouped),
    ("intra coherence", 3, |m| m.intra_coherence),
    ("boundary coherence", 3, |m| m.boundary_coherence),
    ("p50 ms", 1, |m| Some(m.p50_ms)),
];

/// The run's settings and the figures table.
fn summary(report: &EvalReport, out: &mut String) {
    let r = &report.run;
    let _ = write!(
        out,
        "<p>{} queries from <code>{}</code> on {} documents of <code>{}</code>; mode {}, \
         model {}, chunker {}, budgets in {} tokens.</p>\n<h2 id=\"figures\">Figures</h2>\n",
        r.queries,
        escape_html(&r.queries_file),
        r.documents,
        escape_html(&r.corpus),
        escape_html(&r.mode),
        escape_html(&r.model_id),
        escape_html(&r.chunker),
        escape_html(&r.llm_encoding),
    );
    let shown: Vec<&Column> = COLUMNS
        .iter()
        .filter(|(_, _, get)| report.results.iter().any(|s| get(&s.metrics).is_some()))
        .collect();
    let answers = report.results.iter().any(|s| s.answer.is_some());
    out.push_str("<div class=\"wide\"><table><tr><th class=\"s\">strategy</th><th>budget</th>");
    for (h, _, _) in &shown {
        let _ = write!(out, "<th>{h}</th>");
    }
    if answers {
        out.push_str("<th>answer F1</th><th>answer EM</th>");
    }
    out.push_str("</tr>\n");
    for s in &report.results {
        let _ = write!(
            out,
            "<tr><td class=\"s\">{}</td><td>{}</td>",
            escape_html(&s.strategy),
            s.budget
        );
        for (_, digits, get) in &shown {
            let cell = get(&s.metrics).map_or_else(|| "–".to_string(), |x| format!("{x:.digits$}"));
            let _ = write!(out, "<td>{cell}</td>");
        }
        if answers {
            let (f1, em) = s.answer.as_ref().map_or(("–".into(), "–".into()), |a| {
                (format!("{:.3}", a.f1), format!("{:.3}", a.em))
            });
            let _ = write!(out, "<td>{f1}</td><td>{em}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

/// `svg` as an `<img>` source: a `data:` URI, every byte but letters, digits and a few
/// plain marks percent-encoded (so nothing in it can end the attribute, and its XML
/// namespace URL does not read as an address).
fn svg_data_uri(svg: &str) -> String {
    let mut out = String::from("data:image/svg+xml;charset=utf-8,");
    for b in svg.bytes() {
        if b.is_ascii_alphanumeric() || b" -_.;,=()".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The misses: per budget, per ordered pair of strategies (A, B), the questions where
/// A's recall is below B's by more than [`MISS_MARGIN`], linked to their sections.
fn misses(report: &EvalReport, questions: &[HtmlQuestion], out: &mut String) {
    let _ = write!(
        out,
        "<h2 id=\"misses\">Misses</h2>\n<p>For each budget and each ordered pair of \
         strategies, the questions where the first one's recall (whole context) is below \
         the second one's by more than {MISS_MARGIN}.</p>\n"
    );
    let strategies = &report.run.strategies;
    let mut any = false;
    for &budget in &report.run.budgets {
        let mut lines = String::new();
        for a in strategies {
            for b in strategies.iter().filter(|b| *b != a) {
                let lost: Vec<(usize, f64, f64)> = questions
                    .iter()
                    .enumerate()
                    .filter_map(|(i, q)| {
                        let ra = q.run(a, budget).map_or(0.0, |r| r.recall);
                        let rb = q.run(b, budget)?.recall;
                        (rb - ra > MISS_MARGIN).then_some((i, ra, rb))
                    })
                    .collect();
                if lost.is_empty() {
                    continue;
                }
                let _ = write!(
                    lines,
                    "<li><b>{}</b> lost to <b>{}</b> on {}:",
                    escape_html(a),
                    escape_html(b),
                    lost.len()
                );
                for (i, ra, rb) in lost {
                    let _ = write!(
                        lines,
                        " <a href=\"#q{i}\">{}</a> ({ra:.2} vs {rb:.2})",
                        escape_html(&questions[i].id)
                    );
                }
                lines.push_str("</li>\n");
            }
        }
        if !lines.is_empty() {
            any = true;
            let _ = write!(out, "<h3>Budget {budget}</h3>\n<ul>\n{lines}</ul>\n");
        }
    }
    if !any {
        out.push_str("<p>None.</p>\n");
    }
}

/// The section of question `i`: its text, evidence, recall table and every context.
fn question(report: &EvalReport, i: usize, q: &HtmlQuestion, out: &mut String) {
    let _ = write!(
        out,
        "<section class=\"q\" id=\"q{i}\">\n<h3>{}</h3>\n<p class=\"t\">{}</p>\n\
         <p>Evidence:</p>\n<ul>\n",
        escape_html(&q.id),
        escape_html(&q.query)
    );
    for e in &q.evidence {
        let place = match (e.span, e.page) {
            (Some((s, t)), _) => format!("{s}..{t}"),
            (None, Some(p)) => format!("page {p}"),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "<li><span class=\"meta\"><code>{}</code> {place}</span> \
             <span class=\"t ev\"><mark>{}</mark></span></li>",
            escape_html(&e.doc_id),
            escape_html(&e.text)
        );
    }
    out.push_str("</ul>\n<table><tr><th class=\"s\">recall (@chars)</th>");
    for b in &report.run.budgets {
        let _ = write!(out, "<th>{b}</th>");
    }
    out.push_str("</tr>\n");
    for s in &report.run.strategies {
        let _ = write!(out, "<tr><td class=\"s\">{}</td>", escape_html(s));
        for &b in &report.run.budgets {
            match q.run(s, b) {
                Some(r) => {
                    let _ = write!(out, "<td>{:.3} ({:.3})</td>", r.recall, r.recall_at_chars);
                }
                None => out.push_str("<td class=\"lost\">failed</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let smallest = report.run.budgets.iter().min().copied();
    for &b in &report.run.budgets {
        for r in q.runs.iter().filter(|r| r.budget == b) {
            contexts(q, r, Some(b) == smallest, out);
        }
    }
    out.push_str("</section>\n");
}

/// One context of a question in a `<details>` element (open at the smallest budget).
fn contexts(q: &HtmlQuestion, r: &HtmlRun, open: bool, out: &mut String) {
    let _ = writeln!(
        out,
        "<details{}><summary><b>{}</b> at {}: recall {:.3}, {} pieces, {} tokens</summary>",
        if open { " open" } else { "" },
        escape_html(&r.strategy),
        r.budget,
        r.recall,
        r.pieces.len(),
        r.tokens
    );
    for p in &r.pieces {
        let marks = evidence_marks(p, &q.evidence);
        let _ = writeln!(
            out,
            "<div class=\"piece{}\"><div class=\"meta\"><code>{}</code> {}..{}</div>\
             <div class=\"t\">{}</div></div>",
            if marks.is_empty() { "" } else { " ev" },
            escape_html(&p.doc_id),
            p.start,
            p.end,
            highlight(&p.text, &marks)
        );
    }
    out.push_str("</details>\n");
}

/// The whole page: `report`'s figures, the chart (`svg`, when drawn), the misses and
/// every question of `questions`.
pub fn render_html(report: &EvalReport, questions: &[HtmlQuestion], svg: Option<&str>) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Excerpt evaluation: {}</title>\n<style>{STYLE}</style></head><body>\n\
         <h1>Evaluation report</h1>\n<p><a href=\"#figures\">Figures</a> · \
         <a href=\"#misses\">Misses</a> · <a href=\"#questions\">Questions</a></p>\n",
        escape_html(&report.run.queries_file)
    );
    summary(report, &mut out);
    if let Some(svg) = svg {
        let _ = writeln!(
            out,
            "<p><img alt=\"recall against budget, one line per strategy\" width=\"800\" \
             height=\"500\" src=\"{}\"></p>",
            svg_data_uri(svg)
        );
    }
    if !report.failures.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"lost\">{} query run(s) failed (counted as missing; see \
             report.json).</p>",
            report.failures.len()
        );
    }
    misses(report, questions, &mut out);
    out.push_str(
        "<h2 id=\"questions\">Questions</h2>\n<p>Highlighted: the gold evidence \
                  inside each returned piece.</p>\n",
    );
    for (i, q) in questions.iter().enumerate() {
        question(report, i, q, &mut out);
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RunInfo, StrategyResult};

    const SCRIPT: &str = "<script>alert(1)</script>";
    const IMG: &str = "\"><img src=x onerror=1>";

    /// A document whose text holds hostile markup and a right-to-left override.
    fn doc_text() -> String {
        format!("Intro. {SCRIPT} The gold \u{202E}evidence{IMG} here. Tail text.")
    }

    fn chars(s: &str, a: usize, b: usize) -> String {
        s.chars().skip(a).take(b - a).collect()
    }

    /// Two strategies (one with a hostile name) at one budget, one question whose
    /// evidence is `[7, 60)` of the document; `topk` returns `[0, 30)` and `[50, 70)`,
    /// the other `[0, 80)`.
    fn sample() -> (EvalReport, Vec<HtmlQuestion>, String) {
        let text = doc_text();
        let evil = format!("rse{SCRIPT}");
        let run = RunInfo {
            queries_file: IMG.into(),
            corpus: SCRIPT.into(),
            strategies: vec!["topk".into(), evil.clone()],
            budgets: vec![100],
            ..RunInfo::default()
        };
        let result = |strategy: &str| StrategyResult {
            strategy: strategy.into(),
            budget: 100,
            results_file: "results.jsonl".into(),
            metrics: Metrics {
                recall_at_chars: Some(0.5),
                ..Metrics::default()
            },
            answer: None,
        };
        let report = EvalReport {
            run,
            results: vec![result("topk"), result(&evil)],
            failures: Vec::new(),
            not_done: Vec::new(),
        };
        let doc = IMG.to_string();
        let piece = |a: usize, b: usize| HtmlPiece {
            doc_id: doc.clone(),
            start: a,
            end: b,
            text: chars(&text, a, b),
        };
        let q = HtmlQuestion {
            id: format!("q{SCRIPT}\u{202E}"),
            query: format!("Why {SCRIPT}{IMG}?"),
            evidence: vec![HtmlEvidence {
                doc_id: doc.clone(),
                span: Some((7, 60)),
                page: None,
                text: chars(&text, 7, 60),
            }],
            runs: vec![
                HtmlRun {
                    strategy: "topk".into(),
                    budget: 100,
                    recall: 0.2,
                    recall_at_chars: 0.2,
                    tokens: 12,
                    pieces: vec![piece(0, 30), piece(50, 70)],
                },
                HtmlRun {
                    strategy: evil,
                    budget: 100,
                    recall: 1.0,
                    recall_at_chars: 1.0,
                    tokens: 20,
                    pieces: vec![piece(0, 80)],
                },
            ],
        };
        (report, vec![q], text)
    }

    /// Every tag of `html` (from `<` to the next `>`): escaped text has no `<`, so these
    /// are exactly the markup the browser parses.
    fn tags(html: &str) -> Vec<&str> {
        html.match_indices('<')
            .map(|(i, _)| &html[i..i + html[i..].find('>').map_or(html.len() - i, |j| j + 1)])
            .collect()
    }

    /// The contents of every `<mark>` inside the returned pieces (not the evidence list).
    fn piece_marks(html: &str) -> Vec<String> {
        let mut out = Vec::new();
        for piece in html.split("<div class=\"t\">").skip(1) {
            let piece = &piece[..piece.find("</div>").unwrap()];
            for m in piece.split("<mark>").skip(1) {
                out.push(m[..m.find("</mark>").unwrap()].to_string());
            }
        }
        out
    }

    #[test]
    fn hostile_text_is_escaped_and_bidi_shown() {
        let (report, questions, _) = sample();
        let html = render_html(&report, &questions, Some("<svg><text>\"x'</text></svg>"));
        for tag in tags(&html) {
            let t = tag.to_ascii_lowercase();
            assert!(!t.starts_with("<script"), "{tag}");
            assert!(!t.starts_with("<img src=x"), "{tag}");
            assert!(!t.contains("onerror"), "{tag}");
            let handler = t
                .split_whitespace()
                .any(|a| a.starts_with("on") && a.contains('='));
            assert!(!handler, "an event handler: {tag}");
        }
        assert!(!html.to_ascii_lowercase().contains("<script"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&quot;&gt;&lt;img src=x onerror=1&gt;"));
        assert!(html.contains("[U+202E]"));
        assert!(!html.chars().any(is_bidi_control));
        assert!(!html.contains("http://") && !html.contains("https://"));
        assert!(html.contains("default-src 'none'"));
    }

    #[test]
    fn escape_covers_every_special_character() {
        assert_eq!(
            escape_html("a&b<c>d\"e'f\u{2066}g\u{202A}"),
            "a&amp;b&lt;c&gt;d&quot;e&#39;f[U+2066]g[U+202A]"
        );
        assert_eq!(escape_html("plain é"), "plain é");
    }

    #[test]
    fn highlighted_evidence_is_the_source_slice() {
        let (report, questions, text) = sample();
        let html = render_html(&report, &questions, None);
        // topk: [0, 30) holds evidence [7, 30), [50, 70) holds [50, 60); the other
        // strategy's [0, 80) holds all of [7, 60).
        let expected: Vec<String> = [(7, 30), (50, 60), (7, 60)]
            .iter()
            .map(|&(a, b)| escape_html(&chars(&text, a, b)))
            .collect();
        assert_eq!(piece_marks(&html), expected);
        assert!(html.contains("<code>&quot;&gt;&lt;img src=x onerror=1&gt;</code> 50..70"));
    }

    #[test]
    fn highlight_merges_overlaps_and_clamps() {
        assert_eq!(
            highlight("abcdef", &[(1, 3), (2, 4), (5, 99)]),
            "a<mark>bcd</mark>e<mark>f</mark>"
        );
        assert_eq!(highlight("a<b", &[]), "a&lt;b");
    }

    #[test]
    fn misses_link_the_questions_a_strategy_lost() {
        let (report, questions, _) = sample();
        let html = render_html(&report, &questions, None);
        let misses =
            &html[html.find("id=\"misses\"").unwrap()..html.find("id=\"questions\"").unwrap()];
        assert!(
            misses.contains("<b>topk</b> lost to <b>rse&lt;script&gt;"),
            "{misses}"
        );
        assert!(misses.contains("<a href=\"#q0\">"), "{misses}");
        assert!(!misses.contains("</b> lost to <b>topk</b>"), "{misses}");
        assert!(html.contains("<section class=\"q\" id=\"q0\">"));
    }
}
