//! PDFs parsed in a worker process under limits: the "cage" of untrusted PDFs.
//!
//! PDFium runs in the process that loads it, and a hostile PDF of a kilobyte (form
//! XObjects that draw each other, a fan-out of them, a flate bomb) makes it allocate
//! gigabytes or run for minutes. With [`crate::LoadOptions::pdf_worker`] set, each PDF is
//! parsed by a separate program instead, started with an address-space limit
//! (`RLIMIT_AS`), a CPU-time limit (`RLIMIT_CPU`), no core dumps, and killed when it
//! runs past its wall-clock limit. A worker that dies, is killed, overruns or answers
//! garbage makes that PDF skipped ([`crate::IngestError::Pdf`]) with the reason; the
//! loading process is never at risk.
//!
//! The protocol between the loading process and its worker: the worker is run as
//! `PROGRAM ARGS… --max-pages N --name NAME`, reads the PDF's bytes on its standard
//! input, may write `progress DONE TOTAL` lines on its standard error, and writes one
//! JSON reply on its standard output, then exits with status 0. [`run_pdf_worker`]
//! implements the worker's side: a program only has to parse those two options and call
//! it (the `excerpt` binary does it in its hidden `pdf-worker` subcommand).
//!
//! A page image for the inspector ([`crate::render_pdf_page`]) is a second kind of
//! request, under the same limits: the same options and `--page`, one line of JSON (a
//! [`PageRequest`]) then the PDF's bytes on standard input, and one JSON reply, the
//! page or why not; [`run_pdf_page_worker`] is the worker's side.

use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::formats::pdf::{self, PageError, PageImage, PageRequest};
use crate::parsed::ParsedDocument;
use crate::IngestError;

/// Default of [`PdfLimits::memory_bytes`]: 2 GiB of address space, several times what
/// PDFium needs for large real reports (see docs/SECURITY.md).
pub const DEFAULT_PDF_MEMORY_BYTES: u64 = 2 << 30;

/// Default of [`PdfLimits::cpu_secs`] and [`PdfLimits::wall`]: 60 seconds.
pub const DEFAULT_PDF_TIMEOUT_SECS: u64 = 60;

/// Largest reply read from a worker (the JSON of the extracted document): 256 MiB. A
/// worker answering more is stopped and its PDF skipped.
pub const MAX_WORKER_REPLY_BYTES: usize = 256 << 20;

/// The most of a worker's standard error kept to explain its death.
const STDERR_TAIL: usize = 2048;

/// The limits a PDF worker runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdfLimits {
    /// Address space of the worker in bytes (`RLIMIT_AS`): allocations past it fail and
    /// the worker dies. It covers the program's own mappings too, so it cannot be
    /// lowered to a few megabytes.
    pub memory_bytes: u64,
    /// CPU time of the worker in seconds (`RLIMIT_CPU`): it is killed past it, even if
    /// the loading process is gone.
    pub cpu_secs: u64,
    /// Wall-clock time the loading process waits for a worker before killing it.
    pub wall: Duration,
}

impl Default for PdfLimits {
    fn default() -> Self {
        PdfLimits::new(DEFAULT_PDF_MEMORY_BYTES >> 20, DEFAULT_PDF_TIMEOUT_SECS)
    }
}

impl PdfLimits {
    /// `memory_mib` MiB of address space; `timeout_secs` seconds of CPU time and of
    /// wall-clock time (both at least one).
    pub fn new(memory_mib: u64, timeout_secs: u64) -> Self {
        let secs = timeout_secs.max(1);
        PdfLimits {
            memory_bytes: memory_mib.saturating_mul(1 << 20),
            cpu_secs: secs,
            wall: Duration::from_secs(secs),
        }
    }
}

/// How to start a PDF worker: a program, the arguments before the protocol's own (see
/// the module documentation of the `cage`: `--max-pages N --name NAME`, the PDF on
/// standard input, one JSON reply on standard output), and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdfWorker {
    /// The program to run.
    pub program: PathBuf,
    /// Its first arguments (e.g. a subcommand).
    pub args: Vec<OsString>,
    /// The limits each worker runs under.
    pub limits: PdfLimits,
}

