//! Passages from valued units: the budget-optimal choice of contiguous runs.
//!
//! The sentence route values units (sentences, table parts, code blocks) of the best
//! retrieved chunks. Taking the best of them one by one until the budget is full
//! maximises the relevance covered, but hands the reader a scatter of fragments: three
//! good sentences of one paragraph become three pieces, a heading comes alone, a lead-in
//! loses what it introduces. [`plan`] chooses instead, exactly, the set of runs of
//! consecutive units (with the text between them) that maximises
//!
//! ```text
//!   Σ over covered units  (value(u) / best)^p · chars(u)   −   λ · pieces
//! ```
//!
//! under the token budget, by a dynamic program over the units in reading order (two
//! states per unit and budget: the unit ends the run so far or is left out). The
//! weighted characters are the evidence a unit is expected to hold ([`PassagePlan::power`]
//! sharpens values that lie close together), so with `λ = 0` the plan is the greedy's
//! knapsack made exact; `λ` is the price of one more piece, in characters of the best
//! unit ([`PassagePlan::piece_chars`]): neighbouring good sentences
//! pay for the few words between them once instead of each paying for a piece. The
//! text between two units of a run counts against the budget and adds nothing.
//! When the plan has more pieces than [`PassagePlan::tokens_per_piece`] allows, `λ` is
//! doubled until it does not.
//!
//! Anchors ([`PassagePlan::anchor_chars`]): the best few units, each far enough from
//! a better one to be another place, are worth a fixed bonus more. Weighted by
//! characters alone, a long run of middling sentences outweighs the one short sentence
//! that answers; with the bonus the best places are taken first and the budget left
//! grows passages around them.
//!
//! A unit that is a label ([`Unit::label`]: a heading, or a line ending with a colon)
//! may open a run or sit inside one but never end it, so a heading always leads its
//! body and a lead-in what it introduces, or neither is taken.

/// One unit the planner may take: consecutive units of one document, in reading order,
/// never overlapping.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    /// Expected relevance in [0, 1] (the sentence route's value).
    pub value: f32,
    /// Characters.
    pub chars: usize,
    /// What its text costs of the budget (its LLM tokens, or more under a bound of
    /// characters).
    pub tokens: usize,
    /// What the text between the previous unit and this one costs, when they are of
    /// the same document and may be joined into one run; `None`: they may not.
    pub gap_tokens: Option<usize>,
    /// A heading or a lead-in: a run may not end on it.
    pub label: bool,
    /// Its document and first character there: where it sits, for anchors' spread.
    pub place: (u32, usize),
}

/// The planner's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PassagePlan {
    /// The price of a piece, in characters at the best unit's value (`λ` above).
    pub piece_chars: usize,
    /// At most one piece per this many tokens of the request's budget (rounded up);
    /// 0: no bound. The caller turns it into [`plan`]'s `max_pieces`.
    pub tokens_per_piece: usize,
    /// A unit's value counts as `(value / best)^power`: the sentence route's values are
    /// close together (a sentence that matches nothing keeps half its chunk's), and the
    /// power separates the sentences that answer from the ones that only sit near them.
    pub power: f32,
    /// Each anchor (the best units by value, ties in reading order, at most
    /// [`PassagePlan::anchors`] and at most `max_pieces` of them, `anchor_spread` apart)
    /// is worth this many characters more, at the best unit's value: the few sentences
    /// that match best are taken first, and the budget left grows passages around them
    /// rather than buying a long run of middling ones in their place (0: no bonus; no
    /// anchors either when the pieces are not bounded).
    pub anchor_chars: usize,
    /// Anchors lie at least this many characters apart in a document: a better unit
    /// nearer an anchor than this is no anchor (0: the best units, wherever they are).
    pub anchor_spread: usize,
    /// At most this many anchors (fewer when fewer pieces are allowed); 0: none.
    pub anchors: usize,
    /// Every anchor after the first is valued at least this share of the best unit's
    /// value, in [0, 1] (0: the best places, however far below the first).
    pub anchor_floor: f32,
}

/// A chosen run: units `first..=last` of the slice given to [`plan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub first: usize,
    pub last: usize,
}

