//! Single precision through the Rust API: a float function (trace_f32, evaluate_f32), and a
//! double interface over float internals (mixed precision, the codec's float trip).

use nanprop::jacobian::{JacobianOptions, JacobianPlan};
use nanprop::{trace, trace_f32, TraceOptions};

/// y_i = x_i^2 + x_{i+1} - 3 x_{i-2}, in float.
fn f32_box(x: &[f32], y: &mut [f32]) -> Result<(), i32> {
    let n = x.len();
    for i in 0..n {
        let mut v = x[i] * x[i];
        if i + 1 < n {
            v += x[i + 1];
        }
        if i >= 2 {
            v -= 3.0 * x[i - 2];
        }
        y[i] = v;
    }
    Ok(())
}

fn expected_row(i: usize, n: usize) -> Vec<u32> {
    let mut r: Vec<u32> = [i.checked_sub(2), Some(i), (i + 1 < n).then_some(i + 1)]
        .into_iter()
        .flatten()
        .map(|j| j as u32)
        .collect();
    r.sort();
    r
}

#[test]
fn a_float_function_is_traced_exactly_and_differentiated_with_float_steps() {
    let n = 500;
    let x0: Vec<f32> = (0..n).map(|j| 0.5 + (j % 5) as f32 * 0.25).collect();
    let p = trace_f32(f32_box, n, &x0, &TraceOptions::default()).unwrap();
    for i in 0..n {
        assert_eq!(p.row(i), expected_row(i, n), "row {i}");
    }
    assert!(p.report.via_float > 0);
    assert_eq!(p.report.rechecked_rows, 0);
    assert!(p.report.evaluations < 60, "{}", p.report.evaluations);
    let mut plan = JacobianPlan::new(&p, &JacobianOptions::default()).unwrap();
    let mut v = vec![0.0f32; plan.values_len()];
    let made = plan.evaluate_f32(f32_box, &x0, None, &mut v).unwrap();
    assert_eq!(made, plan.coloring().num_colors + 1);
    let mut worst = 0.0f64;
    for i in 0..n {
        for (k, &j) in p.row(i).iter().enumerate() {
            let exact = match (j as i64) - (i as i64) {
                0 => 2.0 * x0[i] as f64,
                1 => 1.0,
                _ => -3.0,
            };
            worst = worst.max((v[p.row_ptr()[i] + k] as f64 - exact).abs() / 3.0);
        }
    }
    assert!(worst < 2e-3, "relative error {worst:.2e}");
}

#[test]
fn a_double_interface_over_float_internals_is_traced_exactly() {
    // A legacy code with a REAL*8 interface computing in REAL*4: tags go through the float
    // conversions and come back as via float (the codec keeps the id in bits 50..29).
    let n = 300;
    let mut mixed = |x: &[f64], y: &mut [f64]| {
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let mut y32 = vec![0.0f32; n];
        f32_box(&x32, &mut y32)?;
        for (o, v) in y.iter_mut().zip(y32) {
            *o = v as f64;
        }
        Ok(())
    };
    let x0: Vec<f64> = (0..n).map(|j| 0.5 + (j % 5) as f64 * 0.25).collect();
    let p = trace(&mut mixed, n, &x0, &TraceOptions::default()).unwrap();
    for i in 0..n {
        assert_eq!(p.row(i), expected_row(i, n), "row {i}");
    }
    assert!(p.report.via_float > 0);
    // The check is sized for float once tags come back through one: float rounding is not
    // read as missed dependencies (with double-sized steps every row failed it and was traced
    // again: 107 evaluations instead of 34).
    assert_eq!(p.report.rechecked_rows, 0, "{:?}", p.report);
    assert!(p.report.evaluations < 60, "{:?}", p.report);
}
