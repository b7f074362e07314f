! The layout of the module's bind(C) option types: "struct.field offset" lines, compared by
! tests/fortran.rs with what fortran_examples/layout.c prints for the C header's structs.
program layout
  use, intrinsic :: iso_c_binding
  use nanprop
  implicit none
  type(nanprop_options), target :: o
  type(nanprop_coloring_options), target :: c
  type(nanprop_jacobian_options), target :: j
  type(nanprop_smoothing_options), target :: sm
  integer(c_intptr_t) :: base

  base = transfer(c_loc(o), base)
  call field('nanprop_options.struct_size', c_loc(o%struct_size))
  call field('nanprop_options.version', c_loc(o%version))
  call field('nanprop_options.strategy', c_loc(o%strategy))
  call field('nanprop_options.chunk_size', c_loc(o%chunk_size))
  call field('nanprop_options.max_evaluations', c_loc(o%max_evaluations))
  call field('nanprop_options.nonfinite_baseline', c_loc(o%nonfinite_baseline))
  call field('nanprop_options.verify', c_loc(o%verify))
  call field('nanprop_options.verify_step', c_loc(o%verify_step))
  call field('nanprop_options.verify_tolerance', c_loc(o%verify_tolerance))
  call field('nanprop_options.sample_points', c_loc(o%sample_points))
  call field('nanprop_options.sample_scale', c_loc(o%sample_scale))
  call field('nanprop_options.seed', c_loc(o%seed))
  call field('nanprop_options.isolate', c_loc(o%isolate))
  call field('nanprop_options.timeout', c_loc(o%timeout))
  call field('nanprop_options.threads', c_loc(o%threads))
  call field('nanprop_options.processes', c_loc(o%processes))
  call field('nanprop_options.journal', c_loc(o%journal))
  call field('nanprop_options.function_id', c_loc(o%function_id))
  call field('nanprop_options.noise', c_loc(o%noise))
  print '(a, i0)', 'nanprop_options.size ', c_sizeof(o)

  base = transfer(c_loc(c), base)
  call field('nanprop_coloring_options.struct_size', c_loc(c%struct_size))
  call field('nanprop_coloring_options.version', c_loc(c%version))
  call field('nanprop_coloring_options.order', c_loc(c%order))
  call field('nanprop_coloring_options.seed', c_loc(c%seed))
  call field('nanprop_coloring_options.recolor_iterations', c_loc(c%recolor_iterations))
  print '(a, i0)', 'nanprop_coloring_options.size ', c_sizeof(c)

  base = transfer(c_loc(j), base)
  call field('nanprop_jacobian_options.struct_size', c_loc(j%struct_size))
  call field('nanprop_jacobian_options.version', c_loc(j%version))
  call field('nanprop_jacobian_options.difference', c_loc(j%difference))
  call field('nanprop_jacobian_options.layout', c_loc(j%layout))
  call field('nanprop_jacobian_options.step_kind', c_loc(j%step_kind))
  call field('nanprop_jacobian_options.step', c_loc(j%step))
  call field('nanprop_jacobian_options.steps', c_loc(j%steps))
  call field('nanprop_jacobian_options.coloring', c_loc(j%coloring))
  print '(a, i0)', 'nanprop_jacobian_options.size ', c_sizeof(j)

  base = transfer(c_loc(sm), base)
  call field('nanprop_smoothing_options.struct_size', c_loc(sm%struct_size))
  call field('nanprop_smoothing_options.version', c_loc(sm%version))
  call field('nanprop_smoothing_options.sigma', c_loc(sm%sigma))
  call field('nanprop_smoothing_options.sigma_kind', c_loc(sm%sigma_kind))
  call field('nanprop_smoothing_options.samples', c_loc(sm%samples))
  call field('nanprop_smoothing_options.seed', c_loc(sm%seed))
  call field('nanprop_smoothing_options.estimator', c_loc(sm%estimator))
  print '(a, i0)', 'nanprop_smoothing_options.size ', c_sizeof(sm)

contains

  subroutine field(name, where)
    character(len=*), intent(in) :: name
    type(c_ptr), intent(in) :: where
    integer(c_intptr_t) :: at
    at = transfer(where, at)
    print '(a, 1x, i0)', name, at - base
  end subroutine field
end program layout
