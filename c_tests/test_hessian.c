/* Sparse Hessians and smoothed Jacobians from C.
 * Hessian: f = sum over the edges (a, b) of a K x K grid of cosh(x_a - x_b)
 *              + z * sum_v x_v^3 / 3 + z^2 / 2, with z = x[K*K] a global variable;
 * its gradient routine is the black box, traced for the pattern, star colored, differenced.
 * Smoothed: y_i = H(x_i - x_{i+1}) + 2 x_i, whose jointly smoothed Jacobian is known. */
#include <math.h>
#include <stdlib.h>
#include "check.h"

enum { K = 8, V = K * K, N = V + 1 };

static void edges(void (*visit)(size_t a, size_t b, void *ctx), void *ctx) {
    for (size_t r = 0; r < K; r++)
        for (size_t c = 0; c < K; c++) {
            if (c + 1 < K) visit(r * K + c, r * K + c + 1, ctx);
            if (r + 1 < K) visit(r * K + c, (r + 1) * K + c, ctx);
        }
}

struct grad_ctx { const double *x; double *g; };
static void grad_edge(size_t a, size_t b, void *ctx) {
    struct grad_ctx *c = ctx;
    double s = sinh(c->x[a] - c->x[b]);
    c->g[a] += s;
    c->g[b] -= s;
}

static int gradient(void *ud, size_t n, const double *x, size_t m, double *g) {
    (void)ud; (void)m;
    double z = x[V], cubes = 0.0;
    for (size_t i = 0; i < n; i++) g[i] = 0.0;
    struct grad_ctx c = {x, g};
    edges(grad_edge, &c);
    for (size_t v = 0; v < V; v++) {
        g[v] += z * x[v] * x[v];
        cubes += x[v] * x[v] * x[v] / 3.0;
    }
    g[V] = cubes + z;
    return 0;
}

/* The exact Hessian, dense (N x N, row-major). */
static double H[N][N];
struct hess_ctx { const double *x; };
static void hess_edge(size_t a, size_t b, void *ctx) {
    const double *x = ((struct hess_ctx *)ctx)->x;
    double c = cosh(x[a] - x[b]);
    H[a][a] += c; H[b][b] += c; H[a][b] -= c; H[b][a] -= c;
}
static void exact_hessian(const double *x) {
    memset(H, 0, sizeof H);
    struct hess_ctx c = {x};
    edges(hess_edge, &c);
    for (size_t v = 0; v < V; v++) {
        H[v][v] += 2.0 * x[V] * x[v];
        H[v][V] = H[V][v] = x[v] * x[v];
    }
    H[V][V] = 1.0;
}

static double max_rel_error(const size_t *row_ptr, const size_t *col_idx, size_t rows, const double *v) {
    double worst = 0.0;
    for (size_t i = 0; i < rows; i++)
        for (size_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) {
            double want = H[i][col_idx[k]];
            double e = fabs(v[k] - want) / fmax(1.0, fabs(want));
            if (e > worst) worst = e;
        }
    return worst;
}

static int chain(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n;
    for (size_t i = 0; i < m; i++) y[i] = (x[i] - x[i + 1] > 0.0 ? 1.0 : 0.0) + 2.0 * x[i];
    return 0;
}

