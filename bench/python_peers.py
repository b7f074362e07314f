"""nanprop from Python, side by side with SciPy's dense finite differences and asdex.

    python bench/python_peers.py          # after pip install ./python (and, optionally, asdex)

For each function (written once for numpy and, for asdex, for jax.numpy) it prints the time to
the pattern, the evaluations of f, the nonzeros found and whether the pattern equals the true
one; then the cost of calling a Python f from nanprop's loop against calling it in a plain
Python loop. asdex (JAX, abstract interpretation: no evaluation of f) runs when it is
importable; otherwise the script says so. SciPy's dense differences build an m x n matrix and
run only up to n = 2000. The README's Python table comes from this script.

    python bench/python_peers.py --scale [MAX_N]   # what `nanprop-bench --peers` runs

At n = 10^4, 10^5 and 10^6 (up to MAX_N) on tridiagonal, 2-D Bratu, random 5 per row and
arrowhead functions, each tool runs RUNS times, nanprop and asdex in turn, each run in a fresh
process: the time to the pattern (for nanprop also the part spent inside the Python f, which its
evaluations cannot avoid: "f alone / asdex" is the floor under the ratio nanprop / asdex), its
peak memory (the process's maximum resident size less that of a process that only imports and
makes x0) and the ratio nanprop / asdex. Times are the runs' medians, ratios the medians of the
pairs' (one run of each moved the tridiagonal's ratio at 10^6 between 0.09 and 0.14 from run
to run), peaks the largest;
then the Jacobian from a known pattern, nanprop's plan against SciPy's
approx_derivative(sparsity=...).
"""

import sys
import time
from statistics import median_high as median  # the upper one of an even count, as the Rust benchmark's

import numpy as np

import nanprop

try:
    import asdex
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except ImportError:  # asdex is optional
    asdex = None

from scipy.optimize._numdiff import approx_derivative  # SciPy no longer exports it


def tridiagonal(xp):
    def f(x):
        y = (3.0 - 2.0 * x) * x + 1.0
        left = xp.concatenate([xp.zeros(1), x[:-1]])
        right = xp.concatenate([x[1:], xp.zeros(1)])
        return y - left - 2.0 * right

    return f


def bratu(xp, N):
    h2 = 1.0 / (N + 1) ** 2

    def f(u):
        U = u.reshape(N, N)
        P = xp.pad(U, 1)
        F = 4 * U - P[:-2, 1:-1] - P[2:, 1:-1] - P[1:-1, :-2] - P[1:-1, 2:] - h2 * xp.exp(U)
        return F.ravel()

    return f


def random5(xp, n, seed=7):
    rng = np.random.default_rng(seed)
    if n <= 100000:
        cols = np.array([rng.choice(n, 5, replace=False) for _ in range(n)])
    else:  # the loop above would take longer than the trace; repeats allowed
        cols = rng.integers(0, n, (n, 5))

    def f(x):
        return (xp.sin(x[cols]) * x[cols[:, :1]]).sum(axis=1)

    return f


def arrowhead(xp):
    def f(x):
        return xp.concatenate([x[:-1] * x[-1], xp.sum(x)[None]])

    return f


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


class Counted:
    """f, counting its calls and the time spent in them."""

    def __init__(self, f):
        self.f, self.calls, self.seconds = f, 0, 0.0

    def __call__(self, x):
        self.calls += 1
        t = time.perf_counter()
        y = self.f(x)
        self.seconds += time.perf_counter() - t
        return y


def csr_key(A):
    A = A.tocsr()
    A.sum_duplicates()
    A.sort_indices()
    return A.indptr.tobytes(), A.indices.tobytes()


def row(name, n, f_np, f_jax):
    x0 = np.random.default_rng(1).uniform(0.5, 1.5, n)
    g = Counted(f_np)
    p, t_nan = timed(lambda: nanprop.trace(g, x0, m=n, progress=False))
    ref = csr_key(p.to_scipy())
    out = [
        f"| {name} | {n} | nanprop | {t_nan * 1e3:.0f} ms ({g.seconds * 1e3:.0f} in f) | {g.calls} "
        f"| {p.nnz} | (reference) |"
    ]
    if n <= 2000:
        g = Counted(f_np)
        J, t = timed(lambda: approx_derivative(g, x0, method="2-point"))
        import scipy.sparse

        A = scipy.sparse.csr_matrix(J != 0)
        same = "same" if csr_key(A) == ref else "differs"
        out.append(
            f"| | | SciPy dense 2-point | {t * 1e3:.0f} ms ({g.seconds * 1e3:.0f} in f) | {g.calls} "
            f"| {A.nnz} | {same} |"
        )
    else:
        out.append("| | | SciPy dense 2-point | (m x n dense: skipped) | | | |")
    if asdex is not None:
        # The first call compiles nothing that the second reuses (each call traces f): time it.
        s, t = timed(lambda: asdex.jacobian_sparsity(f_jax, jnp.asarray(x0)))
        import scipy.sparse

        rows, cols = np.asarray(s.rows), np.asarray(s.cols)
        A = scipy.sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
        same = "same" if csr_key(A) == ref else "differs"
        out.append(
            f"| | | asdex {asdex_version()} | {t * 1e3:.0f} ms | 0 (no evaluation) | {s.nnz} | {same} |"
        )
    return out


