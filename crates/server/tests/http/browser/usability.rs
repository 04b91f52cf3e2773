//! The inspector with the keyboard alone (Tab and Enter reach the question, a piece, its
//! document and the highlights in it; Escape comes back to the piece; the focus is
//! always visible), and on a phone's screen (390×844: nothing wider than the screen, every
//! control on it and big enough to tap).

use excerpt_server::ServerOptions;
use fantoccini::key::Key;
use serde_json::{json, Value};

use super::super::{ingest_body, post};
use super::{query, sample_server, tools, Browser};

const QUESTION: &str = "restart the database cluster";

/// Whether the focused element shows it: an outline or a ring of its own.
fn focus_is_visible(b: &Browser) -> bool {
    b.js(
        "const s = getComputedStyle(document.activeElement);
         return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== 'none';",
    ) == Value::Bool(true)
}

#[test]
fn the_keyboard_alone_reaches_the_question_a_piece_and_its_document() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(dir.path(), ServerOptions::default());
    let (st, r) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!(st, 200, "{r}");
    let ctx = query(&s, &json!({"query": QUESTION}));
    let pieces = ctx["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty(), "{ctx}");
    let b = Browser::start(&tools, &s, false);

    b.goto("/");
    b.wait("document.readyState === 'complete'", "the page");
    // Tab to the question, type it, Enter runs it.
    b.tab_to("#q", 8);
    assert!(focus_is_visible(&b), "the focused question field shows it");
    b.keys(QUESTION.chars());
    b.press(Key::Enter);
    b.wait(
        "document.querySelector('.run.side-a .piece')",
        "the context",
    );
    assert_eq!(b.count(".run.side-a .piece"), pieces.len());
    // Tab to the first piece; Enter opens it in its document, which takes the focus.
    b.tab_to(".run.side-a .piece[data-index=\"0\"] button.open", 25);
    assert!(focus_is_visible(&b), "the focused piece shows it");
    b.shot("keyboard-piece");
    b.press(Key::Enter);
    b.wait(
        "document.querySelector('#doc-text mark.p-a-0.current') && document.activeElement.id === 'doc-text'",
        "the piece's document, focused",
    );
    assert!(focus_is_visible(&b), "the focused document shows it");
    // The highlights are reachable too: Tab goes to the first one, Enter selects its piece.
    b.tab_to("#doc-text mark", 3);
    assert!(focus_is_visible(&b), "the focused highlight shows it");
    let piece = b.js("return document.activeElement.dataset.pieces.split(' ')[0];");
    let piece = piece
        .as_str()
        .expect("the highlight names its piece")
        .to_string();
    b.press(Key::Enter);
    let index = &piece[1..];
    b.wait(
        &format!(
            "document.querySelector('.run.side-a .piece.selected[data-index=\"{index}\"]') && document.querySelector('#doc-text mark.p-a-{index}.current')"
        ),
        "the highlight's piece selected",
    );
    b.shot("keyboard-document");
    // Escape closes the document and gives the focus back to the piece that opened it.
    b.press(Key::Escape);
    b.wait(
        "document.getElementById('doc-view').hidden",
        "the document closed",
    );
    assert!(
        b.focused(".run.side-a .piece button.open"),
        "the focus is back on a piece, not lost: {}",
        b.js("return document.activeElement.outerHTML.slice(0, 200);")
    );
}

/// Every visible control (button, field, link, summary) that is outside the screen's
/// width or smaller than 24 px across (WCAG 2.2's minimum target size), as text.
fn small_or_outside(b: &Browser) -> Vec<String> {
    let found = b.js(
        "const out = [];
         for (const e of document.querySelectorAll('button, input, select, textarea, summary, a[href]')) {
           const r = e.getBoundingClientRect();
           if (r.width === 0 && r.height === 0) continue; // not shown
           if (e.type === 'checkbox') continue; // its label is the target
           const name = `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.textContent.trim().slice(0, 30)}`;
           if (r.left < -1 || r.right > innerWidth + 1) out.push(`${name}: outside (${r.left}..${r.right})`);
           else if (r.height < 24 || r.width < 24) out.push(`${name}: ${r.width}x${r.height}`);
         }
         return out;",
    );
    serde_json::from_value(found).expect("a list")
}

/// Whether anything makes the page wider than the screen.
fn fits(b: &Browser) -> Value {
    b.js("return [window.innerWidth, document.documentElement.scrollWidth <= window.innerWidth];")
}

#[test]
fn a_phone_shows_every_view_without_overflow_and_with_usable_controls() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(dir.path(), ServerOptions::default());
    let (st, r) = post(&s, "/v1/ingest", &ingest_body());
    assert_eq!(st, 200, "{r}");
    let b = Browser::start(&tools, &s, true);

    // Two contexts, one of their pieces in its document.
    b.goto("/?q=restart+the+database+cluster&strategy=topk&b_strategy=rse");
    b.wait(
        "document.querySelector('.run.side-a .piece') && document.querySelector('.run.side-b')",
        "both contexts",
    );
    assert_eq!(fits(&b), json!([390, true]), "the query view fits");
    assert_eq!(small_or_outside(&b), Vec::<String>::new(), "query view");
    b.shot("phone-compare");
    b.click(".run.side-a .piece[data-index=\"0\"] button.open");
    b.wait(
        "document.querySelector('#doc-text mark.p-a-0.current')",
        "the document",
    );
    assert_eq!(fits(&b), json!([390, true]), "the document fits");
    assert_eq!(small_or_outside(&b), Vec::<String>::new(), "document view");
    // The document is brought to the screen, its highlight in sight.
    let seen = b.js(
        "const r = document.querySelector('#doc-text mark.current').getBoundingClientRect();
         return r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth + 1;",
    );
    assert_eq!(seen, json!(true), "the piece is on the screen");
    b.shot("phone-document");

    // The documents: the list and one document.
    b.goto("/?view=docs");
    b.wait("document.querySelector('table.docs')", "the list");
    assert_eq!(fits(&b), json!([390, true]), "the list fits");
    assert_eq!(small_or_outside(&b), Vec::<String>::new(), "documents view");
    b.click("table.docs tbody tr:first-child button.link");
    b.wait(
        "!document.getElementById('doc-view').hidden && document.getElementById('doc-text').textContent.length > 0",
        "a document",
    );
    assert_eq!(fits(&b), json!([390, true]), "a document fits");
    b.shot("phone-documents");
}
