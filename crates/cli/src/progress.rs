//! Ingest progress on stderr. On a terminal: a spinner while files are read (with the
//! page being read of a PDF), then a bar while the queued chunks are embedded, with a
//! whole-number rate and an ETA. Off a terminal (logs, CI, a supervisor): one line every
//! few seconds, as text or JSON (`--progress lines|json`, `--progress-interval`).
//!
//! The engine reports through [`IngestProgress`]: files found, pages read of a PDF, a
//! file done, chunks queued, chunks embedded, contexts written, commits. It says
//! nothing when a file *starts* being read, so a plain file being read shows as the
//! next of the files (no name); a PDF shows its name and pages as they are read.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use excerpt::IngestProgress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use serde::Serialize;

use crate::args::ProgressMode;

/// What is known of the ingest so far, shared with the thread that prints lines.
struct State {
    start: Instant,
    files: AtomicUsize,
    files_done: AtomicUsize,
    chunks_queued: AtomicUsize,
    chunks_done: AtomicUsize,
    /// Chunk contexts written or found in the cache (`--contextualize`).
    contexts: AtomicUsize,
    /// Generation of the last commit (0: none yet).
    generation: AtomicU64,
    /// The last event was chunks (or contexts) done: a batch is being embedded.
    embedding_event: AtomicBool,
    /// The PDF being read: path, pages done, pages in all.
    reading: Mutex<Option<(String, usize, usize)>>,
    /// Chunks after which the engine embeds a batch (`--commit-every`).
    batch: usize,
}

impl State {
    fn new(batch: usize) -> State {
        State {
            start: Instant::now(),
            files: AtomicUsize::new(0),
            files_done: AtomicUsize::new(0),
            chunks_queued: AtomicUsize::new(0),
            chunks_done: AtomicUsize::new(0),
            contexts: AtomicUsize::new(0),
            generation: AtomicU64::new(0),
            embedding_event: AtomicBool::new(false),
            reading: Mutex::new(None),
            batch: batch.max(1),
        }
    }

    /// Whether chunks are being embedded now rather than files read: the last event
    /// was an embedded batch, or a full batch is queued, or every file is read and
    /// chunks wait.
    fn embedding(&self) -> bool {
        let queued = self.chunks_queued.load(Ordering::Relaxed);
        let pending = queued.saturating_sub(self.chunks_done.load(Ordering::Relaxed));
        let files = self.files.load(Ordering::Relaxed);
        let all_read = files > 0 && self.files_done.load(Ordering::Relaxed) >= files;
        pending > 0
            && (self.embedding_event.load(Ordering::Relaxed) || pending >= self.batch || all_read)
    }

    fn snapshot(&self) -> Snapshot {
        let reading = self.reading.lock().ok().and_then(|r| r.clone());
        Snapshot {
            elapsed_secs: (self.start.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            phase: if self.embedding() {
                "embedding"
            } else {
                "reading"
            },
            files: self.files.load(Ordering::Relaxed),
            files_done: self.files_done.load(Ordering::Relaxed),
            pdf: reading.map(|(path, page, pages)| PdfPages { path, page, pages }),
            chunks_queued: self.chunks_queued.load(Ordering::Relaxed),
            chunks_done: self.chunks_done.load(Ordering::Relaxed),
            contexts: self.contexts.load(Ordering::Relaxed),
            chunks_per_sec: None,
            generation: self.generation.load(Ordering::Relaxed),
            done: false,
        }
    }
}

/// One progress record (`--progress json` prints it as one line).
#[derive(Debug, Clone, Serialize)]
struct Snapshot {
    /// Seconds since the ingest started, to a tenth.
    elapsed_secs: f64,
    /// `reading` files or `embedding` chunks.
    phase: &'static str,
    files: usize,
    files_done: usize,
    /// The PDF being read and its pages read so far.
    pdf: Option<PdfPages>,
    chunks_queued: usize,
    chunks_done: usize,
    contexts: usize,
    /// Chunks embedded per second since the previous record (whole number; absent when
    /// none was embedded meanwhile).
    #[serde(skip_serializing_if = "Option::is_none")]
    chunks_per_sec: Option<u64>,
    /// Generation of the last commit (0: none yet).
    generation: u64,
    /// The last record, written when the ingest is over.
    done: bool,
}

#[derive(Debug, Clone, Serialize)]
struct PdfPages {
    path: String,
    page: usize,
    pages: usize,
}

/// The file name of `path`, for the terminal.
fn file_name(path: &str) -> String {
    let name = std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    crate::terminal::printable(&name).into_owned()
}

impl Snapshot {
    /// The record as a line of text for a log: `progress: 12s, files 3/10, reading
    /// report.pdf p. 120/619, chunks 2048/3548 embedded (41 chunks/s)`.
    fn line(&self) -> String {
        let mut s = format!(
            "progress: {:.0}s, files {}/{}",
            self.elapsed_secs, self.files_done, self.files
        );
        if let Some(p) = &self.pdf {
            s.push_str(&format!(
                ", reading {} p. {}/{}",
                crate::terminal::printable(&p.path),
                p.page,
                p.pages
            ));
        }
        if self.chunks_queued > 0 {
            s.push_str(&format!(
                ", chunks {}/{} embedded",
                self.chunks_done, self.chunks_queued
            ));
        }
        if let Some(rate) = self.chunks_per_sec {
            s.push_str(&format!(" ({rate} chunks/s)"));
        }
        if self.contexts > 0 {
            s.push_str(&format!(", {} contexts", self.contexts));
        }
        if self.done {
            s.push_str(", done");
        }
        s
    }
}

/// How the progress is shown.
enum Display {
    /// Nothing.
    Off,
    /// The terminal bar.
    Bar {
        bar: ProgressBar,
        /// Whether the bar (not the spinner) style is set.
        embedding_style: AtomicBool,
    },
    /// A thread printing a record every interval; dropping the sender stops it.
    Lines {
        stop: Mutex<Option<mpsc::Sender<()>>>,
        thread: Mutex<Option<JoinHandle<()>>>,
        json: bool,
    },
}

/// The ingest progress reporter of `ingest` and `eval`.
pub struct Progress {
    state: Arc<State>,
    display: Display,
}

/// Template of the spinner shown while files are read.
const READING: &str = "{spinner} files {msg}";
/// Template of the bar shown while chunks are embedded.
const EMBEDDING: &str =
    "{spinner} files {msg} [{bar:20}] {pos}/{len} chunks  {rate} chunks/s  ETA {eta}";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0}", s.per_sec());
        })
        .progress_chars("=> ")
}

