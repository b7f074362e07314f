//! Loader mode: a black box in a shared library, found by symbol name and called with the
//! convention of the code that built it.
//!
//! nanprop's users hold compiled Fortran and C libraries they cannot rebuild. A
//! [`LoadedBlackBox`] opens such a library by path (with libloading), resolves the function by
//! name, and implements [`BlackBox`] by calling it with the right convention, so tagged NaNs flow
//! through the compiled legacy code and are decoded from its outputs.
//!
//! # Names
//!
//! A Fortran routine `BEAM` is exported as `beam_` by gfortran, `beam__` by g77/f2c when the
//! name holds an underscore, and `BEAM` by some vendor compilers. The names tried, in order: the
//! name as given, lowercase with one trailing underscore, lowercase with two (only for names
//! holding an underscore), uppercase. When none resolves the error lists every name tried.
//!
//! # Conventions ([`Convention`])
//!
//! | convention | signature |
//! |---|---|
//! | `C` | `void f(const double *x, double *y)` (n and m known to the caller) |
//! | `Blackbox` | `int f(void *user_data, size_t n, const double *x, size_t m, double *y)` |
//! | `Fortran` | `subroutine f(n, x, m, y)`: all by reference |
//! | `FortranSquare` | `subroutine f(n, x, y)` (m = n), the common residual form |
//! | `MinpackHybrd` | `subroutine fcn(n, x, fvec, iflag)` |
//! | `MinpackLmdif` | `subroutine fcn(m, n, x, fvec, iflag)` |
//!
//! Fortran integers are 4 bytes (default INTEGER) or 8 (`-fdefault-integer-8`): [`IntKind`].
//! MINPACK routines get `iflag = 1` and fail when they set it negative.
//!
//! # Safety
//!
//! Calling a foreign function through a symbol is only as safe as the promise that the symbol
//! has the stated signature: nanprop cannot check it. A wrong convention is undefined behaviour
//! (typically a crash), as in any C program.

use crate::driver::single::Single;
use crate::driver::{BlackBox, Failure, SyncBlackBox};
use crate::error::{Error, ErrorKind, Result};
use crate::precision::Precision;
use crate::probe::BASELINE_WORDS;
use crate::trace::failure::NOT_RUN_WORDS;
use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

mod child;
mod convention;

pub use convention::{candidate_names, Convention, IntKind};

type CFn = unsafe extern "C" fn(*const f64, *mut f64);
type BlackboxFn = unsafe extern "C" fn(*mut c_void, usize, *const f64, usize, *mut f64) -> c_int;
type Fortran4 = unsafe extern "C" fn(*const i32, *const f64, *const i32, *mut f64);
type Fortran8 = unsafe extern "C" fn(*const i64, *const f64, *const i64, *mut f64);
type Square4 = unsafe extern "C" fn(*const i32, *const f64, *mut f64);
type Square8 = unsafe extern "C" fn(*const i64, *const f64, *mut f64);
type Hybrd4 = unsafe extern "C" fn(*const i32, *const f64, *mut f64, *mut i32);
type Hybrd8 = unsafe extern "C" fn(*const i64, *const f64, *mut f64, *mut i64);
type Lmdif4 = unsafe extern "C" fn(*const i32, *const i32, *const f64, *mut f64, *mut i32);
type Lmdif8 = unsafe extern "C" fn(*const i64, *const i64, *const f64, *mut f64, *mut i64);

/// A black box loaded from a shared library. The library stays loaded while this lives.
///
/// Opened with [`LoadedBlackBox::open`], the library is loaded into this process at once.
/// Opened with [`LoadedBlackBox::open_in_worker`], it is loaded only by a process that calls the
/// function: under `isolate` or `processes` those are the forked workers (each worker's
/// spawner loads it once, [`crate::driver::BlackBox::prepare`], and the children that evaluate
/// inherit it), so the library's constructors never run in the caller's process (one that
/// aborts or calls `exit()` is an error, not the end of the caller).
pub struct LoadedBlackBox {
    /// The library and the function's address, once loaded in this process.
    loaded: OnceLock<Loaded>,
    convention: Convention,
    int_kind: IntKind,
    /// REAL*8 (double) or REAL*4 (float) arguments.
    real: Precision,
    n: usize,
    m: usize,
    symbol: String,
    path: PathBuf,
    /// What identifies the function for a journal (see [`LoadedBlackBox::open`]).
    identity: String,
}

/// A library loaded into this process and the function's address in it.
struct Loaded {
    // Field order matters: the function pointer must not outlive the library.
    function: *const c_void,
    _library: libloading::Library,
}