impl PdfWorker {
    /// `program args…` with the default limits.
    pub fn new<I, A>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        PdfWorker {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            limits: PdfLimits::default(),
        }
    }

    /// The same worker under other limits.
    pub fn with_limits(mut self, limits: PdfLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// What a worker answers on its standard output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Reply {
    /// The extracted document and what was left out of it.
    Document {
        document: ParsedDocument,
        warnings: Vec<String>,
    },
    /// The PDF cannot be ingested, and why.
    Refused { kind: Refusal, reason: String },
}

/// The kinds of refusal a worker reports, mapped back to [`IngestError`] variants.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Refusal {
    /// [`IngestError::Pdf`].
    Pdf,
    /// [`IngestError::PdfEngine`].
    Engine,
    /// [`IngestError::Empty`].
    Empty,
}

/// The worker's side of the protocol: extracts the PDF `bytes` with PDFium in this
/// process, writes `progress DONE TOTAL` lines to `progress` as pages are read, and the
/// JSON reply to `out`. `name` (the file's path as the loading process shows it) is
/// used in warnings; `max_pages` is the page limit. A PDF that cannot be ingested is
/// a reply too: only a failure to write is an error.
///
/// Call it in the program a [`PdfWorker`] names, ideally a process of its own under
/// limits: this is where PDFium meets the untrusted bytes.
pub fn run_pdf_worker(
    name: &str,
    bytes: &[u8],
    max_pages: usize,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> std::io::Result<()> {
    let path = Path::new(name);
    let base = ParsedDocument::empty(name, "", None);
    let mut warnings = Vec::new();
    let progress = RefCell::new(progress);
    let loaded = pdf::load(
        path,
        base,
        bytes,
        max_pages,
        &mut warnings,
        &|done, total| {
            // Progress is best effort: a closed standard error does not stop the work.
            let _ = writeln!(progress.borrow_mut(), "progress {done} {total}");
        },
    );
    let reply = match loaded {
        Ok(document) => Reply::Document { document, warnings },
        Err(e) => {
            let (kind, reason) = match e {
                IngestError::PdfEngine { reason, .. } => (Refusal::Engine, reason),
                IngestError::Empty { .. } => (Refusal::Empty, String::new()),
                IngestError::Pdf { reason, .. } => (Refusal::Pdf, reason),
                other => (Refusal::Pdf, other.to_string()),
            };
            Reply::Refused { kind, reason }
        }
    };
    serde_json::to_writer(&mut *out, &reply)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Why the loading process stopped a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// It ran past its wall-clock limit.
    Timeout,
    /// Its reply grew past [`MAX_WORKER_REPLY_BYTES`].
    ReplyTooLarge,
}

/// What the reader threads report to the waiting one.
enum Event {
    Progress(usize, usize),
    ReplyTooLarge,
}

/// Loads a PDF through `worker`: the parent's side of the protocol. The document comes
/// back with `doc`'s id, source and (unless the PDF gave one) title.
pub(crate) fn load(
    worker: &PdfWorker,
    path: &Path,
    doc: ParsedDocument,
    bytes: &[u8],
    max_pages: usize,
    warnings: &mut Vec<String>,
    pages_read: &dyn Fn(usize, usize),
) -> Result<ParsedDocument, IngestError> {
    let reply = exchange(worker, path, max_pages, &[], &[bytes], pages_read)?;
    read_document(&reply, path, doc, warnings)
}

/// Runs `worker` on one PDF with the protocol's options and `extra` ones, writes `input`
/// to its standard input, and answers its reply (the bytes of its standard output);
/// a worker that cannot be started is [`IngestError::PdfEngine`], one that dies,
/// overruns a limit or exits with a failure [`IngestError::Pdf`] with the reason.
fn exchange(
    worker: &PdfWorker,
    path: &Path,
    max_pages: usize,
    extra: &[&str],
    input: &[&[u8]],
    pages_read: &dyn Fn(usize, usize),
) -> Result<Vec<u8>, IngestError> {
    let fail = |reason: String| IngestError::Pdf {
        path: path.to_path_buf(),
        reason,
    };
    let mut child = spawn_worker(worker, path, max_pages, extra)?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(fail("the PDF worker has no pipes".into()));
    };
    let (tx, rx) = mpsc::channel();
    let (status, stopped, reply, tail) = std::thread::scope(|s| {
        // A worker that dies early closes its end: the write then fails, which is fine.
        s.spawn(move || {
            for part in input {
                if stdin.write_all(part).is_err() {
                    break;
                }
            }
        });
        let tx_out = tx.clone();
        let reply = s.spawn(move || read_reply(stdout, &tx_out));
        let tail = s.spawn(move || read_stderr(stderr, &tx));
        let (status, stopped) = supervise(&mut child, worker.limits.wall, &rx, pages_read);
        let reply = reply.join().unwrap_or_default();
        let tail = tail.join().unwrap_or_default();
        (status, stopped, reply, tail)
    });
    let status =
        status.map_err(|e| fail(format!("the PDF worker could not be waited for: {e}")))?;
    if let Some(why) = stopped {
        return Err(fail(match why {
            Stopped::Timeout => format!(
                "the PDF worker ran past its time limit of {} s and was stopped",
                worker.limits.wall.as_secs_f64()
            ),
            Stopped::ReplyTooLarge => format!(
                "the PDF worker's reply is over {} MiB",
                MAX_WORKER_REPLY_BYTES >> 20
            ),
        }));
    }
    if !status.success() {
        return Err(fail(death_reason(status, &tail, worker.limits)));
    }
    Ok(reply)
}

