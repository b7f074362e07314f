"""Tracing Python callables: exact patterns, entry kinds, options, errors."""

import faulthandler
import traceback
import weakref

import numpy as np
import pytest
import scipy.sparse

import nanprop
from conftest import bratu, random_sparse, tridiagonal


def dense_of(p):
    return p.to_scipy().toarray() != 0


def test_tridiagonal_is_exact_with_far_fewer_evaluations_than_n():
    n = 1000
    p = nanprop.trace(tridiagonal, np.zeros(n))
    truth = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    assert p.shape == (n, n)
    assert (dense_of(p) == truth).all()
    assert p.nnz == 3 * n - 2
    assert p.evaluations < 60, p.evaluations
    assert p.kinds.dtype == np.uint8 and p.kinds.shape == (p.nnz,)
    assert (p.kinds == nanprop.EntryKind.TRACED).all()
    assert p.report["evaluations"] == p.evaluations


def test_bratu_2d_is_exact():
    N = 20
    f, jac = bratu(N)
    x0 = np.full(N * N, 0.1)
    p = nanprop.trace(f, x0)
    assert (dense_of(p) == (jac(x0) != 0)).all()
    assert p.evaluations < N * N / 4


def test_random_sparse_is_exact():
    f, truth = random_sparse(500, 800, 5, seed=3)
    x0 = np.random.default_rng(4).standard_normal(800)
    p = nanprop.trace(f, x0)
    assert (dense_of(p) == truth).all()
    assert p.evaluations < 800 + 1


def test_a_scalar_objective_gets_its_exact_gradient_pattern():
    # One output of 30 spread inputs among 5000: its blocks share one probe a level, which
    # teaches one input and proves nothing zero, and the row ended with nearly every column
    # an assumed entry; it is peeled now, one input a probe.
    n = 5000
    cols = np.random.default_rng(5).choice(n, 30, replace=False)

    def objective(x):
        return np.array([np.sum(np.sin(x[cols]))])

    p = nanprop.trace(objective, np.full(n, 0.3))
    assert p.shape == (1, n)
    assert sorted(p.row(0)) == sorted(cols)
    assert (p.kinds == nanprop.EntryKind.TRACED).all()
    assert p.evaluations < 200, p.evaluations


def test_pattern_round_trips_through_scipy_and_arrays():
    p = nanprop.trace(tridiagonal, np.zeros(50))
    A = p.to_scipy()
    assert isinstance(A, scipy.sparse.csr_matrix) and A.shape == (50, 50)
    assert A.indices.dtype == np.int32
    q = nanprop.Pattern.from_scipy(A.tocoo())
    assert q == p and q.evaluations == 0
    r = nanprop.Pattern(50, 50, p.indptr, p.indices)
    assert r == p
    assert (3, 4) in p and (3, 5) not in p
    assert list(p.row(0)) == [0, 1]
    with pytest.raises(nanprop.InvalidArgumentError, match="sorted"):
        nanprop.Pattern(1, 3, [0, 2], [2, 1])
    with pytest.raises(nanprop.InvalidArgumentError, match="negative"):
        nanprop.Pattern(1, 3, [0, 1], [-1])


def test_coloring_separates_columns_sharing_a_row():
    f, truth = random_sparse(300, 300, 4, seed=5)
    p = nanprop.trace(f, np.ones(300))
    colors = nanprop.coloring(p)
    assert colors.shape == (300,)
    for i in range(300):
        row = colors[p.row(i)]
        assert len(set(row)) == len(row), f"row {i} holds two columns of one color"
    natural = nanprop.coloring(p, order="natural")
    assert colors.max() <= natural.max()
    with pytest.raises(nanprop.InvalidArgumentError, match="unknown order"):
        nanprop.coloring(p, order="alphabetical")


