//! `trace`: keyword options converted into `TraceOptions` (the library checks them), then the
//! library's entry point with a Python callable or a loaded routine.

use crate::callable::Callable;
use crate::errors::{invalid, to_py};
use crate::loaded::PyLoaded;
use crate::pattern::PyPattern;
use nanprop::driver::entry::trace_flat;
use nanprop::driver::Progress;
use nanprop::loader::SharedLoaded;
use nanprop::trace::options::seconds;
use nanprop::{Noise, NonFiniteBaseline, Strategy, TraceOptions};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The option names `trace` accepts, as the C struct `nanprop_options` names its fields.
pub const OPTIONS: [&str; 17] = [
    "strategy",
    "chunk_size",
    "max_evaluations",
    "nonfinite_baseline",
    "verify",
    "verify_step",
    "verify_tolerance",
    "noise",
    "sample_points",
    "sample_scale",
    "seed",
    "threads",
    "processes",
    "isolate",
    "timeout",
    "journal",
    "function_id",
];

/// `TraceOptions` from keyword arguments: the library's defaults, then each given option
/// (None keeps the default). Unknown names and values are errors naming them.
pub fn options(kw: Option<&Bound<'_, PyDict>>) -> PyResult<TraceOptions> {
    let mut o = TraceOptions::default();
    let Some(kw) = kw else { return Ok(o) };
    for (key, value) in kw.iter() {
        let name: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let bad = |want: &str| invalid(format!("option {name} = {value} must be {want}"));
        match name.as_str() {
            "strategy" => {
                let s: String = value.extract().map_err(|_| bad("a string"))?;
                o.strategy = match s.as_str() {
                    "payload" => Strategy::Payload,
                    "one-hot" | "onehot" => Strategy::OneHot,
                    "chunked" => Strategy::Chunked,
                    _ => return Err(bad("'payload', 'one-hot' or 'chunked'")),
                };
            }
            "nonfinite_baseline" => {
                let s: String = value.extract().map_err(|_| bad("a string"))?;
                o.nonfinite_baseline = match s.as_str() {
                    "mark-dense" => NonFiniteBaseline::MarkDense,
                    "error" => NonFiniteBaseline::Error,
                    _ => return Err(bad("'mark-dense' or 'error'")),
                };
            }
            "noise" => {
                let s: String = value.extract().map_err(|_| bad("a string"))?;
                o.noise = match s.as_str() {
                    "tolerate" => Noise::Tolerate,
                    "error" => Noise::Error,
                    _ => return Err(bad("'tolerate' or 'error'")),
                };
            }
            "max_evaluations" => {
                o.max_evaluations = match value.extract::<String>() {
                    Ok(s) if s == "auto" => 0,
                    Ok(s) if s == "none" => usize::MAX,
                    Ok(_) => return Err(bad("'auto', 'none' or a count")),
                    Err(_) => value
                        .extract()
                        .map_err(|_| bad("'auto', 'none' or a count"))?,
                };
            }
            "chunk_size" => o.chunk_size = count(&value, &bad)?,
            "sample_points" => o.sample_points = count(&value, &bad)?,
            "threads" => o.threads = count(&value, &bad)?,
            "processes" => o.processes = count(&value, &bad)?,
            "seed" => {
                o.seed = value
                    .extract()
                    .map_err(|_| bad("an integer in [0, 2^64)"))?
            }
            "verify" => o.verify = value.extract().map_err(|_| bad("True or False"))?,
            "isolate" => o.isolate = value.extract().map_err(|_| bad("True or False"))?,
            "verify_step" => o.verify_step = value.extract().map_err(|_| bad("a number"))?,
            "verify_tolerance" => {
                o.verify_tolerance = value.extract().map_err(|_| bad("a number"))?
            }
            "sample_scale" => o.sample_scale = value.extract().map_err(|_| bad("a number"))?,
            "timeout" => {
                let s: f64 = value.extract().map_err(|_| bad("seconds"))?;
                o.timeout = seconds(s, "timeout").map_err(to_py)?;
            }
            "journal" => {
                let path: std::path::PathBuf = value.extract().map_err(|_| bad("a path"))?;
                o.journal = Some(path);
            }
            "function_id" => {
                o.function_id = Some(value.extract().map_err(|_| bad("a string"))?);
            }
            _ => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "trace() got an unexpected option {name:?} (options: {})",
                    OPTIONS.join(", ")
                )))
            }
        }
    }
    o.validate().map_err(to_py)?;
    Ok(o)
}

/// A nonnegative integer option.
fn count(value: &Bound<'_, PyAny>, bad: &dyn Fn(&str) -> PyErr) -> PyResult<usize> {
    value.extract().map_err(|_| bad("a nonnegative integer"))
}

/// Traces f at each of the points (`points` holds them one after another, n values each) and
/// returns the union of the patterns. `progress(evaluations, planned, point, points)` is called
/// after every evaluation when given; `single`: a Python f works in float32. Use `nanprop.trace`,
/// which documents the options.
#[pyfunction]
#[pyo3(signature = (f, points, n, m, progress=None, single=false, **options_))]
pub fn trace(
    f: &Bound<'_, PyAny>,
    points: PyReadonlyArray1<'_, f64>,
    n: usize,
    m: usize,
    progress: Option<&Bound<'_, PyAny>>,
    single: bool,
    options_: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyPattern> {
    let o = options(options_)?;
    let points = points.as_slice()?;
    let mut progress_error: Option<PyErr> = None;
    let mut report = |p: &Progress| {
        if let (Some(cb), None) = (progress, &progress_error) {
            if let Err(e) = cb.call1((p.evaluations, p.planned, p.point, p.points)) {
                progress_error = Some(e);
            }
        }
    };
    let result = match f.cast::<PyLoaded>() {
        Ok(loaded) => {
            let loaded = loaded.get();
            loaded.check_sizes(n, m)?;
            let mut g = SharedLoaded(&loaded.inner);
            trace_flat(&mut g, n, m, points, &o, &mut report).map_err(to_py)
        }
        Err(_) => {
            if o.threads > 1 {
                return Err(invalid(format!(
                    "threads = {}: a Python function runs one call at a time under the GIL; use \
                     processes = {} (forked workers), or a Loaded routine",
                    o.threads, o.threads
                )));
            }
            let mut g = Callable::new(f, m, single)?;
            let r = trace_flat(&mut g, n, m, points, &o, &mut report);
            match r {
                Ok(p) => g.take_stop().map_or(Ok(p), Err),
                Err(e) => Err(g.error_for(e)),
            }
        }
    };
    if let Some(e) = progress_error {
        return Err(e);
    }
    result.map(|inner| PyPattern { inner })
}
