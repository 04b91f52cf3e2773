//! The inspector (`GET /`) in a real headless Chromium, driven over WebDriver
//! (chromedriver, through `fantoccini`), against a real server on 127.0.0.1 with a real
//! index. The tests assert on what a person sees: as many piece cards as the API's
//! pieces, highlighted text equal to the API's text at its offsets, hostile titles shown
//! as text, no data before the token. Screenshots go to `target/tmp/inspector/`.
//!
//! Without chromedriver and Chromium the tests print a line and pass, unless
//! `EXCERPT_REQUIRE_BROWSER=1` (as `scripts/test.sh` sets), when they fail.
//! `EXCERPT_CHROMEDRIVER` and `EXCERPT_CHROMIUM` name other binaries.
//!
//! This file is the harness (a browser per test, helpers that read the page); the tests
//! are in `views` (every view, on an index directory and on PostgreSQL), `security`
//! (hostile titles, the token), `report` (the evaluation report), `usability` (the
//! keyboard alone, a phone's screen), `pages` (a PDF piece's page as an image) and `load` (the page's load time, measured, not
//! asserted: `#[ignore]`d).

mod load;
mod pages;
mod report;
mod security;
mod usability;
mod views;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use excerpt::{Engine, EngineOptions};
use excerpt_server::ServerOptions;
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use super::{agent, post, start_engine, TestServer};

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
        Browser::start_at(tools, &server.base, phone)
    }

    /// [`Browser::start`] for the server at `base` (`http://127.0.0.1:PORT`).
    fn start_at(tools: &Tools, base: &str, phone: bool) -> Browser {
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
            base: base.to_string(),
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

    /// Presses the keys `keys` where the focus is, one after the other, as a person at
    /// the keyboard does (letters, or [`Key`]s as `char`s).
    fn keys(&self, keys: impl IntoIterator<Item = char>) {
        let mut a = KeyActions::new("keyboard".into());
        for k in keys {
            a = a
                .then(KeyAction::Down { value: k })
                .then(KeyAction::Up { value: k });
        }
        self.rt
            .block_on(self.c().perform_actions(a))
            .unwrap_or_else(|e| panic!("keys: {e}"));
    }

    /// Presses `key` where the focus is.
    fn press(&self, key: Key) {
        self.keys([char::from(key)]);
    }

    /// Whether the focused element matches `css`.
    fn focused(&self, css: &str) -> bool {
        self.js_with(
            "return !!document.activeElement && document.activeElement.matches(arguments[0]);",
            vec![json!(css)],
        ) == Value::Bool(true)
    }

    /// Presses Tab until the focused element matches `css`, at most `max` times;
    /// answers how many presses it took.
    fn tab_to(&self, css: &str, max: usize) -> usize {
        for n in 1..=max {
            self.press(Key::Tab);
            if self.focused(css) {
                return n;
            }
        }
        self.shot("tab-timeout");
        let at = self
            .js("const e = document.activeElement; return e ? e.outerHTML.slice(0, 200) : null;");
        panic!("{max} presses of Tab did not reach {css}; the focus is on {at}");
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

/// The `POST /v1/ingest` body of `files` (paths from the repository root, as ids).
fn sample_documents(files: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = Vec::new();
    for rel in files {
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
