/* The README's C example: trace a small model and print its pattern. */
#include <stdio.h>
#include <stdlib.h>
#include "nanprop.h"

/* y0 = x0 * x1, y1 = sin-free chain x1 + x2^2, y2 = 3 (no inputs). */
static int model(void *user_data, size_t n, const double *x, size_t m, double *y) {
    (void)user_data; (void)n; (void)m;
    y[0] = x[0] * x[1];
    y[1] = x[1] + x[2] * x[2];
    y[2] = 3.0;
    return 0;
}

int main(void) {
    double x0[3] = {1.0, 2.0, 0.0};
    nanprop_pattern *p = NULL;
    nanprop_status s = nanprop_trace(model, NULL, 3, 3, x0, NULL /* defaults */, &p);
    if (s != NANPROP_OK) {
        fprintf(stderr, "nanprop_trace: %s: %s\n", nanprop_status_string(s), nanprop_last_error());
        return 1;
    }
    size_t m = nanprop_pattern_rows(p), nnz = nanprop_pattern_nnz(p);
    size_t *row_ptr = malloc((m + 1) * sizeof *row_ptr), *col_idx = malloc(nnz * sizeof *col_idx);
    nanprop_pattern_csr(p, row_ptr, col_idx);
    for (size_t i = 0; i < m; i++) {
        printf("y%zu depends on:", i);
        for (size_t k = row_ptr[i]; k < row_ptr[i + 1]; k++) printf(" x%zu", col_idx[k]);
        printf("\n");
    }
    printf("%zu evaluations\n", nanprop_pattern_evaluations(p));
    int ok = nnz == 4 && row_ptr[1] == 2 && col_idx[2] == 1 && col_idx[3] == 2 && row_ptr[3] == 4;
    printf("example: %d passed, %d failed\n", ok, !ok);
    free(row_ptr);
    free(col_idx);
    nanprop_pattern_free(p);
    return ok ? 0 : 1;
}
