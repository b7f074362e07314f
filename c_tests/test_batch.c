/* The batch (ask/tell) API: the caller runs the evaluations, in any order and subset. The
 * result must equal what nanprop_trace and nanprop_jacobian compute themselves. */
#include <stdlib.h>
#include "check.h"

enum { N = 40 };

/* A 2-D-ish coupling: y_i = x_i^2 + x_{i+1} - x_{i+8}. Counts its calls in *ud if given. */
static int model(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)m;
    if (ud) ++*(size_t *)ud;
    for (size_t i = 0; i < n; i++) {
        double r = i + 1 < n ? x[i + 1] : 0.0, d = i + 8 < n ? x[i + 8] : 0.0;
        y[i] = x[i] * x[i] + r - d;
    }
    return 0;
}

static int same_pattern(const nanprop_pattern *a, const nanprop_pattern *b) {
    size_t nnz = nanprop_pattern_nnz(a);
    if (nnz != nanprop_pattern_nnz(b)) return 0;
    size_t ra[N + 1], rb[N + 1], *ca = malloc(nnz * sizeof *ca), *cb = malloc(nnz * sizeof *cb);
    nanprop_pattern_csr(a, ra, ca);
    nanprop_pattern_csr(b, rb, cb);
    int ok = memcmp(ra, rb, sizeof ra) == 0 && memcmp(ca, cb, nnz * sizeof *ca) == 0;
    free(ca);
    free(cb);
    return ok;
}

