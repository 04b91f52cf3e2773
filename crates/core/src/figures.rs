//! Rows of figures in plain text: what a table of numbers becomes once extracted.

/// How many numeric cells `line` ends with: `1,228`, `(13)`, `4.7 %`, `$ 3.74`, with a
/// dash (`—`, `–`, `-`, `−`) standing for an empty cell and counting as one; currency
/// and percent signs standing alone are skipped. The rows of a financial statement end
/// with two or more (`Inventories 2,981 3,545`), a sentence rarely does. Both the PDF
/// loader (page titles over tables) and the sentence route (tables as units) read rows
/// this way.
pub fn trailing_figures(line: &str) -> usize {
    let mut cells = 0usize;
    for token in line.split_whitespace().rev() {
        if matches!(token, "$" | "%" | "€" | "£") {
            continue;
        }
        let core = token.trim_matches(|c: char| "()$%€£,.;:".contains(c));
        let numeric = !core.is_empty()
            && core.chars().any(|c| c.is_ascii_digit())
            && core
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '.');
        let dash = matches!(core, "—" | "–" | "-" | "−");
        if numeric || dash {
            cells += 1;
        } else {
            break;
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::trailing_figures;

    #[test]
    fn cells_are_counted_from_the_end() {
        assert_eq!(trailing_figures("Revenue $ 39,403 $ 39,528"), 2);
        assert_eq!(trailing_figures("Deferred income taxes (183) 5 222"), 3);
        assert_eq!(trailing_figures("Impairment — 128 —"), 3);
        assert_eq!(trailing_figures("Margin 4.7 % 5.1 %"), 2);
        assert_eq!(trailing_figures("Net earnings were $ 6,315 million"), 0);
        assert_eq!(trailing_figures("Item 7 of Part 2"), 1);
        assert_eq!(trailing_figures(""), 0);
    }
}