// SAFETY: the library handle and a code pointer, never changed after loading; moving them to
// another thread, or calling through `&self` from several, is as safe as the loaded *function*
// is, which is the caller's declaration: nanprop calls it from one thread at a time unless the
// caller asks for threads (`BlackBox::shared` returns None for a handle; the C ABI declares it
// for callers that set `threads`).
unsafe impl Send for Loaded {}
// SAFETY: as above.
unsafe impl Sync for Loaded {}

/// Loads `path` and resolves `symbol` (see the module docs for the names tried): the library,
/// the name that resolved and the function's address.
fn load(path: &Path, symbol: &str) -> Result<(Loaded, String)> {
    // SAFETY: loading runs the library's initializers; that is what the caller asked for.
    // RTLD_NOW binds every symbol now, so a missing dependency is an error here, not a
    // "symbol lookup error" that ends the process in the middle of a trace.
    let library = unsafe {
        libloading::os::unix::Library::open(
            Some(path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    }
    .map(libloading::Library::from)
    .map_err(|e| match path.exists() {
        true => Error::invalid(format!(
            "{} is not a loadable shared library: {e}",
            path.display()
        )),
        false => Error::invalid(format!(
            "library {} not found: not in the current directory, and the system's library \
             search says: {e}",
            path.display()
        )),
    })?;
    let names = candidate_names(symbol);
    for name in &names {
        // SAFETY: only the address is taken here; the signature it is called with later is
        // the caller's promise (module docs).
        if let Ok(sym) = unsafe { library.get::<unsafe extern "C" fn()>(name.as_bytes()) } {
            let function = *sym as *const c_void;
            let loaded = Loaded {
                function,
                _library: library,
            };
            return Ok((loaded, name.clone()));
        }
    }
    Err(Error::invalid(format!(
        "symbol {symbol} not found in {} (names tried: {})",
        path.display(),
        names.join(", ")
    )))
}

/// What identifies a loaded function for a journal: the library's canonical path, size and
/// modification time (so a rebuilt library is another function), the symbol and how it is
/// called.
fn identity_of(
    path: &Path,
    symbol: &str,
    convention: Convention,
    int_kind: IntKind,
    real: Precision,
) -> String {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (size, modified) = std::fs::metadata(&canonical)
        .map(|md| {
            let t = md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .unwrap_or_default();
            (md.len(), t.as_nanos())
        })
        .unwrap_or_default();
    format!(
        "library {} (size {size}, modified {modified} ns after the epoch), symbol {symbol}, {convention:?} convention, INTEGER {int_kind:?}, {real:?} REAL",
        canonical.display()
    )
}

/// Which file a library name means. A path with a slash is that file (an error if it does not
/// exist). A bare name is a file of that name in the current directory if there is one (opened
/// as `./name`), and otherwise the system's library search (`LD_LIBRARY_PATH`, the cache, the
/// default directories), as `dlopen` does with a bare name; it is never both.
fn resolve(path: &Path) -> Result<PathBuf> {
    let bare = path.components().count() == 1 && !path.to_string_lossy().contains('/');
    if path.exists() {
        return Ok(if bare {
            Path::new(".").join(path)
        } else {
            path.to_path_buf()
        });
    }
    if bare {
        // Not here: the system's search decides, and its message says where it looked.
        return Ok(path.to_path_buf());
    }
    Err(Error::invalid(format!(
        "library {} not found",
        path.display()
    )))
}

impl LoadedBlackBox {
    /// Opens `path`, resolves `symbol` (see the module docs for the names tried) and prepares to
    /// call it with `convention` as f: R^n -> R^m.
    ///
    /// Errors (all [`crate::ErrorKind::InvalidArgument`]): n or m zero, m != n for MINPACK
    /// hybrd, the file does not exist, it is not a loadable shared library (the loader's own
    /// message is included), or no candidate name resolves (every name tried is listed).
    pub fn open(
        path: &Path,
        symbol: &str,
        convention: Convention,
        n: usize,
        m: usize,
        int_kind: IntKind,
        real: Precision,
    ) -> Result<Self> {
        let mut f = Self::unloaded(path, symbol, convention, n, m, int_kind, real)?;
        let (loaded, resolved) = load(&f.path, symbol)?;
        f.finish_open(resolved);
        f.loaded = OnceLock::from(loaded);
        Ok(f)
    }

    /// As [`LoadedBlackBox::open`], without loading the library into this process: a forked
    /// child loads it and resolves the symbol (the same errors are reported from there), and
    /// then every process that calls the function loads it on its first call. Meant for
    /// `isolate` and `processes`, whose workers are those processes: the library's
    /// constructors then never run in the caller's process. Called in this process (a trace
    /// without workers, a Jacobian), the function is loaded here on its first call.
    ///
    /// Errors: as `open`; also [`crate::ErrorKind::BlackBox`] when loading the library ended the
    /// child (a constructor that aborts, crashes or calls `exit()`: the signal or exit status
    /// is named), and [`crate::ErrorKind::Internal`] when no child could be made.
    pub fn open_in_worker(
        path: &Path,
        symbol: &str,
        convention: Convention,
        n: usize,
        m: usize,
        int_kind: IntKind,
        real: Precision,
    ) -> Result<Self> {
        let mut f = Self::unloaded(path, symbol, convention, n, m, int_kind, real)?;
        let resolved = child::try_load(&f.path, symbol)?;
        f.finish_open(resolved);
        Ok(f)
    }

    /// The arguments checked and the file found; nothing loaded yet.
    fn unloaded(
        path: &Path,
        symbol: &str,
        convention: Convention,
        n: usize,
        m: usize,
        int_kind: IntKind,
        real: Precision,
    ) -> Result<Self> {
        if n == 0 || m == 0 {
            return Err(Error::invalid(format!(
                "the sizes of the loaded function are missing (n = {n}, m = {m})"
            )));
        }
        if matches!(
            convention,
            Convention::MinpackHybrd | Convention::FortranSquare
        ) && m != n
        {
            return Err(Error::invalid(format!(
                "{convention:?} functions are square: m = {m} but n = {n}"
            )));
        }
        let limit = match int_kind {
            IntKind::I4 => i32::MAX as usize,
            IntKind::I8 => i64::MAX as usize,
        };
        if n > limit || m > limit {
            return Err(Error::invalid(format!(
                "n = {n} or m = {m} does not fit the loaded code's INTEGER"
            )));
        }
        Ok(LoadedBlackBox {
            loaded: OnceLock::new(),
            identity: String::new(),
            convention,
            int_kind,
            real,
            n,
            m,
            symbol: symbol.to_string(),
            path: resolve(path)?,
        })
    }

    /// Records the name that resolved, and the identity that follows from it.
    fn finish_open(&mut self, resolved: String) {
        self.identity = identity_of(
            &self.path,
            &resolved,
            self.convention,
            self.int_kind,
            self.real,
        );
        self.symbol = resolved;
    }

    /// The function's address, loading the library into this process first if it is not yet
    /// (a handle from [`LoadedBlackBox::open_in_worker`]).
    fn function(&self) -> std::result::Result<*const c_void, Failure> {
        if let Some(l) = self.loaded.get() {
            return Ok(l.function);
        }
        let (loaded, _) = load(&self.path, &self.symbol).map_err(|e| Failure::NotRun(e.message))?;
        // Two threads may both load; the loser's handle is dropped (dlclose of a reference).
        let _ = self.loaded.set(loaded);
        Ok(self.loaded.get().expect("set above").function)
    }

    /// The name that resolved (e.g. `beam_`).
    pub fn symbol(&self) -> &str {
        &self.symbol
    }
    /// The library's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Inputs.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Outputs.
    pub fn m(&self) -> usize {
        self.m
    }
}

impl BlackBox for LoadedBlackBox {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.call(x, y)
    }
    /// Loads the library, if this process has not (a failure is the evaluations' to report).
    fn prepare(&mut self) {
        let _ = self.function();
    }
    fn eval_checked(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), Failure> {
        self.call_checked(x, y)
    }
    fn identity(&self) -> Option<String> {
        Some(self.identity.clone())
    }
    fn precision(&self) -> Precision {
        self.real
    }
}

/// A loaded function declared safe to run on several threads at once, so that
/// [`crate::TraceOptions::threads`] can use it: what a caller who sets `threads` declares (the C
/// ABI and the Python package do so for every loaded function). Identified by its library for
/// journals, as the handle is.
pub struct SharedLoaded<'a>(pub &'a LoadedBlackBox);

