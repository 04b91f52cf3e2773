//! The `highlight` query parameter of `GET /v1/pages/{page}/{id}`.

use crate::error::ApiError;

/// Most ranges `GET /v1/pages/{page}/{id}` outlines at once.
pub(crate) const MAX_HIGHLIGHTS: usize = 256;

/// The ranges of `?highlight=`: `START-END` pairs separated by commas.
pub(crate) fn highlight_ranges(s: Option<&str>) -> Result<Vec<(usize, usize)>, ApiError> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        let range = part.trim().split_once('-').and_then(|(a, b)| {
            let (a, b) = (
                a.trim().parse::<usize>().ok()?,
                b.trim().parse::<usize>().ok()?,
            );
            (a <= b).then_some((a, b))
        });
        let Some(range) = range else {
            return Err(ApiError::bad_request(format!(
                "highlight takes START-END character ranges separated by commas, START at most END, not {part:?}"
            )));
        };
        out.push(range);
    }
    if out.len() > MAX_HIGHLIGHTS {
        return Err(ApiError::bad_request(format!(
            "highlight has {} ranges; at most {MAX_HIGHLIGHTS} are drawn at once",
            out.len()
        )));
    }
    Ok(out)
}
