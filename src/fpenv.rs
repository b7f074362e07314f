//! The floating-point environment around nanprop's work.
//!
//! Tracing feeds NaNs to the black box and compares NaNs itself, which raises `FE_INVALID`.
//! A caller that runs with floating-point traps enabled (`feenableexcept(FE_INVALID)`, common
//! in debugging builds of legacy codes) would get SIGFPE. So every entry point runs inside an
//! [`FpGuard`]: it saves the caller's environment (rounding mode, sticky flags, trap mask),
//! masks all traps, and on drop restores the environment exactly, so the caller sees neither
//! the masked traps nor the flags nanprop raised. [`mask_traps`] masks them again around each
//! black-box call, in case the black box enables them itself. (A black box that enables a trap
//! and then trips it inside one call dies of SIGFPE: only an isolated run survives that.)
//!
//! Uses glibc's `fegetenv`, `fesetenv` and `fedisableexcept` (a GNU extension); elsewhere the
//! guard does nothing.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use std::ffi::c_int;

    /// Room for glibc's fenv_t on every architecture it supports (32 bytes on x86_64).
    #[repr(C, align(16))]
    pub struct Env([u8; 64]);

    extern "C" {
        fn fegetenv(env: *mut Env) -> c_int;
        fn fesetenv(env: *const Env) -> c_int;
        fn fedisableexcept(excepts: c_int) -> c_int;
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    const FE_ALL_EXCEPT: c_int = 0x3d;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    const FE_ALL_EXCEPT: c_int = 0x1f;

    pub fn save() -> Option<Env> {
        let mut env = Env([0; 64]);
        // SAFETY: env is larger than fenv_t and suitably aligned.
        (unsafe { fegetenv(&mut env) } == 0).then_some(env)
    }

    pub fn restore(env: &Env) {
        // SAFETY: env was filled by fegetenv.
        unsafe { fesetenv(env) };
    }

    pub fn mask_traps() {
        // SAFETY: plain libm call.
        unsafe { fedisableexcept(FE_ALL_EXCEPT) };
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub struct Env;
    pub fn save() -> Option<Env> {
        None
    }
    pub fn restore(_: &Env) {}
    pub fn mask_traps() {}
}

/// Saves the floating-point environment and masks all traps; restores the environment on drop.
pub struct FpGuard {
    saved: Option<imp::Env>,
}

impl FpGuard {
    /// Saves the environment and masks every trap.
    pub fn enter() -> Self {
        let saved = imp::save();
        imp::mask_traps();
        FpGuard { saved }
    }
}

/// Masks every trap (around a black-box call, which may have enabled some).
pub fn mask_traps() {
    imp::mask_traps();
}

impl Drop for FpGuard {
    fn drop(&mut self) {
        if let Some(env) = &self.saved {
            imp::restore(env);
        }
    }
}
