//! Errors: a kind that maps one-to-one onto the C ABI's status codes, and a message for people.

use std::fmt;

/// What went wrong, in the categories the C ABI reports as `nanprop_status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// An argument was NULL, out of range, inconsistent, or not finite.
    InvalidArgument,
    /// The black box returned a nonzero status, or broke its contract (did not write an output,
    /// wrote past `y[m-1]`, changed its input).
    BlackBox,
    /// Outputs were NaN or Inf at `x0` and the options asked for that to be an error.
    BaselineNotFinite,
    /// An allocation failed (the result would not fit in memory).
    OutOfMemory,
    /// A bug in nanprop (a broken invariant or a caught panic).
    Internal,
    /// The trace is not complete: evaluations it handed out (as files, to a batch scheduler)
    /// have no outputs yet. Run it again when they do; its journal keeps what was done.
    Waiting,
}

/// An error with its kind and a message that names the argument, probe or output involved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The category.
    pub kind: ErrorKind,
    /// A sentence for people.
    pub message: String,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Shorthand for [`ErrorKind::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// Shorthand for [`ErrorKind::OutOfMemory`], naming what was being allocated.
    pub fn out_of_memory(what: &str, count: usize) -> Self {
        Error::new(
            ErrorKind::OutOfMemory,
            format!("out of memory allocating {what} ({count} elements)"),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Reserves room for `extra` more elements or reports [`ErrorKind::OutOfMemory`].
pub(crate) fn reserve<T>(v: &mut Vec<T>, extra: usize, what: &str) -> Result<()> {
    v.try_reserve(extra)
        .map_err(|_| Error::out_of_memory(what, v.len().saturating_add(extra)))
}

/// Reserves room for exactly `extra` more elements (no amortized growth: for large arrays whose
/// final length is known, where doubling would leave up to as much unused) or reports
/// [`ErrorKind::OutOfMemory`]. Nothing happens when the room is there already.
pub(crate) fn reserve_exact<T>(v: &mut Vec<T>, extra: usize, what: &str) -> Result<()> {
    v.try_reserve_exact(extra)
        .map_err(|_| Error::out_of_memory(what, v.len().saturating_add(extra)))
}

/// `len` copies of `value`, or [`ErrorKind::OutOfMemory`] naming `what`.
pub(crate) fn filled<T: Clone>(value: T, len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// A copy of `s`, or [`ErrorKind::OutOfMemory`] naming `what`.
pub(crate) fn copied<T: Clone>(s: &[T], what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, s.len(), what)?;
    v.extend_from_slice(s);
    Ok(v)
}

/// `len` cleared bits, or [`ErrorKind::OutOfMemory`] naming `what`.
pub(crate) fn zero_bits(len: usize, what: &str) -> Result<bitvec::vec::BitVec> {
    let words = filled(0usize, len.div_ceil(usize::BITS as usize), what)?;
    let mut bits = bitvec::vec::BitVec::from_vec(words);
    bits.truncate(len);
    Ok(bits)
}

/// A copy of `bits`, or [`ErrorKind::OutOfMemory`] naming `what`.
pub(crate) fn copied_bits(bits: &bitvec::vec::BitVec, what: &str) -> Result<bitvec::vec::BitVec> {
    let mut copy = zero_bits(bits.len(), what)?;
    copy.copy_from_bitslice(bits);
    Ok(copy)
}

/// Pushes `x` onto `v`, growing it (amortized, as `push` does) or reporting
/// [`ErrorKind::OutOfMemory`] naming `what`.
#[inline]
pub(crate) fn push<T>(v: &mut Vec<T>, x: T, what: &str) -> Result<()> {
    if v.len() == v.capacity() {
        reserve(v, 1, what)?;
    }
    v.push(x);
    Ok(())
}

/// Collects `items` into a vector, or reports [`ErrorKind::OutOfMemory`] naming `what`.
pub(crate) fn collect<T>(items: impl IntoIterator<Item = T>, what: &str) -> Result<Vec<T>> {
    let items = items.into_iter();
    let mut v = Vec::new();
    reserve(&mut v, items.size_hint().0, what)?;
    for x in items {
        push(&mut v, x, what)?;
    }
    Ok(v)
}
