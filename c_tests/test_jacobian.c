/* Sparse Jacobians from C: patterns from CSR, coloring, compressed finite differences, the
 * reusable plan, and their errors. The black box is MINPACK's Broyden banded function. */
#include <math.h>
#include <stdlib.h>
#include "check.h"

enum { N = 30 };

static int broyden(void *ud, size_t n, const double *x, size_t m, double *y) {
    int *calls = (int *)ud;
    (void)m;
    if (calls) ++*calls;
    for (size_t i = 0; i < n; i++) {
        double s = 0.0;
        for (size_t j = i >= 5 ? i - 5 : 0; j <= i + 1 && j < n; j++)
            if (j != i) s += x[j] * (1.0 + x[j]);
        y[i] = x[i] * (2.0 + 5.0 * x[i] * x[i]) + 1.0 - s;
    }
    return 0;
}

static double broyden_jac(const double *x, size_t i, size_t j) {
    return i == j ? 2.0 + 15.0 * x[i] * x[i] : -(1.0 + 2.0 * x[j]);
}

/* Output 3 is NaN once x[4] moves up from 1 (log of a negative number). */
static int cliff(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)m;
    for (size_t i = 0; i < n; i++) y[i] = x[i] * x[i];
    y[3] = log(1.0 - x[4]) + x[3];
    return 0;
}

/* No two columns of one color share a row. */
static int coloring_valid(const size_t *row_ptr, const size_t *col_idx, size_t m, const size_t *colors) {
    for (size_t i = 0; i < m; i++)
        for (size_t a = row_ptr[i]; a < row_ptr[i + 1]; a++)
            for (size_t b = a + 1; b < row_ptr[i + 1]; b++)
                if (colors[col_idx[a]] == colors[col_idx[b]]) return 0;
    return 1;
}

static double max_error_csr(const size_t *row_ptr, const size_t *col_idx, const double *x, const double *v) {
    double worst = 0.0;
    for (size_t i = 0; i < N; i++)
        for (size_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) {
            double e = fabs(v[k] - broyden_jac(x, i, col_idx[k])) / fmax(1.0, fabs(broyden_jac(x, i, col_idx[k])));
            if (e > worst) worst = e;
        }
    return worst;
}