impl SyncBlackBox for SharedLoaded<'_> {
    fn eval(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.0.call(x, y)
    }
}

impl BlackBox for SharedLoaded<'_> {
    fn eval(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.0.call(x, y)
    }
    fn prepare(&mut self) {
        let _ = self.0.function();
    }
    fn eval_checked(&mut self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), Failure> {
        self.0.call_checked(x, y)
    }
    fn shared(&self) -> Option<&dyn SyncBlackBox> {
        Some(self)
    }
    fn identity(&self) -> Option<String> {
        BlackBox::identity(self.0)
    }
    fn precision(&self) -> Precision {
        self.0.precision()
    }
}

impl LoadedBlackBox {
    /// Calls the loaded function at `x` (n values) into `y` (m values): through `&self`, so a
    /// handle can be shared (whether the function may run on several threads at once is the
    /// caller's to know). A nonzero code (or a negative MINPACK iflag) is a failure.
    pub fn call(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), i32> {
        self.call_checked(x, y).map_err(|failure| match failure {
            Failure::Returned(code) => code,
            _ => -1,
        })
    }

    /// As [`LoadedBlackBox::call`], with a breach of the contract that a REAL*4 routine's
    /// `float` buffers show (a write past `y[m-1]`, a changed input) reported as such.
    pub fn call_checked(&self, x: &[f64], y: &mut [f64]) -> std::result::Result<(), Failure> {
        let f = self.function()?;
        match self.real {
            Precision::Double => self
                .call_raw(f, x.as_ptr(), y.as_mut_ptr())
                .map_err(Failure::Returned),
            Precision::Single => {
                // REAL*4: converted, and its contract checked, in float buffers made per call
                // (a handle is shared between threads); see crate::driver::single.
                let raw = |x: &[f32], y: &mut [f32]| {
                    self.call_raw(f, x.as_ptr().cast::<f64>(), y.as_mut_ptr().cast::<f64>())
                };
                let mut single =
                    Single::new(raw, self.n, self.m).map_err(|e| Failure::NotRun(e.message))?;
                single.eval_checked(x, y)
            }
        }
    }

