/* Bad arguments, failing black boxes, outputs not finite at x0: every one gets its status and
 * a message, and nothing crashes. */
#include <math.h>
#include <stddef.h>
#include "check.h"

static int identity(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)m;
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    return 0;
}

/* Fails (returns 5) on its third call. */
static int fails_above_one(void *ud, size_t n, const double *x, size_t m, double *y) {
    int *calls = (int *)ud;
    (void)m;
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    ++*calls;
    return x[0] > 1.0 ? 5 : 0; /* the verification of input 0 moves it up from 1 */
}

/* Casts away const and overwrites x[2], as some legacy codes do with their arguments. */
static int writes_input(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)m;
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    ((double *)x)[2] = 0.0;
    return 0;
}

/* Crashes (NULL dereference) when input 1 is NaN, as a NaN turned into an index would; hangs
 * when input 2 is NaN. */
static int crashes(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud;
    if (isnan(x[1])) {
        volatile double *nowhere = NULL;
        *nowhere = 1.0;
    }
    while (isnan(x[2])) {
    }
    for (size_t i = 0; i < m && i < n; i++) y[i] = x[i];
    return 0;
}

/* Crashes when input 0 moves up from 1 (a finite point: the verification of a probe). */
static int crashes_above_one(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud;
    if (x[0] > 1.0) {
        volatile double *nowhere = NULL;
        *nowhere = 1.0;
    }
    for (size_t i = 0; i < m && i < n; i++) y[i] = x[i];
    return 0;
}

/* y = x, times (1 + 1e-13 e) with e a new pseudo-random number in [-1, 1) at every call and for
 * every output: an iterative solver's jitter. */
static int jitters(void *ud, size_t n, const double *x, size_t m, double *y) {
    unsigned long long *state = (unsigned long long *)ud;
    (void)m;
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        double e = (double)(*state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        y[i] = x[i] * (1.0 + 1e-13 * e);
    }
    return 0;
}

/* Output 1 is NaN at every point (sqrt of a negative number). */
static int nan_output(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    volatile double minus_one = -1.0;
    y[0] = x[0] + x[1];
    y[1] = sqrt(minus_one) + x[2];
    y[2] = x[2];
    return 0;
}

