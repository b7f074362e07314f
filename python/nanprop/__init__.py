"""nanprop: Jacobian sparsity of black-box functions by NaN propagation, and sparse Jacobians.

Given f: R^n -> R^m (any Python callable taking a 1-D float64 array, or a routine in a shared
library loaded with `load`) and a point x0, `trace` finds which outputs can depend on which
inputs by evaluating f with inputs replaced by tagged NaNs, in far fewer evaluations than n;
`JacobianPlan` then computes sparse Jacobians by compressed finite differences (colors once,
evaluates many times), as SciPy's solvers take them::

    import numpy as np, nanprop
    from scipy.optimize import least_squares

    def f(x):                                   # a tridiagonal residual
        y = 3.0 * x - x**2
        y[1:] -= x[:-1]
        y[:-1] -= 2.0 * x[1:]
        return y + 1.0

    p = nanprop.trace(f, np.zeros(1000))        # 1000 x 1000, nnz 2998, a few dozen evaluations
    plan = nanprop.JacobianPlan(p)              # 3 colors
    fun, jac = plan.fun_and_jac(f)              # jac reuses f(x) from fun: 3 evaluations each
    r = least_squares(fun, np.zeros(1000), jac=jac)

Errors raise `NanpropError` (subclasses by kind); an exception raised inside f reaches the
caller as itself, with its traceback. The C library underneath is the same one C and Fortran
programs link (`include/nanprop.h`); see the project's README.
"""

from __future__ import annotations

import enum
import os
import sys
import time
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _nanprop
from ._nanprop import (
    BaselineNotFiniteError,
    BlackBoxError,
    InternalError,
    InvalidArgumentError,
    Loaded,
    NanpropError,
    OutOfMemoryError,
    Pattern,
    WaitingError,
)

__version__: str = _nanprop.__version__

__all__ = [
    "trace",
    "coloring",
    "jacobian",
    "JacobianPlan",
    "hessian",
    "hessian_coloring",
    "HessianPlan",
    "smoothed_jacobian",
    "load",
    "Pattern",
    "Loaded",
    "EntryKind",
    "NanpropError",
    "InvalidArgumentError",
    "BlackBoxError",
    "BaselineNotFiniteError",
    "OutOfMemoryError",
    "InternalError",
    "WaitingError",
]

ArrayLike = Any
Function = Union[Callable[[np.ndarray], ArrayLike], Loaded]


class EntryKind(enum.IntEnum):
    """How an entry of a `Pattern` was found (the values of `Pattern.kinds`)."""

    TRACED = 0
    """Proven by NaN tracing: a NaN from this input reached this output."""
    PERTURBATION = 1
    """Found by a finite step after the NaN was absorbed (fmin, a clamp, an isnan guard), or for
    an input whose NaN made f fail."""
    CHUNK = 2
    """The chunked strategy saw a NaN from a chunk holding this input (perhaps another one)."""
    UNRESOLVED = 3
    """Kept as possible because the evaluation budget ran out before it was resolved."""
    NONFINITE_ROW = 4
    """The output was NaN or Inf at x0, so its row is kept dense."""
    ASSUMED = 5
    """Kept as possible without proof: resolving it would cost more than one-hot tracing (a row
    recognised dense)."""


