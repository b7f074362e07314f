//! Failure-tolerant probing: codes that refuse or crash on NaN are traced exactly; the inputs
//! whose NaN alone makes them fail are reported and their dependencies found by perturbation.

mod common;

use nanprop::testing as synthetic;
use nanprop::{trace, EntryKind, Pattern, Strategy, TraceOptions};

/// y_i = 1 + sum over the row of (1 + j/1000) x_j, returning -1 (as a code checking its
/// inputs would) whenever one of `refused` is NaN.
fn refusing<'a>(
    truth: &'a Pattern,
    refused: &'a [usize],
) -> impl FnMut(&[f64], &mut [f64]) -> Result<(), i32> + 'a {
    move |x: &[f64], y: &mut [f64]| {
        if refused.iter().any(|&j| x[j].is_nan()) {
            return Err(-1);
        }
        common::row_sums(truth, x, y);
        Ok(())
    }
}

#[test]
fn a_banded_code_refusing_nan_in_three_inputs_is_traced_exactly() {
    let truth = synthetic::banded(300, 2);
    let refused = [17usize, 150, 299];
    let x0: Vec<f64> = (0..300).map(|j| 0.5 + 0.01 * j as f64).collect();
    for strategy in [Strategy::Payload, Strategy::OneHot, Strategy::Chunked] {
        let options = TraceOptions {
            strategy,
            chunk_size: 1,
            ..TraceOptions::default()
        };
        let p = trace(&mut refusing(&truth, &refused), 300, &x0, &options).unwrap();
        assert_eq!(
            (p.row_ptr(), p.col_idx()),
            (truth.row_ptr(), truth.col_idx()),
            "{strategy:?}"
        );
        let failed: Vec<usize> = p
            .report
            .failed_columns
            .iter()
            .map(|&j| j as usize)
            .collect();
        assert_eq!(failed, refused, "{strategy:?}");
        // The refused inputs' entries were found by perturbation, every other by NaN.
        for i in 0..300 {
            for (k, &j) in p.row(i).iter().enumerate() {
                let kind = p.kinds()[p.row_ptr()[i] + k];
                let want = if refused.contains(&(j as usize)) {
                    EntryKind::Perturbation
                } else {
                    EntryKind::Traced
                };
                assert_eq!(kind, want, "{strategy:?} ({i}, {j})");
            }
        }
        let clean = trace(
            &mut refusing(&truth, &[]),
            300,
            &x0,
            &TraceOptions {
                strategy,
                chunk_size: 1,
                ..TraceOptions::default()
            },
        )
        .unwrap();
        // The cost: for each refused input about two failed evaluations per level of
        // splitting, and three perturbations.
        let extra = p.report.evaluations - clean.report.evaluations;
        eprintln!(
            "{strategy:?}: {} evaluations, {} without refusals, {} failed",
            p.report.evaluations, clean.report.evaluations, p.report.failed_evaluations
        );
        assert!(
            extra <= refused.len() * (2 * 9 + 3 + 2),
            "{strategy:?}: {extra} more evaluations"
        );
    }
}

#[test]
fn a_code_refusing_nan_everywhere_is_traced_by_perturbation() {
    // Every input NaN-intolerant: every dependency is found by perturbation.
    let truth = synthetic::banded(20, 1);
    let all: Vec<usize> = (0..20).collect();
    let x0 = vec![1.0; 20];
    let p = trace(
        &mut refusing(&truth, &all),
        20,
        &x0,
        &TraceOptions::default(),
    )
    .unwrap();
    assert_eq!(p.col_idx(), truth.col_idx());
    assert_eq!(p.report.failed_columns.len(), 20);
    assert!(p.kinds().iter().all(|&k| k == EntryKind::Perturbation));
}