def test_a_grid_stencil_is_colored_at_its_longest_row():
    # The 5-point stencil on a 40 x 40 grid numbered row by row (a width that is a multiple
    # of 5): the default colors it by formula with 5 colors, the natural order needs 7.
    g = 40
    laplacian = scipy.sparse.diags(
        [1.0, 1.0, -4.0, 1.0, 1.0], [-g, -1, 0, 1, g], shape=(g * g, g * g)
    )
    # No wrap-around between the grid's rows.
    A = laplacian.tolil()
    for r in range(1, g):
        A[r * g, r * g - 1] = 0
        A[r * g - 1, r * g] = 0
    A = A.tocsr()
    A.eliminate_zeros()
    colors = nanprop.coloring(A)
    assert colors.max() + 1 == 5
    for i in range(g * g):
        row = colors[A.indices[A.indptr[i] : A.indptr[i + 1]]]
        assert len(set(row)) == len(row), f"row {i} holds two columns of one color"
    assert nanprop.coloring(A, order="natural").max() + 1 == 7


def test_nan_in_x0_raises_invalid_argument():
    with pytest.raises(nanprop.InvalidArgumentError, match="x0\\[1\\]"):
        nanprop.trace(tridiagonal, np.array([1.0, np.nan, 2.0]))


def test_an_exception_in_f_propagates_as_itself_with_its_traceback():
    def f(x):
        if x[0] > 5:
            raise RuntimeError("boom from f")
        return x

    with pytest.raises(RuntimeError, match="boom from f") as info:
        nanprop.trace(f, np.array([6.0, 1.0]), m=2)
    frames = [frame.f_code.co_name for frame, _ in traceback.walk_tb(info.value.__traceback__)]
    assert "f" in frames, frames
    assert any("baseline" in note for note in getattr(info.value, "__notes__", []))


def test_an_exception_on_nan_is_read_as_refusing_nan_and_traced_around():
    # int(nan) raises ValueError: a code that cannot take NaN. Row i depends on x_i, x_{i+1}.
    def f(x):
        k = [int(v * 1000) for v in x]
        return np.array([k[i] + 2 * k[(i + 1) % len(k)] for i in range(len(k))], dtype=float)

    n = 30
    x0 = np.linspace(1.0, 2.0, n)
    p = nanprop.trace(f, x0)
    truth = np.zeros((n, n), dtype=bool)
    truth[np.arange(n), np.arange(n)] = True
    truth[np.arange(n), (np.arange(n) + 1) % n] = True
    assert (dense_of(p) == truth).all()
    assert p.report["failed_columns"] == list(range(n))
    assert (p.kinds == nanprop.EntryKind.PERTURBATION).all()


def test_keyboard_interrupt_stops_the_trace():
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return tridiagonal(x)

    with pytest.raises(KeyboardInterrupt):
        nanprop.trace(f, np.zeros(1000), m=1000)
    assert len(calls) == 4, "f was called again after KeyboardInterrupt"


def test_a_wrong_number_of_outputs_is_a_clear_error():
    with pytest.raises(ValueError, match="returned 3 values, expected m = 10"):
        nanprop.trace(lambda x: x[:3], np.zeros(10), m=10)
    with pytest.raises(ValueError, match="1-D array"):
        nanprop.trace(lambda x: np.outer(x, x), np.zeros(4), m=16)


def test_m_is_learned_from_f_of_x0():
    p = nanprop.trace(lambda x: np.array([x[0] * x[1], np.sin(x[2])]), np.ones(3))
    assert p.shape == (2, 3)
    assert list(p.row(0)) == [0, 1] and list(p.row(1)) == [2]


def test_options_are_checked_by_name():
    with pytest.raises(TypeError, match="bogus"):
        nanprop.trace(tridiagonal, np.zeros(5), bogus=1)
    with pytest.raises(nanprop.InvalidArgumentError, match="strategy"):
        nanprop.trace(tridiagonal, np.zeros(5), strategy="magic")
    with pytest.raises(nanprop.InvalidArgumentError, match="processes"):
        nanprop.trace(tridiagonal, np.zeros(5), threads=2)
    with pytest.raises(nanprop.InvalidArgumentError, match="verify_step"):
        nanprop.trace(tridiagonal, np.zeros(5), verify_step=-1.0)


