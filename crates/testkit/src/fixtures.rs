//! Small file fixtures.

use std::path::Path;

/// Writes `contents` to `dir/name`, creating the missing directories on the way (`name`
/// may hold `/`-separated subdirectories).
///
/// # Panics
/// When a directory or the file cannot be written.
pub fn write_file(dir: &Path, name: &str, contents: impl AsRef<[u8]>) {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create fixture directory");
    }
    std::fs::write(path, contents).expect("write fixture file");
}
