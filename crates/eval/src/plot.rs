//! `recall-vs-budget.svg`: recall against the token budget, one line per strategy (for
//! a page-format set, `text_recall`).
//!
//! Drawn with plotters' SVG backend and no font backend: labels are written as SVG
//! `<text>` elements (rendered by the viewer), and their sizes for layout come from
//! plotters' built-in estimate, so neither system fonts nor C libraries are needed.

use std::path::Path;

use plotters::prelude::*;

use crate::report::StrategyResult;
use crate::EvalError;

/// The figure plotted: `text_recall` when the results have it (a page-format set),
/// else `recall`.
fn plotted(r: &StrategyResult) -> f64 {
    r.metrics.text_recall.unwrap_or(r.metrics.recall)
}

/// One line: a strategy's `(budget, recall)` points, budgets ascending.
fn series(results: &[StrategyResult]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in results {
        let point = (r.budget as f64, plotted(r));
        match out.iter_mut().find(|(s, _)| *s == r.strategy) {
            Some((_, pts)) => pts.push(point),
            None => out.push((r.strategy.clone(), vec![point])),
        }
    }
    for (_, pts) in &mut out {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Renders the recall-vs-budget chart as an SVG document (text recall at budget × 4
/// characters for a page-format set).
pub fn recall_vs_budget_svg(results: &[StrategyResult]) -> Result<String, EvalError> {
    let lines = series(results);
    let text = results.iter().any(|r| r.metrics.text_recall.is_some());
    let (caption, y_desc) = if text {
        (
            "Evidence text recall vs budget",
            "text recall (at budget × 4 characters)",
        )
    } else {
        ("Evidence recall vs budget", "recall")
    };
    let mut budgets: Vec<f64> = results
        .iter()
        .map(|r| r.budget as f64)
        .filter(|b| *b > 0.0)
        .collect();
    budgets.sort_by(f64::total_cmp);
    budgets.dedup();
    let (lo, hi) = match (budgets.first(), budgets.last()) {
        (Some(&lo), Some(&hi)) => (lo / 1.25, hi * 1.25),
        _ => (100.0, 10_000.0),
    };
    let max_recall = results.iter().map(plotted).fold(0.0f64, f64::max);
    let y_top = if max_recall > 0.0 {
        (max_recall * 1.15).clamp(0.05, 1.0)
    } else {
        1.0
    };

    let mut svg = String::new();
    let draw = |svg: &mut String| -> Result<(), String> {
        let root = SVGBackend::with_string(svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 22))
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(65)
            .build_cartesian_2d(
                (lo..hi).log_scale().with_key_points(budgets.clone()),
                0f64..y_top,
            )
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 17))
            .x_desc("budget (LLM tokens, log scale)")
            .y_desc(y_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, (name, pts)) in lines.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| e.to_string())?;
        }
        if !lines.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 15))
                .draw()
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
        Ok(())
    };
    draw(&mut svg).map_err(EvalError::Plot)?;
    Ok(svg)
}

/// Writes [`recall_vs_budget_svg`] to `path`.
pub fn write_recall_vs_budget(results: &[StrategyResult], path: &Path) -> Result<(), EvalError> {
    let svg = recall_vs_budget_svg(results)?;
    std::fs::write(path, svg).map_err(|e| EvalError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Metrics;

    fn result(strategy: &str, budget: usize, recall: f64) -> StrategyResult {
        StrategyResult {
            strategy: strategy.into(),
            budget,
            results_file: String::new(),
            metrics: Metrics {
                recall,
                ..Default::default()
            },
            answer: None,
        }
    }

    /// Labels are `<text ...>` elements whose content is the label on its own line.
    fn has_text(svg: &str, label: &str) -> bool {
        svg.contains(&format!(">\n{label}\n</text>"))
    }

    #[test]
    fn chart_has_lines_labels_and_legend() {
        let results = vec![
            result("topk", 500, 0.1),
            result("topk", 1000, 0.15),
            result("adjacent", 1000, 0.2),
            result("adjacent", 500, 0.12),
        ];
        let svg = recall_vs_budget_svg(&results).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for label in [
            "Evidence recall vs budget",
            "budget (LLM tokens, log scale)",
            "recall",
            "topk",
            "adjacent",
            "500",
            "1000",
            "0.00",
        ] {
            assert!(has_text(&svg, label), "no text {label:?} in\n{svg}");
        }
        assert!(svg.matches("<polyline").count() >= 2);
    }

    #[test]
    fn degenerate_inputs_still_draw() {
        assert!(recall_vs_budget_svg(&[]).unwrap().contains("<svg"));
        assert!(has_text(
            &recall_vs_budget_svg(&[result("x", 100, 0.0)]).unwrap(),
            "x"
        ));
    }
}