def load(
    path: Union[str, os.PathLike],
    symbol: str,
    convention: str = "fortran",
    *,
    n: int,
    m: int,
    integer: int = 4,
    real: int = 8,
    open_in_worker: bool = False,
) -> Loaded:
    """Loads the routine `symbol` from the shared library `path` as f: R^n -> R^m.

    The result is callable from Python (``g(x)`` returns y) and can be given to `trace`,
    `jacobian` and `JacobianPlan.evaluate` wherever a function is taken: nanprop then calls the
    routine itself, with no Python in the evaluation loop.

    Parameters
    ----------
    path : the library file (or a name the system's loader finds).
    symbol : the routine's name as written in its source (``beam``); the names compilers give it
        (``beam_``, ``BEAM``) are tried too.
    convention : how it is called: ``"fortran"`` ``subroutine f(n, x, m, y)``;
        ``"fortran-square"`` ``subroutine f(n, x, y)`` (m = n); ``"minpack-hybrd"``
        ``subroutine fcn(n, x, fvec, iflag)``; ``"minpack-lmdif"``
        ``subroutine fcn(m, n, x, fvec, iflag)``; ``"c"`` ``void f(const double *x, double *y)``;
        ``"blackbox"`` the C header's ``nanprop_blackbox`` signature.
    n, m : inputs and outputs.
    integer : bytes of the routine's default INTEGER: 4 (gfortran's default) or 8
        (``-fdefault-integer-8``).
    real : bytes of its REAL arguments: 8 (double precision) or 4 (REAL*4: nanprop converts
        at the call, NaN tags surviving, and sizes Jacobian steps for float).
    open_in_worker : load the library in a forked child first (a constructor that aborts,
        crashes or calls ``exit()`` is then a `BlackBoxError`, not the end of Python), and in
        the processes that call the routine from then on: with ``isolate=True`` or
        ``processes=`` those are nanprop's workers (each loads it once, and its evaluations
        inherit it), so the library's code never runs in Python's process. Default False:
        loaded here, now.

    Raises `InvalidArgumentError` when the file, or the symbol under any of its names, is not
    found. A routine called with the wrong convention reads the wrong memory: trace it with
    ``isolate=True`` first, which turns a crash into a `BlackBoxError`.
    """
    return Loaded(
        os.fspath(path),
        symbol,
        convention,
        n=n,
        m=m,
        integer=integer,
        real=real,
        open_in_worker=open_in_worker,
    )


def _points(x0: ArrayLike) -> np.ndarray:
    x = np.array(x0, dtype=np.float64, copy=True)
    if x.ndim == 1:
        return x[None, :]
    if x.ndim == 2:
        return x
    raise InvalidArgumentError(
        f"x0 must be a point (1-D) or points (2-D, one per row); it has shape {x.shape}"
    )


def _output_size(f: Function, x: np.ndarray, single: bool) -> int:
    if isinstance(f, Loaded):
        return f.m
    y = np.asarray(f(x.astype(np.float32) if single else x.copy()))
    return int(y.size)


class _Bar:
    """The progress display: tqdm when installed, else one line on stderr updated in place."""

    def __init__(self, forced: bool) -> None:
        self.tqdm = None
        self.last = 0.0
        self.start = time.monotonic()
        self.shown = False
        try:
            from tqdm.auto import tqdm  # type: ignore

            # Shown only for traces longer than a second (or always when asked for).
            self.tqdm = tqdm(
                total=0, unit="eval", desc="nanprop trace", delay=0.0 if forced else 1.0
            )
        except ImportError:
            pass
        self.forced = forced

    def __call__(self, evaluations: int, planned: int, point: int, points: int) -> None:
        if self.tqdm is not None:
            if self.tqdm.total != planned:
                self.tqdm.total = planned
            if points > 1:
                self.tqdm.set_description(f"nanprop trace, point {point + 1}/{points}", False)
            self.tqdm.update(evaluations - self.tqdm.n)
            return
        now = time.monotonic()
        if now - self.last < 0.2 or (not self.forced and now - self.start < 1.0):
            return
        self.last = now
        where = f" (point {point + 1}/{points})" if points > 1 else ""
        sys.stderr.write(f"\rnanprop trace: {evaluations}/{planned} evaluations{where}")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.tqdm is not None:
            self.tqdm.close()
        elif self.shown:
            sys.stderr.write("\n")


