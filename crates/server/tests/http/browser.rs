//! The inspector (`GET /`) in a real headless Chromium, driven over WebDriver
//! (chromedriver, through `fantoccini`), against a real server on 127.0.0.1 with a real
//! index. The tests assert on what a person sees: as many piece cards as the API's
//! pieces, highlighted text equal to the API's text at its offsets, hostile titles shown
//! as text, no data before the token. Screenshots go to `target/tmp/inspector/`.
//!
//! Without chromedriver and Chromium the tests print a line and pass, unless
//! `EXCERPT_REQUIRE_BROWSER=1` (as `scripts/test.sh` sets), when they fail.
//! `EXCERPT_CHROMEDRIVER` and `EXCERPT_CHROMIUM` name other binaries.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use excerpt::{Engine, EngineOptions};
use excerpt_server::ServerOptions;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use super::{agent, answer, post, start_engine, TestServer};

/// The question of the README's quick start (`scripts/setup.sh`).
const QUESTION: &str = "How does Excerpt stay consistent when an ingest is killed?";

/// The binaries, if this machine has them.
struct Tools {
    driver: PathBuf,
    chromium: PathBuf,
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// chromedriver and Chromium, or `None` (after saying so) when one is missing and the
/// browser is not required.
fn tools() -> Option<Tools> {
    let pick = |var: &str, names: &[&str]| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| on_path(names))
    };
    let driver = pick("EXCERPT_CHROMEDRIVER", &["chromedriver"]);
    let chromium = pick(
        "EXCERPT_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    );
    match (driver, chromium) {
        (Some(driver), Some(chromium)) => Some(Tools { driver, chromium }),
        _ => {
            let why =
                "chromedriver or chromium not found (apt-get install chromium chromium-driver)";
            if std::env::var_os("EXCERPT_REQUIRE_BROWSER").is_some_and(|v| v == "1") {
                panic!("EXCERPT_REQUIRE_BROWSER=1 but {why}");
            }
            println!("skipped: browser test, {why}");
            None
        }
    }
}

/// A headless Chromium behind its own chromedriver, with a fresh profile; both end on drop.
struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
    base: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(5), c.close()).await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Where the screenshots go.
fn artefacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("inspector");
    std::fs::create_dir_all(&dir).expect("the artefact folder");
    dir
}

