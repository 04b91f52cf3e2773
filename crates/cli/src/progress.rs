//! The ingest progress bar: chunks embedded out of chunks queued, with rate and ETA;
//! while a long PDF is read, its pages read so far.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use excerpt::IngestProgress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Bar {
    bar: ProgressBar,
    files: AtomicUsize,
    files_done: AtomicUsize,
    /// Chunk contexts written or found in the cache (`--contextualize`).
    contexts: AtomicUsize,
    /// The PDF being read, when it is long: "name p. done/total".
    reading: Mutex<String>,
}

/// PDFs with fewer pages show no page count (they read in a blink).
const LONG_PDF_PAGES: usize = 50;

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        let target = if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} files {msg} [{bar:30}] {pos}/{len} chunks  {per_sec}  ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        Bar {
            bar,
            files: AtomicUsize::new(0),
            files_done: AtomicUsize::new(0),
            contexts: AtomicUsize::new(0),
            reading: Mutex::new(String::new()),
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn update_msg(&self) {
        let contexts = match self.contexts.load(Ordering::Relaxed) {
            0 => String::new(),
            n => format!(", {n} contexts"),
        };
        let reading = self.reading.lock().map(|r| r.clone()).unwrap_or_default();
        self.bar.set_message(format!(
            "{}/{}{contexts}{reading}",
            self.files_done.load(Ordering::Relaxed),
            self.files.load(Ordering::Relaxed)
        ));
    }
}

impl IngestProgress for Bar {
    fn files_found(&self, files: usize) {
        self.files.store(files, Ordering::Relaxed);
        self.update_msg();
    }
    fn pages_read(&self, path: &str, done: usize, total: usize) {
        if total < LONG_PDF_PAGES || (!done.is_multiple_of(10) && done != total) {
            return;
        }
        let name = std::path::Path::new(path)
            .file_name()
            .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
        if let Ok(mut r) = self.reading.lock() {
            *r = format!(", reading {name} p. {done}/{total}");
        }
        self.update_msg();
    }
    fn file_done(&self, _path: &str) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut r) = self.reading.lock() {
            r.clear();
        }
        self.update_msg();
    }
    fn chunks_queued(&self, chunks: usize) {
        self.bar.inc_length(chunks as u64);
    }
    fn chunks_done(&self, chunks: usize) {
        self.bar.inc(chunks as u64);
    }
    fn contexts_done(&self, chunks: usize) {
        self.contexts.fetch_add(chunks, Ordering::Relaxed);
        self.update_msg();
    }
}
