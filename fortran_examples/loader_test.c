/* Loader mode from C: traces compiled Fortran in shared libraries by symbol name.
 * Usage: loader_test LIBBEAM LIBMINPACK_FCN LIBLAPACK_BOX LIBBEAM_INTEGER8
 * (built from beam.f, minpack_fcn.f, lapack_box.f and beam.f with -fdefault-integer-8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nanprop.h"

static int passed = 0, failed = 0;
#define CHECK(c) do { if (c) passed++; else { failed++; fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #c, nanprop_last_error()); } } while (0)

/* Row i of pattern p as a string of '#'/'.' of length n, into buf. */
static const char *row(const nanprop_pattern *p, size_t i, char *buf) {
    size_t m = nanprop_pattern_rows(p), n = nanprop_pattern_cols(p), nnz = nanprop_pattern_nnz(p);
    size_t *rp = malloc((m + 1) * sizeof *rp), *ci = malloc((nnz + 1) * sizeof *ci);
    nanprop_pattern_csr(p, rp, ci);
    memset(buf, '.', n);
    buf[n] = 0;
    for (size_t k = rp[i]; k < rp[i + 1]; k++) buf[ci[k]] = '#';
    free(rp);
    free(ci);
    return buf;
}

static void check_beam(nanprop_loaded *b, size_t n) {
    double x0[16];
    char buf[32], want[32];
    for (size_t j = 0; j < n; j++) x0[j] = 100.0 + 10.0 * (double)j;
    nanprop_pattern *p = NULL;
    CHECK(nanprop_loaded_trace(b, x0, NULL, &p) == NANPROP_OK);
    if (!p) return;
    int ok = 1;
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = 0; j < n; j++) want[j] = (i == n || j >= i) ? '#' : '.';
        want[n] = 0;
        ok = ok && strcmp(row(p, i, buf), want) == 0;
    }
    CHECK(ok); /* stresses depend on outboard loads; the tip deflection on all */
    /* The Jacobian through the same handle: dy0/dx0 = dx * 0.5 dx / Z. */
    double values[16 * 17];
    size_t evals = 0;
    CHECK(nanprop_loaded_jacobian(b, x0, p, NULL, values, &evals) == NANPROP_OK);
    double dx = 2.0 / (double)n, exact = dx * 0.5 * dx / 1e-4;
    CHECK(evals == n + 1);
    CHECK(values[0] > exact * (1 - 1e-5) && values[0] < exact * (1 + 1e-5));
    nanprop_pattern_free(p);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s LIBBEAM LIBMINPACK_FCN LIBLAPACK_BOX LIBBEAM_INTEGER8\n", argv[0]);
        return 2;
    }
    const char *libbeam = argv[1], *libminpack = argv[2], *liblapack = argv[3], *libbeam8 = argv[4];
    nanprop_loaded *b = NULL;
    char buf[32];

    /* Fortran by reference, default INTEGER; the name as written in the source. */
    CHECK(nanprop_loaded_open(libbeam, "BEAM", NANPROP_CONVENTION_FORTRAN, 8, 9, 4, &b) == NANPROP_OK);
    CHECK(strcmp(nanprop_loaded_symbol(b), "beam_") == 0);
    check_beam(b, 8);
    /* Its function works with every API through nanprop_loaded_blackbox. */
    nanprop_blackbox f = NULL;
    void *ud = NULL;
    CHECK(nanprop_loaded_blackbox(b, &f, &ud) == NANPROP_OK && f && ud == b);
    double x0[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    nanprop_pattern *p = NULL;
    CHECK(nanprop_trace(f, ud, 8, 9, x0, NULL, &p) == NANPROP_OK && nanprop_pattern_nnz(p) == 36 + 8);
    nanprop_pattern_free(p);
    nanprop_loaded_close(b);

    /* -fdefault-integer-8 code, told so. */
    CHECK(nanprop_loaded_open(libbeam8, "beam", NANPROP_CONVENTION_FORTRAN, 8, 9, 8, &b) == NANPROP_OK);
    check_beam(b, 8);
    nanprop_loaded_close(b);

    /* MINPACK hybrd: tridiagonal; iflag < 0 is a failure. */
    CHECK(nanprop_loaded_open(libminpack, "tridg", NANPROP_CONVENTION_MINPACK_HYBRD, 6, 6, 0, &b) == NANPROP_OK);
    double xt[6] = {-1, -1, -1, -1, -1, -1};
    CHECK(nanprop_loaded_trace(b, xt, NULL, &p) == NANPROP_OK);
    CHECK(strcmp(row(p, 0, buf), "##....") == 0 && strcmp(row(p, 3, buf), "..###.") == 0);
    nanprop_pattern_free(p);
    xt[0] = 2000.0;
    CHECK(nanprop_loaded_trace(b, xt, NULL, &p) == NANPROP_ERR_BLACKBOX);
    CHECK(strstr(nanprop_last_error(), "returned -1") != NULL);
    nanprop_loaded_close(b);

    /* MINPACK lmdif, a name with an underscore (gfortran: rosen_chain_). */
    CHECK(nanprop_loaded_open(libminpack, "ROSEN_CHAIN", NANPROP_CONVENTION_MINPACK_LMDIF, 6, 6, 4, &b) == NANPROP_OK);
    CHECK(strcmp(nanprop_loaded_symbol(b), "rosen_chain_") == 0);
    double xr[6] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
    CHECK(nanprop_loaded_trace(b, xr, NULL, &p) == NANPROP_OK);
    CHECK(strcmp(row(p, 0, buf), "##....") == 0 && strcmp(row(p, 5, buf), "#.....") == 0);
    nanprop_pattern_free(p);
    nanprop_loaded_close(b);

    /* A vendor library: LAPACK's dgesv on a diagonal matrix. 0 * NaN = NaN in the solve: every
     * output is reported as depending on every input (a documented false positive). */
    CHECK(nanprop_loaded_open(liblapack, "lsolve", NANPROP_CONVENTION_FORTRAN, 5, 5, 4, &b) == NANPROP_OK);
    double xl[5] = {1, 2, 3, 4, 5};
    CHECK(nanprop_loaded_trace(b, xl, NULL, &p) == NANPROP_OK);
    CHECK(nanprop_pattern_nnz(p) == 25);
    nanprop_pattern_free(p);
    nanprop_loaded_close(b);

    /* Errors: names tried, missing file, not a library, bad arguments. */
    CHECK(nanprop_loaded_open(libbeam, "wing_wt", NANPROP_CONVENTION_FORTRAN, 8, 9, 4, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(b == NULL);
    CHECK(strstr(nanprop_last_error(), "wing_wt_, wing_wt__, WING_WT") != NULL);
    CHECK(strstr(nanprop_last_error(), libbeam) != NULL);
    CHECK(nanprop_loaded_open("/nonexistent/libx.so", "f", NANPROP_CONVENTION_C, 2, 2, 4, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(nanprop_last_error(), "not found") != NULL);
    FILE *t = fopen("loader_test_not_a_library.txt", "w");
    if (t) { fputs("not a library\n", t); fclose(t); }
    CHECK(nanprop_loaded_open("loader_test_not_a_library.txt", "f", NANPROP_CONVENTION_C, 2, 2, 4, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(nanprop_last_error(), "not a loadable shared library") != NULL);
    remove("loader_test_not_a_library.txt");
    CHECK(nanprop_loaded_open(libbeam, "beam", NANPROP_CONVENTION_FORTRAN, 0, 9, 4, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(strstr(nanprop_last_error(), "missing") != NULL);
    CHECK(nanprop_loaded_open(libbeam, "beam", 9, 8, 9, 4, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(nanprop_loaded_open(libbeam, "beam", NANPROP_CONVENTION_FORTRAN, 8, 9, 3, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(nanprop_loaded_open(NULL, "beam", NANPROP_CONVENTION_FORTRAN, 8, 9, 4, &b) == NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(nanprop_loaded_trace(NULL, x0, NULL, &p) == NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_loaded_close(NULL);

    printf("loader_test: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
