//! Parsers of bounded values for clap (whole numbers in a range, seconds, budgets,
//! counts) and the split of `--strategies` values into strategy specs.

/// A whole number in `lo..=hi`, for clap.
fn bounded(s: &str, lo: usize, hi: usize) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be between {lo} and {hi}, got {n}"))
    }
}

/// `--progress-interval`: 0.05 to 3600 seconds.
pub(super) fn interval(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if (0.05..=3600.0).contains(&secs) {
        Ok(secs)
    } else {
        Err(format!("must be between 0.05 and 3600 seconds, got {s}"))
    }
}

/// `serve --max-concurrent`: 1 to 4096.
pub(super) fn concurrency(s: &str) -> Result<usize, String> {
    bounded(s, 1, 4096)
}

/// `--budget`: 1 to [`excerpt::MAX_BUDGET`] tokens.
pub(super) fn budget(s: &str) -> Result<usize, String> {
    bounded(s, 1, excerpt::MAX_BUDGET)
}

/// `--candidates`, `--top-k`, `--rerank`: 1 to [`excerpt::MAX_CANDIDATES`].
pub(super) fn count(s: &str) -> Result<usize, String> {
    bounded(s, 1, excerpt::MAX_CANDIDATES)
}

/// Splits `--strategies` values into strategy specs: on commas, except that a piece
/// holding `=` but no `:` is a parameter of the spec before it
/// (`adjacent,rse:threshold=0.3,max_len_chunks=4` → `adjacent`,
/// `rse:threshold=0.3,max_len_chunks=4`).
pub fn split_strategy_specs(values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let first_of_value = out.len();
        for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let is_param = part.contains('=') && !part.contains(':');
            let same_value = out.len() > first_of_value;
            match out.last_mut() {
                Some(prev) if is_param && same_value && prev.contains(':') => {
                    prev.push(',');
                    prev.push_str(part);
                }
                _ => out.push(part.to_string()),
            }
        }
    }
    out
}