int main(void) {
    double x0[3] = {1.0, 2.0, 3.0};
    nanprop_pattern *p = (nanprop_pattern *)&p; /* not NULL: must be reset to NULL on failure */

    CHECK_STATUS(nanprop_trace(NULL, NULL, 3, 3, x0, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(p == NULL);
    CHECK(error_mentions("f is NULL"));
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, NULL, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("x0 is NULL"));
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, NULL, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("out is NULL"));
    CHECK_STATUS(nanprop_trace(identity, NULL, 0, 3, x0, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("n = 0"));
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 0, x0, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("m = 0"));
    CHECK_STATUS(nanprop_trace(identity, NULL, (size_t)1 << 40, 3, x0, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);

    double bad[3] = {1.0, NAN, 3.0};
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, bad, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("x0[1]"));
    bad[1] = INFINITY;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, bad, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);

    /* Options: an unknown strategy, chunk size 0, a struct from a smaller or larger header. */
    nanprop_options o;
    nanprop_options_init(&o);
    CHECK(o.struct_size == sizeof o && o.version == NANPROP_OPTIONS_VERSION);
    o.strategy = 99;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("strategy"));
    nanprop_options_init(&o);
    o.strategy = NANPROP_STRATEGY_CHUNKED;
    o.chunk_size = 0;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_options_init(&o);
    o.struct_size = 4;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("struct_size"));
    nanprop_options_init(&o);
    o.struct_size = sizeof o + 8;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("newer"));
    nanprop_options_init(NULL); /* no-op, no crash */

    /* Noise: estimated and tolerated by default (exact diagonal pattern, the estimate and the
       tolerance reported); NANPROP_NOISE_ERROR stops naming it; an unknown value is refused;
       a version 2 struct (before the field) gets the default. */
    {
        enum { N = 40 };
        double xn[N];
        for (int j = 0; j < N; j++) xn[j] = 1.0 + j;
        unsigned long long state = 1;
        nanprop_options_init(&o);
        CHECK_STATUS(nanprop_trace(jitters, &state, N, N, xn, &o, &p), NANPROP_OK);
        CHECK(nanprop_pattern_nnz(p) == N);
        double noise = nanprop_pattern_noise(p), tolerance = nanprop_pattern_tolerance(p);
        CHECK(noise > 1e-14 && noise < 2e-13);
        CHECK(tolerance >= 100 * noise && tolerance < 1e-9);
        nanprop_pattern_free(p);
        o.noise = NANPROP_NOISE_ERROR;
        CHECK_STATUS(nanprop_trace(jitters, &state, N, N, xn, &o, &p), NANPROP_ERR_BLACKBOX);
        CHECK(error_mentions("noisy") && error_mentions("verify_tolerance"));
        o.noise = 7;
        CHECK_STATUS(nanprop_trace(jitters, &state, N, N, xn, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
        CHECK(error_mentions("options.noise = 7"));
        o.version = 2;
        o.struct_size = offsetof(nanprop_options, noise);
        CHECK_STATUS(nanprop_trace(jitters, &state, N, N, xn, &o, &p), NANPROP_OK);
        CHECK(nanprop_pattern_tolerance(p) > 0.0);
        nanprop_pattern_free(p);
        CHECK(nanprop_pattern_tolerance(NULL) == 0.0);
    }

    /* A black box that fails at a finite point (the verification of input 0): the status, and
       the evaluation in the message. */
    int calls = 0;
    nanprop_options_init(&o);
    o.strategy = NANPROP_STRATEGY_ONE_HOT;
    CHECK_STATUS(nanprop_trace(fails_above_one, &calls, 3, 3, x0, &o, &p), NANPROP_ERR_BLACKBOX);
    CHECK(p == NULL);
    CHECK(error_mentions("returned 5"));
    CHECK(error_mentions("the check of the traced pattern moving"));

    /* A black box that writes to its input: an error naming the input. */
    CHECK_STATUS(nanprop_trace(writes_input, NULL, 3, 3, x0, NULL, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("changed its input x[2]"));
    CHECK(x0[2] == 3.0); /* the caller's x0 is never handed to the black box */

    /* Isolation: a crash (input 1 NaN) or a hang (input 2 NaN) on a NaN probe is worked
       around: the probe is split, the NaN-intolerant inputs are perturbed instead, listed as
       failed columns, and the pattern is exact. */
    nanprop_options_init(&o);
    o.isolate = 1;
    o.timeout = 0.3;
    for (int strategy = NANPROP_STRATEGY_ONE_HOT; strategy <= NANPROP_STRATEGY_PAYLOAD; strategy += 2) {
        o.strategy = (uint32_t)strategy;
        CHECK_STATUS(nanprop_trace(crashes, NULL, 3, 3, x0, &o, &p), NANPROP_OK);
        size_t failed[2] = {0, 0}, rp[4], ci[3];
        uint8_t kinds[3];
        CHECK(nanprop_pattern_num_failed_columns(p) == 2);
        CHECK(nanprop_pattern_noise(p) == 0.0); /* repeated evaluations agree bit for bit */
        CHECK_STATUS(nanprop_pattern_failed_columns(p, failed), NANPROP_OK);
        CHECK(failed[0] == 1 && failed[1] == 2);
        CHECK(nanprop_pattern_nnz(p) == 3);
        CHECK_STATUS(nanprop_pattern_csr(p, rp, ci), NANPROP_OK);
        CHECK(ci[0] == 0 && ci[1] == 1 && ci[2] == 2);
        CHECK_STATUS(nanprop_pattern_entry_kinds(p, kinds), NANPROP_OK);
        CHECK(kinds[0] == NANPROP_ENTRY_TRACED && kinds[1] == NANPROP_ENTRY_PERTURBATION &&
              kinds[2] == NANPROP_ENTRY_PERTURBATION);
        nanprop_pattern_free(p);
        p = NULL;
    }
    CHECK(nanprop_pattern_num_failed_columns(NULL) == 0);
    CHECK(nanprop_pattern_noise(NULL) == 0.0);
    /* A crash at a finite point stays an error naming the signal and the evaluation. */
    o.strategy = NANPROP_STRATEGY_ONE_HOT;
    CHECK_STATUS(nanprop_trace(crashes_above_one, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("SIGSEGV") && error_mentions("the check of the traced pattern moving"));
    o.isolate = 2;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    o.isolate = 1;
    o.timeout = -1.0;
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    /* Still alive: */
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, NULL, &p), NANPROP_OK);
    nanprop_pattern_free(p);

    /* An output NaN at x0: reported, its row dense; or an error if asked. */
    CHECK_STATUS(nanprop_trace(nan_output, NULL, 3, 3, x0, NULL, &p), NANPROP_OK);
    CHECK(nanprop_pattern_num_nonfinite_rows(p) == 1);
    size_t rows[1] = {99};
    CHECK_STATUS(nanprop_pattern_nonfinite_rows(p, rows), NANPROP_OK);
    CHECK(rows[0] == 1);
    static const char *const expect[] = {"##.", "###", "..#"};
    CHECK(pattern_is(p, 3, 3, expect));
    unsigned char kinds[7];
    CHECK(nanprop_pattern_nnz(p) == 6);
    CHECK_STATUS(nanprop_pattern_entry_kinds(p, kinds), NANPROP_OK);
    CHECK(kinds[0] == NANPROP_ENTRY_TRACED && kinds[2] == NANPROP_ENTRY_NONFINITE_ROW);
    nanprop_pattern_free(p);
    nanprop_options_init(&o);
    o.nonfinite_baseline = NANPROP_NONFINITE_ERROR;
    CHECK_STATUS(nanprop_trace(nan_output, NULL, 3, 3, x0, &o, &p), NANPROP_ERR_BASELINE_NOT_FINITE);
    CHECK(error_mentions("y[1]"));

    /* Accessors on NULL: zeros and errors, no crash. */
    CHECK(nanprop_pattern_rows(NULL) == 0 && nanprop_pattern_cols(NULL) == 0);
    CHECK(nanprop_pattern_nnz(NULL) == 0 && nanprop_pattern_evaluations(NULL) == 0);
    CHECK(nanprop_pattern_unresolved(NULL) == 0 && nanprop_pattern_num_nonfinite_rows(NULL) == 0);
    CHECK(error_mentions("nanprop_pattern_num_nonfinite_rows: pattern is NULL"));
    CHECK(nanprop_jacobian_plan_num_colors(NULL) == 0);
    CHECK(error_mentions("nanprop_jacobian_plan_num_colors: plan is NULL"));
    size_t rp[4], ci[9];
    CHECK_STATUS(nanprop_pattern_csr(NULL, rp, ci), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_trace(identity, NULL, 3, 3, x0, NULL, &p), NANPROP_OK);
    CHECK_STATUS(nanprop_pattern_csr(p, NULL, ci), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_pattern_csr(p, rp, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_pattern_entry_kinds(p, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_pattern_entry_kinds(NULL, kinds), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_pattern_csr(p, rp, ci), NANPROP_OK);
    CHECK(rp[3] == 3 && ci[0] == 0 && ci[1] == 1 && ci[2] == 2);
    nanprop_pattern_free(p);
    nanprop_pattern_free(NULL);

    CHECK(strcmp(nanprop_status_string(NANPROP_OK), "success") == 0);
    CHECK(strcmp(nanprop_status_string(NANPROP_ERR_BLACKBOX), "black box failed") == 0);
    CHECK(strcmp(nanprop_status_string(999), "unknown status") == 0);
    CHECK(strcmp(nanprop_status_string(-1), "unknown status") == 0);
    CHECK(strlen(nanprop_version()) > 0);

    return check_report("test_errors");
}
