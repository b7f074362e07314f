//! Exceptions: `NanpropError` and one subclass per error kind of the library, so that callers
//! can catch all of nanprop's errors at once or one kind. The message is the library's.
//!
//! An exception raised by the caller's own function is not converted: it reaches the caller as
//! itself (see `callable.rs`).

use nanprop::{Error, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    nanprop,
    NanpropError,
    PyException,
    "Base class of the errors nanprop raises; the message says what and where."
);
create_exception!(
    nanprop,
    InvalidArgumentError,
    NanpropError,
    "An argument was out of range, inconsistent or not finite (a NaN in x0, an unknown option \
     value, a pattern of the wrong shape)."
);
create_exception!(
    nanprop,
    BlackBoxError,
    NanpropError,
    "The function failed or broke its contract (a loaded routine returned an error code or \
     crashed under isolation, returned the wrong number of outputs)."
);
create_exception!(
    nanprop,
    BaselineNotFiniteError,
    NanpropError,
    "Outputs were NaN or Inf at x0 (or at x, for a Jacobian) where a finite value was needed."
);
create_exception!(
    nanprop,
    OutOfMemoryError,
    NanpropError,
    "The result would not fit in memory."
);
create_exception!(
    nanprop,
    InternalError,
    NanpropError,
    "A bug in nanprop: please report it with the message."
);
create_exception!(
    nanprop,
    WaitingError,
    NanpropError,
    "Evaluations handed out as files have no outputs yet."
);

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NanpropError", py.get_type::<NanpropError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("BlackBoxError", py.get_type::<BlackBoxError>())?;
    m.add(
        "BaselineNotFiniteError",
        py.get_type::<BaselineNotFiniteError>(),
    )?;
    m.add("OutOfMemoryError", py.get_type::<OutOfMemoryError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("WaitingError", py.get_type::<WaitingError>())?;
    Ok(())
}

/// The exception of a library error.
pub fn to_py(e: Error) -> PyErr {
    let message = e.message;
    match e.kind {
        ErrorKind::InvalidArgument => InvalidArgumentError::new_err(message),
        ErrorKind::BlackBox => BlackBoxError::new_err(message),
        ErrorKind::BaselineNotFinite => BaselineNotFiniteError::new_err(message),
        ErrorKind::OutOfMemory => OutOfMemoryError::new_err(message),
        ErrorKind::Internal => InternalError::new_err(message),
        ErrorKind::Waiting => WaitingError::new_err(message),
    }
}

/// An [`InvalidArgumentError`] with `message`.
pub fn invalid(message: impl Into<String>) -> PyErr {
    InvalidArgumentError::new_err(message.into())
}