/// What a worker answers to a page request on its standard output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum PageReply {
    /// The rendered page.
    Page(PageImage),
    /// Why it cannot be.
    Refused(PageError),
}

/// The worker's side of a page request (the protocol's `--page` option): `input` is one
/// line of JSON, a [`PageRequest`], then the PDF's bytes; the page is rendered with
/// PDFium in this process and the JSON reply written to `out`. A page that cannot be
/// rendered is a reply too: only a failure to write is an error.
///
/// Like [`run_pdf_worker`], meant for the program a [`PdfWorker`] names.
pub fn run_pdf_page_worker(input: &[u8], out: &mut dyn Write) -> std::io::Result<()> {
    let reply = match input.iter().position(|&b| b == b'\n') {
        None => PageReply::Refused(PageError::Pdf {
            reason: "the page request has no line of JSON before the PDF".into(),
        }),
        Some(at) => match serde_json::from_slice::<PageRequest>(&input[..at]) {
            Err(e) => PageReply::Refused(PageError::Pdf {
                reason: format!("the page request is not valid ({e})"),
            }),
            Ok(req) => match pdf::render_page(&input[at + 1..], &req) {
                Ok(page) => PageReply::Page(page),
                Err(e) => PageReply::Refused(e),
            },
        },
    };
    serde_json::to_writer(&mut *out, &reply)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Renders the page `req` asks for from the PDF `bytes` (named `path` in messages)
/// through `worker`, under its limits: the parent's side of a page request. The reply
/// is checked: a PNG, as many lists of boxes as ranges asked for, every box inside the
/// image.
pub(crate) fn render_page(
    worker: &PdfWorker,
    path: &Path,
    bytes: &[u8],
    req: &PageRequest,
) -> Result<PageImage, PageError> {
    let mut line = serde_json::to_vec(req).map_err(|e| PageError::Pdf {
        reason: format!("the page request does not serialize ({e})"),
    })?;
    line.push(b'\n');
    let reply = match exchange(
        worker,
        path,
        req.max_pages,
        &["--page"],
        &[&line, bytes],
        &|_, _| {},
    ) {
        Ok(reply) => reply,
        Err(IngestError::PdfEngine { reason, .. }) => return Err(PageError::Engine { reason }),
        Err(IngestError::Pdf { reason, .. }) => return Err(PageError::Pdf { reason }),
        Err(other) => {
            return Err(PageError::Pdf {
                reason: other.to_string(),
            })
        }
    };
    let invalid = |why: String| PageError::Pdf {
        reason: format!("the PDF worker's reply is not valid ({why})"),
    };
    match serde_json::from_slice::<PageReply>(&reply).map_err(|e| invalid(e.to_string()))? {
        PageReply::Refused(e) => Err(match e {
            PageError::Engine { reason } => PageError::Engine {
                reason: one_line(&reason),
            },
            PageError::Pdf { reason } => PageError::Pdf {
                reason: one_line(&reason),
            },
            other => other,
        }),
        PageReply::Page(page) => {
            let inside = page.boxes.iter().flatten().all(|b| {
                b.x.checked_add(b.width).is_some_and(|r| r <= page.width)
                    && b.y.checked_add(b.height).is_some_and(|r| r <= page.height)
            });
            if !page.png.starts_with(b"\x89PNG\r\n\x1a\n") {
                Err(invalid("not a PNG".into()))
            } else if page.boxes.len() != req.highlights.len() || !inside {
                Err(invalid("boxes that do not fit the request".into()))
            } else {
                Ok(page)
            }
        }
    }
}

/// Starts `worker` on one PDF, named `path` to it and read from its standard input,
/// confined by its limits.
fn spawn_worker(
    worker: &PdfWorker,
    path: &Path,
    max_pages: usize,
    extra: &[&str],
) -> Result<Child, IngestError> {
    let mut cmd = Command::new(&worker.program);
    cmd.args(&worker.args)
        .arg("--max-pages")
        .arg(max_pages.to_string())
        .arg("--name")
        .arg(path)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    confine(&mut cmd, worker.limits);
    cmd.spawn().map_err(|e| IngestError::PdfEngine {
        path: path.to_path_buf(),
        reason: format!(
            "cannot start the PDF worker {}: {e}",
            worker.program.display()
        ),
    })
}

/// The document in the worker's reply `reply`, with `doc`'s id, source and (unless the
/// PDF gave one) title, its warnings added to `warnings`; the refusal it reports, or an
/// invalid reply, as the error.
fn read_document(
    reply: &[u8],
    path: &Path,
    doc: ParsedDocument,
    warnings: &mut Vec<String>,
) -> Result<ParsedDocument, IngestError> {
    let fail = |reason: String| IngestError::Pdf {
        path: path.to_path_buf(),
        reason,
    };
    let reply: Reply = serde_json::from_slice(reply)
        .map_err(|e| fail(format!("the PDF worker's reply is not valid ({e})")))?;
    match reply {
        Reply::Refused { kind, reason } => Err(match kind {
            Refusal::Pdf => fail(one_line(&reason)),
            Refusal::Engine => IngestError::PdfEngine {
                path: path.to_path_buf(),
                reason: one_line(&reason),
            },
            Refusal::Empty => IngestError::Empty {
                path: path.to_path_buf(),
            },
        }),
        Reply::Document {
            document,
            warnings: w,
        } => {
            check_document(&document)
                .map_err(|e| fail(format!("the PDF worker's reply is not valid ({e})")))?;
            warnings.extend(w.iter().map(|w| one_line(w)));
            Ok(ParsedDocument {
                id: doc.id,
                title: if document.title.trim().is_empty() {
                    doc.title
                } else {
                    document.title
                },
                source: doc.source,
                metadata: document.metadata,
                text: document.text,
                sections: document.sections,
                atomic: Vec::new(),
                pages: document.pages,
            })
        }
    }
}

/// Waits for the worker, passing progress on; kills it past `wall` or when its reply
/// grows too large.
fn supervise(
    child: &mut Child,
    wall: Duration,
    rx: &mpsc::Receiver<Event>,
    pages_read: &dyn Fn(usize, usize),
) -> (std::io::Result<ExitStatus>, Option<Stopped>) {
    let deadline = Instant::now() + wall;
    let mut stopped = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return (Ok(status), stopped),
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                return (child.wait().map_err(|_| e), stopped);
            }
        }
        let now = Instant::now();
        if stopped.is_none() && now >= deadline {
            let _ = child.kill();
            stopped = Some(Stopped::Timeout);
        }
        let wait = deadline
            .saturating_duration_since(now)
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        match rx.recv_timeout(wait) {
            Ok(Event::Progress(done, total)) => pages_read(done, total),
            Ok(Event::ReplyTooLarge) => {
                if stopped.is_none() {
                    let _ = child.kill();
                    stopped = Some(Stopped::ReplyTooLarge);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Both readers are done: the worker has closed its output, or is about to.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(wait);
            }
        }
    }
}