impl Progress {
    /// A reporter for `mode`: `auto` is the bar on a terminal, lines elsewhere, nothing
    /// with `quiet`. `interval` is the time between two lines; `batch` the chunks after
    /// which the engine embeds.
    pub fn new(mode: ProgressMode, quiet: bool, interval: Duration, batch: usize) -> Progress {
        let state = Arc::new(State::new(batch));
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let mode = match mode {
            ProgressMode::Auto if quiet => ProgressMode::Off,
            ProgressMode::Auto if terminal => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::Lines,
            m => m,
        };
        let display = match mode {
            ProgressMode::Bar => {
                let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
                bar.set_style(style(READING));
                bar.set_message("0/0");
                if !bar.is_hidden() {
                    // The spinner turns while a long file is read and nothing is reported.
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
                Display::Bar {
                    bar,
                    embedding_style: AtomicBool::new(false),
                }
            }
            ProgressMode::Lines | ProgressMode::Json => {
                let json = mode == ProgressMode::Json;
                let (tx, rx) = mpsc::channel::<()>();
                let shared = state.clone();
                let thread = std::thread::Builder::new()
                    .name("progress".into())
                    .spawn(move || {
                        let mut last = (Instant::now(), 0usize);
                        // Stops when the sender is dropped (or sends).
                        while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                            let mut snap = shared.snapshot();
                            let now = Instant::now();
                            let secs = now.duration_since(last.0).as_secs_f64();
                            let embedded = snap.chunks_done.saturating_sub(last.1);
                            if embedded > 0 && secs > 0.0 {
                                snap.chunks_per_sec = Some((embedded as f64 / secs).round() as u64);
                            }
                            last = (now, snap.chunks_done);
                            print_record(&snap, json);
                        }
                    })
                    .ok();
                Display::Lines {
                    stop: Mutex::new(Some(tx)),
                    thread: Mutex::new(thread),
                    json,
                }
            }
            ProgressMode::Off | ProgressMode::Auto => Display::Off,
        };
        Progress { state, display }
    }

    /// Clears the bar, or stops the lines (`--progress json` writes a last record, with
    /// `done: true`).
    pub fn finish(&self) {
        match &self.display {
            Display::Off => {}
            Display::Bar { bar, .. } => bar.finish_and_clear(),
            Display::Lines { stop, thread, json } => {
                let stopped = stop.lock().ok().and_then(|mut s| s.take());
                drop(stopped);
                if let Some(t) = thread.lock().ok().and_then(|mut t| t.take()) {
                    let _ = t.join();
                    if *json {
                        let mut snap = self.state.snapshot();
                        snap.done = true;
                        snap.pdf = None;
                        print_record(&snap, true);
                    }
                }
            }
        }
    }

    /// Redraws the bar after an event: the spinner while files are read, the bar while
    /// chunks are embedded.
    fn update(&self) {
        let Display::Bar {
            bar,
            embedding_style,
        } = &self.display
        else {
            return;
        };
        let s = &self.state;
        let embedding = s.embedding();
        if embedding_style.swap(embedding, Ordering::Relaxed) != embedding {
            bar.set_style(style(if embedding { EMBEDDING } else { READING }));
        }
        let mut msg = format!(
            "{}/{}",
            s.files_done.load(Ordering::Relaxed),
            s.files.load(Ordering::Relaxed)
        );
        let contexts = s.contexts.load(Ordering::Relaxed);
        if contexts > 0 {
            msg.push_str(&format!(", {contexts} contexts"));
        }
        if let Some((path, done, total)) = s.reading.lock().ok().and_then(|r| r.clone()) {
            msg.push_str(&format!(", reading {} p. {done}/{total}", file_name(&path)));
        }
        if !embedding {
            let queued = s.chunks_queued.load(Ordering::Relaxed);
            if queued > 0 {
                msg.push_str(&format!(
                    ", chunks {}/{queued} embedded",
                    s.chunks_done.load(Ordering::Relaxed)
                ));
            }
        }
        bar.set_message(msg);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Display::Lines { stop, .. } = &self.display {
            if let Ok(mut s) = stop.lock() {
                s.take();
            }
        }
    }
}

