//! Transcripts: whether a document reads as a conversation (most lines are speaker
//! turns), which sends `auto`'s pinpoint questions over it to `rse`.

use std::collections::HashMap;
use std::sync::Mutex;

use excerpt_core::Document;

/// Documents whose [`is_dialogue`] a [`DialogueMemo`] keeps before it is emptied.
const DIALOGUE_DOCS: usize = 4096;

/// [`is_dialogue`] of documents by their content hash (with the text's length), kept
/// by the collection ([`crate::memo::Memo`]): the best hits' documents come back query
/// after query, and reading their first lines again was a tenth of a millisecond of a
/// question's assembly. The content hash covers the text, so a kept answer is the one
/// the text would give.
pub(crate) type DialogueMemo = HashMap<Box<str>, (usize, bool), foldhash::fast::RandomState>;

/// [`is_dialogue`] of `doc`'s text, remembered in `slot` by its content hash.
pub(crate) fn doc_is_dialogue(slot: &Mutex<Option<DialogueMemo>>, doc: &Document) -> bool {
    if doc.hash.is_empty() {
        return is_dialogue(&doc.text);
    }
    let lock = || slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&(len, answer)) = lock()
        .get_or_insert_with(Default::default)
        .get(doc.hash.as_str())
    {
        if len == doc.text.len() {
            return answer;
        }
    }
    let answer = is_dialogue(&doc.text);
    let mut memo = lock();
    let memo = memo.get_or_insert_with(Default::default);
    if memo.len() >= DIALOGUE_DOCS {
        memo.clear();
    }
    memo.insert(doc.hash.as_str().into(), (doc.text.len(), answer));
    answer
}

/// Lines of a document read to tell whether it is a conversation.
const DIALOGUE_LINES: usize = 200;

/// Whether `text` reads as a conversation transcript: of its first [`DIALOGUE_LINES`]
/// non-empty lines (at least 10), at least 60 % are speaker turns ([`speaker`]), and at
/// least two speakers take turns, each speaking at least twice on average. Contracts'
/// `Name:` and `Title:` lines and documentation's `Note:` lines are too few to count.
pub(crate) fn is_dialogue(text: &str) -> bool {
    let mut lines = 0usize;
    let mut turns = 0usize;
    let mut speakers: Vec<&str> = Vec::new();
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(DIALOGUE_LINES)
    {
        lines += 1;
        if let Some(label) = speaker(line) {
            turns += 1;
            if !speakers.contains(&label) {
                speakers.push(label);
            }
        } else if (lines - turns) * 10 > DIALOGUE_LINES * 4 {
            // More lines that are not turns than 40 % of the most lines read: the
            // turns can no longer make 60 % (a filing stops here, not at line 200).
            return false;
        }
    }
    lines >= 10 && turns * 10 >= lines * 6 && speakers.len() >= 2 && turns >= 2 * speakers.len()
}