/// Reads the reply, at most [`MAX_WORKER_REPLY_BYTES`] (then says so and stops).
fn read_reply(stdout: impl Read, tx: &mpsc::Sender<Event>) -> Vec<u8> {
    let mut buf = Vec::new();
    let limit = MAX_WORKER_REPLY_BYTES as u64 + 1;
    let mut r = stdout.take(limit);
    if r.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    if buf.len() > MAX_WORKER_REPLY_BYTES {
        let _ = tx.send(Event::ReplyTooLarge);
        return Vec::new();
    }
    buf
}

/// Reads the worker's standard error: progress lines are passed on, the rest is kept
/// (its last [`STDERR_TAIL`] bytes) to explain a death.
fn read_stderr(mut stderr: impl Read, tx: &mpsc::Sender<Event>) -> String {
    let mut tail: Vec<u8> = Vec::new();
    let mut line: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    let handle = |line: &mut Vec<u8>, tail: &mut Vec<u8>| {
        let progress = std::str::from_utf8(line)
            .ok()
            .and_then(|l| l.trim().strip_prefix("progress "))
            .and_then(|rest| {
                let (d, t) = rest.split_once(' ')?;
                Some((d.parse().ok()?, t.parse().ok()?))
            });
        match progress {
            Some((d, t)) => {
                let _ = tx.send(Event::Progress(d, t));
            }
            None => {
                tail.extend_from_slice(line);
                tail.push(b'\n');
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
        }
        line.clear();
    };
    loop {
        let n = match stderr.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &chunk[..n] {
            if b == b'\n' {
                handle(&mut line, &mut tail);
            } else if line.len() < STDERR_TAIL {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        handle(&mut line, &mut tail);
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// Why a worker that exited without a reply did, in one line.
fn death_reason(status: ExitStatus, stderr: &str, limits: PdfLimits) -> String {
    let mib = limits.memory_bytes >> 20;
    let out_of_memory = stderr.contains("memory allocation")
        || stderr.contains("Out of memory")
        || stderr.contains("out of memory");
    if out_of_memory {
        return format!("the PDF worker ran out of memory (its limit is {mib} MiB)");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return match sig {
                libc::SIGXCPU => format!(
                    "the PDF worker used up its CPU-time limit of {} s",
                    limits.cpu_secs
                ),
                libc::SIGKILL => format!(
                    "the PDF worker was killed (over its CPU-time limit of {} s, or by the system)",
                    limits.cpu_secs
                ),
                _ => format!(
                    "the PDF worker crashed ({}); its memory limit is {mib} MiB, which a hostile PDF exhausts",
                    signal_name(sig)
                ),
            };
        }
    }
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", one_line(l)))
        .unwrap_or_default();
    format!("the PDF worker failed ({status}){last}")
}

/// "signal 11 (SIGSEGV)".
#[cfg(unix)]
fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    format!("signal {sig}, {name}")
}

/// Control characters (line ends included) replaced by spaces, at most 500 characters:
/// what a worker says is shown on one line.
fn one_line(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(500)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    out.truncate(out.trim_end().len());
    out
}

/// The ranges of a document from a worker fit its text: every page and section range
/// in bounds, on character boundaries, its character offsets right, parents earlier.
fn check_document(d: &ParsedDocument) -> Result<(), String> {
    let idx = excerpt_core::CharIndex::new(&d.text);
    let check = |what: &str, r: &excerpt_core::TextRange| -> Result<(), String> {
        match idx.range(r.byte_start, r.byte_end) {
            Ok(ok) if ok == *r => Ok(()),
            _ => Err(format!(
                "{what} range {}..{} does not fit the text",
                r.byte_start, r.byte_end
            )),
        }
    };
    for p in &d.pages {
        check("page", p)?;
    }
    for (i, s) in d.sections.iter().enumerate() {
        check("section", &s.range)?;
        check("section", &s.own)?;
        if s.parent.is_some_and(|p| p as usize >= i) {
            return Err(format!("section {i} has a parent after it"));
        }
    }
    Ok(())
}

/// Sets the worker's limits in the child between fork and exec (Unix; elsewhere only
/// the wall clock holds).
#[cfg(unix)]
#[allow(unsafe_code)]
fn confine(cmd: &mut Command, limits: PdfLimits) {
    use std::os::unix::process::CommandExt;
    let mem = limits.memory_bytes as libc::rlim_t;
    let cpu = limits.cpu_secs as libc::rlim_t;
    // SAFETY: the closure runs in the child between fork and exec. It allocates
    // nothing, takes no lock and makes only async-signal-safe system calls (getrlimit,
    // setrlimit, prctl) on plain values copied into it.
    unsafe {
        cmd.pre_exec(move || {
            set_limit(libc::RLIMIT_AS, mem, mem)?;
            set_limit(libc::RLIMIT_CPU, cpu, cpu.saturating_add(1))?;
            // A worker killed over a limit leaves no core file of its gigabytes.
            set_limit(libc::RLIMIT_CORE, 0, 0)?;
            // Die with the loading process rather than outlive it.
            #[cfg(target_os = "linux")]
            let _ = libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn confine(_cmd: &mut Command, _limits: PdfLimits) {}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(all(unix, not(all(target_os = "linux", target_env = "gnu"))))]
type Resource = libc::c_int;

/// Lowers a resource limit to `soft`/`hard`, never above the hard limit already set (a
/// process may not raise it).
#[cfg(unix)]
#[allow(unsafe_code)]
fn set_limit(resource: Resource, soft: libc::rlim_t, hard: libc::rlim_t) -> std::io::Result<()> {
    let mut cur = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `cur` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(resource, &mut cur) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let hard = if cur.rlim_max == libc::RLIM_INFINITY {
        hard
    } else {
        hard.min(cur.rlim_max)
    };
    let new = libc::rlimit {
        rlim_cur: soft.min(hard),
        rlim_max: hard,
    };
    // SAFETY: `new` is a valid rlimit, read only.
    if unsafe { libc::setrlimit(resource, &new) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_progress_and_tail() {
        let (tx, rx) = mpsc::channel();
        let input =
            b"progress 1 3\nwarning: odd\nprogress 2 3\nmemory allocation of 9 bytes failed";
        let tail = read_stderr(&input[..], &tx);
        drop(tx);
        let progress: Vec<(usize, usize)> = rx
            .iter()
            .filter_map(|e| match e {
                Event::Progress(d, t) => Some((d, t)),
                Event::ReplyTooLarge => None,
            })
            .collect();
        assert_eq!(progress, [(1, 3), (2, 3)]);
        assert!(tail.contains("warning: odd"));
        assert!(tail.contains("memory allocation"));
    }

    #[test]
    fn one_line_and_limits() {
        assert_eq!(one_line("a\nb\u{1b}c  \n"), "a b c");
        let l = PdfLimits::new(256, 0);
        assert_eq!(l.memory_bytes, 256 << 20);
        assert_eq!(l.cpu_secs, 1);
        assert_eq!(PdfLimits::default().memory_bytes, DEFAULT_PDF_MEMORY_BYTES);
    }

    #[test]
    fn a_missing_worker_is_a_skip() {
        let w = PdfWorker::new("/nonexistent/excerpt-worker", ["pdf-worker"]);
        let doc = ParsedDocument::empty("a.pdf", "a", None);
        let err = load(
            &w,
            Path::new("a.pdf"),
            doc,
            b"%PDF-1.7",
            10,
            &mut Vec::new(),
            &|_, _| {},
        )
        .unwrap_err();
        assert!(err.is_skip(), "{err}");
        assert!(
            err.to_string().contains("cannot start the PDF worker"),
            "{err}"
        );
    }
}