int main(void) {
    double x[N];
    for (size_t i = 0; i < N; i++) x[i] = 0.2 + 0.37 * sin(1.0 + 3.0 * (double)i);
    exact_hessian(x);

    /* The gradient's pattern, traced: the grid's 5-point stencil plus the global row/column. */
    nanprop_pattern *p = NULL;
    CHECK_STATUS(nanprop_trace(gradient, NULL, N, N, x, NULL, &p), NANPROP_OK);
    size_t nnz = nanprop_pattern_nnz(p);
    size_t *row_ptr = malloc((N + 1) * sizeof *row_ptr), *col_idx = malloc(nnz * sizeof *col_idx);
    CHECK_STATUS(nanprop_pattern_csr(p, row_ptr, col_idx), NANPROP_OK);
    CHECK(nnz == (size_t)(V + 2 * 2 * K * (K - 1) + 2 * V + 1));

    /* Star coloring: a handful of colors where the column coloring needs one per column. */
    size_t star[N], column[N], num_star = 0, num_column = 0;
    CHECK_STATUS(nanprop_hessian_coloring(p, star, &num_star), NANPROP_OK);
    CHECK_STATUS(nanprop_coloring(p, NULL, column, &num_column), NANPROP_OK);
    printf("star colors %zu, column colors %zu\n", num_star, num_column);
    CHECK(num_star <= 7 && num_column == N);

    /* One Hessian, central differences: 2 * colors gradient evaluations, second order. */
    nanprop_jacobian_options o;
    nanprop_jacobian_options_init(&o);
    o.difference = NANPROP_DIFFERENCE_CENTRAL;
    double *values = malloc(nnz * sizeof *values);
    size_t evaluations = 0;
    CHECK_STATUS(nanprop_hessian(gradient, NULL, N, x, p, &o, values, &evaluations), NANPROP_OK);
    CHECK(evaluations == 2 * num_star);
    double err = max_rel_error(row_ptr, col_idx, N, values);
    printf("central Hessian: max relative error %.2e\n", err);
    CHECK(err < 1e-8);
    /* Exactly symmetric: (i, j) and (j, i) are read the same way. */
    for (size_t i = 0; i < N; i++)
        for (size_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) {
            size_t j = col_idx[k], t = row_ptr[j];
            while (col_idx[t] != i) t++;
            if (values[k] != values[t]) { CHECK(0); i = N; break; }
        }

    /* A plan on the lower triangle (Ipopt's convention), forward, with g(x) supplied. */
    size_t lrow[N + 1], *lcol = malloc(nnz * sizeof *lcol), lnnz = 0;
    lrow[0] = 0;
    for (size_t i = 0; i < N; i++) {
        for (size_t k = row_ptr[i]; k < row_ptr[i + 1]; k++)
            if (col_idx[k] <= i) lcol[lnnz++] = col_idx[k];
        lrow[i + 1] = lnnz;
    }
    nanprop_pattern *lower = NULL;
    CHECK_STATUS(nanprop_pattern_from_csr(N, N, lrow, lcol, &lower), NANPROP_OK);
    nanprop_hessian_plan *plan = NULL;
    CHECK_STATUS(nanprop_hessian_plan_create(lower, NULL, &plan), NANPROP_OK);
    CHECK(nanprop_hessian_plan_num_colors(plan) == num_star);
    CHECK(nanprop_hessian_plan_values_len(plan) == lnnz);
    size_t plan_colors[N];
    CHECK_STATUS(nanprop_hessian_plan_colors(plan, plan_colors), NANPROP_OK);
    double gx[N];
    gradient(NULL, N, x, N, gx);
    CHECK_STATUS(nanprop_hessian_plan_evaluate(plan, gradient, NULL, x, gx, values, &evaluations), NANPROP_OK);
    CHECK(evaluations == num_star);
    err = max_rel_error(lrow, lcol, N, values);
    printf("forward Hessian (lower triangle): max relative error %.2e\n", err);
    CHECK(err < 1e-5);

    /* Errors: a rectangular pattern, a wrong n, NULLs; nothing is written. */
    size_t rrow[3] = {0, 1, 2}, rcol[2] = {0, 2};
    nanprop_pattern *rect = NULL;
    CHECK_STATUS(nanprop_pattern_from_csr(2, 3, rrow, rcol, &rect), NANPROP_OK);
    CHECK_STATUS(nanprop_hessian_coloring(rect, star, &num_star), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("square"));
    nanprop_hessian_plan *none = (nanprop_hessian_plan *)&none;
    CHECK_STATUS(nanprop_hessian_plan_create(rect, NULL, &none), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(none == NULL);
    CHECK_STATUS(nanprop_hessian(gradient, NULL, N + 1, x, p, NULL, values, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_hessian(NULL, NULL, N, x, p, NULL, values, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_hessian_plan_evaluate(NULL, gradient, NULL, x, NULL, values, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(nanprop_hessian_plan_num_colors(NULL) == 0);
    nanprop_hessian_plan_free(plan);
    nanprop_hessian_plan_free(NULL);

    /* Smoothed Jacobian of the Heaviside chain against its closed form. */
    enum { CN = 61, CM = CN - 1 };
    double cx[CN];
    for (size_t i = 0; i < CN; i++) cx[i] = 1.0 + 0.15 * sin(7.0 * (double)i);
    size_t crow[CM + 1], ccol[2 * CM];
    for (size_t i = 0; i < CM; i++) { crow[i] = 2 * i; ccol[2 * i] = i; ccol[2 * i + 1] = i + 1; }
    crow[CM] = 2 * CM;
    nanprop_pattern *cp = NULL;
    CHECK_STATUS(nanprop_pattern_from_csr(CM, CN, crow, ccol, &cp), NANPROP_OK);
    nanprop_smoothing_options so;
    nanprop_smoothing_options_init(&so);
    CHECK(so.samples == 100 && so.sigma == 0.01 && so.estimator == NANPROP_SMOOTHING_REGRESSION);
    so.sigma = 0.1;
    so.sigma_kind = NANPROP_STEP_ABSOLUTE;
    so.samples = 400;
    so.seed = 3;
    double sv[2 * CM], se[2 * CM];
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM, cx, cp, &so, sv, se, &evaluations), NANPROP_OK);
    CHECK(evaluations == 800);
    size_t within = 0;
    double s2 = 0.1 * sqrt(2.0);
    for (size_t i = 0; i < CM; i++) {
        double d = cx[i] - cx[i + 1];
        double g = exp(-0.5 * d * d / (s2 * s2)) / sqrt(2.0 * 3.14159265358979323846) / s2;
        double want[2] = {g + 2.0, -g};
        for (int a = 0; a < 2; a++)
            if (fabs(sv[2 * i + a] - want[a]) <= 3.0 * se[2 * i + a]) within++;
    }
    printf("smoothed Jacobian: %zu of %d entries within 3 standard errors\n", within, 2 * CM);
    CHECK(within >= (size_t)(0.95 * 2 * CM));
    /* Without standard errors; then bad options. */
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM, cx, cp, &so, sv, NULL, NULL), NANPROP_OK);
    so.sigma = 0.0;
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM, cx, cp, &so, sv, NULL, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("sigma"));
    so.sigma = 0.1;
    so.estimator = 7;
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM, cx, cp, &so, sv, NULL, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("estimator"));
    so.estimator = NANPROP_SMOOTHING_AVERAGE;
    so.version = 99;
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM, cx, cp, &so, sv, NULL, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM + 1, cx, cp, NULL, sv, NULL, NULL), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_smoothed_jacobian(chain, NULL, CN, CM, cx, cp, NULL, NULL, NULL, NULL), NANPROP_ERR_INVALID_ARGUMENT);

    nanprop_pattern_free(cp);
    nanprop_pattern_free(rect);
    nanprop_pattern_free(lower);
    nanprop_pattern_free(p);
    free(row_ptr); free(col_idx); free(values); free(lcol);
    return check_report("test_hessian");
}
