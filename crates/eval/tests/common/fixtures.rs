//! The small corpus and query set shared by the end-to-end tests: four documents (one
//! long, chaptered, one with multi-byte characters) and three queries with gold evidence,
//! two of them with a reference answer, one scoped to a document.

use excerpt_eval::{CorpusDoc, Evidence, QueryLine};

pub fn doc(id: &str, title: &str, text: String) -> CorpusDoc {
    CorpusDoc {
        id: id.into(),
        title: Some(title.into()),
        text,
        metadata: None,
    }
}

pub fn corpus() -> Vec<CorpusDoc> {
    let mut history = String::new();
    let topics = [
        "The lighthouse keeper trimmed the wick every evening before the storms arrived.",
        "Fishermen in the harbour repaired their nets while gulls circled overhead.",
        "A new railway line reached the town in 1872 and brought visitors from the capital.",
        "The old mill burned down in a winter fire, and the river powered nothing for years.",
        "Schoolchildren learned to sail in the sheltered bay during the summer months.",
        "The town council debated for a decade before paving the main street with cobbles.",
    ];
    for (i, t) in topics.iter().enumerate() {
        history.push_str(&format!("Chapter {}.\n\n", i + 1));
        for j in 0..6 {
            history.push_str(&format!(
                "{t} Record {j} of chapter {} notes the date and weather. ",
                i + 1
            ));
        }
        history.push_str("\n\n");
    }
    vec![
        doc(
            "cafe",
            "Café notes",
            "Le Café Crème 😀 serves espresso, café au lait and croissants every morning. \
             The owner, Zoé, roasts the beans herself on Tuesdays. Prices: espresso 2€, crème 3€."
                .into(),
        ),
        doc(
            "rockets",
            "Rocketry basics",
            "A rocket engine produces thrust by expelling hot exhaust gas through a nozzle. \
             Liquid-fuel rockets mix a fuel such as kerosene with liquid oxygen in the combustion chamber. \
             Solid rockets are simpler but cannot be throttled or shut down once ignited."
                .into(),
        ),
        doc(
            "garden",
            "Gardening",
            "Tomatoes need six to eight hours of direct sunlight and regular watering. \
             Prune the suckers so the plant puts its energy into fruit. Mulch keeps the soil moist 🌱."
                .into(),
        ),
        doc("history", "Town history", history),
    ]
}

pub fn char_find(text: &str, needle: &str) -> (i64, i64) {
    let byte = text.find(needle).expect("needle in text");
    let start = text[..byte].chars().count() as i64;
    (start, start + needle.chars().count() as i64)
}

pub fn queries(corpus: &[CorpusDoc]) -> Vec<QueryLine> {
    let ev = |doc: usize, needle: &str| {
        let (start, end) = char_find(&corpus[doc].text, needle);
        Evidence {
            doc_id: corpus[doc].id.clone(),
            start,
            end,
        }
    };
    vec![
        QueryLine {
            id: "q-cafe".into(),
            query: "Who roasts the coffee beans at the café and when?".into(),
            answer: Some("Zoé, on Tuesdays".into()),
            evidence: vec![ev(0, "The owner, Zoé, roasts the beans herself on Tuesdays.")],
            scope: None,
        },
        QueryLine {
            id: "q-rocket".into(),
            query: "What do liquid-fuel rockets mix in the combustion chamber?".into(),
            answer: None,
            evidence: vec![ev(1, "Liquid-fuel rockets mix a fuel such as kerosene with liquid oxygen in the combustion chamber.")],
            scope: None,
        },
        QueryLine {
            id: "q-railway".into(),
            query: "When did the railway reach the town?".into(),
            answer: Some("1872".into()),
            evidence: vec![ev(3, "A new railway line reached the town in 1872 and brought visitors from the capital.")],
            scope: Some(vec!["history".into()]),
        },
    ]
}
