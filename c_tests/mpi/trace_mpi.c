/* Tracing with MPI through nanprop's batch (ask/tell) API; nanprop itself does not link MPI.
 * Rank 0 owns the session: it asks for a step's requests and hands them out one at a time to
 * whichever worker rank is free (so slow and fast evaluations balance), telling each result as
 * it returns. Ranks 1..p-1 only evaluate the model. Run: mpirun -np 2 ./trace_mpi */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nanprop.h"

enum { N = 120, TAG_WORK = 1, TAG_RESULT = 2, TAG_STOP = 3 };

/* The user's model (here cheap; in practice the expensive legacy code lives on the workers). */
static void model(const double *x, double *y) {
    for (int i = 0; i < N; i++) y[i] = x[i] * x[i] + x[(i + 1) % N] - 0.5 * x[(i + 7) % N];
}

static int model_cb(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    model(x, y);
    return 0;
}

static void worker(void) {
    double msg[N + 1], out[N + 1];
    for (;;) {
        MPI_Status st;
        MPI_Recv(msg, N + 1, MPI_DOUBLE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP) return;
        out[0] = msg[0]; /* the request id travels with its data */
        model(msg + 1, out + 1);
        MPI_Send(out, N + 1, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
    }
}

static int leader(int ranks) {
    int passed = 0, failed = 0;
#define CHECK(c) do { if (c) passed++; else { failed++; fprintf(stderr, "CHECK failed: %s (%s)\n", #c, nanprop_last_error()); } } while (0)
    double x0[N], msg[N + 1];
    for (int j = 0; j < N; j++) x0[j] = 0.3 + 0.01 * j;
    nanprop_session *s = NULL;
    CHECK(nanprop_session_create(N, N, x0, NULL, &s) == NANPROP_OK);
    size_t count = 0, steps = 0, *ids = NULL;
    for (;;) {
        CHECK(nanprop_session_ask(s, NULL, 0, &count) == NANPROP_OK);
        if (count == 0) break;
        ids = realloc(ids, count * sizeof *ids);
        CHECK(nanprop_session_ask(s, ids, count, &count) == NANPROP_OK);
        size_t next = 0, busy = 0;
        /* One request to each worker, then a new one to whoever answers. */
        for (int r = 1; r < ranks && next < count; r++, next++, busy++) {
            msg[0] = (double)ids[next];
            nanprop_session_input(s, ids[next], msg + 1);
            MPI_Send(msg, N + 1, MPI_DOUBLE, r, TAG_WORK, MPI_COMM_WORLD);
        }
        while (busy > 0) {
            MPI_Status st;
            MPI_Recv(msg, N + 1, MPI_DOUBLE, MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
            busy--;
            CHECK(nanprop_session_tell(s, (size_t)msg[0], msg + 1) == NANPROP_OK);
            if (next < count) {
                msg[0] = (double)ids[next];
                nanprop_session_input(s, ids[next], msg + 1);
                MPI_Send(msg, N + 1, MPI_DOUBLE, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD);
                next++;
                busy++;
            }
        }
        steps++;
    }
    for (int r = 1; r < ranks; r++) MPI_Send(msg, N + 1, MPI_DOUBLE, r, TAG_STOP, MPI_COMM_WORLD);
    nanprop_pattern *p = NULL, *serial = NULL;
    CHECK(nanprop_session_finish(s, &p) == NANPROP_OK);
    nanprop_session_free(s);
    free(ids);

    /* The same trace without MPI, for comparison. */
    CHECK(nanprop_trace(model_cb, NULL, N, N, x0, NULL, &serial) == NANPROP_OK);
    size_t nnz = nanprop_pattern_nnz(p);
    CHECK(nnz == 3 * N && nnz == nanprop_pattern_nnz(serial));
    size_t rp1[N + 1], rp2[N + 1], *c1 = malloc(nnz * sizeof *c1), *c2 = malloc(nnz * sizeof *c2);
    nanprop_pattern_csr(p, rp1, c1);
    nanprop_pattern_csr(serial, rp2, c2);
    CHECK(memcmp(rp1, rp2, sizeof rp1) == 0 && memcmp(c1, c2, nnz * sizeof *c1) == 0);
    CHECK(nanprop_pattern_evaluations(p) == nanprop_pattern_evaluations(serial));
    printf("trace_mpi: %d ranks, %zu steps, %zu evaluations, nnz = %zu\n", ranks, steps,
           nanprop_pattern_evaluations(p), nnz);
    free(c1);
    free(c2);
    nanprop_pattern_free(p);
    nanprop_pattern_free(serial);
    printf("trace_mpi: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int status = 0;
    if (ranks < 2) {
        if (rank == 0) fprintf(stderr, "trace_mpi needs at least 2 ranks (mpirun -np 2)\n");
        status = 2;
    } else if (rank == 0) {
        status = leader(ranks);
    } else {
        worker();
    }
    MPI_Finalize();
    return status;
}