def trace(
    f: Function,
    x0: ArrayLike,
    m: Optional[int] = None,
    *,
    strategy: Optional[str] = None,
    chunk_size: Optional[int] = None,
    max_evaluations: Union[int, str, None] = None,
    nonfinite_baseline: Optional[str] = None,
    verify: Optional[bool] = None,
    verify_step: Optional[float] = None,
    verify_tolerance: Optional[float] = None,
    noise: Optional[str] = None,
    sample_points: Optional[int] = None,
    sample_scale: Optional[float] = None,
    seed: Optional[int] = None,
    threads: Optional[int] = None,
    processes: Optional[int] = None,
    isolate: Optional[bool] = None,
    timeout: Optional[float] = None,
    journal: Union[str, os.PathLike, None] = None,
    function_id: Optional[str] = None,
    progress: Union[bool, Callable[[int, int, int, int], None], None] = None,
) -> Pattern:
    """Finds which outputs of f can depend on which inputs, near x0.

    f is evaluated at x0 and at probes: x0 with inputs replaced by NaNs whose payloads name them;
    an output that comes back NaN names the input that reached it. A check by finite steps of
    random sizes guards against NaNs that f absorbed (``fmin``, clamps, ``isnan`` guards).

    Parameters
    ----------
    f : a callable taking a 1-D float64 array of n values (a fresh copy each call) and returning
        m numbers (any array-like numpy reads), or a `Loaded` routine. Its result is held until
        its next call has returned (at large n the memory of f's temporaries then stays with
        the process instead of being given back and faulted in again at every call).
    x0 : the point (n values), or several points (a 2-D array, one per row): the union of their
        patterns is returned (for codes that branch). A float32 x0 means f works in single
        precision: it gets float32 arrays and its results are read as float32 (the NaN tags
        travel in the 22 payload bits a float NaN has).
    m : outputs; None: learned by calling f(x0) once more.

    Options (None keeps the library's default, the same as the C struct ``nanprop_options``):

    strategy : ``"payload"`` (default: payload-tagged probes, coarse to fine), ``"one-hot"``
        (one input per probe, n + 1 evaluations), ``"chunked"`` (`chunk_size` adjacent inputs per
        probe, conservative).
    chunk_size : inputs per probe for ``"chunked"`` (default 8).
    max_evaluations : ``"auto"`` (default: no budget; the NaN trace never asks more probes than
        one-hot would, rows recognised dense are kept as ASSUMED), ``"none"`` (no limit at all:
        exact), or a count bounding every evaluation including the check (n + 1 gives the
        strict one-hot bound); what a budget leaves open is kept as UNRESOLVED, never dropped.
    nonfinite_baseline : ``"mark-dense"`` (default: rows NaN or Inf at x0 are kept dense and
        listed in `Pattern.nonfinite_rows`) or ``"error"``.
    verify : check the traced pattern by finite steps (default True).
    verify_step : relative size of those steps (default 1e-3; each step gets a random factor).
    verify_tolerance : relative change an output must exceed to count as changed (default 0:
        any change of its bits); for functions whose outputs jitter (iterative solvers).
    noise : what to do when f's outputs change on evaluating it again at the same point and
        no `verify_tolerance` is given: ``"tolerate"`` (default: estimate the noise from the
        repeated evaluations, ECnoise-style, set the tolerance from it; ``report["noise"]``
        and ``report["tolerance"]`` give both) or ``"error"`` (raise `BlackBoxError` naming
        the noisy outputs).
    sample_points, sample_scale : also trace at this many points sampled around x0, at this
        relative scale (defaults 0 and 0.1), and return the union.
    seed : seed of the sampled points and of the verification steps (default 0).
    threads : evaluate on this many threads at once: for a `Loaded` routine that is
        thread-safe (a Python callable runs under the GIL and is refused).
    processes : evaluate in this many forked worker processes at once (implies isolation).
    isolate : run every evaluation in a forked process, so that a crash, abort or hang of f
        becomes a `BlackBoxError` instead of ending Python.
    timeout : with isolation, the longest one evaluation may take, in seconds (0: no limit).
    journal : keep every evaluation in this file and resume from it when the trace is run
        again after an interruption.
    function_id : names the function for the journal (a Python callable cannot be identified
        otherwise; a journal written for another id is refused).
    progress : None (default): a progress bar (tqdm if installed) on traces longer than a
        second when stderr is a terminal; True: always; False: never; or a callable
        ``progress(evaluations, planned, point, points)`` called after every evaluation.

    Returns
    -------
    Pattern : CSR (`indptr`, `indices`), `shape`, `nnz`, `evaluations`, `kinds` (an
    `EntryKind` per entry, aligned with `indices`), `report` (every counter); `to_scipy()`.

    Raises
    ------
    InvalidArgumentError : a NaN or Inf in x0, a bad option (the message names it).
    BaselineNotFiniteError : outputs not finite at x0 with ``nonfinite_baseline="error"``.
    BlackBoxError : a `Loaded` routine failed, or f crashed, exited or hung under isolation.
    Exception : whatever f raised at x0 or at a finite step, as itself. An exception raised at
        a NaN probe is read as f refusing NaN (as a C code's error return): the trace splits
        the probe and finds that input's dependencies by finite steps
        (``report["failed_columns"]``).
    """
    single = np.asarray(x0).dtype == np.float32 and not isinstance(f, Loaded)
    points = _points(x0)
    n = points.shape[1]
    if m is None:
        m = _output_size(f, points[0], single)
    options = dict(
        strategy=strategy,
        chunk_size=chunk_size,
        max_evaluations=max_evaluations,
        nonfinite_baseline=nonfinite_baseline,
        verify=verify,
        verify_step=verify_step,
        verify_tolerance=verify_tolerance,
        noise=noise,
        sample_points=sample_points,
        sample_scale=sample_scale,
        seed=seed,
        threads=threads,
        processes=processes,
        isolate=isolate,
        timeout=timeout,
        journal=os.fspath(journal) if journal is not None else None,
        function_id=function_id,
    )
    bar: Optional[_Bar] = None
    callback: Optional[Callable[[int, int, int, int], None]] = None
    if callable(progress):
        callback = progress
    elif progress or (progress is None and sys.stderr is not None and sys.stderr.isatty()):
        bar = _Bar(forced=bool(progress))
        callback = bar
    try:
        return _nanprop.trace(f, points.ravel(), n, m, callback, single, **options)
    finally:
        if bar is not None:
            bar.close()