/// Percent-encodes a query-string value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Browser {
    /// A browser at 1280×800, or with `phone` a phone's screen (390×844, emulated: a
    /// desktop window is not made narrower than 500 px).
    fn start(tools: &Tools, server: &TestServer, phone: bool) -> Browser {
        let port = free_port();
        let driver = Command::new(&tools.driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let url = format!("http://127.0.0.1:{port}");
        let ready = Instant::now();
        while agent().get(format!("{url}/status")).call().is_err() {
            assert!(
                ready.elapsed() < Duration::from_secs(20),
                "chromedriver did not answer"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().expect("a profile folder");
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,800",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let mut caps = serde_json::Map::new();
        let mut options = json!({"binary": tools.chromium, "args": args});
        if phone {
            options["mobileEmulation"] =
                json!({"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2}});
        }
        caps.insert("goog:chromeOptions".into(), options);
        let rt = tokio::runtime::Runtime::new().expect("a runtime");
        let mut driver = driver;
        let client = rt.block_on(async {
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                .capabilities(caps)
                .connect(&url)
                .await
        });
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                let _ = driver.kill();
                panic!("no browser session: {e}");
            }
        };
        Browser {
            rt,
            client: Some(client),
            driver,
            _profile: profile,
            base: server.base.clone(),
        }
    }

    fn c(&self) -> &Client {
        self.client.as_ref().expect("a session")
    }

    /// Opens a path of the server.
    fn goto(&self, path: &str) {
        let url = format!("{}{path}", self.base);
        self.rt
            .block_on(self.c().goto(&url))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
    }

    /// Opens a URL outside the server (a `file://` page).
    fn goto_url(&self, url: &str) {
        self.rt
            .block_on(self.c().goto(url))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
    }

    /// Runs `script` (a function body) in the page and answers what it returns.
    fn js(&self, script: &str) -> Value {
        self.js_with(script, Vec::new())
    }

    fn js_with(&self, script: &str, args: Vec<Value>) -> Value {
        self.rt
            .block_on(self.c().execute(script, args))
            .unwrap_or_else(|e| panic!("script failed ({e}): {script}"))
    }

    /// Waits until the expression `cond` is true in the page (10 s at most).
    fn wait(&self, cond: &str, what: &str) {
        let started = Instant::now();
        let script = format!("return !!({cond});");
        loop {
            if self.js(&script) == Value::Bool(true) {
                return;
            }
            if started.elapsed() > Duration::from_secs(10) {
                self.shot("timeout");
                let status = self.js("return document.getElementById('status').textContent;");
                panic!("waited 10 s for {what} ({cond}); status line: {status}");
            }
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Clicks the element `css` matches.
    fn click(&self, css: &str) {
        self.rt
            .block_on(async { self.c().find(Locator::Css(css)).await?.click().await })
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Types `text` into the element `css` matches.
    fn type_into(&self, css: &str, text: &str) {
        self.rt
            .block_on(async {
                self.c()
                    .find(Locator::Css(css))
                    .await?
                    .send_keys(text)
                    .await
            })
            .unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    /// Accepts the dialog a click opened (`confirm`).
    fn accept_dialog(&self) {
        let started = Instant::now();
        while let Err(e) = self.rt.block_on(self.c().accept_alert()) {
            assert!(started.elapsed() < Duration::from_secs(5), "no dialog: {e}");
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Saves a screenshot as `target/tmp/inspector/NAME.png`.
    fn shot(&self, name: &str) {
        match self.rt.block_on(self.c().screenshot()) {
            Ok(png) => {
                let path = artefacts().join(format!("{name}.png"));
                std::fs::write(&path, png).expect("the screenshot is written");
            }
            Err(e) => eprintln!("no screenshot {name}: {e}"),
        }
    }

    /// The number of elements `css` matches.
    fn count(&self, css: &str) -> usize {
        self.js_with(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(css)],
        )
        .as_u64()
        .expect("a count") as usize
    }

    /// The text of every element `css` matches, joined.
    fn text_of(&self, css: &str) -> String {
        self.js_with(
            "return Array.from(document.querySelectorAll(arguments[0]), e => e.textContent).join('');",
            vec![json!(css)],
        )
        .as_str()
        .expect("text")
        .to_string()
    }
}

fn chars(text: &str, start: usize, end: usize) -> String {
    text.chars().skip(start).take(end - start).collect()
}

/// The quick start's sample index, in part: this repository's README and the docs that
/// answer its question (not the long benchmark and evaluation logs, whose embedding
/// would take most of the test's time).
const SAMPLE: &[&str] = &["README.md", "docs/ARCHITECTURE.md", "docs/SECURITY.md"];

fn sample_documents() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = Vec::new();
    for rel in SAMPLE {
        let text = std::fs::read_to_string(root.join(rel)).expect("a sample document");
        docs.push(json!({"id": rel, "format": "markdown", "text": text}));
    }
    json!({ "documents": docs })
}

/// A server with the default chunker over a fresh index in `dir`.
fn sample_server(dir: &Path, options: ServerOptions) -> TestServer {
    let engine = Arc::new(Engine::new(EngineOptions::new(dir.join("index"))));
    start_engine(
        engine,
        ServerOptions {
            log_requests: false,
            ..options
        },
    )
}

fn query(s: &TestServer, body: &Value) -> Value {
    let (st, ctx) = post(s, "/v1/query", body);
    assert_eq!(st, 200, "{ctx}");
    ctx
}

fn get_doc(s: &TestServer, id: &str) -> Value {
    let path = format!("/v1/documents/{}", enc(id));
    let (st, d) = super::get(s, &path);
    assert_eq!(st, 200, "{d}");
    d
}

/// Opens piece `index` of run `side` and checks every highlight of its document: each
/// piece's marks hold exactly the API's text at its offsets, the document is whole,
/// and the clicked piece is scrolled into view.
fn open_and_check(b: &Browser, s: &TestServer, side: &str, runs: &[(&str, &Value)], index: usize) {
    let (_, ctx) = runs.iter().find(|(r, _)| *r == side).expect("the run");
    let piece = &ctx["pieces"][index];
    b.click(&format!(
        ".run.side-{side} .piece[data-index=\"{index}\"] button.open"
    ));
    b.wait(
        &format!("!document.getElementById('doc-view').hidden && document.querySelector('#doc-text mark.p-{side}-{index}.current')"),
        "the piece's document",
    );
    let id = piece["doc_id"].as_str().unwrap();
    let doc = get_doc(s, id);
    let text = doc["text"].as_str().unwrap();
    assert_eq!(
        b.text_of("#doc-text"),
        text,
        "the whole document is shown, the text around the pieces too"
    );
    for (run, ctx) in runs {
        for (j, p) in ctx["pieces"].as_array().unwrap().iter().enumerate() {
            if p["doc_id"] != piece["doc_id"] {
                continue;
            }
            let (start, end) = (
                p["start"].as_u64().unwrap() as usize,
                p["end"].as_u64().unwrap() as usize,
            );
            let shown = b.text_of(&format!("#doc-text mark.p-{run}-{j}"));
            assert_eq!(shown, p["text"].as_str().unwrap(), "{run}{j} highlighted");
            assert_eq!(shown, chars(text, start, end), "{run}{j} at its offsets");
        }
    }
    let visible = b.js(
        "const m = document.querySelector('#doc-text mark.current').getBoundingClientRect();
         const c = document.getElementById('doc-text').getBoundingClientRect();
         return m.top < Math.min(c.bottom, innerHeight) && m.bottom > Math.max(c.top, 0);",
    );
    assert_eq!(
        visible,
        json!(true),
        "the clicked piece is scrolled into view"
    );
    assert_eq!(
        b.count("#outline button.sec"),
        doc["sections"].as_array().unwrap().len(),
        "the outline lists every section"
    );
}

#[test]
fn the_inspector_shows_a_context_and_its_pieces_in_place() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(dir.path(), ServerOptions::default());
    let (st, r) = post(&s, "/v1/ingest", &sample_documents());
    assert_eq!(st, 200, "{r}");
    let b = Browser::start(&tools, &s, false);

    // The README's question, as a link.
    let ctx = query(&s, &json!({"query": QUESTION, "budget": 800}));
    let rendered = query(
        &s,
        &json!({"query": QUESTION, "budget": 800, "format": "text"}),
    );
    let n = ctx["pieces"].as_array().unwrap().len();
    assert!(n > 0, "{ctx}");
    b.goto(&format!("/?q={}&budget=800", enc(QUESTION)));
    b.wait("document.querySelector('.run.side-a')", "the context");
    assert_eq!(
        b.count(".run.side-a .piece"),
        n,
        "a card per piece of the API"
    );
    assert_eq!(
        b.text_of(".run.side-a .rendered-text"),
        rendered["context"].as_str().unwrap(),
        "the text the LLM receives"
    );
    for (i, p) in ctx["pieces"].as_array().unwrap().iter().enumerate() {
        let card = format!(".run.side-a .piece[data-index=\"{i}\"]");
        assert_eq!(
            b.text_of(&format!("{card} .piece-text")),
            p["text"].as_str().unwrap()
        );
        assert_eq!(
            b.text_of(&format!("{card} .doc-id")),
            p["doc_id"].as_str().unwrap()
        );
    }
    assert_eq!(
        b.js("return document.getElementById('q').value;"),
        json!(QUESTION)
    );
    b.shot("query");

    // A piece in its document.
    open_and_check(&b, &s, "a", &[("a", &ctx)], n / 2);
    b.shot("document");
    // The open document is part of the link: opened again, the same piece is shown.
    let link = b.js("return location.pathname + location.search;");
    let link = link.as_str().unwrap().to_string();
    assert!(link.contains(&format!("open=a{}", n / 2)), "{link}");
    b.goto(&link);
    b.wait(
        &format!(
            "document.querySelector('#doc-text mark.p-a-{}.current')",
            n / 2
        ),
        "the linked piece in its document",
    );

    // The page asked nothing of anyone but its own server.
    let foreign = b.js_with(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith(arguments[0] + '/'));",
        vec![json!(s.base)],
    );
    assert_eq!(foreign, json!([]), "requests outside the server");

    // Two strategies side by side.
    let a = query(
        &s,
        &json!({"query": QUESTION, "strategy": "topk", "budget": 600}),
    );
    let bb = query(
        &s,
        &json!({"query": QUESTION, "strategy": "section", "budget": 600}),
    );
    b.goto(&format!(
        "/?q={}&strategy=topk&budget=600&b_strategy=section&b_budget=600",
        enc(QUESTION)
    ));
    b.wait(
        "document.querySelector('.run.side-a') && document.querySelector('.run.side-b')",
        "both contexts",
    );
    let overlaps = |p: &Value, others: &Value| {
        others.as_array().unwrap().iter().any(|q| {
            q["doc_id"] == p["doc_id"]
                && q["start"].as_u64() < p["end"].as_u64()
                && p["start"].as_u64() < q["end"].as_u64()
        })
    };
    for (side, mine, other) in [("a", &a, &bb), ("b", &bb, &a)] {
        let pieces = mine["pieces"].as_array().unwrap();
        assert_eq!(
            b.count(&format!(".run.side-{side} .piece")),
            pieces.len(),
            "{side}"
        );
        let alone = pieces
            .iter()
            .filter(|p| !overlaps(p, &other["pieces"]))
            .count();
        assert_eq!(
            b.count(&format!(".run.side-{side} .badge.only-{side}")),
            alone,
            "pieces only {side} returned"
        );
    }
    b.shot("compare");
    open_and_check(&b, &s, "b", &[("a", &a), ("b", &bb)], 0);
    b.shot("compare-document");

    // The documents: the list, and one document's text.
    b.goto("/?view=docs");
    b.wait("document.querySelector('table.docs')", "the list");
    assert_eq!(b.count("table.docs tbody tr"), SAMPLE.len());
    b.click("table.docs tbody tr:first-child button.link");
    b.wait(
        "!document.getElementById('doc-view').hidden && document.getElementById('doc-text').textContent.length > 0",
        "a document",
    );
    let first = get_doc(&s, "README.md");
    assert_eq!(b.text_of("#doc-text"), first["text"].as_str().unwrap());
    b.shot("documents");
}

#[test]
fn the_inspector_shows_hostile_titles_as_text() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(dir.path(), ServerOptions::default());
    let id = "evil/<script>window.__pwned=3</script>\u{202e}gnp.exe";
    let title = "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>\u{202e}txt.exe\u{2066}";
    let text = "Zebra crossing notes.\n\nThe zebra herd crossed the river at dawn, <b>bold</b> & \u{202e}reversed.\n";
    let (st, r) = post(
        &s,
        "/v1/ingest",
        &json!({"documents": [{"id": id, "title": title, "text": text}]}),
    );
    assert_eq!(st, 200, "{r}");
    let b = Browser::start(&tools, &s, false);
    let ctx = query(
        &s,
        &json!({"query": "zebra herd river", "filter": {"doc_ids": [id]}}),
    );
    assert!(!ctx["pieces"].as_array().unwrap().is_empty(), "{ctx}");
    b.goto(&format!("/?q=zebra+herd+river&doc_id={}", enc(id)));
    b.wait(
        "document.querySelector('.run.side-a .piece')",
        "the hostile piece",
    );
    let shown = b.text_of(".run.side-a .piece[data-index=\"0\"] button.open");
    let expected = title
        .replace('\u{202e}', "⟨U+202E⟩")
        .replace('\u{2066}', "⟨U+2066⟩");
    assert_eq!(shown, expected, "the title as text, its controls visible");
    assert_eq!(
        b.text_of(".run.side-a .piece[data-index=\"0\"] .doc-id"),
        id.replace('\u{202e}', "⟨U+202E⟩")
    );
    b.click(".run.side-a .piece[data-index=\"0\"] button.open");
    b.wait(
        "document.querySelector('#doc-text mark.current')",
        "the document",
    );
    assert_eq!(b.text_of("#doc-head h2"), expected);
    assert_eq!(
        b.text_of("#doc-text"),
        text,
        "the text exactly, markup as text"
    );
    assert_eq!(
        b.js("return typeof window.__pwned;"),
        json!("undefined"),
        "nothing ran"
    );
    assert_eq!(b.count("img"), 0, "no element made from the data");
    assert_eq!(b.count("b"), 0);
    assert_eq!(b.count("script"), 1, "only the page's own module");
    b.shot("hostile");
}

#[test]
fn the_inspector_shows_no_data_until_a_token_is_given() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let s = sample_server(
        dir.path(),
        ServerOptions {
            token: Some("write-s3cret".into()),
            read_token: Some("read-s3cret".into()),
            ..ServerOptions::default()
        },
    );
    let send = |path: &str, token: &str, body: &Value| {
        answer(
            agent()
                .post(format!("{}{path}", s.base))
                .header("Authorization", &format!("Bearer {token}"))
                .send_json(body),
        )
    };
    let (st, r) = send("/v1/ingest", "write-s3cret", &super::ingest_body());
    assert_eq!(st, 200, "{r}");
    let (st, ctx) = send(
        "/v1/query",
        "read-s3cret",
        &json!({"query": "restart the database cluster"}),
    );
    assert_eq!(st, 200, "{ctx}");
    // On a phone's screen, which the page must fit too.
    let b = Browser::start(&tools, &s, true);

    b.goto("/?q=restart+the+database+cluster");
    b.wait("!document.getElementById('auth').hidden", "the token form");
    assert_eq!(b.count(".piece"), 0, "no pieces without a token");
    let body = b.text_of("body");
    assert!(
        !body.contains("replica"),
        "document text shown without a token"
    );
    b.shot("token-asked");

    b.type_into("#token", "read-s3cret");
    b.click("#token-use");
    b.wait(
        "document.querySelector('.run.side-a')",
        "the context with the token",
    );
    assert_eq!(
        b.count(".run.side-a .piece"),
        ctx["pieces"].as_array().unwrap().len()
    );
    assert_eq!(
        b.js("return [sessionStorage.getItem('excerpt.token'), localStorage.length, document.cookie];"),
        json!(["read-s3cret", 0, ""]),
        "the token is kept for this tab only"
    );
    assert!(
        !b.js("return location.href;")
            .as_str()
            .unwrap()
            .contains("s3cret"),
        "the token never goes into the URL"
    );
    assert_eq!(
        b.js("return [window.innerWidth, document.documentElement.scrollWidth <= window.innerWidth];"),
        json!([390, true]),
        "a phone's width, and nothing wider than it"
    );
    b.shot("token-given-phone");

    // The read token may look, not change: a delete is refused and says why.
    let count = |b: &Browser| b.count("table.docs tbody tr");
    b.click("#tab-docs");
    b.wait("document.querySelector('table.docs')", "the list");
    let before = count(&b);
    b.click("table.docs tbody tr:first-child button.danger");
    b.accept_dialog();
    b.wait(
        "document.getElementById('status').textContent.includes('write token')",
        "the read-only refusal",
    );
    assert_eq!(
        super::ingest_body()["documents"].as_array().unwrap().len(),
        before
    );

    // With the write token: upload a file, delete a document.
    b.click("#token-button");
    b.type_into("#token", "write-s3cret");
    b.click("#token-use");
    b.wait("document.querySelector('table.docs')", "the list again");
    let file = dir.path().join("notes.md");
    std::fs::write(&file, "# Notes\n\nUploaded from the inspector.\n").unwrap();
    b.type_into("#upload-files", &file.display().to_string());
    b.click("#upload-form button[type=submit]");
    b.wait(
        &format!(
            "document.querySelectorAll('table.docs tbody tr').length === {}",
            before + 1
        ),
        "the uploaded document listed",
    );
    let (st, d) = answer(
        agent()
            .get(format!("{}/v1/documents/notes.md", s.base))
            .header("Authorization", "Bearer read-s3cret")
            .call(),
    );
    assert_eq!(st, 200, "{d}");
    assert_eq!(
        d["text"],
        json!("# Notes\n\nUploaded from the inspector.\n")
    );
    b.click("table.docs tbody tr:first-child button.danger");
    b.accept_dialog();
    b.wait(
        &format!("document.querySelectorAll('table.docs tbody tr').length === {before}"),
        "the document removed",
    );
    b.shot("documents-written-phone");
}

/// `excerpt eval --html`'s report, opened from its file: one section per question, the
/// gold evidence highlighted in a returned piece as the corpus has it, a hostile query
/// shown as text, and nothing run or fetched.
#[test]
fn an_evaluation_report_opens_with_its_evidence_highlighted() {
    let Some(tools) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let zoo = "The zebra herd crossed the river at dawn. Lions waited in the tall grass.\n";
    let garden = "Tomatoes need sun and water. Basil grows well beside them in summer.\n";
    let corpus = [
        json!({"id": "zoo.md", "text": zoo}),
        json!({"id": "garden.md", "text": garden}),
    ];
    let hostile = "<img src=x onerror=\"window.__pwned=1\"> what grows beside tomatoes?";
    let span = |text: &str, needle: &str| {
        let at = text.find(needle).unwrap();
        (
            text[..at].chars().count(),
            text[..at].chars().count() + needle.chars().count(),
        )
    };
    let (z0, z1) = span(zoo, "The zebra herd crossed the river at dawn.");
    let (g0, g1) = span(garden, "Basil grows well beside them in summer.");
    let queries = [
        json!({"id": "q-zebra", "query": "When did the zebra herd cross the river?",
               "evidence": [{"doc_id": "zoo.md", "start": z0, "end": z1}]}),
        json!({"id": "q-basil", "query": hostile,
               "evidence": [{"doc_id": "garden.md", "start": g0, "end": g1}]}),
    ];
    let lines = |v: &[Value]| v.iter().map(|x| format!("{x}\n")).collect::<String>();
    std::fs::write(data.join("corpus.jsonl"), lines(&corpus)).unwrap();
    std::fs::write(data.join("queries.jsonl"), lines(&queries)).unwrap();
    let engine = Engine::new(EngineOptions::new(data.join("index")));
    let mut opts = excerpt_eval::EvalOptions::new(
        data.join("corpus.jsonl"),
        data.join("queries.jsonl"),
        data.join("out"),
    );
    opts.quiet = true;
    opts.strategies = vec!["topk".into(), "rse".into()];
    opts.budgets = vec![100];
    let page = data.join("report.html");
    opts.html = Some(page.clone());
    excerpt_eval::run_eval(&engine, &opts, &excerpt::NoProgress).unwrap();

    let s = sample_server(&data.join("server"), ServerOptions::default());
    let b = Browser::start(&tools, &s, false);
    b.goto_url(&format!("file://{}", page.display()));
    b.wait("document.querySelector('section.q')", "the questions");
    assert_eq!(b.count("section.q"), 2);
    let ids =
        b.js("return [...document.querySelectorAll('section.q h3')].map(h => h.textContent);");
    assert_eq!(ids, json!(["q-zebra", "q-basil"]));
    // The hostile query is its text, and nothing it holds ran.
    let shown = b.js("return document.querySelector('#q1 p.t').textContent;");
    assert_eq!(shown, json!(hostile));
    assert_eq!(b.js("return typeof window.__pwned;"), json!("undefined"));
    assert_eq!(b.count("script"), 0, "the report has no script");
    // Each question's evidence is highlighted inside a returned piece, as the corpus
    // has it.
    for (i, evidence) in [zoo, garden].iter().zip([(z0, z1), (g0, g1)]).enumerate() {
        let (text, (a, c)) = evidence;
        let want = chars(text, a, c);
        let marks = b.js_with(
            "return [...document.querySelectorAll(`#q${arguments[0]} .piece mark`)].map(m => m.textContent);",
            vec![json!(i)],
        );
        let marks: Vec<String> = serde_json::from_value(marks).unwrap();
        assert!(
            marks
                .iter()
                .any(|m| want.contains(m.as_str()) && m.len() * 2 >= want.len()),
            "question {i}: {marks:?} against {want:?}"
        );
    }
    // Every image is the embedded chart; no address outside the page.
    let srcs = b.js("return [...document.querySelectorAll('[src]')].map(e => e.getAttribute('src').slice(0, 5));");
    for src in srcs.as_array().unwrap() {
        assert_eq!(src, &json!("data:"), "{srcs}");
    }
    b.shot("eval-report");
}
