//! Expanding user-given paths into files: `.gitignore`/`.ignore` respected, hidden files
//! skipped, include/exclude globs, deterministic order.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::parsed::relative_id;
use crate::IngestError;

/// Options of [`walk`].
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Globs a file's path relative to its root (with `/` separators) must match, any of
    /// them; empty means every file. `*` also matches `/`, so `*.md` matches at any depth.
    pub include: Vec<String>,
    /// Globs excluding files (matched like `include`).
    pub exclude: Vec<String>,
    /// Honour `.gitignore`, `.ignore` and git's exclude files (also outside git
    /// repositories). Default true.
    pub respect_ignore: bool,
    /// Walk hidden files and directories (names starting with `.`). Default false.
    pub hidden: bool,
    /// Follow symbolic links. Default false.
    pub follow_links: bool,
    /// Maximum directory depth below each root (`None`: unlimited).
    pub max_depth: Option<usize>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            include: Vec::new(),
            exclude: Vec::new(),
            respect_ignore: true,
            hidden: false,
            follow_links: false,
            max_depth: None,
        }
    }
}

/// One result of [`walk`].
#[derive(Debug)]
pub enum WalkItem {
    /// A file to load: its path and the root its document id is relative to (the walked
    /// directory, or the parent directory of a file given directly).
    File {
        /// The file.
        path: PathBuf,
        /// The ingest root for [`crate::load_file`].
        root: PathBuf,
    },
    /// A path that could not be walked (missing, unreadable, a bad glob).
    Problem(IngestError),
}

/// Expands `paths` (files or directories) into the files to ingest, sorted by path and
/// deduplicated, followed by per-path problems in the order met.
///
/// Directories are walked with the `ignore` crate: `.gitignore`/`.ignore` rules apply
/// and hidden entries are skipped unless `opts` says otherwise. Globs apply to files
/// found inside directories; a file given directly is always returned. The walker does
/// not look at extensions: [`crate::load_file`] skips unsupported files (see
/// [`crate::is_supported`] to filter earlier).
pub fn walk(paths: &[PathBuf], opts: &WalkOptions) -> Vec<WalkItem> {
    let mut problems: Vec<WalkItem> = Vec::new();
    let include = build_set(&opts.include, &mut problems);
    let exclude = build_set(&opts.exclude, &mut problems);
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(source) => {
                problems.push(WalkItem::Problem(IngestError::Io {
                    path: p.clone(),
                    source,
                }));
                continue;
            }
        };
        if meta.is_file() {
            let root = p.parent().map(Path::to_path_buf).unwrap_or_default();
            files.push((p.clone(), root));
            continue;
        }
        let mut builder = ignore::WalkBuilder::new(p);
        builder
            .hidden(!opts.hidden)
            .follow_links(opts.follow_links)
            .max_depth(opts.max_depth)
            .ignore(opts.respect_ignore)
            .git_ignore(opts.respect_ignore)
            .git_exclude(opts.respect_ignore)
            .git_global(opts.respect_ignore)
            .parents(opts.respect_ignore)
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b));
        for entry in builder.build() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    problems.push(WalkItem::Problem(IngestError::Walk {
                        path: error_path(&e).unwrap_or_else(|| p.clone()),
                        message: e.to_string(),
                    }));
                    continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.into_path();
            let rel = relative_id(&path, p);
            let included = include.as_ref().is_none_or(|g| g.is_match(&rel));
            let excluded = exclude.as_ref().is_some_and(|g| g.is_match(&rel));
            if included && !excluded {
                files.push((path, p.clone()));
            }
        }
    }
    files.sort();
    files.dedup_by(|a, b| a.0 == b.0);
    files
        .into_iter()
        .map(|(path, root)| WalkItem::File { path, root })
        .chain(problems)
        .collect()
}

fn build_set(globs: &[String], problems: &mut Vec<WalkItem>) -> Option<GlobSet> {
    if globs.is_empty() {
        return None;
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        match Glob::new(g) {
            Ok(glob) => {
                b.add(glob);
            }
            Err(e) => problems.push(WalkItem::Problem(IngestError::Glob {
                glob: g.clone(),
                message: e.to_string(),
            })),
        }
    }
    match b.build() {
        Ok(set) => Some(set),
        Err(e) => {
            problems.push(WalkItem::Problem(IngestError::Glob {
                glob: globs.join(", "),
                message: e.to_string(),
            }));
            None
        }
    }
}

fn error_path(e: &ignore::Error) -> Option<PathBuf> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn files(items: &[WalkItem], root: &Path) -> Vec<String> {
        items
            .iter()
            .filter_map(|i| match i {
                WalkItem::File { path, .. } => Some(relative_id(path, root)),
                WalkItem::Problem(_) => None,
            })
            .collect()
    }

    #[test]
    fn respects_gitignore_hidden_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("docs/sub")).unwrap();
        fs::create_dir_all(r.join("build")).unwrap();
        fs::create_dir_all(r.join(".hidden")).unwrap();
        fs::write(r.join(".gitignore"), "build/\n*.log\n").unwrap();
        for f in [
            "b.md",
            "a.txt",
            "docs/c.md",
            "docs/sub/d.html",
            "build/x.md",
            "e.log",
            ".hidden/h.md",
            ".dot.md",
        ] {
            fs::write(r.join(f), "x").unwrap();
        }
        let all = walk(&[r.to_path_buf()], &WalkOptions::default());
        assert_eq!(
            files(&all, r),
            vec!["a.txt", "b.md", "docs/c.md", "docs/sub/d.html"]
        );

        let opts = WalkOptions {
            include: vec!["*.md".into(), "*.html".into()],
            exclude: vec!["docs/sub/**".into()],
            ..WalkOptions::default()
        };
        assert_eq!(
            files(&walk(&[r.to_path_buf()], &opts), r),
            vec!["b.md", "docs/c.md"]
        );

        let opts = WalkOptions {
            respect_ignore: false,
            hidden: true,
            include: vec!["*.md".into()],
            ..WalkOptions::default()
        };
        assert_eq!(
            files(&walk(&[r.to_path_buf()], &opts), r),
            vec![".dot.md", ".hidden/h.md", "b.md", "build/x.md", "docs/c.md"]
        );
    }

    #[test]
    fn missing_paths_and_direct_files() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::write(r.join("one.md"), "x").unwrap();
        let items = walk(
            &[r.join("missing"), r.join("one.md"), r.join("one.md")],
            &WalkOptions {
                include: vec!["[".into()],
                ..WalkOptions::default()
            },
        );
        assert_eq!(items.len(), 3, "{items:?}");
        match &items[0] {
            WalkItem::File { path, root } => {
                assert_eq!(path, &r.join("one.md"));
                assert_eq!(root, r);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            &items[1],
            WalkItem::Problem(IngestError::Glob { .. })
        ));
        assert!(matches!(
            &items[2],
            WalkItem::Problem(IngestError::Io { .. })
        ));
    }
}