def coloring(
    p: Union[Pattern, ArrayLike], *, order: str = "auto", seed: int = 0, recolor: int = 0
) -> np.ndarray:
    """Colors the columns of pattern p so that no two columns of one color share a row.

    p : a `Pattern`, or a SciPy sparse matrix / 2-D array whose nonzeros are the pattern.
    order : ``"auto"`` (default: a band's or a stencil's on a grid numbered in order colored by
        formula at the longest row, which no coloring can beat; otherwise saturation, after the
        natural order when one row holds half the coloring work, has at least 64 entries or
        every row's columns lie close together; a few greedy passes, stopping early at the
        longest row), ``"best"`` (the formula, else every order below, the fewest colors, about
        15 passes)
        or one of ``"natural"``, ``"largest-first"``,
        ``"smallest-last"``, ``"incidence-degree"``, ``"dynamic-largest-first"``, ``"random"``,
        ``"saturation"``.
    seed : of the random order and of recoloring.
    recolor : rounds of iterated greedy recoloring after the order (default 0: none; one
        greedy pass each).

    Returns the color of every column (int64, values 0 .. max + 1); a forward-difference
    Jacobian costs one evaluation per color (+1 for f(x)).
    """
    colors, _ = _nanprop.coloring(p, order, seed, recolor)
    return colors


