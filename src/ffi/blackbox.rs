//! The black box as C sees it: a function pointer and its `user_data`.

use crate::driver::{BlackBox, BlackBox32, SyncBlackBox};
use std::ffi::{c_int, c_void};

/// The black box: evaluate y = f(x), x of n values, y of m values. Return 0 on success; any
/// other value stops the trace with NANPROP_ERR_BLACKBOX. It must write all m outputs, nothing
/// past y[m-1] (nanprop watches 16 values after it), and must not change x.
pub type nanprop_blackbox = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        n: usize,
        x: *const f64,
        m: usize,
        y: *mut f64,
    ) -> c_int,
>;

pub(crate) type CFn =
    unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64) -> c_int;

/// A caller's black box.
pub(crate) struct CBlackBox {
    pub(crate) f: CFn,
    pub(crate) user_data: *mut c_void,
}

// SAFETY: the C contract: a caller who sets `threads` above 1 declares f (with its user_data)
// callable from several threads at once; the library shares it only then (BlackBox::shared is
// consulted only for threads > 1).
unsafe impl Sync for CBlackBox {}

impl SyncBlackBox for CBlackBox {
    fn eval(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        // SAFETY: the caller's function, with buffers of the sizes it was promised.
        let r = unsafe { (self.f)(self.user_data, x.len(), x.as_ptr(), y.len(), y.as_mut_ptr()) };
        if r == 0 {
            Ok(())
        } else {
            Err(r)
        }
    }
}

impl BlackBox for CBlackBox {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        SyncBlackBox::eval(self, x, y)
    }
    fn shared(&self) -> Option<&dyn SyncBlackBox> {
        Some(self)
    }
}

/// The caller's black box from a `nanprop_blackbox` (NULL: an error naming `f`).
pub(crate) fn c_black_box(
    f: nanprop_blackbox,
    user_data: *mut c_void,
) -> crate::error::Result<CBlackBox> {
    let f = f.ok_or_else(|| crate::error::Error::invalid("f is NULL"))?;
    Ok(CBlackBox { f, user_data })
}

/// The black box in single precision (a REAL*4 or `float` code): as `nanprop_blackbox`, with
/// `float` arguments. Traced by `nanprop_trace_f32` (tags survive the conversions, see the
/// README), differentiated with `float`-sized steps by `nanprop_jacobian_f32`.
pub type nanprop_blackbox_f32 = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        n: usize,
        x: *const f32,
        m: usize,
        y: *mut f32,
    ) -> c_int,
>;

/// A caller's single-precision black box.
pub(crate) struct CBlackBox32 {
    f: unsafe extern "C" fn(*mut c_void, usize, *const f32, usize, *mut f32) -> c_int,
    user_data: *mut c_void,
}

impl BlackBox32 for CBlackBox32 {
    fn eval(&mut self, x: &[f32], y: &mut [f32]) -> std::result::Result<(), i32> {
        // SAFETY: the caller's function, with buffers of the sizes it was promised.
        let r = unsafe { (self.f)(self.user_data, x.len(), x.as_ptr(), y.len(), y.as_mut_ptr()) };
        if r == 0 {
            Ok(())
        } else {
            Err(r)
        }
    }
}

/// The caller's single-precision black box (NULL: an error naming `f`).
pub(crate) fn c_black_box_f32(
    f: nanprop_blackbox_f32,
    user_data: *mut c_void,
) -> crate::error::Result<CBlackBox32> {
    let f = f.ok_or_else(|| crate::error::Error::invalid("f is NULL"))?;
    Ok(CBlackBox32 { f, user_data })
}
