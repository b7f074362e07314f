//! The smoothed-Jacobian table and plot: at equal evaluation counts, nanprop's per-row
//! regression against the full-dimensional sampling estimators (antithetic, and Polyak's
//! one-sided oracle, both perturbing every input and ignoring the pattern) and plain finite
//! differences, on branching models whose smoothed Jacobian is known in closed form
//! (nanprop::testing::branching). RMS errors over the pattern's entries and over repetitions.

use nanprop::smoothing::{smoothed_jacobian, Estimator, SigmaKind, SmoothingOptions};
use nanprop::testing::branching;
use nanprop::Pattern;

const SIGMA: f64 = 0.1;
const REPEATS: u64 = 10;
const BUDGETS: [usize; 5] = [20, 80, 320, 1280, 5120];

struct Model {
    name: &'static str,
    f: fn(&[f64], &mut [f64]),
    p: Pattern,
    x: Vec<f64>,
    truth: Vec<f64>,
}

fn models() -> Vec<Model> {
    let mut rng = nanprop::rng::Rng::new(1);
    let mut x0 = |n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| 1.0 + 1.5 * SIGMA * (2.0 * rng.uniform_open0() - 1.0))
            .collect()
    };
    let (xc, xt) = (x0(202), x0(201));
    vec![
        Model {
            name: "Heaviside chain, n = 202, m = 200",
            f: branching::chain,
            p: branching::chain_pattern(202),
            truth: branching::chain_smoothed_jacobian(&xc, SIGMA),
            x: xc,
        },
        Model {
            name: "threshold model, n = 201, m = 200",
            f: branching::threshold,
            p: branching::threshold_pattern(201),
            truth: branching::threshold_smoothed_jacobian(&xt, SIGMA),
            x: xt,
        },
    ]
}

/// One row of results at a budget: RMS errors on the pattern's entries (and more).
#[derive(Default, Clone)]
struct Errors {
    regression: f64,
    regression_se: f64,
    covered: f64,
    antithetic: f64,
    antithetic_off: f64,
    one_sided: f64,
    differences: f64,
}

fn rms(sum_sq: f64, count: usize) -> f64 {
    (sum_sq / count as f64).sqrt()
}

/// The full-dimensional estimators, dense m x n: `antithetic` with `samples` pairs, or the
/// one-sided `(f(x + sigma eps) - f(x)) eps / sigma` with `samples` draws.
fn full_dimensional(m: &Model, samples: usize, antithetic: bool, seed: u64) -> Vec<f64> {
    let (rows, n) = (m.p.rows(), m.p.cols());
    let mut rng = nanprop::rng::Rng::new(seed ^ 0xF011);
    let mut j = vec![0.0; rows * n];
    let (mut eps, mut xp, mut xm) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let (mut yp, mut ym, mut y0) = (vec![0.0; rows], vec![0.0; rows], vec![0.0; rows]);
    (m.f)(&m.x, &mut y0);
    for _ in 0..samples {
        for k in 0..n {
            eps[k] = rng.normal();
            xp[k] = m.x[k] + SIGMA * eps[k];
            xm[k] = m.x[k] - SIGMA * eps[k];
        }
        (m.f)(&xp, &mut yp);
        if antithetic {
            (m.f)(&xm, &mut ym);
        }
        for i in 0..rows {
            let d = if antithetic {
                0.5 * (yp[i] - ym[i])
            } else {
                yp[i] - y0[i]
            };
            let row = &mut j[i * n..(i + 1) * n];
            for (r, e) in row.iter_mut().zip(&eps) {
                *r += d * e;
            }
        }
    }
    j.iter_mut().for_each(|v| *v /= samples as f64 * SIGMA);
    j
}

fn measure(m: &Model, budget: usize) -> Errors {
    let (rows, n, nnz) = (m.p.rows(), m.p.cols(), m.p.nnz());
    let mut e = Errors::default();
    let (mut covered, mut off_count) = (0usize, 0usize);
    let mut f = |x: &[f64], y: &mut [f64]| {
        (m.f)(x, y);
        Ok(())
    };
    for rep in 0..REPEATS {
        let o = SmoothingOptions {
            sigma: SIGMA,
            sigma_kind: SigmaKind::Absolute,
            samples: budget / 2,
            seed: rep,
            estimator: Estimator::Regression,
        };
        let (mut v, mut se) = (vec![0.0; nnz], vec![0.0; nnz]);
        let made = smoothed_jacobian(&mut f, &m.x, &m.p, &o, &mut v, Some(&mut se)).unwrap();
        assert_eq!(made, budget);
        for k in 0..nnz {
            let d = v[k] - m.truth[k];
            e.regression += d * d;
            e.regression_se += se[k] * se[k];
            covered += usize::from(d.abs() <= 3.0 * se[k]);
        }
        let anti = full_dimensional(m, budget / 2, true, rep);
        let one = full_dimensional(m, budget - 1, false, rep);
        for i in 0..rows {
            let cols = m.p.row(i);
            for j in 0..n {
                let at = cols.binary_search(&(j as u32));
                match at {
                    Ok(k) => {
                        let t = m.truth[m.p.row_ptr()[i] + k];
                        e.antithetic += (anti[i * n + j] - t).powi(2);
                        e.one_sided += (one[i * n + j] - t).powi(2);
                    }
                    Err(_) => {
                        e.antithetic_off += anti[i * n + j].powi(2);
                        off_count += 1;
                    }
                }
            }
        }
    }
    let count = nnz * REPEATS as usize;
    e.regression = rms(e.regression, count);
    e.regression_se = rms(e.regression_se, count);
    e.covered = covered as f64 / count as f64;
    e.antithetic = rms(e.antithetic, count);
    e.antithetic_off = rms(e.antithetic_off, off_count);
    e.one_sided = rms(e.one_sided, count);
    // Finite differences: deterministic, the same at every budget that pays for them.
    let mut fd = vec![0.0; nnz];
    nanprop::jacobian::jacobian(&mut f, &m.x, &m.p, &Default::default(), &mut fd).unwrap();
    e.differences = rms(
        fd.iter().zip(&m.truth).map(|(a, b)| (a - b).powi(2)).sum(),
        nnz,
    );
    e
}