int main(void) {
    double x0[N], x[N], y[N];
    for (int j = 0; j < N; j++) x0[j] = 0.5 + 0.01 * j;

    nanprop_pattern *direct = NULL, *batched = NULL;
    CHECK_STATUS(nanprop_trace(model, NULL, N, N, x0, NULL, &direct), NANPROP_OK);

    /* The loop a parallel driver, an MPI rank 0 or a scheduler runs: here the requests of each
     * step are answered in reverse order, and only half of them per round. */
    nanprop_session *s = NULL;
    CHECK_STATUS(nanprop_session_create(N, N, x0, NULL, &s), NANPROP_OK);
    size_t ids[4096], count = 0, rounds = 0;
    for (;;) {
        CHECK_STATUS(nanprop_session_ask(s, ids, 4096, &count), NANPROP_OK);
        if (count == 0) break;
        CHECK(count <= 4096);
        size_t half = count > 1 ? count / 2 : 1;
        for (size_t k = 0; k < half; k++) {
            size_t id = ids[count - 1 - k];
            CHECK_STATUS(nanprop_session_input(s, id, x), NANPROP_OK);
            model(NULL, N, x, N, y);
            CHECK_STATUS(nanprop_session_tell(s, id, y), NANPROP_OK);
        }
        rounds++;
    }
    CHECK(nanprop_session_evaluations(s) == nanprop_pattern_evaluations(direct));
    CHECK_STATUS(nanprop_session_finish(s, &batched), NANPROP_OK);
    CHECK(same_pattern(direct, batched));

    /* Failures the caller reports: a model that refuses NaN in input 5 (as an MPI rank whose
     * evaluation crashed would report it). The probe is split; input 5 is perturbed instead. */
    nanprop_pattern *tolerant = NULL;
    nanprop_session *t = NULL;
    CHECK_STATUS(nanprop_session_create(N, N, x0, NULL, &t), NANPROP_OK);
    for (;;) {
        CHECK_STATUS(nanprop_session_ask(t, ids, 4096, &count), NANPROP_OK);
        if (count == 0) break;
        for (size_t k = 0; k < count; k++) { /* increasing ids */
            CHECK_STATUS(nanprop_session_input(t, ids[k], x), NANPROP_OK);
            if (x[5] != x[5]) {
                CHECK_STATUS(nanprop_session_fail(t, ids[k], -1), NANPROP_OK);
                continue;
            }
            model(NULL, N, x, N, y);
            CHECK_STATUS(nanprop_session_tell(t, ids[k], y), NANPROP_OK);
        }
    }
    CHECK_STATUS(nanprop_session_fail(t, 0, 0), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_session_finish(t, &tolerant), NANPROP_OK);
    CHECK(same_pattern(direct, tolerant));
    size_t failed = 99;
    CHECK(nanprop_pattern_num_failed_columns(tolerant) == 1);
    CHECK_STATUS(nanprop_pattern_failed_columns(tolerant, &failed), NANPROP_OK);
    CHECK(failed == 5);
    nanprop_pattern_free(tolerant);
    nanprop_session_free(t);
    printf("batch: %zu evaluations in %zu ask rounds\n", nanprop_pattern_evaluations(batched), rounds);

    /* Misuse: telling twice, an unknown id, after finish, finishing too early. */
    CHECK_STATUS(nanprop_session_tell(s, 0, y), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("finished"));
    nanprop_session_free(s);
    CHECK_STATUS(nanprop_session_create(N, N, x0, NULL, &s), NANPROP_OK);
    /* Finishing before the baseline is told: an error that keeps the session. */
    nanprop_pattern *early = NULL;
    CHECK_STATUS(nanprop_session_finish(s, &early), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(error_mentions("baseline") && early == NULL);
    CHECK_STATUS(nanprop_session_ask(s, ids, 4096, &count), NANPROP_OK);
    CHECK(count == 1); /* the baseline */
    CHECK_STATUS(nanprop_session_input(s, 7, x), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_session_input(s, ids[0], x), NANPROP_OK);
    model(NULL, N, x, N, y);
    CHECK_STATUS(nanprop_session_tell(s, ids[0], y), NANPROP_OK);
    CHECK_STATUS(nanprop_session_tell(s, ids[0], y), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(nanprop_session_ask(s, NULL, 0, &count), NANPROP_OK); /* just the count */
    CHECK(count >= 1);
    nanprop_pattern *partial = NULL;
    CHECK_STATUS(nanprop_session_finish(s, &partial), NANPROP_OK); /* early: all unresolved */
    CHECK(nanprop_pattern_unresolved(partial) > 0);
    nanprop_pattern_free(partial);
    nanprop_session_free(s);
    nanprop_session_free(NULL);

    /* Parallel drivers behind nanprop_trace: threads (the model is pure, so thread-safe) and
     * worker processes give the serial pattern. */
    {
        nanprop_options o;
        nanprop_pattern *q = NULL;
        for (int mode = 0; mode < 2; mode++) {
            nanprop_options_init(&o);
            if (mode == 0) o.threads = 4; else o.processes = 2;
            CHECK_STATUS(nanprop_trace(model, NULL, N, N, x0, &o, &q), NANPROP_OK);
            CHECK(same_pattern(direct, q));
            CHECK(nanprop_pattern_evaluations(q) == nanprop_pattern_evaluations(direct));
            nanprop_pattern_free(q);
        }
        nanprop_options_init(&o);
        o.threads = 2;
        o.isolate = 1;
        CHECK_STATUS(nanprop_trace(model, NULL, N, N, x0, &o, &q), NANPROP_ERR_INVALID_ARGUMENT);
        CHECK(error_mentions("threads cannot be combined"));
    }

    /* A journal: the second run with it evaluates nothing. */
    {
        const char *path = "test_batch_journal.bin";
        remove(path);
        nanprop_options o;
        nanprop_options_init(&o);
        o.journal = path;
        size_t calls = 0;
        nanprop_pattern *q = NULL;
        CHECK_STATUS(nanprop_trace(model, &calls, N, N, x0, &o, &q), NANPROP_OK);
        CHECK(calls == nanprop_pattern_evaluations(q));
        nanprop_pattern_free(q);
        calls = 0;
        CHECK_STATUS(nanprop_trace(model, &calls, N, N, x0, &o, &q), NANPROP_OK);
        CHECK(calls == 0 && same_pattern(direct, q));
        nanprop_pattern_free(q);
        x0[3] += 1.0; /* another point: refused */
        CHECK_STATUS(nanprop_trace(model, NULL, N, N, x0, &o, &q), NANPROP_ERR_INVALID_ARGUMENT);
        CHECK(error_mentions("belongs to another trace"));
        x0[3] -= 1.0;
        remove(path);
    }

    /* A Jacobian as one batch: all points first, then assemble; equal to nanprop_jacobian. */
    nanprop_jacobian_plan *plan = NULL;
    CHECK_STATUS(nanprop_jacobian_plan_create(direct, NULL, &plan), NANPROP_OK);
    size_t points = nanprop_jacobian_plan_num_points(plan, 0), nnz = nanprop_pattern_nnz(direct);
    CHECK(points == nanprop_jacobian_plan_num_colors(plan) + 1);
    double *ys = malloc(points * N * sizeof *ys), *v1 = malloc(nnz * sizeof *v1), *v2 = malloc(nnz * sizeof *v2);
    for (size_t k = points; k-- > 0;) { /* any order */
        CHECK_STATUS(nanprop_jacobian_plan_point(plan, x0, 0, k, x), NANPROP_OK);
        model(NULL, N, x, N, ys + k * N);
    }
    CHECK_STATUS(nanprop_jacobian_plan_assemble(plan, x0, NULL, ys, v1), NANPROP_OK);
    size_t evals;
    CHECK_STATUS(nanprop_jacobian(model, NULL, N, N, x0, direct, NULL, v2, &evals), NANPROP_OK);
    CHECK(memcmp(v1, v2, nnz * sizeof *v1) == 0);
    CHECK_STATUS(nanprop_jacobian_plan_point(plan, x0, 0, points, x), NANPROP_ERR_INVALID_ARGUMENT);
    free(ys);
    free(v1);
    free(v2);
    nanprop_jacobian_plan_free(plan);
    nanprop_pattern_free(direct);
    nanprop_pattern_free(batched);
    return check_report("test_batch");
}