    /// The hint for `e`, an error of a trace of this routine, if one applies: the
    /// [`LoadedBlackBox::mismatch_hint`] when the routine failed on its very first call, the
    /// baseline evaluation at x0 (it returned a code, crashed, left an output unwritten...);
    /// none when it could not be run at all there (a worker that died loading the library:
    /// its constructor, not a call) or failed later.
    pub fn hint_for(&self, e: &Error) -> Option<String> {
        let at_x0 = e.kind == ErrorKind::BlackBox
            && e.message.contains(BASELINE_WORDS)
            && !e.message.contains(NOT_RUN_WORDS);
        at_x0.then(|| self.mismatch_hint())
    }

    /// What to suspect when the routine fails on its very first call (at x0, before any NaN):
    /// a crash, an output left unwritten or a write past the last one there mean the routine
    /// was called otherwise than it is declared, or with other sizes. The sentence names the
    /// declaration it was called with and the alternatives. nanprop cannot see a routine read
    /// past x[n-1] or write further than 16 values past y[m-1]: that is why the sizes are named.
    pub fn mismatch_hint(&self) -> String {
        let int = match self.int_kind {
            IntKind::I4 => "INTEGER*4",
            IntKind::I8 => "INTEGER*8",
        };
        let real = match self.real {
            Precision::Double => "REAL*8",
            Precision::Single => "REAL*4",
        };
        let others: Vec<String> = [
            Convention::Fortran,
            Convention::FortranSquare,
            Convention::MinpackHybrd,
            Convention::MinpackLmdif,
            Convention::C,
            Convention::Blackbox,
        ]
        .into_iter()
        .filter(|&c| c != self.convention)
        .map(|c| format!("`{}`: {}", c.signature(), c.name()))
        .collect();
        format!(
            "{} was called as `{}` with {int} and {real} arguments, n = {}, m = {}; if it is \
             declared otherwise it reads or writes the wrong memory. Other conventions: {}; \
             8-byte INTEGER (-fdefault-integer-8) and REAL*4 arguments are options too. Check n \
             and m as well: a routine that reads more than n inputs or writes more than m \
             outputs cannot be detected",
            self.symbol,
            self.convention.signature(),
            self.n,
            self.m,
            others.join("; ")
        )
    }

    /// The precision of the routine's REAL arguments.
    pub fn precision(&self) -> Precision {
        self.real
    }

