//! The C ABI. `build.rs` generates `include/nanprop.h` from these files with cbindgen, one
//! section per file in the order a user reads them (as zstd.h and sqlite3.h are ordered):
//!
//! | file | header section |
//! |---|---|
//! | [`status`] | version, status codes, the last error |
//! | [`blackbox`], [`options`], [`trace`], [`pattern`] | tracing: the black box, options, `nanprop_trace`, the pattern |
//! | [`coloring`], [`jacobian`] | sparse Jacobians: coloring, one Jacobian, plans |
//! | [`hessian`], [`smoothing`] | sparse Hessians (star coloring), smoothed Jacobians |
//! | [`session`], [`loaded`], [`flags`] | advanced: batch sessions, loaded libraries, flag inputs |
//!
//! Every comment on a public item here is the C documentation. The files only convert: C
//! arguments into the Rust API's types, one Rust call, results back. Every decision (which
//! driver, which points, what is checked) lives in the Rust API.
//!
//! Rules every entry point keeps (`abi.rs`): pointers are checked before use; a failure returns
//! a status other than `NANPROP_OK` and leaves a message for `nanprop_last_error` (per thread);
//! no Rust panic crosses the boundary (it becomes `NANPROP_ERR_INTERNAL`); outputs are written
//! only on success, except `*out`, which is set to NULL first. Accessors that return a count
//! return 0 for a NULL handle and leave the message too.
//!
//! Safety contract of every `unsafe` function here: each pointer is NULL or valid for the number
//! of elements its C documentation states, and a handle comes from this library and is not yet
//! freed. (The `# Safety` sections clippy asks for would repeat that in every header comment.)
#![allow(non_camel_case_types, clippy::missing_safety_doc)]

mod abi;
pub mod blackbox;
pub mod coloring;
pub mod flags;
pub mod hessian;
pub mod jacobian;
pub mod loaded;
pub mod options;
pub mod pattern;
pub mod session;
pub mod smoothing;
pub mod status;
pub mod trace;

pub use blackbox::*;
pub use coloring::*;
pub use flags::*;
pub use hessian::*;
pub use jacobian::*;
pub use loaded::*;
pub use options::*;
pub use pattern::*;
pub use session::*;
pub use smoothing::*;
pub use status::*;
pub use trace::*;
