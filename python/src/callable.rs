//! A Python callable as a black box.
//!
//! f gets a fresh 1-D float64 array (a copy of x: keeping or changing it harms nothing) and
//! returns anything numpy turns into m floats. An array f did not keep (nothing holds it after
//! the call: no name, no view, no buffer) is filled again for the next call instead of a new
//! one being made: at n = 10^6 a new array costs its 8 MB of fresh pages every call.
//!
//! What f returns is held until its next call has returned (unless it is the argument or a view
//! of it, which the next call's filling needs alone), and let go then. Let go as soon as it was
//! read, f's result freed the top of glibc's heap, and with it the temporaries f had freed
//! below it: glibc gave that memory back to the system (`brk`), and the next call faulted the
//! pages of its temporaries in again. Held, the next call's temporaries reuse them. A NumPy
//! tridiagonal at n = 10^6 (`bench/python_peers.py`, 50 evaluations): 157035 page faults
//! against 61947 (one run each), f's time 0.66 -> 0.55 s and the trace's 1.40 -> 1.20 s
//! (medians of six alternated runs), and 1.22 -> 1.00 s with JAX imported in the process, as
//! the peers' runs have it; the 2-D Bratu residual 3.71 -> 3.43 s (five runs); random 5 per
//! row at n = 10^5 unchanged (three). The cost: one result of m values alive between calls.
//!
//! Its exceptions are kept, not printed:
//!
//! * an `Exception` makes the evaluation fail with a nonzero code, as a C black box's error
//!   code would. On a NaN probe the trace reads that as the function refusing NaN and works
//!   around it (it splits the probe and finds what the refusing input reaches by finite steps,
//!   `nanprop::trace::split`): code that raises on NaN (`int(nan)`, an input check) is traced.
//!   On any other evaluation (x0, a verification step, a Jacobian) the call stops with an
//!   error, and the caller gets the exception itself, with its traceback, and the library's
//!   sentence as a note;
//! * anything else (`KeyboardInterrupt`, `SystemExit`) and a broken contract (not m values,
//!   values that are not numbers) stop the trace: no further call reaches f, and that exception
//!   is raised.

use nanprop::driver::single::{narrow, widen};
use nanprop::driver::{BlackBox, Precision};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

/// The code an evaluation fails with when f raised.
const RAISED: i32 = -1;

/// A Python callable from R^n to R^m.
pub struct Callable<'py> {
    f: Bound<'py, PyAny>,
    ascontiguousarray: Bound<'py, PyAny>,
    m: usize,
    /// The last exception f raised (or the contract breach), if any.
    error: Option<PyErr>,
    /// Set by an exception that must end the work: f is not called again.
    stopped: bool,
    /// f takes and returns float32 (x rounded to float, NaN payloads kept: see
    /// `nanprop::driver::single`).
    single: bool,
    /// The array of the last call, when f kept no reference to it: the next call's argument.
    spare: Option<Bound<'py, PyAny>>,
    /// What f returned last, held until its next call has returned (module docs).
    previous: Option<Bound<'py, PyAny>>,
}

impl<'py> Callable<'py> {
    /// Wraps `f`, which must return m values; `single`: f works in float32.
    pub fn new(f: &Bound<'py, PyAny>, m: usize, single: bool) -> PyResult<Self> {
        let py = f.py();
        if !f.is_callable() {
            return Err(crate::errors::invalid(format!(
                "f must be callable (got {})",
                f.get_type().name()?
            )));
        }
        Ok(Callable {
            f: f.clone(),
            ascontiguousarray: py.import("numpy")?.getattr("ascontiguousarray")?,
            m,
            error: None,
            stopped: false,
            single,
            spare: None,
            previous: None,
        })
    }

    /// The error to raise for a library error: the exception f raised, when the library's error
    /// is that f failed (with the library's sentence as a note), else the library's own.
    pub fn error_for(&mut self, e: nanprop::Error) -> PyErr {
        let py = self.f.py();
        match self.error.take() {
            Some(raised) if self.stopped => raised,
            Some(raised) if e.kind == nanprop::ErrorKind::BlackBox => {
                // "the black box returned -1 on the baseline evaluation at x0": say where.
                let prefix = format!("the black box returned {RAISED} ");
                let place = e.message.strip_prefix(&prefix).unwrap_or(&e.message);
                let note = format!("nanprop: f raised this {place}");
                // Best effort: notes exist from Python 3.11 on.
                let _ = raised.value(py).call_method1("add_note", (note,));
                raised
            }
            _ => crate::errors::to_py(e),
        }
    }

    /// The exception that stopped the work, if one did (it may have stopped a trace that the
    /// library then completed from what it had: the caller must still see it).
    pub fn take_stop(&mut self) -> Option<PyErr> {
        if self.stopped {
            self.error.take()
        } else {
            None
        }
    }

