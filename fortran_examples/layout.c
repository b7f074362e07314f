/* The layout of the option structs as the C compiler sees them: "struct.field offset" lines,
 * compared by tests/fortran.rs with what fortran_examples/layout.f90 prints for the module's
 * bind(C) types. */
#include <stddef.h>
#include <stdio.h>
#include "nanprop.h"

#define F(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(s, f))

int main(void) {
    F(nanprop_options, struct_size); F(nanprop_options, version); F(nanprop_options, strategy);
    F(nanprop_options, chunk_size); F(nanprop_options, max_evaluations);
    F(nanprop_options, nonfinite_baseline); F(nanprop_options, verify);
    F(nanprop_options, verify_step); F(nanprop_options, verify_tolerance);
    F(nanprop_options, sample_points); F(nanprop_options, sample_scale); F(nanprop_options, seed);
    F(nanprop_options, isolate); F(nanprop_options, timeout); F(nanprop_options, threads);
    F(nanprop_options, processes); F(nanprop_options, journal); F(nanprop_options, function_id); F(nanprop_options, noise);
    printf("nanprop_options.size %zu\n", sizeof(nanprop_options));
    F(nanprop_coloring_options, struct_size); F(nanprop_coloring_options, version);
    F(nanprop_coloring_options, order); F(nanprop_coloring_options, seed);
    F(nanprop_coloring_options, recolor_iterations);
    printf("nanprop_coloring_options.size %zu\n", sizeof(nanprop_coloring_options));
    F(nanprop_jacobian_options, struct_size); F(nanprop_jacobian_options, version);
    F(nanprop_jacobian_options, difference); F(nanprop_jacobian_options, layout);
    F(nanprop_jacobian_options, step_kind); F(nanprop_jacobian_options, step);
    F(nanprop_jacobian_options, steps); F(nanprop_jacobian_options, coloring);
    printf("nanprop_jacobian_options.size %zu\n", sizeof(nanprop_jacobian_options));
    F(nanprop_smoothing_options, struct_size); F(nanprop_smoothing_options, version);
    F(nanprop_smoothing_options, sigma); F(nanprop_smoothing_options, sigma_kind);
    F(nanprop_smoothing_options, samples); F(nanprop_smoothing_options, seed);
    F(nanprop_smoothing_options, estimator);
    printf("nanprop_smoothing_options.size %zu\n", sizeof(nanprop_smoothing_options));
    return 0;
}