def test_one_hot_costs_n_plus_one_and_agrees():
    n = 40
    p = nanprop.trace(tridiagonal, np.zeros(n), strategy="one-hot", verify=False)
    q = nanprop.trace(tridiagonal, np.zeros(n))
    assert p.evaluations == n + 1
    assert p == q


def test_a_budget_keeps_what_it_could_not_resolve():
    n = 200
    p = nanprop.trace(tridiagonal, np.zeros(n), max_evaluations=10)
    assert p.evaluations <= 10
    assert p.report["budget_exhausted"]
    truth = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    assert (dense_of(p) | ~truth).all(), "a budget lost a true entry"
    assert (p.kinds == nanprop.EntryKind.UNRESOLVED).any()


def test_several_points_give_the_union_of_their_patterns():
    def f(x):  # y0 depends on x1 only where x0 > 0
        return np.array([x[1] if x[0] > 0 else 0.0, x[2]])

    p = nanprop.trace(f, [[1.0, 1.0, 1.0], [-1.0, 1.0, 1.0]])
    assert list(p.row(0)) == [0, 1] or list(p.row(0)) == [1]
    assert 1 in p.row(0)
    q = nanprop.trace(f, [-1.0, 1.0, 1.0])
    assert 1 not in q.row(0)


def test_isolation_turns_a_crash_into_an_error_and_processes_trace_python():
    def crash(x):
        import ctypes

        if x[0] > 5:
            ctypes.string_at(0)  # a segmentation fault
        return x

    # pytest's faulthandler would print the crashed worker's Python stack: not needed here.
    enabled = faulthandler.is_enabled()
    faulthandler.disable()
    try:
        with pytest.raises(nanprop.BlackBoxError, match="SIGSEGV"):
            nanprop.trace(crash, np.array([6.0, 1.0]), m=2, isolate=True)
    finally:
        if enabled:
            faulthandler.enable()
    p = nanprop.trace(tridiagonal, np.zeros(300), processes=2)
    assert p.nnz == 3 * 300 - 2


def test_noise_is_estimated_and_tolerated_or_raises():
    rng = np.random.default_rng(3)
    n = 300

    def jittery(x):
        y = x.copy()
        y[1:] += 0.5 * x[:-1]
        return y * (1.0 + 1e-13 * rng.uniform(-1.0, 1.0, n))

    p = nanprop.trace(jittery, np.linspace(1.0, 2.0, n))
    expected = scipy.sparse.eye(n) + scipy.sparse.eye(n, k=-1)
    assert (p.to_scipy() != (expected != 0)).nnz == 0
    sigma = 1e-13 / np.sqrt(3.0)
    assert sigma / 2 < p.report["noise"] < 2 * sigma
    assert p.report["tolerance"] >= 100 * p.report["noise"]
    with pytest.raises(nanprop.BlackBoxError, match="noisy"):
        nanprop.trace(jittery, np.linspace(1.0, 2.0, n), noise="error")
    with pytest.raises(nanprop.InvalidArgumentError):
        nanprop.trace(jittery, np.linspace(1.0, 2.0, n), noise="ignore")


def test_progress_callback_sees_every_evaluation():
    seen = []
    p = nanprop.trace(tridiagonal, np.zeros(500), progress=lambda *a: seen.append(a))
    assert len(seen) == p.evaluations
    assert seen[-1][0] == p.evaluations and all(e <= plan for e, plan, _, _ in seen)
    nanprop.trace(tridiagonal, np.zeros(50), progress=True)  # the bar (tqdm or the text line)


def test_journal_resumes_without_evaluating_again(tmp_path):
    calls = []

    def f(x):
        calls.append(1)
        return tridiagonal(x)

    path = tmp_path / "trace.journal"
    p = nanprop.trace(f, np.zeros(200), m=200, journal=path, function_id="tridiagonal")
    first = len(calls)
    q = nanprop.trace(f, np.zeros(200), m=200, journal=path, function_id="tridiagonal")
    assert q == p and len(calls) == first
    assert q.report["replayed"] == q.evaluations
    with pytest.raises(nanprop.InvalidArgumentError, match="function"):
        nanprop.trace(f, np.zeros(200), m=200, journal=path, function_id="another")


