//! Verification by finite perturbation: one black box per NaN-absorbing construct of
//! NAN_FACTS §3. NaN tracing alone misses each dependency; verification finds it and reports it
//! as found by perturbation. Zeros that hold on a whole neighbourhood of x0 stay zeros.

use nanprop::testing::{self as synthetic, Synthetic, Winner};
use nanprop::{trace, EntryKind, Pattern, Strategy, TraceOptions};

fn traced(
    f: &mut dyn FnMut(&[f64], &mut [f64]),
    m: usize,
    x0: &[f64],
    strategy: Strategy,
    verify: bool,
) -> Pattern {
    let mut bb = |x: &[f64], y: &mut [f64]| {
        f(x, y);
        Ok(())
    };
    let options = TraceOptions {
        strategy,
        verify,
        ..Default::default()
    };
    trace(&mut bb, m, x0, &options).expect("trace")
}

type BlackBoxFn = fn(&[f64], &mut [f64]);
type Case = (&'static str, BlackBoxFn, Vec<f64>, usize);

/// Constructs where NaN is absorbed although the output depends on the input at x0.
// The clamp is written as C codes write it, fmin(fmax(x, lo), hi), which absorbs NaN; Rust's
// f64::clamp would propagate it.
#[allow(clippy::manual_clamp)]
fn absorbing() -> Vec<Case> {
    vec![
        // fmax(NaN, 0) = 0: a ReLU at its kink.
        ("fmax", |x, y| y[0] = x[0].max(0.0) + 1.0, vec![0.0], 0),
        // fmin(x, NaN) = x at a tie; the step (sign of x) moves into the active side.
        ("fmin", |x, y| y[0] = x[0].min(x[1]), vec![-1.0, -1.0], 1),
        // A clamp at its lower bound.
        (
            "clamp",
            |x, y| y[0] = 3.0 * x[0].max(0.0).min(1.0),
            vec![0.0],
            0,
        ),
        // An isnan guard, as codes that sanitize their inputs have.
        (
            "isnan guard",
            |x, y| y[0] = 2.0 * if x[0].is_nan() { 0.0 } else { x[0] },
            vec![0.0],
            0,
        ),
        // An ordered comparison: NaN > 0 is false, and the other branch gives the same value.
        (
            "comparison",
            |x, y| y[0] = if x[0] > 0.0 { x[0] } else { 0.0 },
            vec![0.0],
            0,
        ),
    ]
}

#[test]
fn each_absorbing_construct_is_missed_by_nan_tracing_and_found_by_verification() {
    for (name, f, x0, j) in absorbing() {
        let mut f = f;
        for strategy in [Strategy::OneHot, Strategy::Payload] {
            let plain = traced(&mut f, 1, &x0, strategy, false);
            assert!(
                !plain.contains(0, j),
                "{name}: NaN tracing alone should miss (0, {j})"
            );
            let checked = traced(&mut f, 1, &x0, strategy, true);
            assert!(
                checked.contains(0, j),
                "{name} {strategy:?}: verification missed (0, {j})"
            );
            let k =
                checked.row_ptr()[0] + checked.row(0).iter().position(|&c| c == j as u32).unwrap();
            assert_eq!(checked.kinds()[k], EntryKind::Perturbation, "{name}");
            assert!(checked.report.found_by_perturbation >= 1, "{name}");
            assert!(checked.report.verification_evaluations > 0, "{name}");
            assert!(checked.report.verification_evaluations < checked.report.evaluations);
        }
    }
}

#[test]
fn the_branch_case_with_both_inputs_in_one_probe() {
    // if (x2 > 0) y = x1; else y = 0;  at x1 = 0, x2 = 1. With x1 and x2 NaN in one probe the
    // comparison is false and y = 0, its baseline value: both zeros look proven. (Outputs 1..
    // copy the other 30 inputs, so the payload planner starts with one probe of everything.)
    let mut f = |x: &[f64], y: &mut [f64]| {
        y[0] = if x[1] > 0.0 { x[0] } else { 0.0 };
        for i in 1..32 {
            y[i] = x[i] * 2.0;
        }
    };
    let mut x0 = [1.0; 32];
    x0[0] = 0.0;
    let mut bb = |x: &[f64], y: &mut [f64]| {
        f(x, y);
        Ok(())
    };
    let shared = |verify| TraceOptions {
        strategy: Strategy::Chunked,
        chunk_size: 2,
        verify,
        ..Default::default()
    };
    let plain = trace(&mut bb, 32, &x0, &shared(false)).unwrap();
    assert!(
        plain.row(0).is_empty(),
        "NaN tracing alone: the shared probe hides x1"
    );
    let checked = trace(&mut bb, 32, &x0, &shared(true)).unwrap();
    assert!(checked.contains(0, 0), "verification finds x1");
    // The payload planner then resolves the flagged probe down to single inputs: x1 depends
    // (proven by NaN once alone), x2 does not (its branch does not switch near x0).
    let checked = traced(&mut f, 32, &x0, Strategy::Payload, true);
    assert_eq!(checked.row(0), &[0]);
    assert_eq!(checked.row(5), &[5]);
}

#[test]
fn zeros_on_a_whole_neighbourhood_stay_zeros() {
    // pow(NaN, 0) = 1 and pow(1, NaN) = 1 are absorbed, but at x0 the output truly does not
    // move: d/dx x^0 = 0 everywhere, d/dx 1^x = ln 1 = 0. A rounded value is piecewise constant.
    let cases: Vec<(&str, BlackBoxFn, Vec<f64>)> = vec![
        ("pow(x, 0)", |x, y| y[0] = x[0].powf(x[1]), vec![1.5, 0.0]),
        ("pow(1, x)", |x, y| y[0] = x[0].powf(x[1]), vec![1.0, 2.0]),
        (
            "rounded",
            |x, y| y[0] = ((x[0] * 10.0) as i64) as f64,
            vec![0.04],
        ),
    ];
    for (name, f, x0) in cases {
        let mut f = f;
        let plain = traced(&mut f, 1, &x0, Strategy::OneHot, false);
        let checked = traced(&mut f, 1, &x0, Strategy::OneHot, true);
        assert_eq!(checked.col_idx(), plain.col_idx(), "{name}: no entry added");
        assert_eq!(checked.report.found_by_perturbation, 0, "{name}");
    }
}

#[test]
fn tolerance_ignores_jitter() {
    // y0 depends on nothing but jitters in its last bits from call to call (as codes whose
    // iteration counts depend on the values do); y1 = 2 x1.
    let mut calls = 0u64;
    let mut f = |x: &[f64], y: &mut [f64]| {
        calls += 1;
        y[0] = 5.0 + 1e-13 * (calls % 2) as f64;
        y[1] = 2.0 * x[1];
    };
    let x0 = [1.0, 2.0];
    let mut bb = |x: &[f64], y: &mut [f64]| {
        f(x, y);
        Ok(())
    };
    let strict = TraceOptions {
        strategy: Strategy::OneHot,
        ..Default::default()
    };
    let p = trace(&mut bb, 2, &x0, &strict).unwrap();
    assert!(
        !p.row(0).is_empty(),
        "bit-for-bit: the jitter reads as dependencies"
    );
    let tolerant = TraceOptions {
        verify_tolerance: 1e-10,
        ..strict
    };
    let p = trace(&mut bb, 2, &x0, &tolerant).unwrap();
    assert!(p.row(0).is_empty(), "within tolerance: no dependency");
    assert_eq!(p.row(1), &[1]);
}

#[test]
fn verification_adds_nothing_where_nan_propagates() {
    for truth in [
        synthetic::banded(300, 2),
        synthetic::stencil_2d(15),
        synthetic::random_sparse(120, 150, 4, 8),
    ] {
        let x0: Vec<f64> = (0..truth.cols()).map(|j| 0.5 + 0.01 * j as f64).collect();
        let mut f = Synthetic::new(&truth, Winner::Random, 3);
        let p = trace(&mut f, truth.rows(), &x0, &TraceOptions::default()).unwrap();
        assert_eq!(
            (p.row_ptr(), p.col_idx()),
            (truth.row_ptr(), truth.col_idx())
        );
        assert_eq!(p.report.found_by_perturbation, 0);
        // At most one verification per NaN probe, and only of probes that proved a zero.
        let nan_probes = p.report.evaluations - 1 - p.report.verification_evaluations;
        assert!(p.report.verification_evaluations <= nan_probes);
    }
}

#[test]
fn budget_never_uses_half_a_verification() {
    let truth = synthetic::banded(50, 1);
    let mut f = Synthetic::new(&truth, Winner::Random, 1);
    let options = TraceOptions {
        max_evaluations: 6,
        ..Default::default()
    };
    let p = trace(&mut f, 50, &vec![1.0; 50], &options).unwrap();
    assert!(p.report.evaluations <= 6, "the budget holds");
    assert!(p.report.budget_exhausted && p.report.unresolved > 0);
    for i in 0..50 {
        for &j in truth.row(i) {
            assert!(p.contains(i, j as usize));
        }
    }
}

/// The legacy NaN guard on a combination of two inputs that vanishes at x0: NaN is absorbed
/// (the guard sets the combination to 0, its value at x0), so NaN tracing sees nothing, and a
/// verification step that moves both inputs by equal or proportional amounts cancels too. Row i
/// depends on x[2i], x[2i+1] (through the combination) and x[(2i+2) mod n].
fn guarded_combination(
    combine: fn(f64, f64) -> f64,
) -> impl FnMut(&[f64], &mut [f64]) -> Result<(), i32> {
    move |x: &[f64], y: &mut [f64]| {
        let n = x.len();
        for (i, yi) in y.iter_mut().enumerate() {
            let mut d = combine(x[2 * i], x[2 * i + 1]);
            if d.is_nan() {
                d = 0.0; // legacy NaN guard
            }
            *yi = d + d * d * d + 0.1 * x[(2 * i + 2) % n];
        }
        Ok(())
    }
}

#[test]
fn combinations_that_vanish_at_x0_are_found_by_independent_random_steps() {
    let m = 50;
    let n = 2 * m;
    let truth = |p: &Pattern| {
        (0..m).all(|i| {
            let mut want = vec![2 * i as u32, 2 * i as u32 + 1, ((2 * i + 2) % n) as u32];
            want.sort_unstable();
            p.row(i) == want
        })
    };
    // x_a - x_b at equal values, x_a + x_b at opposite values, x_a - 2 x_b at x_a = 2 x_b
    // (where steps proportional to x0 cancel).
    type Combine = fn(f64, f64) -> f64;
    type Point = fn(usize) -> f64;
    let cases: [(&str, Combine, Point); 3] = [
        ("difference at equal values", |a, b| a - b, |_| 1.0),
        (
            "sum at opposite values",
            |a, b| a + b,
            |j| if j % 2 == 0 { 1.5 } else { -1.5 },
        ),
        (
            "x_a - 2 x_b at x_a = 2 x_b",
            |a, b| a - 2.0 * b,
            |j| if j % 2 == 0 { 2.0 } else { 1.0 },
        ),
    ];
    for (name, combine, point) in cases {
        let x0: Vec<f64> = (0..n).map(point).collect();
        for strategy in [Strategy::Payload, Strategy::OneHot] {
            for seed in [0, 1, 2] {
                let options = TraceOptions {
                    strategy,
                    seed,
                    ..Default::default()
                };
                let p = trace(&mut guarded_combination(combine), m, &x0, &options).unwrap();
                assert!(
                    truth(&p),
                    "{name}, {strategy:?}, seed {seed}: {:?}",
                    p.row(0)
                );
            }
        }
    }
    // At a random point the combination does not vanish: NaN tracing alone finds it.
    let x0: Vec<f64> = (0..n)
        .map(|j| 0.3 + ((j * 7919) % 101) as f64 / 37.0)
        .collect();
    let p = trace(
        &mut guarded_combination(|a, b| a - b),
        m,
        &x0,
        &TraceOptions::default(),
    )
    .unwrap();
    assert!(truth(&p));
}

/// Kinks that show on one side of x0 only, the side a step in the direction of x0's sign does
/// not take: a clamp at its upper bound and a cap at a tie, with x0 > 0. NaN is absorbed there
/// (fmin/fmax), and the check moves every input both ways.
#[allow(clippy::manual_clamp)]
fn upper_kinks(x: &[f64], y: &mut [f64]) -> Result<(), i32> {
    y[0] = 3.0 * x[0].max(0.0).min(1.0); // clamp at its upper bound, x0 = 1
    y[1] = x[1].min(2.0); // a cap at a tie, x1 = 2
    for i in 2..y.len() {
        y[i] = 2.0 * x[i]; // the rest: plain rows, so the payload planner has work
    }
    Ok(())
}

#[test]
fn kinks_on_the_far_side_of_x0_are_found() {
    let mut x0 = vec![1.5; 40];
    x0[0] = 1.0;
    x0[1] = 2.0;
    for strategy in [Strategy::Payload, Strategy::OneHot] {
        let options = TraceOptions {
            strategy,
            ..Default::default()
        };
        let p = trace(&mut upper_kinks, 40, &x0, &options).unwrap();
        assert!(
            p.contains(0, 0),
            "{strategy:?}: the clamp at its upper bound"
        );
        assert!(p.contains(1, 1), "{strategy:?}: the cap at a tie");
        assert_eq!(p.nnz(), 40, "{strategy:?}: nothing else");
        assert!(p.report.rechecked_rows >= 2);
    }
}

#[test]
fn the_check_costs_two_evaluations_per_color_where_nan_propagates() {
    use nanprop::coloring::{self, ColoringOptions, Order};
    for truth in [
        synthetic::banded(300, 2),
        synthetic::stencil_2d(15),
        synthetic::random_sparse(120, 150, 4, 8),
    ] {
        let x0: Vec<f64> = (0..truth.cols()).map(|j| 0.5 + 0.01 * j as f64).collect();
        let plain = TraceOptions {
            verify: false,
            ..Default::default()
        };
        let nan_only = trace(
            &mut Synthetic::new(&truth, Winner::Random, 3),
            truth.rows(),
            &x0,
            &plain,
        )
        .unwrap();
        let p = trace(
            &mut Synthetic::new(&truth, Winner::Random, 3),
            truth.rows(),
            &x0,
            &TraceOptions::default(),
        )
        .unwrap();
        // Small patterns: the fewer colors of the default coloring and smallest-last.
        let smallest_last = coloring::color(
            &truth,
            &ColoringOptions {
                strategy: coloring::Strategy::Only(Order::SmallestLast),
                seed: 0,
                recolor_iterations: 0,
            },
        )
        .unwrap()
        .num_colors;
        let default = coloring::color(&truth, &ColoringOptions::default())
            .unwrap()
            .num_colors;
        let colors = smallest_last.min(default);
        assert_eq!(p.col_idx(), truth.col_idx());
        assert_eq!(p.report.rechecked_rows, 0);
        assert_eq!(p.report.verification_evaluations, 2 * colors);
        assert_eq!(
            p.report.evaluations,
            nan_only.report.evaluations + 2 * colors
        );
    }
}

/// Rows of a few tens of percent of the entries are recognised dense, their unknown columns
/// kept as assumed entries, and the pattern is nearly dense: its check needed about as many
/// colors as columns, 2 evaluations each (200 x 400 at 20%: 850 evaluations, 800 of them the
/// check). When the check would cost more than one probe per column, the rows holding assumed
/// entries leave it and the zeros they claim are kept as assumed entries too: no zero goes
/// unchecked, nothing is lost, and the trace costs less than one-hot's n + 1.
#[test]
fn a_nearly_dense_pattern_is_not_checked_at_two_evaluations_a_column() {
    let (m, n) = (200, 400);
    let mut rng = nanprop::rng::Rng::new(7);
    let truth = synthetic::from_rows(m, n, |_, r| {
        r.extend((0..n).filter(|_| rng.below(100) < 20))
    });
    let x0: Vec<f64> = (0..n).map(|j| 0.5 + 0.01 * j as f64).collect();
    let mut f = Synthetic::new(&truth, Winner::Random, 1);
    let p = trace(&mut f, m, &x0, &TraceOptions::default()).unwrap();
    assert!(
        p.report.evaluations <= n + 1,
        "{} evaluations",
        p.report.evaluations
    );
    assert_found_and_the_rest_assumed(&truth, &p, m);
}

/// Rows `..rows` of `p` hold every dependency of `truth`, and every other entry they hold is
/// an assumed one (at least one in all).
fn assert_found_and_the_rest_assumed(truth: &Pattern, p: &Pattern, rows: usize) {
    let kinds = p.kinds();
    for i in 0..rows {
        for &j in truth.row(i) {
            assert!(p.contains(i, j as usize), "lost ({i}, {j})");
        }
        let (a, b) = (p.row_ptr()[i], p.row_ptr()[i + 1]);
        for (&j, &kind) in p.row(i).iter().zip(&kinds[a..b]) {
            if !truth.contains(i, j as usize) {
                assert_eq!(kind, EntryKind::Assumed, "({i}, {j})");
            }
        }
    }
    assert!(p.report.assumed > 0);
}

/// The rows the check leaves out are those holding assumed entries; the others keep their
/// check: beside 200 rows recognised dense, a row whose dependency hides behind an absorbing
/// `fmax` at x0 is still found by the check and traced again.
#[test]
fn rows_left_out_of_the_check_leave_the_others_checked() {
    let (m, n) = (201, 400);
    let mut rng = nanprop::rng::Rng::new(7);
    let truth = synthetic::from_rows(m - 1, n, |_, r| {
        r.extend((0..n).filter(|_| rng.below(100) < 20))
    });
    let mut f = |x: &[f64], y: &mut [f64]| {
        for (i, yi) in y.iter_mut().enumerate().take(m - 1) {
            *yi = truth.row(i).iter().map(|&j| x[j as usize]).sum();
        }
        // fmax(NaN, 0) = 0: x_5's NaN is absorbed at x_5 = 0.
        y[m - 1] = x[5].max(0.0) + x[7];
        Ok::<(), i32>(())
    };
    let mut x0: Vec<f64> = (0..n).map(|j| 0.5 + 0.01 * j as f64).collect();
    x0[5] = 0.0;
    let p = trace(&mut f, m, &x0, &TraceOptions::default()).unwrap();
    for i in 0..m - 1 {
        for &j in truth.row(i) {
            assert!(p.contains(i, j as usize), "lost ({i}, {j})");
        }
    }
    assert!(p.report.assumed > 0, "no row recognised dense");
    assert_eq!(p.row(m - 1), &[5, 7]);
    let k = p.row_ptr()[m - 1];
    assert_eq!(p.kinds()[k], EntryKind::Perturbation);
    assert!(
        p.report.evaluations <= n + 1,
        "{} evaluations",
        p.report.evaluations
    );
}

type Blind = Box<dyn FnMut(&[f64], &mut [f64]) -> Result<(), i32>>;

/// A nearly dense black box whose NaNs lose their payloads (made anew inside, NAN_FACTS §1):
/// 149 rows with 60% of 300 columns each, traced one probe per column, exact, and two sparse
/// rows, one of whose dependencies (x_5) hides behind an absorbing `fmax` at x0.
fn blind_nearly_dense() -> (Pattern, Blind) {
    let (m, n) = (151, 300);
    let mut rng = nanprop::rng::Rng::new(7);
    let truth = synthetic::from_rows(m - 2, n, |_, r| {
        r.extend((0..n).filter(|_| rng.below(100) < 60))
    });
    let dense = truth.clone();
    let f = move |x: &[f64], y: &mut [f64]| {
        for (i, yi) in y.iter_mut().enumerate().take(m - 2) {
            let s: f64 = dense.row(i).iter().map(|&j| x[j as usize]).sum();
            *yi = if s.is_nan() { f64::NAN } else { s };
        }
        // fmax(NaN, 0) = 0: x_5's NaN is absorbed at x_5 = 0.
        y[m - 2] = x[5].max(0.0) + x[7];
        y[m - 1] = x[11] * x[12];
        Ok(())
    };
    (truth, Box::new(f))
}

/// A check whose coloring compresses nothing is not made when no budget is set: its 2 chi
/// evaluations (about 2 n) would pay back only after hundreds of Jacobians, each costing about
/// n on the checked pattern too. The long rows leave it and keep their zeros as assumed
/// entries; the sparse rows are still checked, so the dependency the `fmax` hides is found by
/// perturbation. With `max_evaluations = usize::MAX` the whole pattern is checked.
#[test]
fn a_check_that_compresses_nothing_is_left_to_the_sparse_rows() {
    let (m, n) = (151, 300);
    let mut x0: Vec<f64> = (0..n).map(|j| 0.5 + 0.01 * j as f64).collect();
    x0[5] = 0.0;
    let (truth, mut f) = blind_nearly_dense();
    let p = trace(&mut f, m, &x0, &TraceOptions::default()).unwrap();
    // One probe per column after the coarse steps' allowance, the sparse rows' check and the
    // re-trace of the row that fails it (365 when written).
    assert!(
        p.report.evaluations <= n + n / 8 + 16 + 1 + 64,
        "{} evaluations",
        p.report.evaluations
    );
    assert_found_and_the_rest_assumed(&truth, &p, m - 2);
    assert_eq!(p.row(m - 2), &[5, 7]);
    assert_eq!(p.kinds()[p.row_ptr()[m - 2]], EntryKind::Perturbation);
    assert_eq!(p.row(m - 1), &[11, 12]);
    // Asked for the exact pattern: every zero checked, at two evaluations a color.
    let exact = TraceOptions {
        max_evaluations: usize::MAX,
        ..Default::default()
    };
    let (_, mut f) = blind_nearly_dense();
    let q = trace(&mut f, m, &x0, &exact).unwrap();
    assert_eq!(q.report.assumed, 0);
    assert_eq!(q.nnz(), truth.nnz() + 4);
    assert!(q.report.evaluations > 2 * n, "{}", q.report.evaluations);
    assert!(2 * p.report.evaluations < q.report.evaluations);
}

/// The strict one-hot bound: a budget of n + 1 covers the guard too. On a problem this small
/// the check does not fit whole; the zeros it could not check are kept as possible
/// dependencies, never reported as zeros, so nothing the absorbing guard hides is lost.
#[test]
fn a_budget_of_n_plus_one_keeps_what_the_check_could_not_reach() {
    let (m, n) = (6, 12);
    for budget in [n + 1, n / 2, 3] {
        let options = TraceOptions {
            max_evaluations: budget,
            ..Default::default()
        };
        let mut f = guarded_combination(|a, b| a - b);
        let p = trace(&mut f, m, &vec![1.0; n], &options).unwrap();
        assert!(
            p.report.evaluations <= budget,
            "budget {budget}: {}",
            p.report.evaluations
        );
        for i in 0..m {
            for j in [2 * i, 2 * i + 1, (2 * i + 2) % n] {
                assert!(p.contains(i, j), "budget {budget}: lost ({i}, {j})");
            }
        }
        assert!(p.report.budget_exhausted, "budget {budget}");
        assert!(p.report.unresolved > 0, "budget {budget}");
    }
    // Without a budget the same problem is exact.
    let mut f = guarded_combination(|a, b| a - b);
    let p = trace(&mut f, m, &vec![1.0; n], &TraceOptions::default()).unwrap();
    assert_eq!(p.nnz(), 3 * m);
}

/// `scale` times y_i = (3 - 2 x_i) x_i + 1 - x_{i-1} - 2 x_{i+1}, plus `hidden` x_{i+7} behind a
/// guard that puts 0.75 (its value at x0) in place of a NaN: the NaN leaves y_i bit for bit
/// unchanged.
fn stationary(x: &[f64], y: &mut [f64], hidden: f64, scale: f64) {
    let n = x.len();
    for i in 0..n {
        let left = if i > 0 { x[i - 1] } else { 0.0 };
        let right = if i + 1 < n { x[i + 1] } else { 0.0 };
        let far = match x.get(i + 7) {
            Some(v) if v.is_nan() => hidden * 0.75,
            Some(v) => hidden * v,
            None => 0.0,
        };
        y[i] = scale * ((3.0 - 2.0 * x[i]) * x[i] + 1.0 - left - 2.0 * right + far);
    }
}

#[test]
fn an_output_at_zero_and_stationary_is_measured_against_the_outputs_typical_size() {
    // Every tenth row sits at x_i = 0.75 (slope zero along x_i) with its neighbours chosen so
    // that y_i is exactly 0: its two check slopes differ by curvature alone, and its own size
    // (about the steps squared) would allow none. The allowance takes the median output size
    // of f at x0 instead (0.125 here, scaled with f): no row is traced again, at any scale.
    let n = 3000;
    let mut x0 = vec![0.75; n];
    for i in (5..n).step_by(10) {
        x0[i - 1] = 0.625;
    }
    for scale in [1.0, 1e-9, 1e9] {
        let mut f = |x: &[f64], y: &mut [f64]| {
            stationary(x, y, 0.0, scale);
            Ok(())
        };
        let mut y = vec![0.0; n];
        stationary(&x0, &mut y, 0.0, scale);
        assert!((5..n - 1).step_by(10).all(|i| y[i] == 0.0));
        let p = trace(&mut f, n, &x0, &TraceOptions::default()).unwrap();
        assert_eq!(p.col_idx(), synthetic::banded(n, 1).col_idx());
        assert_eq!(p.report.rechecked_rows, 0, "scale {scale}");
    }
}

#[test]
fn a_stationary_point_along_a_traced_input_is_curvature_not_a_missed_dependency() {
    // At x_i = 0.75 the slope of y_i along x_i is zero, and the check's two slopes differ by
    // the curvature alone: no row is traced again, the check costs its two evaluations per
    // color (3 colors), and the pattern is exact. The allowance follows the outputs' size:
    // the same at any scale of f.
    let n = 3000;
    let x0 = vec![0.75; n];
    for scale in [1.0, 1e-9, 1e9] {
        let mut plain = |x: &[f64], y: &mut [f64]| {
            stationary(x, y, 0.0, scale);
            Ok(())
        };
        let p = trace(&mut plain, n, &x0, &TraceOptions::default()).unwrap();
        assert_eq!(p.col_idx(), synthetic::banded(n, 1).col_idx());
        assert_eq!(p.report.rechecked_rows, 0, "scale {scale}");
        assert_eq!(p.report.verification_evaluations, 6);
        // A dependency the guard hides, of a first-order effect of a twentieth of x_{i+1}'s,
        // in the check class of x_{i+1} (3 colors: every class holds a traced column of every
        // row, so only the slope test can see it): found in nearly every row, as where the
        // slope is not near zero (the two slopes move apart by about the hidden effect times
        // the difference of the independent steps' ratios; rows where those ratios nearly
        // agree are the few left). The allowance for curvature is a millionth of that.
        let mut guarded = |x: &[f64], y: &mut [f64]| {
            stationary(x, y, 0.1, scale);
            Ok(())
        };
        let p = trace(&mut guarded, n, &x0, &TraceOptions::default()).unwrap();
        let found = (0..n - 7).filter(|&i| p.contains(i, i + 7)).count();
        assert!(
            20 * found >= 19 * (n - 7),
            "scale {scale}: {found} of {}",
            n - 7
        );
        assert_eq!(p.report.rechecked_rows, found);
    }
}
