/* Tracing at several points from C: given points, sampled points, and a flag tracer. */
#include "check.h"

/* y0 = x1 if x0 > 0 else x2 (x0 a switch); y1 = x3. */
static int switched(void *ud, size_t n, const double *x, size_t m, double *y) {
    (void)ud; (void)n; (void)m;
    y[0] = x[0] > 0.0 ? x[1] : x[2];
    y[1] = x[3];
    return 0;
}

int main(void) {
    nanprop_options o;
    nanprop_options_init(&o);
    o.strategy = NANPROP_STRATEGY_ONE_HOT; /* exact per point (see the README on branches) */
    nanprop_pattern *p = NULL;
    static const char *const one[] = {"##..", "...#"};
    static const char *const both[] = {"###.", "...#"};

    double x0[4] = {1.0, 1.0, 2.0, 1.0};
    CHECK_STATUS(nanprop_trace(switched, NULL, 4, 2, x0, &o, &p), NANPROP_OK);
    CHECK(pattern_is(p, 2, 4, one));
    size_t single = nanprop_pattern_evaluations(p);
    nanprop_pattern_free(p);

    /* Two given points, one on each side of the switch. */
    double points[8] = {1.0, 1.0, 2.0, 1.0, -1.0, 1.0, 2.0, 1.0};
    CHECK_STATUS(nanprop_trace_points(switched, NULL, 4, 2, points, 2, &o, &p), NANPROP_OK);
    CHECK(pattern_is(p, 2, 4, both));
    size_t united = nanprop_pattern_evaluations(p);
    nanprop_pattern_free(p);
    double x1[4] = {-1.0, 1.0, 2.0, 1.0};
    CHECK_STATUS(nanprop_trace(switched, NULL, 4, 2, x1, &o, &p), NANPROP_OK);
    CHECK(united == single + nanprop_pattern_evaluations(p)); /* two whole traces */
    nanprop_pattern_free(p);
    CHECK_STATUS(nanprop_trace_points(switched, NULL, 4, 2, points, 0, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);

    /* Sampled around a point near the switch. */
    double near[4] = {0.1, 1.0, 2.0, 1.0};
    o.sample_points = 8;
    o.sample_scale = 0.5;
    o.seed = 7;
    CHECK_STATUS(nanprop_trace(switched, NULL, 4, 2, near, &o, &p), NANPROP_OK);
    CHECK(pattern_is(p, 2, 4, both));
    nanprop_pattern_free(p);
    o.sample_scale = -1.0;
    CHECK_STATUS(nanprop_trace(switched, NULL, 4, 2, near, &o, &p), NANPROP_ERR_INVALID_ARGUMENT);
    o.sample_points = 0;

    /* A flag tracer on input 0, fed the points an optimizer would visit. */
    nanprop_flag_tracer *t = NULL;
    size_t flags[1] = {0};
    CHECK_STATUS(nanprop_flag_tracer_create(switched, NULL, 4, 2, flags, 1, &o, &t), NANPROP_OK);
    CHECK_STATUS(nanprop_flag_tracer_pattern(t, &p), NANPROP_ERR_INVALID_ARGUMENT);
    int traced = -1;
    double visit[3][4] = {{1.0, 1.0, 2.0, 1.0}, {1.0, 5.0, 6.0, 7.0}, {-1.0, 5.0, 6.0, 7.0}};
    CHECK_STATUS(nanprop_flag_tracer_observe(t, visit[0], &traced), NANPROP_OK);
    CHECK(traced == 1);
    CHECK_STATUS(nanprop_flag_tracer_observe(t, visit[1], &traced), NANPROP_OK);
    CHECK(traced == 0);
    CHECK_STATUS(nanprop_flag_tracer_observe(t, visit[2], &traced), NANPROP_OK);
    CHECK(traced == 1);
    CHECK(nanprop_flag_tracer_traces(t) == 2);
    CHECK_STATUS(nanprop_flag_tracer_pattern(t, &p), NANPROP_OK);
    CHECK(pattern_is(p, 2, 4, both));
    nanprop_pattern_free(p);
    CHECK_STATUS(nanprop_flag_tracer_observe(t, NULL, &traced), NANPROP_ERR_INVALID_ARGUMENT);
    nanprop_flag_tracer_free(t);
    nanprop_flag_tracer_free(NULL);
    size_t bad[1] = {4};
    CHECK_STATUS(nanprop_flag_tracer_create(switched, NULL, 4, 2, bad, 1, &o, &t), NANPROP_ERR_INVALID_ARGUMENT);
    CHECK(t == NULL);

    return check_report("test_multipoint");
}
