//! The native metrics agree with the reference scorer `score_context.py` on the same
//! files, with and without `--budget-chars` and `--max-pieces`, the coverage figures and
//! the readability ones (`piece_chars`, `whole`, `tiny`, `in_order`, `grouped`):
//! multi-byte characters (so character and byte offsets differ), overlapping and
//! duplicate pieces, multi-document evidence, missing queries, bad text, repeated ids,
//! pieces starting and ending at every kind of boundary (sentence ends, closers, line
//! breaks, tabs, other whitespace, decimals), pieces out of reading order and
//! interleaved documents, and larger pseudo-random cases.

mod common;

use std::path::Path;

use common::{assert_agrees, score_with_python_limited};
use excerpt_eval::format::{read_corpus, read_queries, read_results, write_jsonl};
use excerpt_eval::{
    score_results, score_results_limited, CorpusDoc, CorpusTexts, Evidence, Limits, QueryLine,
    ResultLine, ResultPiece,
};

const BUDGETS: [Option<usize>; 7] = [
    None,
    Some(1),
    Some(7),
    Some(30),
    Some(64),
    Some(150),
    Some(100_000),
];

/// `--max-pieces`: none, and 1, 2, 3 (the cap at 2000 characters) and 12.
const MAX_PIECES: [Option<usize>; 5] = [None, Some(1), Some(2), Some(3), Some(12)];

fn chars(s: &str, a: usize, b: usize) -> String {
    s.chars().skip(a).take(b - a).collect()
}

fn doc(id: &str, text: String) -> CorpusDoc {
    CorpusDoc {
        id: id.into(),
        title: Some(format!("Title {id}")),
        text,
        metadata: None,
    }
}

fn query(id: &str, ev: &[(&str, i64, i64)]) -> QueryLine {
    QueryLine {
        id: id.into(),
        query: format!("question {id}?"),
        answer: None,
        evidence: ev
            .iter()
            .map(|&(d, s, e)| Evidence {
                doc_id: d.into(),
                start: s,
                end: e,
            })
            .collect(),
        scope: None,
    }
}

fn piece(corpus: &[CorpusDoc], d: &str, a: i64, b: i64) -> ResultPiece {
    let text = corpus
        .iter()
        .find(|c| c.id == d)
        .map(|c| chars(&c.text, a as usize, b as usize));
    ResultPiece {
        doc_id: d.into(),
        start: a,
        end: b,
        text,
        score: Some(0.5),
        page_start: None,
        page_end: None,
    }
}

fn line(qid: &str, pieces: Vec<ResultPiece>) -> ResultLine {
    ResultLine {
        query_id: qid.into(),
        strategy: "fixture".into(),
        pieces,
    }
}

/// Writes the three files, scores them both ways at every budget and maximum of pieces
/// and compares; returns the scorer's exit codes and the unlimited native summary.
fn check(
    dir: &Path,
    name: &str,
    corpus: &[CorpusDoc],
    queries: &[QueryLine],
    results: &[ResultLine],
) -> (Vec<Option<i32>>, excerpt_eval::CoverageSummary) {
    let (c, q, r) = (
        dir.join("corpus.jsonl"),
        dir.join("queries.jsonl"),
        dir.join(format!("results-{name}.jsonl")),
    );
    write_jsonl(&c, corpus).unwrap();
    write_jsonl(&q, queries).unwrap();
    write_jsonl(&r, results).unwrap();
    // Score what was read back, as the scorer does.
    let texts = CorpusTexts::from_corpus(&read_corpus(&c).unwrap());
    let (queries, results) = (read_queries(&q).unwrap(), read_results(&r).unwrap());
    let mut codes = Vec::new();
    for budget in BUDGETS {
        for max_pieces in MAX_PIECES {
            let limits = Limits::budget(budget).with_max_pieces(max_pieces);
            let (native, _) = score_results_limited(&texts, &queries, &results, limits);
            let py = score_with_python_limited(&c, &q, &r, budget, max_pieces);
            let what = format!("{name}, budget {budget:?}, max pieces {max_pieces:?}");
            assert_agrees(&native, &py.json, &what);
            assert_eq!(
                py.exit_code,
                Some(if native.bad_text > 0 { 1 } else { 0 }),
                "{what}"
            );
            codes.push(py.exit_code);
        }
    }
    (codes, score_results(&texts, &queries, &results, None).0)
}