    fn call(&mut self, x: &[f64], y: &mut [f64]) -> Result<(), (PyErr, bool)> {
        let py = self.f.py();
        let raised = |e: PyErr| {
            let fatal = !e.is_instance_of::<PyException>(py);
            (e, fatal)
        };
        let arg = match self.single {
            true => self.argument(x, narrow),
            false => self.argument(x, |v| v),
        };
        let r = self.f.call1((arg.clone(),)).map_err(raised)?;
        let read = match self.single {
            true => self.read(&r, y, widen),
            false => self.read(&r, y, |v: f64| v),
        };
        // Held until the next call has returned (module docs); the one before goes now.
        self.previous = Some(r);
        // SAFETY: `arg` is a live object (we hold a reference); reading its count under the GIL.
        let alone = |arg: &Bound<'py, PyAny>| unsafe { pyo3::ffi::Py_REFCNT(arg.as_ptr()) } == 1;
        if !alone(&arg) {
            // A result that is the argument or a view of it holds it too: let go of it now.
            self.previous = None;
        }
        // Ours alone again (f kept no name, view or buffer of it): fill it for the next call.
        if alone(&arg) {
            self.spare = Some(arg);
        }
        read
    }

    /// The array f gets for `x` (converted to f's type T): the spare one filled, when it is
    /// still a writeable contiguous 1-D array of n T's (f may have changed its flags, shape or
    /// type in place); else a new one.
    fn argument<T: numpy::Element + Copy>(
        &mut self,
        x: &[f64],
        convert: impl Fn(f64) -> T,
    ) -> Bound<'py, PyAny> {
        if let Some(spare) = self.spare.take() {
            let filled = spare.cast::<PyArray1<T>>().ok().is_some_and(|a| {
                let Ok(mut w) = a.try_readwrite() else {
                    return false;
                };
                match w.as_slice_mut() {
                    Ok(s) if s.len() == x.len() => {
                        for (o, &v) in s.iter_mut().zip(x) {
                            *o = convert(v);
                        }
                        true
                    }
                    _ => false,
                }
            });
            if filled {
                return spare;
            }
        }
        let values: Vec<T> = x.iter().map(|&v| convert(v)).collect();
        PyArray1::from_vec(self.f.py(), values).into_any()
    }

    /// Reads f's result `r` (m numbers, converted to f's own type T) into y.
    fn read<T: numpy::Element + Copy>(
        &self,
        r: &Bound<'py, PyAny>,
        y: &mut [f64],
        to_f64: impl Fn(T) -> f64,
    ) -> Result<(), (PyErr, bool)> {
        let fatal = |e: PyErr| (e, true);
        let dtype = if self.single { "float32" } else { "float64" };
        let a = self.ascontiguousarray.call1((r, dtype)).map_err(|e| {
            let msg = format!("f returned a value numpy cannot turn into floats: {e}");
            fatal(PyValueError::new_err(msg))
        })?;
        let a = a.cast_into::<PyArray1<T>>().map_err(|_| {
            let shape = r
                .getattr("shape")
                .map(|s| s.to_string())
                .unwrap_or_else(|_| "?".into());
            let msg = format!(
                "f must return a 1-D array of m = {} values; it returned shape {shape}",
                self.m
            );
            fatal(PyValueError::new_err(msg))
        })?;
        let a = a.readonly();
        let values = a.as_slice().map_err(|e| fatal(e.into()))?;
        if values.len() != self.m {
            let msg = format!(
                "f returned {} values, expected m = {}",
                values.len(),
                self.m
            );
            return Err(fatal(PyValueError::new_err(msg)));
        }
        for (o, &v) in y.iter_mut().zip(values) {
            *o = to_f64(v);
        }
        Ok(())
    }
}

impl BlackBox for Callable<'_> {
    fn precision(&self) -> Precision {
        if self.single {
            Precision::Single
        } else {
            Precision::Double
        }
    }

    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> Result<(), i32> {
        if self.stopped {
            return Err(RAISED);
        }
        match self.call(x, y) {
            Ok(()) => Ok(()),
            Err((e, fatal)) => {
                self.error = Some(e);
                self.stopped |= fatal;
                Err(RAISED)
            }
        }
    }

    /// f gets a numpy array of its own, filled from `x`: `x` itself cannot change.
    fn may_write_input(&self) -> bool {
        false
    }

    /// A successful call copies f's result, m values (`read` checks the count), into `y`.
    fn writes_every_output(&self) -> bool {
        true
    }
}

/// Runs `run` with `f` as a black box of n inputs and m outputs: a `Loaded` routine, or a
/// Python callable (whose exceptions come back as themselves; `single`: it works in float32).
pub(crate) fn with_black_box<T>(
    f: &Bound<'_, PyAny>,
    n: usize,
    m: usize,
    single: bool,
    run: impl FnOnce(&mut dyn nanprop::driver::BlackBox) -> nanprop::Result<T>,
) -> PyResult<T> {
    match f.cast::<crate::loaded::PyLoaded>() {
        Ok(loaded) => {
            let loaded = loaded.get();
            loaded.check_sizes(n, m)?;
            run(&mut nanprop::loader::SharedLoaded(&loaded.inner)).map_err(crate::errors::to_py)
        }
        Err(_) => {
            let mut g = Callable::new(f, m, single)?;
            run(&mut g).map_err(|e| g.error_for(e))
        }
    }
}