def asdex_version():
    try:
        from importlib.metadata import version

        return version("asdex")
    except Exception:
        return ""


def overhead(n=1000, reps=2000):
    """Seconds per evaluation spent by nanprop around a Python f, against a plain loop."""
    f = tridiagonal(np)
    x = np.ones(n)
    t = time.perf_counter()
    for _ in range(reps):
        np.asarray(f(x.copy()), dtype=np.float64)
    plain = (time.perf_counter() - t) / reps
    g = Counted(f)
    p = nanprop.trace(
        g, x, m=n, strategy="one-hot", verify=False, max_evaluations="none", progress=False
    )
    t = time.perf_counter()
    for _ in range(max(1, reps // n)):
        g.calls = 0
        nanprop.trace(g, x, m=n, strategy="one-hot", verify=False, progress=False)
    through = (time.perf_counter() - t) / (max(1, reps // n) * (n + 1))
    return plain, through, p.evaluations


def main():
    print(f"nanprop {nanprop.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}")
    if asdex is None:
        print("asdex not installed: its rows are skipped (pip install asdex)")
    print()
    print("| function | n | tool | time to pattern (of which in f) | evaluations of f | nnz | pattern vs nanprop's |")
    print("|---|---:|---|---:|---:|---:|---|")
    cases = [
        ("tridiagonal", 1000, tridiagonal(np), tridiagonal(jnp) if asdex else None),
        ("tridiagonal", 100000, tridiagonal(np), tridiagonal(jnp) if asdex else None),
        ("2-D Bratu 30 x 30", 900, bratu(np, 30), bratu(jnp, 30) if asdex else None),
        ("2-D Bratu 300 x 300", 90000, bratu(np, 300), bratu(jnp, 300) if asdex else None),
        ("random 5 per row", 2000, random5(np, 2000), random5(jnp, 2000) if asdex else None),
        ("random 5 per row", 100000, random5(np, 100000), random5(jnp, 100000) if asdex else None),
    ]
    for name, n, f_np, f_jax in cases:
        for line in row(name, n, f_np, f_jax):
            print(line, flush=True)
    plain, through, evals = overhead()
    print()
    print(
        f"Python f called from nanprop's loop (one-hot, n = 1000, {evals} evaluations): "
        f"{through * 1e6:.1f} us per evaluation, against {plain * 1e6:.1f} us in a plain "
        f"Python loop calling f on a copy of x: {(through - plain) * 1e6:.1f} us of overhead"
    )


def scale_function(name, n, xp):
    if name == "tridiagonal":
        return tridiagonal(xp)
    if name == "2-D Bratu":
        return bratu(xp, int(round(n**0.5)))
    if name == "random 5 per row":
        return random5(xp, n)
    return arrowhead(xp)


def one(tool, name, n):
    """Runs one tool on one function in this (fresh) process; prints seconds, peak KiB of this
    process, evaluations and nnz."""
    import resource

    x0 = np.random.default_rng(1).uniform(0.5, 1.5, n)
    evaluations, nnz, t, in_f = 0, 0, 0.0, 0.0
    if tool == "nanprop":
        g = Counted(scale_function(name, n, np))
        p, t = timed(lambda: nanprop.trace(g, x0, m=n, progress=False))
        evaluations, nnz, in_f = g.calls, p.nnz, g.seconds
    elif tool == "asdex":
        f = scale_function(name, n, jnp)
        s, t = timed(lambda: asdex.jacobian_sparsity(f, jnp.asarray(x0)))
        nnz = s.nnz
    print(t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, evaluations, nnz, in_f)


def run_one(tool, name, n):
    import subprocess

    out = subprocess.run(
        [sys.executable, __file__, "--one", tool, name, str(n)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if out.returncode != 0:
        return None
    t, kib, evaluations, nnz, in_f = out.stdout.split()[-5:]
    return float(t), int(kib), int(evaluations), int(nnz), float(in_f)


RUNS = 3  # fresh processes per tool and case in --scale; times are their medians


def spread(runs):
    """The runs' times, lowest to highest, in ms."""
    return f"{min(r[0] for r in runs) * 1e3:.0f}-{max(r[0] for r in runs) * 1e3:.0f}"


def runs_of(name, n, with_asdex):
    """RUNS fresh-process runs of nanprop and of asdex, alternated so that both meet the same
    hours; None for a tool whose run failed."""
    a, b = [], []
    for _ in range(RUNS):
        a.append(run_one("nanprop", name, n))
        if with_asdex:
            b.append(run_one("asdex", name, n))
    if any(r is None for r in a):
        a = None
    if not with_asdex or any(r is None for r in b):
        b = None
    return a, b


def scale(max_n):
    print(f"nanprop {nanprop.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}"
          + (f", asdex {asdex_version()} (JAX {jax.__version__}, CPU)" if asdex else ""))
    if asdex is None:
        print("asdex is not installed (pip install asdex): its columns are skipped")
    print()
    print(f"Each tool runs {RUNS} times on each case, nanprop and asdex in turn, each run a fresh process:"
          " times are the medians (the runs' range in brackets), the ratios the medians of the pairs'"
          " ratios, peaks the largest.")
    print()
    print("| function | n | nanprop: time to pattern | of which in f | evaluations | peak MB | asdex: time | peak MB | nanprop / asdex time | f alone / asdex | memory ratio | nnz (same) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in ["tridiagonal", "2-D Bratu", "random 5 per row", "arrowhead"]:
        for n in [10**4, 10**5, 10**6]:
            if n > max_n:
                continue
            if name == "2-D Bratu":
                n = int(round(n**0.5)) ** 2
            base = run_one("none", name, n)
            a, b = runs_of(name, n, asdex is not None)
            mb = lambda rs: max(max(r[1] for r in rs) - base[1], 0) / 1024
            row = f"| {name} | {n} | "
            if a:
                evals = {r[2] for r in a}
                assert len(evals) == 1, f"{name} {n}: evaluations differ from run to run: {evals}"
                t, in_f = median([r[0] for r in a]), median([r[4] for r in a])
                row += f"{t * 1e3:.0f} ms ({spread(a)}) | {in_f * 1e3:.0f} ms | {a[0][2]} | {mb(a):.0f} | "
            else:
                row += "failed | | | | "
            if b:
                same = "same" if a and all(r[3] == b[0][3] for r in a + b) else "differs"
                row += f"{median([r[0] for r in b]) * 1e3:.0f} ms ({spread(b)}) | {mb(b):.0f} | "
                if a:
                    ratio = median([x[0] / y[0] for x, y in zip(a, b)])
                    floor = median([x[4] / y[0] for x, y in zip(a, b)])
                    row += f"{ratio:.2f} | {floor:.2f} | "
                else:
                    row += "- | - | "
                row += f"{mb(a) / max(mb(b), 1e-9):.2f} | {a[0][3] if a else ''} ({same}) |" if a else f"- | {b[0][3]} |"
            else:
                row += f"- | - | - | - | - | {a[0][3] if a else ''} |"
            print(row, flush=True)
    print()
    print("| function | n | nanprop plan: evaluations | time outside f | SciPy approx_derivative(sparsity): evaluations | time outside f | overhead ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, n in [("2-D Bratu", 300 * 300), ("tridiagonal", 10**5)]:
        f = scale_function(name, n, np)
        x0 = np.random.default_rng(1).uniform(0.5, 1.5, n)
        p = nanprop.trace(f, x0, m=n, progress=False)
        plan = nanprop.JacobianPlan(p)
        fx = f(x0)
        g = Counted(f)
        _, t_plan = timed(lambda: plan.evaluate(g, x0, fx))
        plan_evals, plan_f = g.calls, g.seconds
        g = Counted(f)
        _, t_sp = timed(lambda: approx_derivative(g, x0, method="2-point", f0=fx, sparsity=p.to_scipy()))
        print(
            f"| {name} | {n} | {plan_evals} | {(t_plan - plan_f) * 1e3:.1f} ms | {g.calls} | "
            f"{(t_sp - g.seconds) * 1e3:.1f} ms | {(t_plan - plan_f) / max(t_sp - g.seconds, 1e-9):.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--one":
        one(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "--scale":
        scale(int(sys.argv[2]) if len(sys.argv) > 2 else 10**6)
    else:
        main()