fn fixture_corpus() -> Vec<CorpusDoc> {
    vec![
        doc("d1", "Café crème 😀 au lait. Le garçon a dit «voilà». Ünïcödé ëverywhere 😀😀 and more text here.".repeat(3)),
        doc("d2", "😀 emoji-first document: 日本語のテキスト, naïve façade, résumé. Second sentence!\n\nA new paragraph.".into()),
        doc("d3", "Plain ASCII text for the third document, with nothing unusual in it at all.".into()),
    ]
}

#[test]
fn hand_made_fixture_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = fixture_corpus();
    let queries = vec![
        query("q1", &[("d1", 5, 40)]),
        // Multi-document evidence with overlapping spans.
        query("q2", &[("d1", 0, 10), ("d2", 20, 60), ("d2", 50, 70)]),
        // No result line: missing.
        query("q3", &[("d3", 0, 20)]),
        // No evidence at all.
        query("q4", &[]),
        // Exactly 90 % covered.
        query("q5", &[("d3", 10, 30)]),
    ];
    let results = vec![
        line(
            "q1",
            vec![
                piece(&corpus, "d1", 0, 12),
                piece(&corpus, "d1", 10, 30),
                piece(&corpus, "d1", 10, 30),
                piece(&corpus, "d1", 30, 31),
            ],
        ),
        line(
            "q2",
            vec![
                piece(&corpus, "d2", 55, 90),
                piece(&corpus, "d1", 3, 8),
                piece(&corpus, "d2", 0, 25),
                piece(&corpus, "d3", 0, 5),
            ],
        ),
        line("q4", vec![piece(&corpus, "d3", 0, 10)]),
        line(
            "q5",
            vec![piece(&corpus, "d3", 12, 40), piece(&corpus, "d3", 40, 40)],
        ),
    ];
    let (codes, sum) = check(dir.path(), "clean", &corpus, &queries, &results);
    assert!(codes.iter().all(|c| *c == Some(0)));
    assert_eq!((sum.queries, sum.missing, sum.bad_text), (5, 1, 0));
    assert!(sum.recall > 0.3 && sum.full > 0.0 && sum.precision > 0.0);

    // Defects: text sliced by bytes, an unknown document, a range past the end, a
    // reversed range, a repeated results line (the last wins) and a line for an unknown
    // query.
    let d1 = &corpus[0].text;
    let by_bytes = ResultPiece {
        text: Some(d1[0..12].to_string()),
        ..piece(&corpus, "d1", 0, 12)
    };
    let mut bad = results.clone();
    bad[0].pieces.insert(1, by_bytes);
    bad[1].pieces.push(ResultPiece {
        doc_id: "nope".into(),
        start: 0,
        end: 3,
        text: None,
        score: None,
        page_start: None,
        page_end: None,
    });
    bad[1].pieces.insert(
        0,
        ResultPiece {
            doc_id: "d2".into(),
            start: 90,
            end: 1000,
            text: None,
            score: None,
            page_start: None,
            page_end: None,
        },
    );
    bad[2].pieces.push(ResultPiece {
        doc_id: "d3".into(),
        start: 9,
        end: 3,
        text: None,
        score: None,
        page_start: None,
        page_end: None,
    });
    bad.push(line("q5", vec![piece(&corpus, "d3", 10, 20)]));
    bad.push(line("q-unknown", vec![piece(&corpus, "d3", 0, 20)]));
    // Repeated query id: the first position, the last definition.
    let mut queries2 = queries.clone();
    queries2.push(query("q1", &[("d1", 100, 200)]));
    let (codes, sum) = check(dir.path(), "defects", &corpus, &queries2, &bad);
    assert!(codes.iter().all(|c| *c == Some(1)));
    assert_eq!(sum.bad_text, 4);
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
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let alphabet: Vec<char> = "ab c.é😀日\n ".chars().collect();
    let corpus: Vec<CorpusDoc> = (0..5)
        .map(|i| {
            let n = 200 + rng.below(600) as usize;
            let text: String = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            doc(&format!("doc{i}"), text)
        })
        .collect();
    let lens: Vec<i64> = corpus
        .iter()
        .map(|d| d.text.chars().count() as i64)
        .collect();
    let mut queries = Vec::new();
    let mut results = Vec::new();
    for qi in 0..200 {
        let id = format!("q{qi}");
        let mut ev = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let d = rng.below(5) as usize;
            let a = rng.below(lens[d] as u64) as i64;
            let b = a + rng.below(150) as i64;
            ev.push((format!("doc{d}"), a, b.min(lens[d])));
        }
        let evr: Vec<(&str, i64, i64)> = ev.iter().map(|(d, a, b)| (d.as_str(), *a, *b)).collect();
        queries.push(query(&id, &evr));
        if rng.below(10) == 0 {
            continue; // missing
        }
        let mut pieces = Vec::new();
        for _ in 0..rng.below(7) {
            // Pieces near the evidence half of the time, so coverage is not always zero.
            let d = if rng.below(2) == 0 {
                ev[0].0[3..].parse::<usize>().unwrap()
            } else {
                rng.below(5) as usize
            };
            let a = rng.below(lens[d] as u64) as i64;
            let b = (a + rng.below(120) as i64).min(lens[d]);
            let mut p = piece(&corpus, &format!("doc{d}"), a, b);
            match rng.below(40) {
                0 => p.text = Some("wrong".into()),
                1 => p.end = lens[d] + 1,
                2 => p.text = None,
                _ => {}
            }
            pieces.push(p);
        }
        results.push(line(&id, pieces));
    }
    let (_, sum) = check(dir.path(), "random", &corpus, &queries, &results);
    assert!(sum.missing > 5 && sum.bad_text > 5, "{sum:?}");
    assert!(
        sum.recall > 0.05 && sum.hit > 0.2 && sum.full > 0.0,
        "{sum:?}"
    );
}

