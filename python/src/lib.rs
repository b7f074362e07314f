//! `nanprop._nanprop`: the Python extension module under the `nanprop` package.
//!
//! Conversions only, as the C ABI is: every decision (options and their checks, planners,
//! coloring, steps) lives in the `nanprop` crate. The pure-Python layer (`nanprop/__init__.py`)
//! adds what Python users expect around it: keyword arguments with docstrings, `m` learned from
//! `f(x0)`, a progress bar, SciPy matrices.
//!
//! | file | what |
//! |---|---|
//! | `errors.rs` | the exception classes and the mapping from the library's error kinds |
//! | `callable.rs` | a Python callable as a black box: exceptions kept, outputs converted |
//! | `pattern.rs` | the `Pattern` class |
//! | `trace.rs` | `trace`, its keyword options converted into `TraceOptions` |
//! | `jacobian.rs` | `coloring` and the `JacobianPlan` class |
//! | `hessian.rs` | `hessian_coloring`, the `HessianPlan` class, smoothed Jacobians |
//! | `loaded.rs` | `Loaded`: a routine in a shared library, called without Python in the loop |

mod callable;
mod errors;
mod hessian;
mod jacobian;
mod loaded;
mod pattern;
mod trace;

use pyo3::prelude::*;

/// The compiled part of nanprop. Use the `nanprop` package, which wraps it.
#[pymodule]
fn _nanprop(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<pattern::PyPattern>()?;
    m.add_class::<jacobian::PyJacobianPlan>()?;
    m.add_class::<hessian::PyHessianPlan>()?;
    m.add_class::<loaded::PyLoaded>()?;
    m.add_function(wrap_pyfunction!(trace::trace, m)?)?;
    m.add_function(wrap_pyfunction!(jacobian::coloring, m)?)?;
    m.add_function(wrap_pyfunction!(hessian::hessian_coloring, m)?)?;
    m.add_function(wrap_pyfunction!(hessian::smoothed_jacobian_values, m)?)?;
    m.add("__version__", nanprop::VERSION)?;
    Ok(())
}