pub(crate) fn table() {
    println!("\n### Smoothed Jacobians: error against evaluations\n");
    println!(
        "sigma = {SIGMA} (absolute), every input perturbed together; RMS error over the pattern's entries and {REPEATS} seeds; truth in closed form. 'full-dimensional' estimators perturb all inputs and do not use the pattern (their off-pattern entries, truly zero, carry the noise shown); finite differences: the compressed forward Jacobian (colors + 1 evaluations), whatever the budget.\n"
    );
    let mut curves = Vec::new();
    for m in models() {
        println!("#### {}\n", m.name);
        println!("| evaluations | nanprop regression | its RMS standard error | within 3 standard errors | full-dimensional antithetic | (its off-pattern noise) | full-dimensional one-sided (Polyak) | finite differences |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
        let mut rows = Vec::new();
        for &b in &BUDGETS {
            let e = measure(&m, b);
            println!(
                "| {b} | {:.3} | {:.3} | {:.1}% | {:.3} | {:.3} | {:.3} | {:.3} |",
                e.regression,
                e.regression_se,
                100.0 * e.covered,
                e.antithetic,
                e.antithetic_off,
                e.one_sided,
                e.differences
            );
            eprintln!("smoothing: {} at {b} evaluations done", m.name);
            rows.push(e);
        }
        println!();
        curves.push((m.name, rows));
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/smoothing.svg");
    std::fs::write(path, plot(&curves)).expect("write bench/smoothing.svg");
    println!("The plot of these tables: bench/smoothing.svg.");
}

/// A curve of the plot: its label, its color, and which error it draws.
type Series = (&'static str, &'static str, fn(&Errors) -> f64);

/// A log-log plot of RMS error against evaluations, one panel per model.
fn plot(curves: &[(&str, Vec<Errors>)]) -> String {
    let (w, h, pad) = (420.0, 320.0, 55.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        w * curves.len() as f64,
        h + 40.0
    );
    let series: [Series; 4] = [
        ("nanprop regression", "#1b7837", |e| e.regression),
        ("full-dimensional antithetic", "#2166ac", |e| e.antithetic),
        ("full-dimensional one-sided", "#b2182b", |e| e.one_sided),
        ("finite differences", "#888888", |e| e.differences),
    ];
    let (lx0, lx1) = ((BUDGETS[0] as f64).log10(), (BUDGETS[4] as f64).log10());
    let (ly0, ly1) = (-2.0f64, 1.0f64);
    for (panel, (name, rows)) in curves.iter().enumerate() {
        let ox = panel as f64 * w;
        let px = |b: f64| ox + pad + (b.log10() - lx0) / (lx1 - lx0) * (w - 1.6 * pad);
        let py = |e: f64| {
            let l = e.max(1e-3).log10().clamp(ly0, ly1);
            20.0 + (ly1 - l) / (ly1 - ly0) * (h - pad)
        };
        s += &format!(
            "<text x=\"{}\" y=\"14\" font-weight=\"bold\">{name}</text>\n",
            ox + pad
        );
        s += &format!(
            "<rect x=\"{}\" y=\"20\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n",
            px(BUDGETS[0] as f64),
            px(BUDGETS[4] as f64) - px(BUDGETS[0] as f64),
            h - pad
        );
        for &b in &BUDGETS {
            s += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{b}</text>\n",
                px(b as f64),
                h - pad + 35.0
            );
        }
        for k in [-2, -1, 0, 1] {
            let e = 10f64.powi(k);
            s += &format!(
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">1e{k}</text>\n<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ddd\"/>\n",
                px(BUDGETS[0] as f64) - 4.0,
                py(e) + 4.0,
                px(BUDGETS[0] as f64),
                px(BUDGETS[4] as f64),
                y = py(e)
            );
        }
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">evaluations</text>\n",
            ox + w / 2.0,
            h - pad + 50.0
        );
        s += &format!(
            "<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\" text-anchor=\"middle\">RMS error</text>\n",
            ox + 14.0,
            h / 2.0,
            ox + 14.0,
            h / 2.0
        );
        for (k, (label, color, get)) in series.iter().enumerate() {
            let points: Vec<String> = BUDGETS
                .iter()
                .zip(rows)
                .map(|(&b, e)| format!("{:.1},{:.1}", px(b as f64), py(get(e))))
                .collect();
            s += &format!(
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>\n",
                points.join(" ")
            );
            if panel == 0 {
                let y = h - pad - 44.0 + 14.0 * k as f64;
                s += &format!(
                    "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{label}</text>\n",
                    px(BUDGETS[0] as f64) + 8.0,
                    px(BUDGETS[0] as f64) + 28.0,
                    px(BUDGETS[0] as f64) + 32.0,
                    y + 4.0
                );
            }
        }
    }
    s + "</svg>\n"
}