/// Texts with every kind of boundary `clean_start` and `clean_end` read: sentence ends
/// (`.!?;:`), closers after them (quotes, brackets, `*`, backquotes, curly quotes), line
/// breaks with and without spaces or tabs around them, `\r\n`, whitespace Python's
/// `isspace` and Rust's `is_whitespace` disagree on (`\x1c`..`\x1f`), other whitespace
/// (no-break space, ideographic space), decimals, multi-byte characters, and texts
/// starting or ending with a boundary.
fn boundary_texts() -> Vec<String> {
    [
        "Intro line\nFirst sentence. Second one!  \"Quoted end.\" Next (aside.) More\tafter tab? \
         Ratio 3.5 is fine; semi: colon\r\nCRLF line. Non\u{a0}breaking. Sep\u{1c}x. Sep.\u{1d}y \
         Café 😀 end.",
        "  \t\nLeading blanks. *Bold.* `code.` it\u{2019}s \u{201c}curly.\u{201d} \
         \u{3000}Ideographic.\u{3000}Space.\n\n  Indented line.\t\n\tTabbed.)]\" x",
        ".",
        "\n",
        "a. b",
        "日本語。テキスト. 😀! ?",
    ]
    .map(String::from)
    .to_vec()
}

/// The scorer's own `clean_start` and `clean_end`, imported from the script and run at
/// every character offset of every text, agree with the native ones position by
/// position.
#[test]
fn boundary_rules_agree_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let texts = boundary_texts();
    let input = dir.path().join("texts.json");
    std::fs::write(&input, serde_json::to_string(&texts).unwrap()).unwrap();
    let driver = "import importlib.util, json, sys\n\
        spec = importlib.util.spec_from_file_location('sc', sys.argv[1])\n\
        sc = importlib.util.module_from_spec(spec); spec.loader.exec_module(sc)\n\
        texts = json.load(open(sys.argv[2], encoding='utf-8'))\n\
        print(json.dumps([[[sc.clean_start(t, i) for i in range(len(t) + 1)],\n\
                           [sc.clean_end(t, i) for i in range(len(t) + 1)]] for t in texts]))\n";
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(driver)
        .arg(common::scorer())
        .arg(&input)
        .output()
        .expect("python3 on PATH");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let py: Vec<(Vec<bool>, Vec<bool>)> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(py.len(), texts.len());
    let (mut starts, mut ends) = (0, 0);
    for (text, (py_start, py_end)) in texts.iter().zip(&py) {
        let bytes: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        assert_eq!(bytes.len(), py_start.len());
        for (i, &b) in bytes.iter().enumerate() {
            let (before, after) = text.split_at(b);
            assert_eq!(
                excerpt_eval::clean_start(before),
                py_start[i],
                "clean_start at {i} of {text:?} (before: {before:?})"
            );
            assert_eq!(
                excerpt_eval::clean_end(before, after),
                py_end[i],
                "clean_end at {i} of {text:?} (before: {before:?})"
            );
        }
        starts += py_start.iter().filter(|x| **x).count();
        ends += py_end.iter().filter(|x| **x).count();
    }
    // Both answers occur, many times.
    let total: usize = py.iter().map(|(s, _)| s.len()).sum();
    assert!(starts > 20 && starts < total - 20, "{starts} of {total}");
    assert!(ends > 20 && ends < total - 20, "{ends} of {total}");
}

