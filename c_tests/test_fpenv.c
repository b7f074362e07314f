/* The caller's floating-point environment: traps enabled by the caller do not fire inside
 * nanprop, and rounding mode, trap mask and flags are as the caller left them afterwards. */
#define _GNU_SOURCE
#include <fenv.h>
#include "check.h"

/* NaN comparisons and arithmetic: FE_INVALID everywhere once inputs are NaN. */
static int compares(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    y[0] = x[0] < 1.0 ? 2.0 * x[0] : x[0] + x[1];
    y[1] = x[1] * x[1];
    return 0;
}

/* Enables FE_INVALID traps itself on every call (as some legacy initializations do), then only
 * does quiet arithmetic, which does not trap. */
static int enables_traps(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    feenableexcept(FE_INVALID);
    y[0] = 3.0 * x[0];
    y[1] = x[0] + x[1];
    return 0;
}

int main(void) {
    double x0[2] = {0.5, 2.0};
    nanprop_pattern *p = NULL;

    fesetround(FE_UPWARD);
    feclearexcept(FE_ALL_EXCEPT);
    feenableexcept(FE_INVALID | FE_DIVBYZERO);
    volatile double a = 1.0, b = 3.0;
    volatile double c = a / b; /* raises FE_INEXACT only */
    (void)c;
    /* Without masking, the first NaN comparison here would kill this program with SIGFPE. */
    nanprop_status s = nanprop_trace(compares, NULL, 2, 2, x0, NULL, &p);
    int round = fegetround(), traps = fegetexcept(), flags = fetestexcept(FE_ALL_EXCEPT);
    fedisableexcept(FE_ALL_EXCEPT);
    fesetround(FE_TONEAREST);
    CHECK(s == NANPROP_OK);
    CHECK(round == FE_UPWARD);
    CHECK(traps == (FE_INVALID | FE_DIVBYZERO));
    CHECK(flags == FE_INEXACT); /* nanprop's FE_INVALID does not leak into the caller's flags */
    CHECK(nanprop_pattern_nnz(p) == 2); /* at x0 = 0.5 the branch x0 < 1 is taken: y0 = 2 x0 */
    nanprop_pattern_free(p);

    /* A black box that enables traps: masked again around each call, gone on return. */
    s = nanprop_trace(enables_traps, NULL, 2, 2, x0, NULL, &p);
    traps = fegetexcept();
    fedisableexcept(FE_ALL_EXCEPT);
    CHECK(s == NANPROP_OK);
    CHECK(traps == 0);
    CHECK(nanprop_pattern_nnz(p) == 3);
    nanprop_pattern_free(p);

    /* The Jacobian path too. */
    feenableexcept(FE_INVALID);
    CHECK(nanprop_trace(compares, NULL, 2, 2, x0, NULL, &p) == NANPROP_OK);
    double values[3];
    size_t evals = 0;
    s = nanprop_jacobian(compares, NULL, 2, 2, x0, p, NULL, values, &evals);
    traps = fegetexcept();
    fedisableexcept(FE_ALL_EXCEPT);
    CHECK(s == NANPROP_OK && traps == FE_INVALID);
    CHECK(values[0] > 1.99 && values[0] < 2.01);
    nanprop_pattern_free(p);

    return check_report("test_fpenv");
}