int main(void) {
    /* The Broyden banded pattern, by hand: columns i-5 .. i+1. */
    size_t row_ptr[N + 1], col_idx[7 * N], nnz = 0;
    row_ptr[0] = 0;
    for (size_t i = 0; i < N; i++) {
        for (size_t j = i >= 5 ? i - 5 : 0; j <= i + 1 && j < N; j++) col_idx[nnz++] = j;
        row_ptr[i + 1] = nnz;
    }
    nanprop_pattern *p = NULL;
    CHECK_STATUS(nanprop_pattern_from_csr(N, N, row_ptr, col_idx, &p), NANPROP_OK);
    CHECK(nanprop_pattern_nnz(p) == nnz && nanprop_pattern_evaluations(p) == 0);

    /* Bad CSR input: each refused with a message, *out left NULL. */
    nanprop_pattern *bad = (nanprop_pattern *)&bad;
    size_t rp_bad[3] = {0, 2, 3}, ci_unsorted[3] = {1, 0, 2}, ci_range[3] = {0, 1, 7}, ci_dup[3] = {1, 1, 2};
    CHECK_STATUS(nanprop_pattern_from_csr(2, 3, rp_bad, ci_unsorted, &bad), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL && error_mentions("sorted"));
    CHECK_STATUS(nanprop_pattern_from_csr(2, 3, rp_bad, ci_range, &bad), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("out of range"));
    CHECK_STATUS(nanprop_pattern_from_csr(2, 3, rp_bad, ci_dup, &bad), NANPROP_ERR_INVALID_ARGUMENT);
    size_t rp_decreasing[3] = {0, 3, 2};
    CHECK_STATUS(nanprop_pattern_from_csr(2, 3, rp_decreasing, ci_range, &bad), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_pattern_from_csr(2, 3, NULL, ci_range, &bad), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_pattern_from_csr(0, 3, rp_bad, ci_range, &bad), NANPROP_ERR_INVALID_ARGUMENT);

    /* Coloring: valid for every order; the best reaches the longest row (7). */
    size_t colors[N], num_colors = 0;
    for (unsigned order = NANPROP_ORDER_BEST; order <= NANPROP_ORDER_AUTO; order++) {
        nanprop_coloring_options co;
        nanprop_coloring_options_init(&co);
        co.order = order;
        co.seed = 5;
        CHECK_STATUS(nanprop_coloring(p, &co, colors, &num_colors), NANPROP_OK);
        CHECK(coloring_valid(row_ptr, col_idx, N, colors));
        CHECK(num_colors >= 7 && num_colors < N);
    }
    CHECK_STATUS(nanprop_coloring(p, NULL, colors, &num_colors), NANPROP_OK);
    CHECK(num_colors == 7);
    nanprop_coloring_options co;
    nanprop_coloring_options_init(&co);
    co.order = 42;
    CHECK_STATUS(nanprop_coloring(p, &co, colors, &num_colors), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_coloring(p, NULL, NULL, &num_colors), NANPROP_ERR_INVALID_ARGUMENT);

    /* One Jacobian, forward and central, against the analytic one. */
    double x[N], v[7 * N], vc[7 * N];
    for (int j = 0; j < N; j++) x[j] = -1.0 + 0.05 * j;
    int calls = 0;
    size_t evals = 0;
    CHECK_STATUS(nanprop_jacobian(broyden, &calls, N, N, x, p, NULL, v, &evals), NANPROP_OK);
    CHECK(evals == 8 && calls == 8); /* 7 colors + f(x) */
    CHECK(max_error_csr(row_ptr, col_idx, x, v) < 1e-6);
    nanprop_jacobian_options jo;
    nanprop_jacobian_options_init(&jo);
    jo.difference = NANPROP_DIFFERENCE_CENTRAL;
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, p, &jo, vc, &evals), NANPROP_OK);
    CHECK(evals == 14);
    CHECK(max_error_csr(row_ptr, col_idx, x, vc) < 1e-9);
    printf("Broyden n = %d: forward error %.2e (8 evaluations), central %.2e (14)\n", N,
           max_error_csr(row_ptr, col_idx, x, v), max_error_csr(row_ptr, col_idx, x, vc));

    /* Dense column-major (Fortran callers) and CSC layouts hold the same numbers. */
    double *dense = calloc(N * N, sizeof *dense), csc[7 * N];
    size_t col_ptr[N + 1], row_idx[7 * N];
    nanprop_jacobian_options_init(&jo);
    jo.layout = NANPROP_LAYOUT_DENSE_COLUMN_MAJOR;
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, p, &jo, dense, NULL), NANPROP_OK);
    jo.layout = NANPROP_LAYOUT_CSC;
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, p, &jo, csc, NULL), NANPROP_OK);
    CHECK_STATUS(nanprop_pattern_csc(p, col_ptr, row_idx), NANPROP_OK);
    int same = 1;
    for (size_t i = 0; i < N; i++)
        for (size_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) same = same && dense[i + col_idx[k] * N] == v[k];
    for (size_t j = 0; j < N; j++)
        for (size_t k = col_ptr[j]; k < col_ptr[j + 1]; k++) same = same && csc[k] == dense[row_idx[k] + j * N];
    CHECK(same);
    CHECK(dense[0 + 20 * N] == 0.0); /* outside the pattern */
    free(dense);

    /* The reusable plan: colors once, Jacobians at several points; f(x) saves an evaluation. */
    nanprop_jacobian_plan *plan = NULL;
    CHECK_STATUS(nanprop_jacobian_plan_create(p, NULL, &plan), NANPROP_OK);
    CHECK(nanprop_jacobian_plan_num_colors(plan) == 7 && nanprop_jacobian_plan_values_len(plan) == nnz);
    CHECK_STATUS(nanprop_jacobian_plan_colors(plan, colors), NANPROP_OK);
    CHECK(coloring_valid(row_ptr, col_idx, N, colors));
    for (int k = 0; k < 3; k++) {
        for (int j = 0; j < N; j++) x[j] = 0.1 * k - 0.5 + 0.02 * j;
        double fx[N];
        broyden(NULL, N, x, N, fx);
        CHECK_STATUS(nanprop_jacobian_plan_evaluate(plan, broyden, NULL, x, k == 2 ? fx : NULL, v, &evals), NANPROP_OK);
        CHECK(evals == (k == 2 ? 7u : 8u));
        CHECK(max_error_csr(row_ptr, col_idx, x, v) < 1e-6);
    }
    CHECK_STATUS(nanprop_jacobian_plan_evaluate(plan, NULL, NULL, x, NULL, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_jacobian_plan_evaluate(NULL, broyden, NULL, x, NULL, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    x[3] = NAN;
    CHECK_STATUS(nanprop_jacobian_plan_evaluate(plan, broyden, NULL, x, NULL, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("x[3]"));
    nanprop_jacobian_plan_free(plan);
    nanprop_jacobian_plan_free(NULL);

    /* Trace, then Jacobian: the pattern nanprop finds is the one the Jacobian needs. */
    for (int j = 0; j < N; j++) x[j] = -1.0 + 0.05 * j;
    nanprop_pattern *traced = NULL;
    CHECK_STATUS(nanprop_trace(broyden, NULL, N, N, x, NULL, &traced), NANPROP_OK);
    CHECK(nanprop_pattern_nnz(traced) == nnz);
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, traced, NULL, v, &evals), NANPROP_OK);
    CHECK(max_error_csr(row_ptr, col_idx, x, v) < 1e-6);
    nanprop_pattern_free(traced);

    /* Errors: sizes that do not match the pattern, bad options, a group that goes NaN. */
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N + 1, N, x, p, NULL, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("do not match"));
    nanprop_jacobian_options_init(&jo);
    jo.layout = 9;
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, p, &jo, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_jacobian_options_init(&jo);
    jo.step_kind = NANPROP_STEP_ABSOLUTE;
    jo.step = 0.0;
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, p, &jo, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_jacobian_options_init(&jo);
    jo.struct_size = 8;
    CHECK_STATUS(nanprop_jacobian(broyden, NULL, N, N, x, p, &jo, v, &evals), NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_pattern_free(p);

    size_t rp6[7] = {0, 1, 2, 3, 5, 6, 7}, ci6[7] = {0, 1, 2, 3, 4, 4, 5};
    CHECK_STATUS(nanprop_pattern_from_csr(6, 6, rp6, ci6, &p), NANPROP_OK);
    double xc[6] = {0.5, 0.5, 0.5, 0.5, 1.0 - 1e-9, 0.5};
    CHECK_STATUS(nanprop_jacobian(cliff, NULL, 6, 6, xc, p, NULL, v, &evals), NANPROP_ERR_BLACKBOX);
    CHECK(error_mentions("column group") && error_mentions("y[3]"));
    nanprop_pattern_free(p);

    return check_report("test_jacobian");
}