/// The largest number of budget steps the program keeps: a larger budget is counted in
/// steps of several tokens (each unit's cost rounded up, so a plan never exceeds it).
const MAX_STEPS: usize = 2048;

/// The runs of `units` (sorted by document, then reading order) that maximise the
/// objective of the module documentation within `budget` (of the units' `tokens`), at
/// most `max_pieces` of them, in reading order.
pub(crate) fn plan(
    units: &[Unit],
    budget: usize,
    params: PassagePlan,
    max_pieces: usize,
) -> Vec<Run> {
    if units.is_empty() || budget == 0 || max_pieces == 0 {
        return Vec::new();
    }
    let step = budget.div_ceil(MAX_STEPS).max(1);
    let cap = budget / step;
    let top = units.iter().map(|u| u.value).fold(0.0f32, f32::max);
    // Values relative to the best, raised to the power: the best unit is worth 1 a
    // character, and a piece costs `piece_chars` of its characters.
    let mut weights: Vec<f64> = units
        .iter()
        .map(|u| {
            let v = if top > 0.0 { u.value / top } else { 0.0 };
            f64::from(v.max(0.0)).powf(f64::from(params.power)) * u.chars as f64
        })
        .collect();
    if params.anchor_chars > 0 && max_pieces < usize::MAX {
        let n = max_pieces.min(params.anchors);
        let floor = params.anchor_floor * top;
        for i in anchors(units, n, params.anchor_spread, floor) {
            weights[i] += params.anchor_chars as f64;
        }
    }
    let lambda = params.piece_chars as f64;
    let first = solve(units, &weights, cap, step, lambda);
    if first.is_empty() {
        // Nothing is worth a piece's price: the best single run is still better than
        // an empty context.
        return cut_to(solve(units, &weights, cap, step, 0.0), &weights, 1);
    }
    if first.len() <= max_pieces {
        return first;
    }
    // Too many pieces: a higher price gives fewer. Double it until the plan has at
    // most `max_pieces`, then halve the interval a few times for the lowest such price
    // (the plan with the most evidence). A plan with too many pieces, cut to its best
    // `max_pieces` runs, stands in when every price tried skips from too many to none.
    let worth = |runs: &[Run]| -> f64 {
        runs.iter()
            .map(|r| weights[r.first..=r.last].iter().sum::<f64>())
            .sum()
    };
    let mut low = if lambda > 0.0 { lambda } else { 25.0 };
    let mut over = first;
    let mut high = low * 2.0;
    let mut fits = solve(units, &weights, cap, step, high);
    let mut doublings = 0;
    while fits.len() > max_pieces && doublings < 24 {
        (low, over) = (high, fits);
        high *= 2.0;
        fits = solve(units, &weights, cap, step, high);
        doublings += 1;
    }
    for _ in 0..6 {
        let mid = (low + high) / 2.0;
        let runs = solve(units, &weights, cap, step, mid);
        if runs.len() <= max_pieces {
            (high, fits) = (mid, runs);
        } else {
            (low, over) = (mid, runs);
        }
    }
    let over = cut_to(over, &weights, max_pieces);
    if fits.len() <= max_pieces && worth(&fits) >= worth(&over) {
        fits
    } else {
        over
    }
}

/// The `n` best units (by value, ties in reading order), each at least `spread`
/// characters from every better one of its document, and each after the first valued
/// at least `floor`.
fn anchors(units: &[Unit], n: usize, spread: usize, floor: f32) -> Vec<usize> {
    let mut best: Vec<usize> = (0..units.len()).collect();
    best.sort_by(|&a, &b| units[b].value.total_cmp(&units[a].value).then(a.cmp(&b)));
    let mut chosen: Vec<usize> = Vec::with_capacity(n);
    for i in best {
        if chosen.len() >= n || (!chosen.is_empty() && units[i].value < floor) {
            break;
        }
        let (doc, at) = units[i].place;
        let near = chosen.iter().any(|&c| {
            let (d, a) = units[c].place;
            d == doc && a.abs_diff(at) < spread
        });
        if !near {
            chosen.push(i);
        }
    }
    chosen
}