/// The speaker's label when `line` is a turn: a label, a colon and a space, then the
/// words said. The label, parenthesised parts aside (`Mr. Paul Manly (Nanaimo, GP)`), is
/// one to five words of at most 40 characters, the first capitalised, with no sentence
/// punctuation (a period only closes an abbreviation of up to four letters such as
/// `Mr.`, `Hon.` or `Prof.`).
fn speaker(line: &str) -> Option<&str> {
    let (label, said) = line.split_once(": ")?;
    if said.trim().is_empty() || label.len() > 160 {
        return None;
    }
    let mut name = String::new();
    let mut depth = 0usize;
    for c in label.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1)?,
            _ if depth == 0 => name.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = name.split_whitespace().collect();
    let plain = |w: &&str| match w.strip_suffix('.') {
        Some(abbr) => abbr.chars().count() <= 4 && !abbr.contains('.'),
        None => !w.contains(['.', ',', ';', '?', '!', '"']),
    };
    let ok = depth == 0
        && (1..=5).contains(&words.len())
        && name.trim().len() <= 40
        && name.trim_start().starts_with(char::is_uppercase)
        && words.iter().all(plain);
    ok.then_some(label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memo::Memo;

    #[test]
    fn remembered_dialogue_answers_are_the_texts() {
        use crate::sentences::lines_doc;
        let turns: String = (0..30)
            .map(|i| format!("{}: point {i}\n", ["Ann", "Bob"][i % 2]))
            .collect();
        let prose: String = (0..30).map(|i| format!("Remark number {i}.\n")).collect();
        let docs = [
            lines_doc(&turns, "dialogue-memo-a"),
            lines_doc(&prose, "dialogue-memo-b"),
            // Without a content hash: never remembered.
            lines_doc(&turns, ""),
            lines_doc(&prose, ""),
        ];
        let memo = Memo::default();
        for _ in 0..2 {
            for doc in &docs {
                assert_eq!(
                    memo.is_dialogue(doc),
                    is_dialogue(&doc.text),
                    "{}",
                    doc.hash
                );
            }
        }
        // A kept hash with a text of another length is read again.
        let changed = lines_doc(&prose, "dialogue-memo-a");
        assert!(!memo.is_dialogue(&changed));
    }

    #[test]
    fn conversations_are_told_from_labelled_lines() {
        let meeting: String = (0..30)
            .map(|i| format!("{}: we said {i} things\n", ["Grad G", "Professor E"][i % 2]))
            .collect();
        assert!(is_dialogue(&meeting));
        // Parliamentary labels: honorifics and affiliations in parentheses.
        let hansard: String = (0..30)
            .map(|i| {
                let who = [
                    "The Chair (Hon. Anthony Rota (Nipissing, Lib.))",
                    "Mr. Paul Manly (Nanaimo, GP)",
                    "Right Hon. Justin Trudeau (Prime Minister)",
                ][i % 3];
                format!("{who}: Thank you, {i}.\n")
            })
            .collect();
        assert!(is_dialogue(&hansard));
        // One speaker is a monologue; too few lines say nothing.
        // The 60 % of the first 200 lines, at the edge: 80 lines of prose then 120 turns
        // are a conversation; 81 then 119 are not (the reading stops at line 81).
        let opened = |prose: usize| -> String {
            (0..prose)
                .map(|i| format!("Opening remark number {i}.\n"))
                .chain((prose..200).map(|i| format!("{}: line {i}\n", ["Ann", "Bob"][i % 2])))
                .collect()
        };
        assert!(is_dialogue(&opened(80)));
        assert!(!is_dialogue(&opened(81)));
        let monologue: String = (0..30).map(|i| format!("Narrator: part {i}\n")).collect();
        assert!(!is_dialogue(&monologue));
        assert!(!is_dialogue("A: hi\nB: hello\nA: bye\n"));
        // A contract's signature block and a manual's notes are a minority of lines.
        let contract: String = (0..30)
            .map(|i| format!("{i}. The Receiving Party shall keep clause {i} secret.\n"))
            .chain(["Name: Jane Doe\n".into(), "Title: Director\n".into()])
            .collect();
        assert!(!is_dialogue(&contract));
        let manual: String = (0..30)
            .map(|i| match i % 4 {
                0 => format!("Note: option {i} is deprecated.\n"),
                _ => format!("The parser reads value {i}: see below.\n"),
            })
            .collect();
        assert!(!is_dialogue(&manual));
        // Sentences with a colon are not turns.
        for line in [
            "The following, as agreed: nothing",
            "In the event of a breach, the parties agree: to settle",
            "Note:",
            "lower case: text",
            "Six words before the colon here: text",
        ] {
            assert_eq!(speaker(line), None, "{line}");
        }
        assert_eq!(speaker("Dr. Who: yes"), Some("Dr. Who"));
        assert_eq!(
            speaker("Prof. Ada Lovelace: no"),
            Some("Prof. Ada Lovelace")
        );
        assert_eq!(speaker("Etc.etc. Someone: no"), None);
    }
}
