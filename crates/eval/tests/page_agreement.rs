//! The native page-format metrics (`text_recall`, `page_hit`, `chars`, `pieces`,
//! `tiny`) agree with the reference scorer `score_pdf.py` on the same files, with and
//! without `--budget-chars` and `--max-pieces`: case and punctuation, non-ASCII letters (some lower-casing to
//! ASCII), evidence of fewer than four words or none, pieces without pages or text,
//! missing queries, repeated ids, and a larger pseudo-random case.

mod common;

use std::path::Path;

use common::{assert_pages_agree, score_pdf_with_python_limited};
use excerpt_eval::format::{read_jsonl, read_results, write_jsonl};
use excerpt_eval::{
    score_page_results, score_page_results_limited, Limits, PageEvidence, PageQueryLine,
    PageSummary, ResultLine, ResultPiece,
};

const BUDGETS: [Option<usize>; 7] = [
    None,
    Some(1),
    Some(9),
    Some(40),
    Some(120),
    Some(600),
    Some(100_000),
];

/// `--max-pieces`: none, and 1, 2, 3 (the cap at 2000 characters) and 12.
const MAX_PIECES: [Option<usize>; 5] = [None, Some(1), Some(2), Some(3), Some(12)];

fn query(id: &str, evidence: &[(i64, &str)]) -> PageQueryLine {
    PageQueryLine {
        id: id.into(),
        query: format!("question {id}?"),
        doc: "report.pdf".into(),
        evidence: evidence
            .iter()
            .map(|&(page, text)| PageEvidence {
                page,
                text: text.into(),
            })
            .collect(),
        answer: Some("42".into()),
    }
}

fn piece(text: Option<&str>, pages: Option<(u32, Option<u32>)>) -> ResultPiece {
    ResultPiece {
        doc_id: "report.pdf".into(),
        start: 0,
        end: text.map_or(0, |t| t.chars().count() as i64),
        text: text.map(str::to_string),
        score: None,
        page_start: pages.map(|p| p.0),
        page_end: pages.and_then(|p| p.1),
    }
}

fn line(qid: &str, pieces: Vec<ResultPiece>) -> ResultLine {
    ResultLine {
        query_id: qid.into(),
        strategy: "fixture".into(),
        pieces,
    }
}

/// Writes both files, scores them both ways at every budget and maximum of pieces and
/// compares; returns the unlimited native summary.
fn check(dir: &Path, name: &str, queries: &[PageQueryLine], results: &[ResultLine]) -> PageSummary {
    let (q, r) = (
        dir.join(format!("queries-{name}.jsonl")),
        dir.join(format!("results-{name}.jsonl")),
    );
    write_jsonl(&q, queries).unwrap();
    write_jsonl(&r, results).unwrap();
    // Score what was read back, as the scorer does.
    let queries: Vec<PageQueryLine> = read_jsonl(&q).unwrap();
    let results = read_results(&r).unwrap();
    for budget in BUDGETS {
        for max_pieces in MAX_PIECES {
            let limits = Limits::budget(budget).with_max_pieces(max_pieces);
            let (native, _) = score_page_results_limited(&queries, &results, limits);
            let py = score_pdf_with_python_limited(&q, &r, budget, max_pieces);
            let what = format!("{name}, budget {budget:?}, max pieces {max_pieces:?}");
            assert_eq!(py.exit_code, Some(0), "{what}: {}", py.json);
            assert_pages_agree(&native, &py.json, &what);
        }
    }
    score_page_results(&queries, &results, None).0
}