/// Writes one record on stderr, as a line of text or of JSON.
fn print_record(snap: &Snapshot, json: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(snap) {
            eprintln!("{line}");
        }
    } else {
        eprintln!("{}", snap.line());
    }
}

impl IngestProgress for Progress {
    fn files_found(&self, files: usize) {
        self.state.files.store(files, Ordering::Relaxed);
        self.update();
    }
    fn pages_read(&self, path: &str, done: usize, total: usize) {
        self.state.embedding_event.store(false, Ordering::Relaxed);
        if let Ok(mut r) = self.state.reading.lock() {
            *r = Some((path.to_string(), done, total));
        }
        self.update();
    }
    fn file_done(&self, _path: &str) {
        self.state.embedding_event.store(false, Ordering::Relaxed);
        self.state.files_done.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut r) = self.state.reading.lock() {
            *r = None;
        }
        self.update();
    }
    fn chunks_queued(&self, chunks: usize) {
        self.state
            .chunks_queued
            .fetch_add(chunks, Ordering::Relaxed);
        if let Display::Bar { bar, .. } = &self.display {
            bar.inc_length(chunks as u64);
        }
        self.update();
    }
    fn chunks_done(&self, chunks: usize) {
        self.state.embedding_event.store(true, Ordering::Relaxed);
        self.state.chunks_done.fetch_add(chunks, Ordering::Relaxed);
        if let Display::Bar { bar, .. } = &self.display {
            bar.inc(chunks as u64);
        }
        self.update();
    }
    fn contexts_done(&self, chunks: usize) {
        self.state.embedding_event.store(true, Ordering::Relaxed);
        self.state.contexts.fetch_add(chunks, Ordering::Relaxed);
        self.update();
    }
    fn committed(&self, generation: u64) {
        // A commit follows the embedding of everything queued: chunks whose text
        // another chunk of the batch shares are embedded once and not reported, so
        // the count catches up here.
        let queued = self.state.chunks_queued.load(Ordering::Relaxed);
        let done = self.state.chunks_done.fetch_max(queued, Ordering::Relaxed);
        if let Display::Bar { bar, .. } = &self.display {
            bar.inc(queued.saturating_sub(done) as u64);
        }
        self.state.generation.store(generation, Ordering::Relaxed);
        self.update();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_is_not_embedding_until_a_batch_is_full_or_the_files_are_read() {
        let s = State::new(100);
        s.files.store(3, Ordering::Relaxed);
        // A long PDF being read, nothing queued: reading (the old bar showed full here).
        *s.reading.lock().unwrap() = Some(("a.pdf".into(), 120, 619));
        assert!(!s.embedding());
        assert_eq!(s.snapshot().phase, "reading");
        // Chunks queued below a batch while files remain: still reading.
        s.chunks_queued.store(40, Ordering::Relaxed);
        s.files_done.store(1, Ordering::Relaxed);
        assert!(!s.embedding());
        // A full batch queued: the engine embeds it now.
        s.chunks_queued.store(100, Ordering::Relaxed);
        assert!(s.embedding());
        // Part of it embedded.
        s.chunks_done.store(60, Ordering::Relaxed);
        s.embedding_event.store(true, Ordering::Relaxed);
        assert!(s.embedding());
        // All of it embedded: back to reading.
        s.chunks_done.store(100, Ordering::Relaxed);
        assert!(!s.embedding());
        // Every file read and chunks waiting: the last batch is embedded.
        s.embedding_event.store(false, Ordering::Relaxed);
        s.files_done.store(3, Ordering::Relaxed);
        s.chunks_queued.store(130, Ordering::Relaxed);
        assert!(s.embedding());
    }

    #[test]
    fn a_line_has_whole_numbers_and_the_pdf_pages() {
        let s = State::new(4096);
        s.files.store(10, Ordering::Relaxed);
        s.files_done.store(3, Ordering::Relaxed);
        s.chunks_queued.store(3548, Ordering::Relaxed);
        s.chunks_done.store(2048, Ordering::Relaxed);
        *s.reading.lock().unwrap() = Some(("dir/report.pdf".into(), 120, 619));
        let mut snap = s.snapshot();
        snap.elapsed_secs = 12.34;
        snap.chunks_per_sec = Some(41);
        assert_eq!(
            snap.line(),
            "progress: 12s, files 3/10, reading dir/report.pdf p. 120/619, chunks 2048/3548 \
             embedded (41 chunks/s)"
        );
        let v = serde_json::to_value(&snap).unwrap();
        assert_eq!(v["pdf"]["pages"], 619);
        assert_eq!(v["chunks_per_sec"], 41);
        assert_eq!(v["phase"], "reading");
    }
}