/// The `n` runs of `runs` worth the most, in reading order.
fn cut_to(mut runs: Vec<Run>, weights: &[f64], n: usize) -> Vec<Run> {
    let worth = |r: &Run| -> f64 { weights[r.first..=r.last].iter().sum() };
    runs.sort_by(|a, b| worth(b).total_cmp(&worth(a)).then(a.first.cmp(&b.first)));
    runs.truncate(n);
    runs.sort_by_key(|r| r.first);
    runs
}

/// One run of the dynamic program with piece price `lambda`, unit `j` worth
/// `weights[j]`.
fn solve(units: &[Unit], weights: &[f64], cap: usize, step: usize, lambda: f64) -> Vec<Run> {
    let width = cap + 1;
    let cost = |t: usize| t.div_ceil(step);
    const NONE: f64 = f64::NEG_INFINITY;
    // `closed[b]`: best value with no run open after the unit, using exactly ≤ b steps
    // (values are kept per exact step count; the best is read at the end).
    let mut closed = vec![NONE; width];
    let mut open = vec![NONE; width];
    closed[0] = 0.0;
    // Per unit and step: whether `closed` came from closing the open run (bit 0), and
    // whether `open` continued the previous unit's run (bit 1).
    let mut from = vec![0u8; units.len() * width];
    let (mut next_closed, mut next_open) = (vec![NONE; width], vec![NONE; width]);
    for (j, u) in units.iter().enumerate() {
        let w = weights[j];
        let c = cost(u.tokens);
        let joined = u.gap_tokens.filter(|_| j > 0).map(|g| c + cost(g));
        let may_end_prev = j > 0 && !units[j - 1].label;
        let row = &mut from[j * width..(j + 1) * width];
        for b in 0..width {
            // The unit is left out: whatever was open before it ends before it.
            let (mut v, mut bits) = (closed[b], 0u8);
            if may_end_prev && open[b] > v {
                (v, bits) = (open[b], 1);
            }
            next_closed[b] = v;
            row[b] = bits;
        }
        for b in 0..width {
            // The unit is taken: it starts a run after a closed state, or continues the
            // previous unit's run with the text between them.
            let mut v = NONE;
            if b >= c && next_closed[b - c] > NONE {
                v = next_closed[b - c] + w - lambda;
            }
            if let Some(jc) = joined {
                if b >= jc && open[b - jc] > NONE && open[b - jc] + w > v {
                    v = open[b - jc] + w;
                    row[b] |= 2;
                }
            }
            next_open[b] = v;
        }
        std::mem::swap(&mut closed, &mut next_closed);
        std::mem::swap(&mut open, &mut next_open);
    }
    // The end: the last unit's run closes if it may.
    let last_may_end = !units[units.len() - 1].label;
    let (mut best_b, mut best_v, mut in_run) = (0usize, 0.0f64, false);
    for b in 0..width {
        if closed[b] > best_v {
            (best_b, best_v, in_run) = (b, closed[b], false);
        }
        if last_may_end && open[b] > best_v {
            (best_b, best_v, in_run) = (b, open[b], true);
        }
    }
    // Back from the end: walk the choices.
    let mut runs = Vec::new();
    let mut b = best_b;
    let mut end: Option<usize> = None;
    for j in (0..units.len()).rev() {
        let u = &units[j];
        if in_run {
            let row = from[j * width + b];
            end.get_or_insert(j);
            let c = cost(u.tokens);
            if row & 2 != 0 {
                b -= c + cost(u.gap_tokens.unwrap_or(0));
                // Still in the run: the previous unit is its part.
            } else {
                b -= c;
                runs.push(Run {
                    first: j,
                    last: end.take().unwrap_or(j),
                });
                // Before a started run, the state is `closed` at the previous unit:
                // read its choice at this unit's row.
                in_run = from[j * width + b] & 1 != 0;
                continue;
            }
        } else {
            in_run = from[j * width + b] & 1 != 0;
        }
    }
    runs.reverse();
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(_doc: u32, value: f32, tokens: usize, gap: Option<usize>) -> Unit {
        Unit {
            value,
            chars: tokens * 4,
            tokens,
            gap_tokens: gap,
            label: false,
            place: (0, 0),
        }
    }

    fn params(piece_chars: usize) -> PassagePlan {
        PassagePlan {
            piece_chars,
            tokens_per_piece: 0,
            power: 1.0,
            anchor_chars: 0,
            anchor_spread: 0,
            anchors: 0,
            anchor_floor: 0.0,
        }
    }

    /// Every subset of runs, by brute force: the best objective within the budget.
    fn brute(units: &[Unit], weights: &[f64], budget: usize, lambda: f64) -> f64 {
        let n = units.len();
        let mut best = 0.0f64;
        // Each unit: 0 out, 1 taken; a taken unit after a taken one either joins (if
        // it may) or starts a new run: encode joins with a second bit mask.
        for taken in 0u32..(1 << n) {
            for joins in 0u32..(1 << n) {
                let mut ok = true;
                let (mut cost, mut value, mut pieces) = (0usize, 0.0f64, 0usize);
                for j in 0..n {
                    let t = taken >> j & 1 == 1;
                    let jn = joins >> j & 1 == 1;
                    if !t {
                        if jn {
                            ok = false;
                        }
                        continue;
                    }
                    let u = &units[j];
                    value += weights[j];
                    cost += u.tokens;
                    if jn {
                        match u.gap_tokens {
                            Some(g) if j > 0 && taken >> (j - 1) & 1 == 1 => cost += g,
                            _ => ok = false,
                        }
                    } else {
                        pieces += 1;
                        // A run may not end on a label: the previous taken unit, if it
                        // ends a run here, must not be one.
                        if j > 0 && taken >> (j - 1) & 1 == 1 && units[j - 1].label {
                            ok = false;
                        }
                    }
                    let ends = j + 1 == n || taken >> (j + 1) & 1 == 0 || joins >> (j + 1) & 1 == 0;
                    if ends && u.label {
                        ok = false;
                    }
                }
                if ok && cost <= budget {
                    best = best.max(value - lambda * pieces as f64);
                }
            }
        }
        best
    }

    fn objective(units: &[Unit], weights: &[f64], runs: &[Run], lambda: f64) -> (f64, usize) {
        let mut cost = 0;
        let mut value = 0.0;
        for r in runs {
            for j in r.first..=r.last {
                value += weights[j];
                cost += units[j].tokens;
                if j > r.first {
                    cost += units[j].gap_tokens.expect("joined units may join");
                }
            }
        }
        (value - lambda * runs.len() as f64, cost)
    }

    #[test]
    fn the_plan_is_the_best_by_brute_force() {
        // A small generator (xorshift) so the cases are the same every run.
        let mut s = 0x9e3779b97f4a7c15u64;
        let mut next = |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for case in 0..300 {
            let n = 1 + next(6) as usize;
            let units: Vec<Unit> = (0..n)
                .map(|j| {
                    let doc = if j > 0 && next(5) == 0 { 1 } else { 0 };
                    let gap = (j > 0 && next(4) != 0).then(|| next(6) as usize);
                    let mut u = unit(doc, (1 + next(10)) as f32 / 10.0, 1 + next(8) as usize, gap);
                    u.label = next(6) == 0;
                    u
                })
                .collect();
            let budget = 1 + next(25) as usize;
            let lambda = next(3) as f64 * 4.0;
            let weights: Vec<f64> = units
                .iter()
                .map(|u| f64::from(u.value) * u.chars as f64)
                .collect();
            let runs = solve(&units, &weights, budget, 1, lambda);
            let (got, cost) = objective(&units, &weights, &runs, lambda);
            assert!(cost <= budget, "case {case}: over budget");
            for r in &runs {
                assert!(!units[r.last].label, "case {case}: a run ends on a label");
            }
            let want = brute(&units, &weights, budget, lambda);
            assert!(
                (got - want).abs() < 1e-6,
                "case {case}: plan {got} against best {want}: {units:?} budget {budget} runs {runs:?}"
            );
        }
    }

    #[test]
    fn neighbours_become_one_passage_when_a_piece_costs() {
        // Three good sentences with one word between each: one passage, not three.
        let units = vec![
            unit(0, 1.0, 20, None),
            unit(0, 0.9, 20, Some(2)),
            unit(0, 0.9, 20, Some(2)),
        ];
        assert_eq!(plan(&units, 100, params(0), usize::MAX).len(), 3);
        assert_eq!(
            plan(&units, 100, params(100), usize::MAX),
            vec![Run { first: 0, last: 2 }]
        );
    }

    #[test]
    fn a_label_leads_its_body_or_is_left_out() {
        let mut heading = unit(0, 1.0, 3, None);
        heading.label = true;
        let body = unit(0, 0.5, 20, Some(0));
        let runs = plan(&[heading.clone(), body], 100, params(0), usize::MAX);
        assert_eq!(runs, vec![Run { first: 0, last: 1 }]);
        // Alone, it is not taken.
        assert!(plan(&[heading], 100, params(0), usize::MAX).is_empty());
    }

    #[test]
    fn the_piece_bound_raises_the_price() {
        let units: Vec<Unit> = (0..10)
            .map(|j| unit(0, 1.0, 10, (j > 0).then_some(30)))
            .collect();
        let free = plan(&units, 100, params(0), usize::MAX);
        assert_eq!(free.len(), 10);
        let bounded = plan(&units, 100, params(0), 2);
        assert!(bounded.len() <= 2, "{bounded:?}");
    }

    #[test]
    fn the_best_unit_is_anchored_before_a_long_middling_run() {
        // Ten middling sentences in a row, then far away one short sentence that matches
        // best: priced by weighted characters alone, the run fills the budget.
        let mut units: Vec<Unit> = (0..10)
            .map(|j| {
                let mut u = unit(0, 0.6, 10, (j > 0).then_some(0));
                u.place = (0, j * 40);
                u
            })
            .collect();
        let mut best = unit(0, 1.0, 5, None);
        best.place = (0, 2000);
        units.push(best);
        let plain = plan(&units, 100, params(30), 2);
        assert_eq!(plain, vec![Run { first: 0, last: 9 }]);
        let anchored = PassagePlan {
            anchor_chars: 150,
            anchor_spread: 500,
            anchors: 3,
            ..params(30)
        };
        let runs = plan(&units, 100, anchored, 2);
        assert!(runs.iter().any(|r| r.first == 10), "{runs:?}");
        assert!(runs.len() <= 2, "{runs:?}");
    }

    #[test]
    fn anchors_are_places_apart() {
        let at = |value: f32, place: usize| {
            let mut u = unit(0, value, 5, None);
            u.place = (0, place);
            u
        };
        let units = vec![at(1.0, 0), at(0.95, 100), at(0.7, 3000)];
        assert_eq!(anchors(&units, 2, 0, 0.0), vec![0, 1]);
        assert_eq!(anchors(&units, 2, 500, 0.0), vec![0, 2]);
        // Below the floor a place is no anchor, however far from the first; the first
        // is one whatever its value.
        assert_eq!(anchors(&units, 2, 500, 0.8), vec![0]);
        assert_eq!(anchors(&units, 2, 0, 0.9), vec![0, 1]);
        // Another document is another place, however near its offsets.
        let mut other = at(0.95, 100);
        other.place.0 = 1;
        assert_eq!(anchors(&[at(1.0, 0), other], 2, 500, 0.0), vec![0, 1]);
    }

    #[test]
    fn large_budgets_count_in_steps_and_stay_within() {
        let units: Vec<Unit> = (0..50)
            .map(|j| {
                unit(
                    j % 3,
                    0.5 + (j % 7) as f32 / 14.0,
                    97 + j as usize,
                    (j % 3 != 0).then_some(13),
                )
            })
            .collect();
        let budget = 5000;
        let runs = plan(&units, budget, params(50), usize::MAX);
        let weights = vec![0.0; units.len()];
        let (_, cost) = objective(&units, &weights, &runs, 0.0);
        assert!(cost <= budget, "{cost}");
        assert!(!runs.is_empty());
    }
}