/// Pieces that read well and pieces that do not, through the whole scorer: whole
/// sentences and lines, mid-sentence cuts, a heading alone (tiny), a piece cut by the
/// budget (counted by its real end), pieces out of reading order, equal starts, and
/// contexts whose documents interleave.
#[test]
fn readability_fixture_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let texts = boundary_texts();
    let corpus: Vec<CorpusDoc> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| doc(&format!("r{i}"), t.clone()))
        .collect();
    let len = |i: usize| texts[i].chars().count() as i64;
    let queries = vec![
        query("in-order", &[("r0", 11, 40)]),
        query("reversed", &[("r0", 11, 40), ("r1", 0, 30)]),
        query("interleaved", &[("r1", 5, 60)]),
        query("tiny-and-cut", &[("r0", 0, 10)]),
        query("alone", &[("r2", 0, 1)]),
    ];
    let results = vec![
        // "First sentence." then "Second one!": both whole, in order, one document.
        line(
            "in-order",
            vec![piece(&corpus, "r0", 11, 26), piece(&corpus, "r0", 27, 38)],
        ),
        // The same out of order, a mid-sentence piece, and an equal start.
        line(
            "reversed",
            vec![
                piece(&corpus, "r0", 27, 38),
                piece(&corpus, "r0", 11, 26),
                piece(&corpus, "r0", 13, 20),
                piece(&corpus, "r0", 13, 30),
                piece(&corpus, "r1", 0, len(1)),
            ],
        ),
        // r1, r0, r1: the documents interleave.
        line(
            "interleaved",
            vec![
                piece(&corpus, "r1", 5, 21),
                piece(&corpus, "r0", 0, 10),
                piece(&corpus, "r1", 22, 40),
                piece(&corpus, "r3", 0, 1),
            ],
        ),
        // A heading alone, then a long whole piece (ending after "is fine;") that small
        // budgets cut mid-sentence.
        line(
            "tiny-and-cut",
            vec![piece(&corpus, "r0", 0, 10), piece(&corpus, "r0", 11, 102)],
        ),
        line("alone", vec![piece(&corpus, "r2", 0, 1)]),
    ];
    let (codes, sum) = check(dir.path(), "readability", &corpus, &queries, &results);
    assert!(codes.iter().all(|c| *c == Some(0)));
    // Neither all nor none: the figures discriminate on this fixture.
    for x in [sum.whole, sum.tiny, sum.in_order, sum.grouped] {
        assert!(x > 0.0 && x < 1.0, "{sum:?}");
    }
    // A budget of 100 cuts "tiny-and-cut"'s second piece to 90 characters, ending
    // mid-sentence: it is not tiny, and whole by its real end. At most one piece: only
    // the heading counts.
    let texts_native = CorpusTexts::from_corpus(&corpus);
    let score =
        |limits| score_results_limited(&texts_native, &queries[3..4], &results[3..4], limits).0;
    let cut = score(Limits::budget(Some(100)));
    assert_eq!(
        (cut.pieces, cut.piece_chars, cut.tiny, cut.whole),
        (2.0, 50.0, 0.5, 1.0)
    );
    let one = score(Limits::budget(Some(100)).with_max_pieces(Some(1)));
    assert_eq!((one.pieces, one.piece_chars, one.tiny), (1.0, 10.0, 1.0));
}

