//! The rules every entry point keeps, written once: argument checks, the per-thread error
//! message, panics caught at the boundary, handles handed out and freed, option structs read
//! by size and version, copies of index arrays into `size_t`.

use super::status::{nanprop_status, set_last_error};
use crate::error::{Error, ErrorKind, Result};
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn status_of(kind: ErrorKind) -> nanprop_status {
    match kind {
        ErrorKind::InvalidArgument => nanprop_status::NANPROP_ERR_INVALID_ARGUMENT,
        ErrorKind::BlackBox => nanprop_status::NANPROP_ERR_BLACKBOX,
        ErrorKind::BaselineNotFinite => nanprop_status::NANPROP_ERR_BASELINE_NOT_FINITE,
        ErrorKind::OutOfMemory => nanprop_status::NANPROP_ERR_OUT_OF_MEMORY,
        // No C entry point traces through files: a waiting trace cannot reach C.
        ErrorKind::Internal | ErrorKind::Waiting => nanprop_status::NANPROP_ERR_INTERNAL,
    }
}

/// Runs `body`, turning errors and panics into a status and the thread's last error message.
pub(crate) fn guarded(function: &str, body: impl FnOnce() -> Result<()>) -> nanprop_status {
    // Traps masked for all of nanprop's work; the caller's environment back on return.
    let _fp = crate::fpenv::FpGuard::enter();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => nanprop_status::NANPROP_OK,
        Ok(Err(e)) => {
            set_last_error(&format!("{function}: {}", e.message));
            status_of(e.kind)
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("{function}: internal error: {what}"));
            nanprop_status::NANPROP_ERR_INTERNAL
        }
    }
}

/// The value of a count accessor (which returns a size, not a status): 0 on error, with the
/// message set for `nanprop_last_error`. Panics are caught as in [`guarded`].
pub(crate) fn count(function: &str, body: impl FnOnce() -> Result<usize>) -> usize {
    let mut value = 0;
    guarded(function, || {
        value = body()?;
        Ok(())
    });
    value
}

pub(crate) fn not_null<T>(p: *const T, name: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::invalid(format!("{name} is NULL")))
    } else {
        Ok(())
    }
}

/// A shared reference to a live handle. `what` names it in the error for NULL.
///
/// # Safety
/// `p` is NULL or a live handle of this type from this library.
pub(crate) unsafe fn handle<'a, T>(p: *const T, what: &str) -> Result<&'a T> {
    not_null(p, what)?;
    // SAFETY: non-NULL, and by contract a live handle.
    Ok(unsafe { &*p })
}

/// A mutable reference to a live handle used by one thread.
///
/// # Safety
/// As [`handle`], and no other reference to it is in use.
pub(crate) unsafe fn handle_mut<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    not_null(p, what)?;
    // SAFETY: non-NULL, and by contract a live handle used by one thread.
    Ok(unsafe { &mut *p })
}

/// Frees a box this library handed out (NULL is a no-op); a panic in a destructor stays here.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw` in this library and is freed once.
pub(crate) unsafe fn free_boxed<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: by this function's contract.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(p) })));
    }
}

/// Checks an output handle and sets it to NULL, so that it stays NULL on failure.
pub(crate) fn reset_out<T>(out: *mut *mut T) -> Result<()> {
    not_null(out, "out")?;
    // SAFETY: checked non-NULL; the caller's slot for a handle.
    unsafe { *out = std::ptr::null_mut() };
    Ok(())
}

/// Hands `value` to the caller through `out` (checked by `reset_out`).
pub(crate) fn give<T>(out: *mut *mut T, value: T) {
    // SAFETY: `out` was checked non-NULL by reset_out in the same call.
    unsafe { *out = Box::into_raw(Box::new(value)) };
}

/// Writes `value` through `p` unless it is NULL (optional outputs such as evaluation counts).
pub(crate) fn write_optional<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-NULL; by contract a valid place for a T.
        unsafe { *p = value };
    }
}

/// The caller's array of `len` values (`p` may be NULL when `len` is 0).
///
/// # Safety
/// `p` is NULL or valid for `len` reads.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    not_null(p, name)?;
    // SAFETY: non-NULL; by contract `len` values.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The caller's writable array of `len` values (`p` may be NULL when `len` is 0).
///
/// # Safety
/// `p` is NULL or valid for `len` writes, not aliased.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, len: usize, name: &str) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    not_null(p, name)?;
    // SAFETY: non-NULL; by contract `len` values.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// Copies indices into the caller's `size_t` array of the same length.
///
/// # Safety
/// As [`slice_mut`] for `src.len()` values.
pub(crate) unsafe fn copy_indices<T: Copy + Into<u64>>(
    dst: *mut usize,
    src: &[T],
    name: &str,
) -> Result<()> {
    // SAFETY: by this function's contract.
    let dst = unsafe { slice_mut(dst, src.len(), name)? };
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = s.into() as usize;
    }
    Ok(())
}

/// A path from a C string (NULL: None).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn path(p: *const c_char) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, NUL-terminated by contract.
    let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// A UTF-8 string from a C string (NULL: None). Errors: not UTF-8 (`name` says which).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn text(p: *const c_char, name: &str) -> Result<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, NUL-terminated by contract.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    s.to_str()
        .map(|s| Some(s.to_string()))
        .map_err(|_| Error::invalid(format!("{name} is not UTF-8")))
}

/// An options struct of this ABI: `struct_size` (usize) first, then `version` (u32).
pub(crate) trait Versioned: Copy {
    const NAME: &'static str;
    fn defaults() -> Self;
    /// The struct's size in `version` (None for an unknown version).
    fn size_of_version(version: u32) -> Option<usize>;
}

/// Reads a caller's options struct (NULL: the defaults). A struct of an older version (its
/// own `struct_size` and `version`) is read over the defaults: fields it lacks keep them.
///
/// # Safety
/// `ptr` is NULL or points to at least `struct_size` readable bytes, as its first field says.
pub(crate) unsafe fn read_versioned<T: Versioned>(ptr: *const T) -> Result<T> {
    if ptr.is_null() {
        return Ok(T::defaults());
    }
    let name = T::NAME;
    // SAFETY: non-NULL; every options struct starts with its size as a usize, then a u32.
    let (size, version) = unsafe {
        (
            (ptr as *const usize).read_unaligned(),
            (ptr as *const u8)
                .add(std::mem::size_of::<usize>())
                .cast::<u32>()
                .read_unaligned(),
        )
    };
    let ours = std::mem::size_of::<T>();
    if size > ours {
        return Err(Error::invalid(format!(
            "{name}.struct_size = {size}: these options come from a newer nanprop than this library ({}, struct size {ours})",
            env!("CARGO_PKG_VERSION")
        )));
    }
    match T::size_of_version(version) {
        None => Err(Error::invalid(format!(
            "{name}.version = {version} is not supported"
        ))),
        Some(expected) if expected != size => Err(Error::invalid(format!(
            "{name}.struct_size = {size} does not match version {version} (size {expected}); initialize it with {name}_init"
        ))),
        Some(_) => {
            let mut o = T::defaults();
            // SAFETY: the caller's struct holds `size` bytes, no more than ours; the fields it
            // has are at the same offsets in every version (fields are only ever appended).
            unsafe {
                std::ptr::copy_nonoverlapping(ptr as *const u8, &mut o as *mut T as *mut u8, size)
            };
            Ok(o)
        }
    }
}
