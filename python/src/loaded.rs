//! `Loaded`: a routine in a shared library (a Fortran subroutine, a C function), traced and
//! differentiated by the library directly: no Python runs in the evaluation loop.

use crate::errors::{invalid, to_py};
use nanprop::loader::{Convention, IntKind, LoadedBlackBox};
use nanprop::Precision;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// A function in a shared library, usable as f everywhere nanprop takes one (`trace`,
/// `jacobian`, `JacobianPlan.evaluate`) and callable from Python (`g(x)` returns y).
///
/// `Loaded(path, symbol, convention="fortran", n=..., m=..., integer=4)`:
///
/// * `path`: the library (a file, or a name the system's loader finds);
/// * `symbol`: the routine's name as written in the source; the names compilers give it
///   (`beam_`, `BEAM`, ...) are tried too;
/// * `convention`: `"fortran"` `subroutine f(n, x, m, y)`; `"fortran-square"`
///   `subroutine f(n, x, y)` with m = n; `"minpack-hybrd"` `subroutine fcn(n, x, fvec, iflag)`;
///   `"minpack-lmdif"` `subroutine fcn(m, n, x, fvec, iflag)`; `"c"` `void f(const double *x,
///   double *y)`; `"blackbox"` `int f(void *user_data, size_t n, const double *x, size_t m,
///   double *y)`;
/// * `integer`: the size of the routine's default INTEGER in bytes, 4 (gfortran's default) or
///   8 (`-fdefault-integer-8`);
/// * `real`: the size of its REAL arguments, 8 (double precision) or 4 (REAL*4: nanprop
///   converts at the call and sizes Jacobian steps for float).
///
/// A routine called with the wrong convention reads or writes the wrong memory: trace it first
/// with `isolate=True`, which turns a crash into an error.
#[pyclass(frozen, module = "nanprop", name = "Loaded")]
pub struct PyLoaded {
    pub inner: LoadedBlackBox,
}

impl PyLoaded {
    /// Errors unless the routine has n inputs and m outputs.
    pub fn check_sizes(&self, n: usize, m: usize) -> PyResult<()> {
        let (ln, lm) = (self.inner.n(), self.inner.m());
        if (n, m) != (ln, lm) {
            return Err(invalid(format!(
                "{} was loaded with n = {ln}, m = {lm}; called with n = {n}, m = {m}",
                self.inner.symbol()
            )));
        }
        Ok(())
    }
}

#[pymethods]
impl PyLoaded {
    #[new]
    #[pyo3(signature = (path, symbol, convention="fortran", *, n, m, integer=4, real=8, open_in_worker=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: std::path::PathBuf,
        symbol: &str,
        convention: &str,
        n: usize,
        m: usize,
        integer: usize,
        real: usize,
        open_in_worker: bool,
    ) -> PyResult<Self> {
        let convention = Convention::parse(convention).ok_or_else(|| {
            invalid(format!(
                "unknown convention {convention:?} (fortran, fortran-square, minpack-hybrd, \
                 minpack-lmdif, c, blackbox)"
            ))
        })?;
        let int_kind = match integer {
            4 => IntKind::I4,
            8 => IntKind::I8,
            _ => return Err(invalid(format!("integer = {integer} must be 4 or 8"))),
        };
        let real = match real {
            8 => Precision::Double,
            4 => Precision::Single,
            _ => return Err(invalid(format!("real = {real} must be 4 or 8"))),
        };
        let open = match open_in_worker {
            true => LoadedBlackBox::open_in_worker,
            false => LoadedBlackBox::open,
        };
        let inner = open(&path, symbol, convention, n, m, int_kind, real).map_err(to_py)?;
        Ok(PyLoaded { inner })
    }

    /// Inputs.
    #[getter]
    fn n(&self) -> usize {
        self.inner.n()
    }

    /// Outputs.
    #[getter]
    fn m(&self) -> usize {
        self.inner.m()
    }

    /// The symbol that resolved (e.g. `beam_`).
    #[getter]
    fn symbol(&self) -> &str {
        self.inner.symbol()
    }

    /// Bytes of the routine's REAL arguments (4 or 8).
    #[getter]
    fn real(&self) -> usize {
        match self.inner.precision() {
            Precision::Double => 8,
            Precision::Single => 4,
        }
    }

    /// The library's path.
    #[getter]
    fn path(&self) -> std::path::PathBuf {
        self.inner.path().to_path_buf()
    }

    /// Calls the routine at x (n values); returns y (m values). A failure (a nonzero code, a
    /// negative MINPACK iflag) raises `BlackBoxError`.
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let x = x.as_slice()?;
        if x.len() != self.inner.n() {
            return Err(invalid(format!(
                "x has {} values, {} takes n = {}",
                x.len(),
                self.inner.symbol(),
                self.inner.n()
            )));
        }
        let mut y = vec![0.0; self.inner.m()];
        self.inner.call(x, &mut y).map_err(|code| {
            crate::errors::BlackBoxError::new_err(format!(
                "{} failed (code {code})",
                self.inner.symbol()
            ))
        })?;
        Ok(PyArray1::from_vec(py, y))
    }

    fn __repr__(&self) -> String {
        format!(
            "<nanprop.Loaded {} from {}, n={}, m={}>",
            self.inner.symbol(),
            self.inner.path().display(),
            self.inner.n(),
            self.inner.m()
        )
    }
}