#[test]
fn hand_made_fixture_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let queries = vec![
        // A table's numbers, spaced as the annotators' extractor spaced them.
        query(
            "q1",
            &[(
                56,
                "Net revenue\n$\n3,991 $\n5,506 \nCost of sales\n2,911 \n3,667",
            )],
        ),
        // Two pages; one evidence text shorter than four words.
        query(
            "q2",
            &[(3, "Café CRÈME, naïve façade"), (4, "Operating income")],
        ),
        // No results line: missing.
        query("q3", &[(1, "never retrieved at all here")]),
        // No evidence at all; and evidence with no words.
        query("q4", &[]),
        query("q5", &[(7, "— … —")]),
        // The Kelvin sign and dotted capital I lower-case to ASCII letters.
        query(
            "q6",
            &[(2, "\u{212A}ELVIN scale \u{130}ndex of 2023 results")],
        ),
    ];
    let results = vec![
        line(
            "q1",
            vec![
                piece(
                    Some("Consolidated Statements of Operations"),
                    Some((55, None)),
                ),
                piece(
                    Some("net revenue $ 3,991 $ 5,506 cost of sales 2,911 3,667 4"),
                    Some((56, Some(57))),
                ),
            ],
        ),
        line(
            "q2",
            vec![
                piece(Some("cafe creme; café crème: naïve façade!"), None),
                piece(Some("operating INCOME"), Some((1, Some(2)))),
                // An empty piece ends the context: its pages never count.
                piece(Some(""), Some((4, Some(4)))),
                piece(Some("Operating income"), Some((4, Some(4)))),
            ],
        ),
        line("q4", vec![piece(Some("anything at all"), Some((1, None)))]),
        line(
            "q5",
            vec![
                piece(None, Some((7, Some(7)))),
                piece(Some("words"), Some((7, None))),
            ],
        ),
        line(
            "q6",
            vec![piece(
                Some("kelvin scale i\u{307}ndex of 2023 results"),
                Some((2, Some(2))),
            )],
        ),
        // A line for an unknown query is ignored; a repeated line: the last wins.
        line("q-unknown", vec![piece(Some("x"), Some((1, None)))]),
        line(
            "q4",
            vec![piece(Some("the last line wins"), Some((9, None)))],
        ),
    ];
    let sum = check(dir.path(), "fixture", &queries, &results);
    assert_eq!((sum.queries, sum.missing), (6, 1));
    assert!(sum.text_recall > 0.2 && sum.page_hit > 0.2, "{sum:?}");

    // A repeated query id: its first position, its last definition.
    let mut repeated = queries.clone();
    repeated.push(query("q1", &[(1, "consolidated statements of operations")]));
    check(dir.path(), "repeated", &repeated, &results);
}

/// xorshift64*: deterministic pseudo-random numbers without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[test]
fn pseudo_random_results_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let vocab = [
        "net",
        "Revenue",
        "cash",
        "FLOWS",
        "2023",
        "3,991",
        "(481)",
        "café",
        "$",
        "—",
        "ÉTÉ",
        "income",
        "tax",
        "k\u{212A}",
        "of",
        "the",
        "😀",
        "12.5%",
        "İstanbul",
        "ops",
    ];
    let seps = [" ", "\n", "  ", " \n", "-", ""];
    // Ten "pages" of text; evidence and pieces are slices of them.
    let pages: Vec<String> = (0..10)
        .map(|_| {
            (0..60 + rng.below(80))
                .map(|_| {
                    format!(
                        "{}{}",
                        vocab[rng.below(vocab.len() as u64) as usize],
                        seps[rng.below(seps.len() as u64) as usize]
                    )
                })
                .collect()
        })
        .collect();
    let slice = |rng: &mut Rng, page: usize, max: u64| -> String {
        let chars: Vec<char> = pages[page].chars().collect();
        let a = rng.below(chars.len() as u64) as usize;
        let b = (a + rng.below(max) as usize).min(chars.len());
        chars[a..b].iter().collect()
    };
    let mut queries = Vec::new();
    let mut results = Vec::new();
    for qi in 0..150 {
        let id = format!("q{qi}");
        let evidence: Vec<(i64, String)> = (0..rng.below(3) + u64::from(qi % 7 != 0))
            .map(|_| {
                let p = rng.below(10) as usize;
                (p as i64 + 1, slice(&mut rng, p, 200))
            })
            .collect();
        let ev: Vec<(i64, &str)> = evidence.iter().map(|(p, t)| (*p, t.as_str())).collect();
        queries.push(query(&id, &ev));
        if rng.below(10) == 0 {
            continue; // missing
        }
        let mut pieces = Vec::new();
        for _ in 0..rng.below(8) {
            // Near the evidence half of the time, so text_recall is not always zero.
            let p = match evidence.first() {
                Some((page, _)) if rng.below(2) == 0 => *page as usize - 1,
                _ => rng.below(10) as usize,
            };
            let text = slice(&mut rng, p, 300);
            let pages = match rng.below(6) {
                0 => None,
                1 => Some((p as u32 + 1, None)),
                _ => Some((p as u32 + 1, Some(p as u32 + 1 + rng.below(2) as u32))),
            };
            let text = match rng.below(30) {
                0 => None,
                _ => Some(text),
            };
            pieces.push(piece(text.as_deref(), pages));
        }
        results.push(line(&id, pieces));
    }
    let sum = check(dir.path(), "random", &queries, &results);
    assert!(sum.missing > 5, "{sum:?}");
    assert!(
        sum.text_recall > 0.05 && sum.page_hit > 0.2 && sum.chars > 100.0,
        "{sum:?}"
    );
}