class JacobianPlan(_nanprop.JacobianPlanCore):
    """A sparse Jacobian by compressed finite differences: colors the pattern once, then
    evaluates at any number of points (as PETSc's MatFDColoring).

    ``JacobianPlan(p, method="forward", *, step=None, step_kind="relative", order="best",
    seed=0, recolor=8)``

    p : the pattern (a `Pattern`, or a SciPy sparse matrix / array whose nonzeros are it).
    method : ``"forward"`` (``"2-point"``: colors + 1 evaluations, colors when f(x) is given) or
        ``"central"`` (``"3-point"``: 2 colors evaluations, second order).
    step : None (default: sqrt(eps) forward, cbrt(eps) central, times max(|x_j|, 1) with the
        sign of x_j, as SciPy does), one number, or one per column; `step_kind` says whether
        it is ``"relative"`` (times max(|x_j|, 1)) or ``"absolute"``. The step actually taken,
        (x_j + h_j) - x_j, divides the difference.
    order, seed, recolor : the coloring, as `coloring` takes them.

    Attributes: `num_colors`, `colors`, `shape`; `evaluations_per_jacobian(with_fx=False)`.
    """

    def evaluate(self, f: Function, x: ArrayLike, fx: Optional[ArrayLike] = None) -> Any:
        """The Jacobian of f at x as a ``scipy.sparse.csr_matrix`` with the pattern's
        structure (entries that came out zero are kept). `fx`, f(x) if you have it, saves one
        evaluation of a forward Jacobian. A float32 x means f works in single precision: steps
        are sized for float (sqrt(eps_f32) forward, cbrt(eps_f32) central) and the matrix is
        float32; a REAL*4 `Loaded` routine gets float steps whatever x's type.

        Raises `BaselineNotFiniteError` when a row with entries is not finite at x,
        `BlackBoxError` when a step makes it non-finite, and whatever f raises, as itself.
        """
        from scipy.sparse import csr_matrix

        single = np.asarray(x).dtype == np.float32 and not isinstance(f, Loaded)
        values, made = self.values(f, *_point_and_fx(x, fx), single)
        self.last_evaluations = made
        indptr, indices = self.csr()
        if single:
            values = values.astype(np.float32)
        return csr_matrix((values, indices, indptr), shape=self.shape)

    def fun_and_jac(
        self, f: Callable[[np.ndarray], ArrayLike]
    ) -> Tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], Any]]:
        """Two callables for SciPy's solvers (``least_squares(fun, x0, jac=jac)``,
        ``root``): ``fun(x)`` evaluates f, and ``jac(x)`` this plan's Jacobian, reusing
        f(x) from the last call of ``fun`` at the same x (SciPy evaluates fun before jac at
        each new point), so that a forward Jacobian costs `num_colors` evaluations, as
        SciPy's own finite differences cost one per column group."""
        last: dict = {}

        def fun(x: np.ndarray, *args: Any, **kwargs: Any) -> np.ndarray:
            y = np.asarray(f(np.array(x, dtype=np.float64)), dtype=np.float64).ravel()
            last["x"] = np.array(x, dtype=np.float64, copy=True)
            last["y"] = y.copy()
            return y

        def jac(x: np.ndarray, *args: Any, **kwargs: Any) -> Any:
            x = np.asarray(x, dtype=np.float64)
            fx = last["y"] if "x" in last and np.array_equal(last["x"], x) else None
            return self.evaluate(f, x, fx)

        return fun, jac


def _point_and_fx(x: ArrayLike, fx: Optional[ArrayLike]) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    if fx is not None:
        fx = np.ascontiguousarray(fx, dtype=np.float64).ravel()
    return x, fx


def jacobian(
    f: Function,
    x: ArrayLike,
    p: Union[Pattern, ArrayLike],
    method: str = "forward",
    *,
    fx: Optional[ArrayLike] = None,
    step: Union[float, Sequence[float], None] = None,
    step_kind: str = "relative",
    order: str = "auto",
) -> Any:
    """The Jacobian of f at x with pattern p, as a ``scipy.sparse.csr_matrix``: a fresh
    `JacobianPlan` evaluated once. For many points (an optimization loop) keep the plan: it
    colors the pattern once."""
    plan = JacobianPlan(p, method, step=step, step_kind=step_kind, order=order)
    return plan.evaluate(f, x, fx)


def hessian_coloring(p: Union[Pattern, ArrayLike]) -> np.ndarray:
    """Star-colors the square pattern `p` (symmetrized) for a Hessian: the color of every
    column (int64, values 0 .. max + 1); a forward Hessian costs one gradient evaluation per
    color (+1 for the gradient at x). Adjacent columns differ and every path on four columns uses three colors, so each
    entry can be read from one of its two columns' gradient differences: never more colors
    than `coloring` of the same pattern with its diagonal, often far fewer (a grid with one
    global variable: about 6 against n). Raises `InvalidArgumentError` for a pattern that is
    not square."""
    return _nanprop.hessian_coloring(p)[0]


