//! Tracing at several points: caller-given, sampled around x0, and on new flag values.

use nanprop::driver::flags::FlagTracer;
use nanprop::trace::points::sample_points;
use nanprop::trace_points;
use nanprop::{trace, Pattern, Strategy, TraceOptions};

/// One-hot tracing: exact per point. (With several inputs in one probe, a NaN in the branch
/// condition sends the code down the other branch, whose inputs then reach the output: payload
/// tracing reports them too, an over-report the README describes. These tests are about
/// unions, so they use the exact per-point pattern.)
fn one_hot() -> TraceOptions {
    TraceOptions {
        strategy: Strategy::OneHot,
        ..Default::default()
    }
}

/// y0 = x1 when x0 > 0, else x2; y1 = x0 * x3.
fn branching(x: &[f64], y: &mut [f64]) -> Result<(), i32> {
    y[0] = if x[0] > 0.0 { x[1] } else { x[2] };
    y[1] = x[0] * x[3];
    Ok(())
}

fn row(p: &Pattern, i: usize) -> Vec<u32> {
    p.row(i).to_vec()
}

#[test]
fn the_union_covers_both_branches() {
    let mut f = branching;
    let opts = one_hot();
    let at_plus = trace(&mut f, 2, &[1.0, 1.0, 2.0, 1.0], &opts).unwrap();
    assert_eq!(
        row(&at_plus, 0),
        [0, 1],
        "x0 > 0: the x1 branch (x0 itself: NaN flips it to x2)"
    );
    let points = vec![vec![1.0, 1.0, 2.0, 1.0], vec![-1.0, 1.0, 2.0, 1.0]];
    let both = trace_points(&mut f, 2, &points, &opts).unwrap();
    assert_eq!(row(&both, 0), [0, 1, 2]);
    assert_eq!(row(&both, 1), [0, 3]);
    let at_minus = trace(&mut f, 2, &[-1.0, 1.0, 2.0, 1.0], &opts).unwrap();
    assert_eq!(
        both.report.evaluations,
        at_plus.report.evaluations + at_minus.report.evaluations,
        "two full traces"
    );
    assert!(trace_points(&mut f, 2, &[], &opts).is_err());
}

#[test]
fn sampled_points_find_the_other_branch() {
    let mut f = branching;
    let x0 = [0.1, 1.0, 2.0, 1.0];
    let samples = sample_points(&x0, 8, 0.5, 7);
    assert_eq!(samples.len(), 8);
    assert!(
        samples.iter().any(|x| x[0] < 0.0),
        "a scale of 0.5 around 0.1 crosses 0"
    );
    assert_eq!(
        sample_points(&x0, 8, 0.5, 7),
        samples,
        "same seed, same points"
    );
    let mut points = vec![x0.to_vec()];
    points.extend(samples);
    let p = trace_points(&mut f, 2, &points, &one_hot()).unwrap();
    assert_eq!(row(&p, 0), [0, 1, 2]);
}

#[test]
fn flag_tracer_traces_each_new_combination_once() {
    // x0 is a flag: 1 selects x1, 2 selects x2, anything else x3.
    let mut f = |x: &[f64], y: &mut [f64]| {
        y[0] = if x[0] == 1.0 {
            x[1]
        } else if x[0] == 2.0 {
            x[2]
        } else {
            x[3]
        };
        Ok(())
    };
    let mut t = FlagTracer::new(4, 1, &[0], &one_hot()).unwrap();
    assert!(t.pattern().is_none());
    assert!(t.observe(&mut f, &[1.0, 5.0, 5.0, 5.0]).unwrap());
    assert!(
        !t.observe(&mut f, &[1.0, 7.0, 8.0, 9.0]).unwrap(),
        "same flag value: no new trace"
    );
    assert!(t.observe(&mut f, &[2.0, 7.0, 8.0, 9.0]).unwrap());
    assert_eq!(t.traces(), 2);
    let p = t.pattern().unwrap();
    assert_eq!(
        row(p, 0),
        [0, 1, 2],
        "the union of the two branches, not the third"
    );
    assert!(FlagTracer::new(4, 1, &[4], &TraceOptions::default()).is_err());
    assert!(t.observe(&mut f, &[1.0]).is_err());
}

#[test]
fn union_keeps_the_strongest_kind() {
    use nanprop::{EntryKind, Strategy};
    // The same function traced chunked (kind Chunk) and one-hot (kind Traced).
    let mut f = |x: &[f64], y: &mut [f64]| {
        y[0] = x[0] + x[1];
        y[1] = x[2];
        Ok(())
    };
    let x0 = [1.0, 2.0, 3.0];
    let chunked = trace(
        &mut f,
        2,
        &x0,
        &TraceOptions {
            strategy: Strategy::Chunked,
            chunk_size: 3,
            ..Default::default()
        },
    )
    .unwrap();
    let onehot = trace(
        &mut f,
        2,
        &x0,
        &TraceOptions {
            strategy: Strategy::OneHot,
            ..Default::default()
        },
    )
    .unwrap();
    let u = chunked.union(&onehot).unwrap();
    assert_eq!(row(&u, 0), [0, 1, 2]);
    assert_eq!(u.kinds()[0], EntryKind::Traced);
    assert_eq!(u.kinds()[2], EntryKind::Chunk, "(0, 2) only from the chunk");
    assert_eq!(
        u.report.evaluations,
        chunked.report.evaluations + onehot.report.evaluations
    );
}
