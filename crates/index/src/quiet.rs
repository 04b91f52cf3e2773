//! Catching a panic of the search library without printing it: a damaged BM25 file
//! can make tantivy panic, which readers turn into a rebuild from the segments, and the
//! panic message (`thread ... panicked at ...`) would only alarm whoever reads stderr.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether a panic on this thread is being caught by [`catch_quietly`].
    static CATCHING: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// Runs `f`, turning a panic into `Err` without the panic hook printing it. Panics
/// elsewhere (other threads, or this one outside `f`) print as before: the hook
/// installed once wraps the one in place and defers to it.
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let outer = CATCHING.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(outer));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_is_an_error_and_the_flag_is_restored() {
        assert_eq!(catch_quietly(|| 7).ok(), Some(7));
        assert!(catch_quietly(|| -> u8 { panic!("damaged file") }).is_err());
        assert!(!CATCHING.with(Cell::get));
    }
}
