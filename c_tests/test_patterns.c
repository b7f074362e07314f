/* Patterns traced from C black boxes, checked exactly, for every strategy. */
#include <math.h>
#include <stdlib.h>
#include "check.h"

static const unsigned strategies[] = {NANPROP_STRATEGY_ONE_HOT, NANPROP_STRATEGY_CHUNKED,
                                      NANPROP_STRATEGY_PAYLOAD, NANPROP_STRATEGY_DEFAULT};

static unsigned verify = 1;

static nanprop_pattern *trace_with(nanprop_blackbox f, void *ud, size_t n, size_t m, const double *x0,
                                   unsigned strategy, size_t chunk) {
    nanprop_options o;
    nanprop_options_init(&o);
    o.strategy = strategy;
    o.chunk_size = chunk;
    o.verify = verify;
    nanprop_pattern *p = NULL;
    CHECK_STATUS(nanprop_trace(f, ud, n, m, x0, &o, &p), NANPROP_OK);
    return p;
}

/* y = x^2 at x = 0: the derivative is 0 there, yet the dependency is found. */
static int square(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    y[0] = x[0] * x[0];
    return 0;
}

/* y = x - x: always 0, but NaN - NaN is NaN: a documented false positive. */
static int self_cancel(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    y[0] = x[0] - x[0];
    y[1] = x[1];
    return 0;
}

/* Tridiagonal with a nonlinear term; n = m = *(size_t *)ud. */
static int tridiagonal(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)m;
    for (size_t i = 0; i < n; i++) {
        double l = i > 0 ? x[i - 1] : 0.0, r = i + 1 < n ? x[i + 1] : 0.0;
        y[i] = l - 2.0 * x[i] + r + x[i] * x[i] * x[i];
    }
    return 0;
}

/* Block diagonal, blocks of 4: each output is a product within its block. */
static int blocks(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)m;
    for (size_t i = 0; i < n; i++) {
        size_t s = i / 4 * 4;
        double prod = 1.0;
        for (size_t j = s; j < s + 4 && j < n; j++) prod *= (1.0 + x[j] * (double)(j + 1));
        y[i] = prod;
    }
    return 0;
}

/* y0 = 42 (depends on nothing), y1 = x0 * x2, y2 = exp(x2); x1 affects nothing. */
static int constants(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    y[0] = 42.0;
    y[1] = x[0] * x[2];
    y[2] = exp(x[2]);
    return 0;
}

/* Computes in single precision: the tags survive the float round trip (bits 50..29). */
static int in_float(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)m;
    for (size_t i = 0; i < n; i++) {
        float a = (float)x[i], b = (float)x[(i + 1) % n];
        y[i] = (double)(a * 2.0f + b);
    }
    return 0;
}

/* Sanitizes its input the way some legacy codes do: isnan(x) ? 0 : x. At x = 0 the NaN is
 * absorbed (the output stays 0); only verification by a finite step sees the dependency. */
static int guarded(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    y[0] = 2.0 * (isnan(x[0]) ? 0.0 : x[0]);
    y[1] = x[1] * x[1];
    return 0;
}

