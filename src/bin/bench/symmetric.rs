//! The Hessian coloring table: nanprop's star coloring against ColPack's star coloring (each
//! ordering, best kept) and against the column coloring of the same pattern, on grids, grids
//! coupled to global variables, banded, random symmetric and arrowhead patterns.

use nanprop::coloring::{self, check_star, ColoringOptions};
use nanprop::testing as synthetic;
use nanprop::Pattern;
use std::time::Instant;

/// The 5-point grid g x g plus `globals` variables coupled to every grid variable and to each
/// other (a Hessian with dense rows and columns).
fn grid_with_globals(g: usize, globals: usize) -> Pattern {
    let v = g * g;
    let grid = synthetic::stencil_2d(g);
    synthetic::from_rows(v + globals, v + globals, |i, r| {
        if i < v {
            r.extend(grid.row(i).iter().map(|&j| j as usize));
            r.extend(v..v + globals);
        } else {
            r.extend(0..v + globals);
        }
    })
}

fn cases() -> Vec<(String, Pattern)> {
    vec![
        ("2-D grid 100 x 100".into(), synthetic::stencil_2d(100)),
        (
            "grid 100 x 100 + 1 global".into(),
            grid_with_globals(100, 1),
        ),
        (
            "grid 100 x 100 + 3 globals".into(),
            grid_with_globals(100, 3),
        ),
        (
            "banded, half-bandwidth 2".into(),
            synthetic::banded(10_000, 2),
        ),
        (
            "banded, half-bandwidth 10".into(),
            synthetic::banded(10_000, 10),
        ),
        (
            "random symmetric, 5 per row".into(),
            synthetic::random_sparse(10_000, 10_000, 5, 9)
                .symmetrized()
                .expect("square"),
        ),
        ("arrowhead".into(), synthetic::arrowhead(10_000)),
    ]
}

/// ColPack's star colorings (ordering, colors, seconds), each checked here.
fn colpack_star(helper: &std::path::Path, p: &Pattern) -> Vec<(String, usize, f64, bool)> {
    let lower: usize = (0..p.rows())
        .map(|i| p.row(i).iter().filter(|&&j| j as usize <= i).count())
        .sum();
    super::colpack_lines(helper, Some("star"), |w| {
        writeln!(w, "%%MatrixMarket matrix coordinate pattern symmetric")?;
        writeln!(w, "{} {} {lower}", p.rows(), p.cols())?;
        for i in 0..p.rows() {
            for &j in p.row(i).iter().filter(|&&j| j as usize <= i) {
                writeln!(w, "{} {}", i + 1, j + 1)?;
            }
        }
        Ok(())
    })
    .into_iter()
    .map(|(order, count, seconds, rest)| {
        let colors: Vec<u32> = rest.iter().filter_map(|c| c.parse().ok()).collect();
        let valid = colors.len() == p.cols() && check_star(p, &colors).is_ok_and(|r| r.is_ok());
        (order, count, seconds, valid)
    })
    .collect()
}

pub(crate) fn table() {
    let helper = super::colpack_helper();
    println!("\n### Hessian coloring: star coloring against ColPack's and the column coloring\n");
    match helper {
        Some(_) => println!("ColPack 1.0.10 (Debian libcolpack-dev): GraphColoringInterface, 'STAR' under each of its six orderings, the fewest colors kept (each coloring checked by nanprop's check_star).\n"),
        None => println!("ColPack is not installed (apt-get install libcolpack-dev): its columns are '-'.\n"),
    }
    println!("| pattern | n | nnz | column coloring (nanprop default) | star coloring (nanprop default) | ColPack star, best order | nanprop star ms | ColPack star ms (all orders) |");
    println!("|---|---:|---:|---:|---:|---|---:|---:|");
    for (name, p) in cases() {
        let t = Instant::now();
        let star = coloring::star(&p, &ColoringOptions::default()).expect("star coloring");
        let star_ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(check_star(&p, &star.colors).unwrap(), Ok(()), "{name}");
        let column = coloring::color(&p, &ColoringOptions::default()).expect("coloring");
        let (cp, cp_ms) = match &helper {
            Some(h) => {
                let runs = colpack_star(h, &p);
                let best = runs.iter().filter(|r| r.3).min_by_key(|r| r.1);
                let invalid = runs.iter().filter(|r| !r.3).count();
                let ms: f64 = runs.iter().map(|r| r.2).sum::<f64>() * 1e3;
                let text = match best {
                    Some(b) if invalid == 0 => format!("{} ({})", b.1, b.0.to_lowercase()),
                    Some(b) => {
                        format!("{} ({}; {invalid} orders invalid)", b.1, b.0.to_lowercase())
                    }
                    None => "invalid".to_string(),
                };
                (text, format!("{ms:.1}"))
            }
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "| {name} | {} | {} | {} | {} | {cp} | {star_ms:.1} | {cp_ms} |",
            p.cols(),
            p.nnz(),
            column.num_colors,
            star.num_colors
        );
        eprintln!("hessian coloring: {name} done");
    }
    println!("\nA forward Hessian costs colors + 1 gradient evaluations (colors with the gradient at x given), a central one 2 colors.");
}