    /// Calls the routine with argument pointers of its own REAL kind (`xp` and `yp` point to n
    /// and m values of that kind, cast).
    fn call_raw(
        &self,
        f: *const c_void,
        xp: *const f64,
        yp: *mut f64,
    ) -> std::result::Result<(), i32> {
        // SAFETY (all arms): the symbol has the signature of `convention` (the caller's promise,
        // see the module docs); x and y hold n and m values.
        unsafe {
            match (self.convention, self.int_kind) {
                (Convention::C, _) => std::mem::transmute::<*const c_void, CFn>(f)(xp, yp),
                (Convention::Blackbox, _) => {
                    let r = std::mem::transmute::<*const c_void, BlackboxFn>(f)(
                        std::ptr::null_mut(),
                        self.n,
                        xp,
                        self.m,
                        yp,
                    );
                    if r != 0 {
                        return Err(r);
                    }
                }
                (Convention::Fortran, IntKind::I4) => {
                    let (n, m) = (self.n as i32, self.m as i32);
                    std::mem::transmute::<*const c_void, Fortran4>(f)(&n, xp, &m, yp)
                }
                (Convention::Fortran, IntKind::I8) => {
                    let (n, m) = (self.n as i64, self.m as i64);
                    std::mem::transmute::<*const c_void, Fortran8>(f)(&n, xp, &m, yp)
                }
                (Convention::FortranSquare, IntKind::I4) => {
                    let n = self.n as i32;
                    std::mem::transmute::<*const c_void, Square4>(f)(&n, xp, yp)
                }
                (Convention::FortranSquare, IntKind::I8) => {
                    let n = self.n as i64;
                    std::mem::transmute::<*const c_void, Square8>(f)(&n, xp, yp)
                }
                (Convention::MinpackHybrd, IntKind::I4) => {
                    let (n, mut iflag) = (self.n as i32, 1i32);
                    std::mem::transmute::<*const c_void, Hybrd4>(f)(&n, xp, yp, &mut iflag);
                    if iflag < 0 {
                        return Err(iflag);
                    }
                }
                (Convention::MinpackHybrd, IntKind::I8) => {
                    let (n, mut iflag) = (self.n as i64, 1i64);
                    std::mem::transmute::<*const c_void, Hybrd8>(f)(&n, xp, yp, &mut iflag);
                    if iflag < 0 {
                        return Err(iflag.max(i32::MIN as i64) as i32);
                    }
                }
                (Convention::MinpackLmdif, IntKind::I4) => {
                    let (m, n, mut iflag) = (self.m as i32, self.n as i32, 1i32);
                    std::mem::transmute::<*const c_void, Lmdif4>(f)(&m, &n, xp, yp, &mut iflag);
                    if iflag < 0 {
                        return Err(iflag);
                    }
                }
                (Convention::MinpackLmdif, IntKind::I8) => {
                    let (m, n, mut iflag) = (self.m as i64, self.n as i64, 1i64);
                    std::mem::transmute::<*const c_void, Lmdif8>(f)(&m, &n, xp, yp, &mut iflag);
                    if iflag < 0 {
                        return Err(iflag.max(i32::MIN as i64) as i32);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_name_variants() {
        assert_eq!(candidate_names("BEAM"), ["BEAM", "beam_"]);
        assert_eq!(candidate_names("beam"), ["beam", "beam_", "BEAM"]);
        assert_eq!(
            candidate_names("wing_wt"),
            ["wing_wt", "wing_wt_", "wing_wt__", "WING_WT"]
        );
    }

    #[test]
    fn open_errors_are_clear() {
        let e = |r: Result<LoadedBlackBox>| r.err().expect("an error").message;
        let p = Path::new("/nonexistent/libx.so");
        assert!(e(LoadedBlackBox::open(
            p,
            "f",
            Convention::C,
            2,
            2,
            IntKind::I4,
            Precision::Double
        ))
        .contains("not found"));
        assert!(e(LoadedBlackBox::open(
            p,
            "f",
            Convention::C,
            0,
            2,
            IntKind::I4,
            Precision::Double
        ))
        .contains("missing"));
        assert!(e(LoadedBlackBox::open(
            p,
            "f",
            Convention::MinpackHybrd,
            2,
            3,
            IntKind::I4,
            Precision::Double
        ))
        .contains("square"));
        let not_lib = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        assert!(e(LoadedBlackBox::open(
            not_lib,
            "f",
            Convention::C,
            2,
            2,
            IntKind::I4,
            Precision::Double
        ))
        .contains("not a loadable"));
        // libm is a real library without this symbol: every name tried is listed.
        let libm = Path::new("/lib/x86_64-linux-gnu/libm.so.6");
        if libm.exists() {
            let msg = e(LoadedBlackBox::open(
                libm,
                "no_such_fn",
                Convention::C,
                2,
                2,
                IntKind::I4,
                Precision::Double,
            ));
            assert!(
                msg.contains("no_such_fn_")
                    && msg.contains("no_such_fn__")
                    && msg.contains("NO_SUCH_FN"),
                "{msg}"
            );
        }
    }
}