class HessianPlan(_nanprop.HessianPlanCore):
    """A reusable sparse Hessian from a gradient routine: ``HessianPlan(p, method="forward",
    *, step=None, step_kind="relative", order="auto")``. `p` is the Hessian's pattern (a
    `Pattern` or anything `Pattern.from_scipy` reads; traced from the gradient with
    `nanprop.trace(gradient, x0)`), symmetrized for coloring; values come for exactly its
    entries, so a lower-triangular pattern gives the lower triangle. The columns are star
    colored once; `evaluate` then costs `num_colors` + 1 gradient evaluations (forward; one
    less with `gx`) or 2 `num_colors` (central), and the result is exactly symmetric.
    `last_evaluations` holds the count of the last call."""

    last_evaluations: int = 0

    def evaluate(self, gradient: Function, x: ArrayLike, gx: Optional[ArrayLike] = None) -> Any:
        """The Hessian at x as a ``scipy.sparse.csr_matrix`` with the plan's pattern, from
        `gradient` (a callable returning n values, or a `Loaded` routine). `gx`, the gradient
        at x if you have it, saves one evaluation of a forward Hessian.

        Raises `BaselineNotFiniteError` when a gradient component with entries is not finite
        at x, `BlackBoxError` when a step makes it non-finite, and whatever `gradient` raises."""
        from scipy.sparse import csr_matrix

        values, made = self.values(gradient, *_point_and_fx(x, gx))
        self.last_evaluations = made
        indptr, indices = self.csr()
        return csr_matrix((values, indices, indptr), shape=self.shape)


def hessian(
    gradient: Function,
    x: ArrayLike,
    p: Union[Pattern, ArrayLike],
    method: str = "forward",
    *,
    gx: Optional[ArrayLike] = None,
    step: Union[float, Sequence[float], None] = None,
    step_kind: str = "relative",
    order: str = "auto",
) -> Any:
    """The Hessian at x from the gradient routine, with pattern p, as a
    ``scipy.sparse.csr_matrix``: a fresh `HessianPlan` evaluated once. For many points keep
    the plan. For least squares, the Gauss-Newton matrix ``J.T @ J`` from `jacobian` needs no
    gradient routine."""
    plan = HessianPlan(p, method, step=step, step_kind=step_kind, order=order)
    return plan.evaluate(gradient, x, gx)


def smoothed_jacobian(
    f: Function,
    x: ArrayLike,
    p: Union[Pattern, ArrayLike],
    sigma: float = 0.01,
    *,
    samples: int = 100,
    sigma_kind: str = "relative",
    seed: int = 0,
    estimator: str = "regression",
) -> Tuple[Any, Any]:
    """The Jacobian of the Gaussian-smoothed f, E[f(x + sigma eps)] with every input perturbed
    together, on pattern p: for functions that branch (thresholds, regimes), where finite
    differences give zeros or spikes. Returns ``(J, std_errors)``, two
    ``scipy.sparse.csr_matrix`` with p's structure; costs ``2 * samples`` evaluations.

    `sigma` is relative to max(|x_j|, 1) (``sigma_kind="relative"``) or absolute. Each row is a
    regression of the antithetic differences on that row's own perturbations
    (``estimator="regression"``), so entries outside p are exact zeros and the other inputs of
    a row add no noise; ``estimator="average"`` gives the full-dimensional antithetic average
    for comparison. The standard errors are heteroscedasticity-robust. p must hold every input
    a row reaches within a few sigma of x: trace with sampled points on that scale,
    ``nanprop.trace(f, x, sample_points=8, sample_scale=3 * sigma)``."""
    from scipy.sparse import csr_matrix

    pattern = p if isinstance(p, Pattern) else Pattern.from_scipy(p)
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    values, errors, _ = _nanprop.smoothed_jacobian_values(
        f, x, pattern, sigma, sigma_kind, samples, seed, estimator
    )
    indptr, indices = pattern.indptr, pattern.indices
    shape = pattern.shape
    return (
        csr_matrix((values, indices, indptr), shape=shape),
        csr_matrix((errors, indices, indptr), shape=shape),
    )
