//! How a loaded routine is called: its [`Convention`] (the argument list), the size of its
//! Fortran INTEGER ([`IntKind`]), and the names a compiler may have given it
//! ([`candidate_names`]). See the module docs of [`crate::loader`] for the table.

/// How the loaded function is called (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Convention {
    /// `void f(const double *x, double *y)`.
    C,
    /// `int f(void *user_data, size_t n, const double *x, size_t m, double *y)`, user_data NULL.
    Blackbox,
    /// `subroutine f(n, x, m, y)`.
    Fortran,
    /// `subroutine f(n, x, y)` (m = n): the common residual form `resid(n, x, f)`.
    FortranSquare,
    /// MINPACK hybrd: `subroutine fcn(n, x, fvec, iflag)` (m = n).
    MinpackHybrd,
    /// MINPACK lmdif: `subroutine fcn(m, n, x, fvec, iflag)`.
    MinpackLmdif,
}

impl Convention {
    /// Parses "c", "blackbox", "fortran", "fortran-square", "minpack-hybrd", "minpack-lmdif".
    pub fn parse(s: &str) -> Option<Convention> {
        Some(match s {
            "c" => Convention::C,
            "blackbox" => Convention::Blackbox,
            "fortran" => Convention::Fortran,
            "fortran-square" => Convention::FortranSquare,
            "minpack-hybrd" => Convention::MinpackHybrd,
            "minpack-lmdif" => Convention::MinpackLmdif,
            _ => return None,
        })
    }

    /// The name [`Convention::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Convention::C => "c",
            Convention::Blackbox => "blackbox",
            Convention::Fortran => "fortran",
            Convention::FortranSquare => "fortran-square",
            Convention::MinpackHybrd => "minpack-hybrd",
            Convention::MinpackLmdif => "minpack-lmdif",
        }
    }

    /// The declaration a routine of this convention has, in the caller's words.
    pub fn signature(self) -> &'static str {
        match self {
            Convention::C => "void f(const double *x, double *y)",
            Convention::Blackbox => {
                "int f(void *user_data, size_t n, const double *x, size_t m, double *y)"
            }
            Convention::Fortran => "subroutine f(n, x, m, y)",
            Convention::FortranSquare => "subroutine f(n, x, y), m = n",
            Convention::MinpackHybrd => "subroutine fcn(n, x, fvec, iflag), m = n",
            Convention::MinpackLmdif => "subroutine fcn(m, n, x, fvec, iflag)",
        }
    }
}

/// The size of a Fortran default INTEGER in the loaded code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IntKind {
    /// 4 bytes (gfortran's default).
    #[default]
    I4,
    /// 8 bytes (`-fdefault-integer-8`).
    I8,
}

/// The names tried for `symbol`, in order, without repeats.
pub fn candidate_names(symbol: &str) -> Vec<String> {
    let lower = symbol.to_lowercase();
    let mut names = vec![symbol.to_string(), format!("{lower}_")];
    if symbol.contains('_') {
        names.push(format!("{lower}__"));
    }
    names.push(symbol.to_uppercase());
    let mut seen = Vec::new();
    names.retain(|n| {
        let new = !seen.contains(n);
        seen.push(n.clone());
        new
    });
    names
}
