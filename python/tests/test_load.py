"""A Fortran routine through nanprop.load: traced and differentiated with no Python in the
loop (gfortran required under CI)."""

import os
import subprocess

import numpy as np
import pytest

import nanprop
from conftest import REPO, require


@pytest.fixture(scope="module")
def beam_library(tmp_path_factory):
    gfortran = require("gfortran", "the Fortran routine of the Python tests")
    out = tmp_path_factory.mktemp("beam") / "libbeam.so"
    src = os.path.join(REPO, "fortran_examples", "beam.f")
    subprocess.run([gfortran, "-O2", "-shared", "-fPIC", src, "-o", str(out)], check=True)
    return out


def beam_truth(n):
    # y_i (stress of element i) depends on x_i..x_n; y_{n+1} (tip deflection) on every x.
    truth = np.zeros((n + 1, n), dtype=bool)
    for i in range(n):
        truth[i, i:] = True
    truth[n, :] = True
    return truth


def test_a_fortran_routine_is_traced_and_differentiated_through_load(beam_library):
    n = 40
    beam = nanprop.load(beam_library, "beam", "fortran", n=n, m=n + 1)
    assert beam.symbol == "beam_" and (beam.n, beam.m) == (n, n + 1)
    x0 = np.linspace(100.0, 200.0, n)
    y0 = beam(x0)
    assert y0.shape == (n + 1,)
    p = nanprop.trace(beam, x0)
    assert (p.to_scipy().toarray().astype(bool) == beam_truth(n)).all()
    # The beam is linear in its loads: central differences are exact up to rounding.
    J = nanprop.jacobian(beam, x0, p, method="central").toarray()
    e = np.zeros(n)
    e[3] = 1.0
    column = beam(x0 + e) - y0
    assert np.allclose(J[:, 3], column, rtol=1e-6, atol=1e-12 * np.abs(y0).max())
    # threads work for a loaded routine (the library calls it; no GIL involved)
    q = nanprop.trace(beam, x0, threads=2)
    assert q == p


def test_load_errors_are_clear(beam_library):
    with pytest.raises(nanprop.InvalidArgumentError, match="names tried"):
        nanprop.load(beam_library, "no_such_routine", n=3, m=4)
    with pytest.raises(nanprop.InvalidArgumentError, match="convention"):
        nanprop.load(beam_library, "beam", "pascal", n=3, m=4)
    with pytest.raises(nanprop.InvalidArgumentError, match="not found"):
        nanprop.load("/nonexistent/libx.so", "beam", n=3, m=4)
    beam = nanprop.load(beam_library, "beam", n=5, m=6)
    with pytest.raises(nanprop.InvalidArgumentError, match="n = 5"):
        nanprop.trace(beam, np.ones(4))


def test_real4_routines_through_load_and_float32_python_functions(tmp_path):
    gfortran = require("gfortran", "the REAL*4 routine of the Python tests")
    lib = tmp_path / "libsingle.so"
    src = os.path.join(REPO, "fortran_examples", "single.f")
    subprocess.run([gfortran, "-O2", "-shared", "-fPIC", src, "-o", str(lib)], check=True)
    n = 30
    band4 = nanprop.load(lib, "band4", "fortran", n=n, m=n, real=4)
    assert band4.real == 4
    x0 = (0.25 + (np.arange(n) % 7) / 8.0).astype(np.float32)
    p = nanprop.trace(band4, x0)
    width = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    assert (p.to_scipy().toarray().astype(bool) == (width <= 2)).all()
    assert p.report["via_float"] > 0
    exact = np.where(width <= 2, -(1.0 + 2.0 * x0[None, :].astype(float)), 0.0)
    np.fill_diagonal(exact, 2.0 + 15.0 * x0.astype(float) ** 2)
    J = nanprop.jacobian(band4, x0, p).toarray()
    assert np.abs(J - exact).max() / np.abs(exact).max() < 2e-3
    Jc = nanprop.jacobian(band4, x0, p, method="central").toarray()
    assert np.abs(Jc - exact).max() / np.abs(exact).max() < 1e-4

    # The same function in numpy float32: traced and differentiated in single precision.
    def band(x):
        assert x.dtype == np.float32
        y = x * (2 + 5 * x * x) + 1
        for d in (1, 2):
            y[d:] -= x[:-d] * (1 + x[:-d])
            y[:-d] -= x[d:] * (1 + x[d:])
        return y

    q = nanprop.trace(band, x0)
    assert q == p and q.report["via_float"] > 0
    J32 = nanprop.JacobianPlan(q).evaluate(band, x0)
    assert J32.dtype == np.float32
    assert np.abs(J32.toarray() - exact).max() / np.abs(exact).max() < 2e-3


CONSTRUCTORS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* Logs the pid of every process that loads the library; aborts when NANPROP_TEST_ABORT is set. */
__attribute__((constructor)) static void on_load(void) {
    const char *log = getenv("NANPROP_TEST_LOG");
    if (log) {
        FILE *f = fopen(log, "a");
        if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
    }
    if (getenv("NANPROP_TEST_ABORT")) abort();
}
void twice(const double *x, double *y) {
    for (int i = 0; i < 4; i++) y[i] = 2.0 * x[i] + (i > 0 ? x[i - 1] : 0.0);
}
"""


def test_open_in_worker_keeps_the_library_out_of_python(tmp_path, monkeypatch):
    cc = require("cc", "the constructor library of the Python tests")
    src, lib, log = tmp_path / "ctor.c", tmp_path / "libctor.so", tmp_path / "pids"
    src.write_text(CONSTRUCTORS)
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    monkeypatch.setenv("NANPROP_TEST_LOG", str(log))
    f = nanprop.load(lib, "twice", "c", n=4, m=4, open_in_worker=True)
    p = nanprop.trace(f, np.ones(4), isolate=True)
    assert p.nnz == 7
    pids = {int(line) for line in log.read_text().split()}
    assert pids and os.getpid() not in pids
    # A constructor that aborts is an error, and Python lives on.
    monkeypatch.setenv("NANPROP_TEST_ABORT", "1")
    with pytest.raises(nanprop.BlackBoxError, match="SIGABRT"):
        nanprop.load(lib, "twice", "c", n=4, m=4, open_in_worker=True)