int main(void) {
    nanprop_pattern *p;

    /* Verification by finite perturbation (on by default) finds what NaN tracing cannot. */
    {
        double x[2] = {0.0, 1.0};
        nanprop_options o;
        nanprop_options_init(&o);
        CHECK(o.verify == 1);
        o.verify = 0;
        CHECK_STATUS(nanprop_trace(guarded, NULL, 2, 2, x, &o, &p), NANPROP_OK);
        CHECK(nanprop_pattern_nnz(p) == 1 && nanprop_pattern_verification_evaluations(p) == 0);
        nanprop_pattern_free(p);
        CHECK_STATUS(nanprop_trace(guarded, NULL, 2, 2, x, NULL, &p), NANPROP_OK);
        static const char *const g[] = {"#.", ".#"};
        CHECK(pattern_is(p, 2, 2, g));
        unsigned char kinds[2];
        CHECK_STATUS(nanprop_pattern_entry_kinds(p, kinds), NANPROP_OK);
        CHECK(kinds[0] == NANPROP_ENTRY_PERTURBATION && kinds[1] == NANPROP_ENTRY_TRACED);
        CHECK(nanprop_pattern_found_by_perturbation(p) == 1);
        CHECK(nanprop_pattern_verification_evaluations(p) > 0);
        CHECK(nanprop_pattern_verification_evaluations(p) < nanprop_pattern_evaluations(p));
        nanprop_pattern_free(p);
        nanprop_options_init(&o);
        o.verify = 2;
        CHECK_STATUS(nanprop_trace(guarded, NULL, 2, 2, x, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
        nanprop_options_init(&o);
        o.verify_step = -1.0;
        CHECK_STATUS(nanprop_trace(guarded, NULL, 2, 2, x, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    }

    for (size_t s = 0; s < sizeof strategies / sizeof *strategies; s++) {
        double zero = 0.0;
        p = trace_with(square, NULL, 1, 1, &zero, strategies[s], 1);
        static const char *const sq[] = {"#"};
        CHECK(pattern_is(p, 1, 1, sq));
        nanprop_pattern_free(p);

        double x2[2] = {1.5, 2.5};
        p = trace_with(self_cancel, NULL, 2, 2, x2, strategies[s], 1);
        static const char *const sc[] = {"#.", ".#"};
        CHECK(pattern_is(p, 2, 2, sc));
        nanprop_pattern_free(p);

        double x3[3] = {1.0, 2.0, 3.0};
        p = trace_with(constants, NULL, 3, 3, x3, strategies[s], 1);
        static const char *const cs[] = {"...", "#.#", "..#"};
        CHECK(pattern_is(p, 3, 3, cs));
        nanprop_pattern_free(p);

        double xb[12];
        for (int j = 0; j < 12; j++) xb[j] = 0.1 * j;
        p = trace_with(blocks, NULL, 12, 12, xb, strategies[s], 4);
        static const char *const bd[] = {
            "####........", "####........", "####........", "####........",
            "....####....", "....####....", "....####....", "....####....",
            "........####", "........####", "........####", "........####"};
        CHECK(pattern_is(p, 12, 12, bd));
        nanprop_pattern_free(p);

        double xf[4] = {0.5, 1.5, 2.5, 3.5};
        p = trace_with(in_float, NULL, 4, 4, xf, strategies[s], 1);
        static const char *const fl[] = {"##..", ".##.", "..##", "#..#"};
        CHECK(pattern_is(p, 4, 4, fl));
        nanprop_pattern_free(p);
    }

    /* Tridiagonal, n = 60: exact for one-hot and payload; payload needs far fewer evaluations.
     * Counts of NaN tracing alone (verify = 0), then with verification, which doubles every
     * probe: 1 + 2 (evaluations - 1). */
    enum { N = 60 };
    double x0[N];
    for (int j = 0; j < N; j++) x0[j] = 1.0 + 0.01 * j;
    size_t evals[4];
    for (int s = 0; s < 4; s++) {
        unsigned strategy = s % 2 == 0 ? NANPROP_STRATEGY_ONE_HOT : NANPROP_STRATEGY_PAYLOAD;
        verify = s >= 2;
        p = trace_with(tridiagonal, NULL, N, N, x0, strategy, 1);
        size_t row_ptr[N + 1], col_idx[3 * N];
        CHECK(nanprop_pattern_nnz(p) == 3 * N - 2);
        CHECK_STATUS(nanprop_pattern_csr(p, row_ptr, col_idx), NANPROP_OK);
        int ok = row_ptr[0] == 0;
        for (size_t i = 0; i < N; i++) {
            size_t k = row_ptr[i];
            for (size_t j = i > 0 ? i - 1 : 0; j <= i + 1 && j < N; j++) ok = ok && col_idx[k++] == j;
            ok = ok && k == row_ptr[i + 1];
        }
        CHECK(ok);
        CHECK(nanprop_pattern_unresolved(p) == 0);
        evals[s] = nanprop_pattern_evaluations(p);
        nanprop_pattern_free(p);
    }
    CHECK(evals[0] == N + 1);
    CHECK(evals[1] < N / 2);
    /* Verification: at most one more evaluation per probe (only probes that proved a zero). */
    CHECK(evals[2] > evals[0] && evals[2] <= 1 + 2 * (evals[0] - 1));
    CHECK(evals[3] > evals[1] && evals[3] <= 1 + 2 * (evals[1] - 1));
    printf("tridiagonal n = %d: one-hot %zu evaluations, payload %zu (verified: %zu, %zu)\n", N, evals[0],
           evals[1], evals[2], evals[3]);
    verify = 1;

    /* A budget of 4 evaluations: the rest is kept as possible and counted. */
    nanprop_options o;
    nanprop_options_init(&o);
    o.max_evaluations = 4;
    CHECK_STATUS(nanprop_trace(tridiagonal, NULL, N, N, x0, &o, &p), NANPROP_OK);
    CHECK(nanprop_pattern_evaluations(p) <= 4);
    CHECK(nanprop_pattern_unresolved(p) > 0);
    {
        size_t nnz = nanprop_pattern_nnz(p), unresolved = 0;
        unsigned char *kinds = malloc(nnz);
        CHECK_STATUS(nanprop_pattern_entry_kinds(p, kinds), NANPROP_OK);
        for (size_t k = 0; k < nnz; k++) unresolved += kinds[k] == NANPROP_ENTRY_UNRESOLVED;
        CHECK(unresolved == nanprop_pattern_unresolved(p));
        free(kinds);
    }
    nanprop_pattern_free(p);

    return check_report("test_patterns");
}
