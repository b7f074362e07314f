/* Minimal test helpers for the C tests: CHECK counts, CHECK_STATUS prints nanprop's message. */
#ifndef NANPROP_CHECK_H
#define NANPROP_CHECK_H
#include <stdio.h>
#include <string.h>
#include "nanprop.h"

static int check_passed = 0, check_failed = 0;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (cond) {                                                               \
            check_passed++;                                                       \
        } else {                                                                  \
            check_failed++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                         \
    } while (0)

#define CHECK_STATUS(call, expected)                                              \
    do {                                                                          \
        nanprop_status s_ = (call);                                               \
        if (s_ == (expected)) {                                                   \
            check_passed++;                                                       \
        } else {                                                                  \
            check_failed++;                                                       \
            fprintf(stderr, "%s:%d: %s gave %s (%s), expected %s\n", __FILE__, __LINE__, #call, \
                    nanprop_status_string((int)s_), nanprop_last_error(),          \
                    nanprop_status_string((int)(expected)));                      \
        }                                                                         \
    } while (0)

/* Whether the last error message contains `needle`. */
static inline int error_mentions(const char *needle) {
    return strstr(nanprop_last_error(), needle) != NULL;
}

/* Whether pattern p equals the picture `rows` ('#' entry, '.' none), m rows of n characters. */
static inline int pattern_is(const nanprop_pattern *p, size_t m, size_t n, const char *const *rows) {
    size_t row_ptr[64], col_idx[64 * 64];
    if (m > 64 || n > 64 || nanprop_pattern_rows(p) != m || nanprop_pattern_cols(p) != n) return 0;
    if (nanprop_pattern_csr(p, row_ptr, col_idx) != NANPROP_OK) return 0;
    for (size_t i = 0; i < m; i++) {
        size_t k = row_ptr[i];
        for (size_t j = 0; j < n; j++) {
            int present = k < row_ptr[i + 1] && col_idx[k] == j;
            if (present) k++;
            if (present != (rows[i][j] == '#')) {
                fprintf(stderr, "pattern differs at (%zu, %zu)\n", i, j);
                return 0;
            }
        }
        if (k != row_ptr[i + 1]) return 0;
    }
    return 1;
}

static inline int check_report(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed == 0 ? 0 : 1;
}
#endif
