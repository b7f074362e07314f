/* Single precision from C: a float black box traced with nanprop_trace_f32 (tags travel in the
 * 22 payload bits of a float NaN), differentiated with float-sized steps by
 * nanprop_jacobian_f32 and a plan (nanprop_jacobian_plan_evaluate_f32), and the contract
 * checked in float (an unwritten output, a write past y[m-1], a changed input). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

enum { N = 30 };

/* Broyden banded in float, half-bandwidth 2 (as fortran_examples/single.f's BAND4). */
static int band(void *ud, size_t n, const float *x, size_t m, float *y) {
    int *calls = (int *)ud;
    (void)m;
    if (calls) ++*calls;
    for (size_t i = 0; i < n; i++) {
        float s = 0.0f;
        for (size_t j = i >= 2 ? i - 2 : 0; j <= i + 2 && j < n; j++)
            if (j != i) s += x[j] * (1.0f + x[j]);
        y[i] = x[i] * (2.0f + 5.0f * x[i] * x[i]) + 1.0f - s;
    }
    return 0;
}

static double band_jac(const float *x, size_t i, size_t j) {
    return i == j ? 2.0 + 15.0 * (double)x[i] * x[i] : -(1.0 + 2.0 * (double)x[j]);
}

static int lazy(void *ud, size_t n, const float *x, size_t m, float *y) {
    (void)ud; (void)n;
    for (size_t i = 0; i + 1 < m; i++) y[i] = x[i];
    return 0; /* y[m-1] never written */
}

static int overrun(void *ud, size_t n, const float *x, size_t m, float *y) {
    (void)ud;
    for (size_t i = 0; i <= m && i < n + 1; i++) y[i] = x[0];
    return 0;
}

static int scribble(void *ud, size_t n, const float *x, size_t m, float *y) {
    (void)ud;
    for (size_t i = 0; i < m; i++) y[i] = x[i % n];
    ((float *)x)[1] = 7.0f;
    return 0;
}

int main(void) {
    float x0[N];
    for (size_t j = 0; j < N; j++) x0[j] = 0.25f + (float)(j % 7) / 8.0f;

    nanprop_pattern *p = NULL;
    int calls = 0;
    CHECK_STATUS(nanprop_trace_f32(band, &calls, N, N, x0, NULL, &p), NANPROP_OK);
    CHECK(p != NULL);
    size_t rp[N + 1], ci[5 * N];
    CHECK(nanprop_pattern_nnz(p) == 5 * N - 6);
    CHECK_STATUS(nanprop_pattern_csr(p, rp, ci), NANPROP_OK);
    int exact = 1;
    for (size_t i = 0; i < N; i++) {
        size_t lo = i >= 2 ? i - 2 : 0, hi = i + 2 < N ? i + 2 : N - 1;
        if (rp[i + 1] - rp[i] != hi - lo + 1 || ci[rp[i]] != lo) exact = 0;
    }
    CHECK(exact);
    CHECK((size_t)calls == nanprop_pattern_evaluations(p));
    CHECK(nanprop_pattern_evaluations(p) < N);

    /* Jacobians: forward within 1e-3 and central within 1e-4 of the largest entry. */
    float v[5 * N];
    size_t evals = 0;
    nanprop_jacobian_options jo;
    for (int central = 0; central <= 1; central++) {
        nanprop_jacobian_options_init(&jo);
        jo.difference = central ? NANPROP_DIFFERENCE_CENTRAL : NANPROP_DIFFERENCE_FORWARD;
        CHECK_STATUS(nanprop_jacobian_f32(band, NULL, N, N, x0, p, &jo, v, &evals), NANPROP_OK);
        double worst = 0.0, scale = 0.0;
        for (size_t i = 0; i < N; i++)
            for (size_t k = rp[i]; k < rp[i + 1]; k++) {
                double e = band_jac(x0, i, ci[k]);
                if (fabs(e) > scale) scale = fabs(e);
                if (fabs(v[k] - e) > worst) worst = fabs(v[k] - e);
            }
        printf("float %s: relative error %.2e, %zu evaluations\n", central ? "central" : "forward",
               worst / scale, evals);
        CHECK(worst / scale < (central ? 1e-4 : 1e-3));
    }

    /* A plan, with f(x) given: colors evaluations. */
    nanprop_jacobian_plan *plan = NULL;
    CHECK_STATUS(nanprop_jacobian_plan_create(p, NULL, &plan), NANPROP_OK);
    float fx[N];
    band(NULL, N, x0, N, fx);
    float w[5 * N];
    CHECK_STATUS(nanprop_jacobian_plan_evaluate_f32(plan, band, NULL, x0, fx, w, &evals), NANPROP_OK);
    CHECK(evals == nanprop_jacobian_plan_num_colors(plan));
    CHECK(fabs(w[0] - band_jac(x0, 0, 0)) < 1e-2);
    CHECK_STATUS(nanprop_jacobian_plan_evaluate_f32(plan, NULL, NULL, x0, fx, w, &evals),
                 NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_jacobian_plan_free(plan);
    nanprop_pattern_free(p);

    /* The contract, checked in float. */
    p = NULL;
    CHECK_STATUS(nanprop_trace_f32(lazy, NULL, 4, 4, x0, NULL, &p), NANPROP_ERR_BLACKBOX);
    CHECK(p == NULL && error_mentions("did not write y[3]"));
    CHECK_STATUS(nanprop_trace_f32(overrun, NULL, 4, 4, x0, NULL, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("wrote past y[3]"));
    CHECK_STATUS(nanprop_trace_f32(scribble, NULL, 4, 4, x0, NULL, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("changed its input x[1]"));
    /* The same breaches in an isolated worker process are reported the same way. */
    nanprop_options iso;
    nanprop_options_init(&iso);
    iso.isolate = 1;
    CHECK_STATUS(nanprop_trace_f32(lazy, NULL, 4, 4, x0, &iso, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("did not write y[3]"));
    CHECK_STATUS(nanprop_trace_f32(overrun, NULL, 4, 4, x0, &iso, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("wrote past y[3]"));
    CHECK_STATUS(nanprop_trace_f32(scribble, NULL, 4, 4, x0, &iso, &p), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("changed its input x[1]"));
    CHECK_STATUS(nanprop_trace_f32(band, NULL, N, N, x0, &iso, &p), NANPROP_OK);
    CHECK(p != NULL && nanprop_pattern_nnz(p) == 5 * N - 6);
    nanprop_pattern_free(p);
    p = NULL;
    CHECK_STATUS(nanprop_trace_f32(NULL, NULL, 4, 4, x0, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    float bad[2] = {1.0f, NAN};
    CHECK_STATUS(nanprop_trace_f32(band, NULL, 2, 2, bad, NULL, &p), NANPROP_ERR_INVALID_ARGUMENT);
    return check_report("test_f32");
}
