//! The native metrics agree with the reference scorer `score_context.py` on the same
//! files, with and without `--budget-chars`: multi-byte characters (so character and
//! byte offsets differ), overlapping and duplicate pieces, multi-document evidence,
//! missing queries, bad text, repeated ids, and a larger pseudo-random case.

mod common;

use std::path::Path;

use common::{assert_agrees, score_with_python};
use excerpt_eval::format::{read_corpus, read_queries, read_results, write_jsonl};
use excerpt_eval::{
    score_results, CorpusDoc, CorpusTexts, Evidence, QueryLine, ResultLine, ResultPiece,
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

/// Writes the three files, scores them both ways at every budget and compares; returns
/// the scorer's exit codes and the unbudgeted native summary.
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
        let (native, _) = score_results(&texts, &queries, &results, budget);
        let py = score_with_python(&c, &q, &r, budget);
        assert_agrees(&native, &py.json, &format!("{name}, budget {budget:?}"));
        assert_eq!(
            py.exit_code,
            Some(if native.bad_text > 0 { 1 } else { 0 }),
            "{name} {budget:?}"
        );
        codes.push(py.exit_code);
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