def test_help_is_a_usable_page():
    doc = nanprop.trace.__doc__
    for word in ("max_evaluations", "isolate", "Raises", "EntryKind", "Returns"):
        assert word in doc
    assert "convention" in nanprop.load.__doc__
    assert nanprop.Pattern.__doc__ and nanprop.JacobianPlan.__doc__


def test_f_result_is_held_until_its_next_call_returns():
    # Let go as soon as it was read, f's result freed glibc's heap top, and the next call
    # faulted its temporaries' pages in again (python/src/callable.rs). Held one call longer:
    # during a call the result of the call before is alive, the one before that is gone, and
    # the argument (which f keeps nothing of) is the same array, filled again.
    n = 64
    results, args, seen = [], [], []

    def f(x):
        seen.append(
            (
                len(results) >= 1 and results[-1]() is not None,
                len(results) < 2 or results[-2]() is None,
                len(args) >= 1 and args[-1]() is x,
            )
        )
        y = np.concatenate([x[1:] * x[:-1], x[:1]])
        results.append(weakref.ref(y))
        args.append(weakref.ref(x))
        return y

    p = nanprop.trace(f, np.linspace(0.5, 1.5, n), m=n)  # m given: every call is the trace's
    assert p.nnz == 2 * n - 1
    assert len(seen) > 10
    assert all(held and gone and same for held, gone, same in seen[1:]), seen


def test_a_result_that_views_the_argument_does_not_pin_it():
    # f returning its argument (or a view of it) would pin the array the next call fills: that
    # result is let go at once, and the argument is still filled again, never replaced.
    n = 64
    args, same = [], []

    def f(x):
        same.append(len(args) >= 1 and args[-1]() is x)
        args.append(weakref.ref(x))
        return x[::-1]

    p = nanprop.trace(f, np.linspace(0.5, 1.5, n), m=n)
    assert p.nnz == n
    assert len(same) > 5 and all(same[1:]), same


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_f_gets_a_fresh_array_whatever_it_did_with_the_last(dtype):
    # The array of a call f kept nothing of is filled again for the next call; one f kept (a
    # name, a view), changed in place, froze or reshaped must not be touched or reused.
    n = 64
    kept, seen, shapes = [], [], set()

    def f(x):
        shapes.add((x.shape, x.dtype, x.flags.writeable))
        seen.append(x.copy())
        y = np.concatenate([x[1:] * x[:-1], x[:1]])
        k = len(seen) % 5
        if k == 1:
            kept.append((x, x.copy()))
        elif k == 2:
            kept.append((x[3:], x[3:].copy()))
        elif k == 3:
            x *= 0.0  # f scribbles on its copy: the next call must still see x
        elif k == 4:
            x.flags.writeable = False
        else:
            x.shape = (n // 2, 2)
        return y

    x0 = np.linspace(0.5, 1.5, n).astype(dtype)
    p = nanprop.trace(f, x0)
    truth = np.zeros((n, n), dtype=bool)
    truth[np.arange(n - 1), np.arange(n - 1)] = truth[np.arange(n - 1), np.arange(1, n)] = True
    truth[n - 1, 0] = True
    assert (dense_of(p) == truth).all()
    assert shapes == {((n,), np.dtype(dtype), True)}
    assert len(kept) > 4
    for a, snapshot in kept:
        assert np.array_equal(a, snapshot, equal_nan=True)
        bits = np.uint64 if dtype == np.float64 else np.uint32
        assert np.array_equal(a.view(bits), snapshot.view(bits))
    # Every call saw x0 outside its tagged inputs (or the check's small steps from it), never
    # what f wrote into an earlier call's array.
    for s in seen:
        finite = ~np.isnan(s)
        assert np.allclose(s[finite], x0[finite], rtol=1e-3)