/// Many pseudo-random pieces over texts of sentence ends, closers, line breaks and
/// tabs, starting and ending at boundaries half of the time: every figure agrees at
/// every budget and maximum of pieces.
#[test]
fn pseudo_random_readability_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let alphabet: Vec<char> = "abc é😀  \n\t.!?;:\"')]*`\u{2019}\u{201d}\u{a0}\u{1c}\r3"
        .chars()
        .collect();
    let corpus: Vec<CorpusDoc> = (0..4)
        .map(|i| {
            let n = 150 + rng.below(400) as usize;
            let text: String = (0..n)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            doc(&format!("doc{i}"), text)
        })
        .collect();
    let chars: Vec<Vec<char>> = corpus.iter().map(|d| d.text.chars().collect()).collect();
    // Offsets right after a sentence end or at a line start, per document.
    let marks: Vec<Vec<i64>> = chars
        .iter()
        .map(|c| {
            (0..=c.len())
                .filter(|&i| i == 0 || matches!(c[i - 1], '.' | '!' | '?' | '\n' | ' '))
                .map(|i| i as i64)
                .collect()
        })
        .collect();
    let mut queries = Vec::new();
    let mut results = Vec::new();
    for qi in 0..150 {
        let id = format!("q{qi}");
        let d = rng.below(4) as usize;
        let len = chars[d].len() as i64;
        let a = rng.below(len as u64) as i64;
        queries.push(query(&id, &[(&format!("doc{d}"), a, (a + 100).min(len))]));
        let mut pieces = Vec::new();
        for _ in 0..rng.below(9) {
            let d = rng.below(4) as usize;
            let m = &marks[d];
            let len = chars[d].len() as i64;
            let pick = |rng: &mut Rng| {
                if rng.below(2) == 0 {
                    m[rng.below(m.len() as u64) as usize]
                } else {
                    rng.below(len as u64 + 1) as i64
                }
            };
            let (x, y) = (pick(&mut rng), pick(&mut rng));
            let a = x.min(y);
            let b = x.max(y).min(a + 200);
            pieces.push(piece(&corpus, &format!("doc{d}"), a, b));
        }
        results.push(line(&id, pieces));
    }
    let (_, sum) = check(
        dir.path(),
        "random-readability",
        &corpus,
        &queries,
        &results,
    );
    for x in [sum.whole, sum.tiny, sum.in_order, sum.grouped] {
        assert!(x > 0.05 && x < 0.95, "{sum:?}");
    }
}
