! nanprop: the Fortran interface (ISO_C_BINDING) to the C ABI in nanprop.h.
!
! Usage: compile this file with your program (gfortran -c nanprop.f90), `use nanprop`, link with
! -lnanprop. A black box is a bind(C) function with the nanprop_blackbox interface below; pass
! it as c_funloc(f). Option structs must be initialized with their _init subroutine (they carry
! their size and version, and the library checks them).
!
! Written by hand from include/nanprop.h (which is generated), and checked against it by
! tests/fortran.rs: every C function has its interface here, and the option types' fields sit at
! the offsets the C compiler gives them (fortran_examples/layout.c against layout.f90). Strings
! returned by C (nanprop_last_error, nanprop_version, nanprop_status_string,
! nanprop_loaded_symbol) come back as Fortran strings. fortran_examples/newton.f90 is an
! optimization loop: pattern once, plan once, a Jacobian every iteration.
module nanprop
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_strlen, c_string, nanprop_version_c, nanprop_status_string_c, nanprop_loaded_symbol_c

  ! nanprop_status
  integer(c_int), parameter :: NANPROP_OK = 0
  integer(c_int), parameter :: NANPROP_ERR_INVALID_ARGUMENT = 1
  integer(c_int), parameter :: NANPROP_ERR_BLACKBOX = 2
  integer(c_int), parameter :: NANPROP_ERR_BASELINE_NOT_FINITE = 3
  integer(c_int), parameter :: NANPROP_ERR_OUT_OF_MEMORY = 4
  integer(c_int), parameter :: NANPROP_ERR_INTERNAL = 5

  integer(c_int32_t), parameter :: NANPROP_STRATEGY_DEFAULT = 0, NANPROP_STRATEGY_ONE_HOT = 1
  integer(c_int32_t), parameter :: NANPROP_STRATEGY_CHUNKED = 2, NANPROP_STRATEGY_PAYLOAD = 3
  integer(c_int32_t), parameter :: NANPROP_DIFFERENCE_FORWARD = 0, NANPROP_DIFFERENCE_CENTRAL = 1
  integer(c_int32_t), parameter :: NANPROP_LAYOUT_CSR = 0, NANPROP_LAYOUT_CSC = 1
  integer(c_int32_t), parameter :: NANPROP_LAYOUT_DENSE_COLUMN_MAJOR = 2
  integer(c_int32_t), parameter :: NANPROP_STEP_RELATIVE = 0, NANPROP_STEP_ABSOLUTE = 1
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_C = 0, NANPROP_CONVENTION_BLACKBOX = 1
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_FORTRAN = 2
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_MINPACK_HYBRD = 3
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_MINPACK_LMDIF = 4
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_FORTRAN_SQUARE = 5
  ! Added to a convention for a REAL*4 routine: NANPROP_CONVENTION_FORTRAN + NANPROP_CONVENTION_REAL4
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_REAL4 = 256
  ! Added to a convention: the library is loaded only by the processes that call it (isolate, processes)
  integer(c_int32_t), parameter :: NANPROP_CONVENTION_OPEN_IN_WORKER = 512
  ! nanprop_options%nonfinite_baseline
  integer(c_int32_t), parameter :: NANPROP_NONFINITE_MARK_DENSE = 0, NANPROP_NONFINITE_ERROR = 1
  ! nanprop_options%noise
  integer(c_int32_t), parameter :: NANPROP_NOISE_TOLERATE = 0, NANPROP_NOISE_ERROR = 1
  ! Entry kinds (nanprop_pattern_entry_kinds)
  integer(c_int8_t), parameter :: NANPROP_ENTRY_TRACED = 0, NANPROP_ENTRY_PERTURBATION = 1
  integer(c_int8_t), parameter :: NANPROP_ENTRY_CHUNK = 2, NANPROP_ENTRY_UNRESOLVED = 3
  integer(c_int8_t), parameter :: NANPROP_ENTRY_NONFINITE_ROW = 4, NANPROP_ENTRY_ASSUMED = 5
  ! nanprop_coloring_options%order
  integer(c_int32_t), parameter :: NANPROP_ORDER_BEST = 0, NANPROP_ORDER_NATURAL = 1
  integer(c_int32_t), parameter :: NANPROP_ORDER_LARGEST_FIRST = 2, NANPROP_ORDER_SMALLEST_LAST = 3
  integer(c_int32_t), parameter :: NANPROP_ORDER_INCIDENCE_DEGREE = 4
  integer(c_int32_t), parameter :: NANPROP_ORDER_DYNAMIC_LARGEST_FIRST = 5
  integer(c_int32_t), parameter :: NANPROP_ORDER_RANDOM = 6, NANPROP_ORDER_SATURATION = 7
  integer(c_int32_t), parameter :: NANPROP_ORDER_AUTO = 8
  ! nanprop_smoothing_options%estimator
  integer(c_int32_t), parameter :: NANPROP_SMOOTHING_REGRESSION = 0, NANPROP_SMOOTHING_AVERAGE = 1

  type, bind(C) :: nanprop_options
    integer(c_size_t) :: struct_size
    integer(c_int32_t) :: version
    integer(c_int32_t) :: strategy
    integer(c_size_t) :: chunk_size
    integer(c_size_t) :: max_evaluations
    integer(c_int32_t) :: nonfinite_baseline
    integer(c_int32_t) :: verify
    real(c_double) :: verify_step
    real(c_double) :: verify_tolerance
    integer(c_size_t) :: sample_points
    real(c_double) :: sample_scale
    integer(c_int64_t) :: seed
    integer(c_int32_t) :: isolate
    real(c_double) :: timeout
    integer(c_size_t) :: threads
    integer(c_size_t) :: processes
    type(c_ptr) :: journal
    type(c_ptr) :: function_id
    integer(c_int32_t) :: noise
  end type nanprop_options

  type, bind(C) :: nanprop_coloring_options
    integer(c_size_t) :: struct_size
    integer(c_int32_t) :: version
    integer(c_int32_t) :: order
    integer(c_int64_t) :: seed
    integer(c_int32_t) :: recolor_iterations
  end type nanprop_coloring_options

  type, bind(C) :: nanprop_jacobian_options
    integer(c_size_t) :: struct_size
    integer(c_int32_t) :: version
    integer(c_int32_t) :: difference
    integer(c_int32_t) :: layout
    integer(c_int32_t) :: step_kind
    real(c_double) :: step
    type(c_ptr) :: steps
    type(nanprop_coloring_options) :: coloring
  end type nanprop_jacobian_options

  type, bind(C) :: nanprop_smoothing_options
    integer(c_size_t) :: struct_size
    integer(c_int32_t) :: version
    real(c_double) :: sigma
    integer(c_int32_t) :: sigma_kind
    integer(c_size_t) :: samples
    integer(c_int64_t) :: seed
    integer(c_int32_t) :: estimator
  end type nanprop_smoothing_options

  abstract interface
    ! The black box: y = f(x); return 0 on success.
    function nanprop_blackbox(user_data, n, x, m, y) bind(C) result(status)
      import :: c_ptr, c_size_t, c_double, c_int
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_double), intent(in) :: x(n)
      real(c_double), intent(out) :: y(m)
      integer(c_int) :: status
    end function nanprop_blackbox

    ! The black box in single precision (REAL*4): for nanprop_trace_f32, nanprop_jacobian_f32.
    function nanprop_blackbox_f32(user_data, n, x, m, y) bind(C) result(status)
      import :: c_ptr, c_size_t, c_float, c_int
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_float), intent(in) :: x(n)
      real(c_float), intent(out) :: y(m)
      integer(c_int) :: status
    end function nanprop_blackbox_f32
  end interface

  interface
    subroutine nanprop_options_init(options) bind(C, name="nanprop_options_init")
      import :: nanprop_options
      type(nanprop_options), intent(out) :: options
    end subroutine

    subroutine nanprop_jacobian_options_init(options) bind(C, name="nanprop_jacobian_options_init")
      import :: nanprop_jacobian_options
      type(nanprop_jacobian_options), intent(out) :: options
    end subroutine

    subroutine nanprop_coloring_options_init(options) bind(C, name="nanprop_coloring_options_init")
      import :: nanprop_coloring_options
      type(nanprop_coloring_options), intent(out) :: options
    end subroutine

    function nanprop_trace(f, user_data, n, m, x0, options, out) bind(C, name="nanprop_trace") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_double, c_int, nanprop_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_double), intent(in) :: x0(*)
      type(nanprop_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_trace_f32(f, user_data, n, m, x0, options, out) bind(C, name="nanprop_trace_f32") &
        result(status)
      import :: c_funptr, c_ptr, c_size_t, c_float, c_int, nanprop_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_float), intent(in) :: x0(*)
      type(nanprop_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_pattern_rows(p) bind(C, name="nanprop_pattern_rows") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_cols(p) bind(C, name="nanprop_pattern_cols") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_nnz(p) bind(C, name="nanprop_pattern_nnz") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_evaluations(p) bind(C, name="nanprop_pattern_evaluations") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_num_failed_columns(p) bind(C, name="nanprop_pattern_num_failed_columns") &
        result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    ! The NaN-intolerant inputs (0-based, increasing): nanprop_pattern_num_failed_columns of them.
    function nanprop_pattern_failed_columns(p, cols) bind(C, name="nanprop_pattern_failed_columns") &
        result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: p
      integer(c_size_t), intent(out) :: cols(*)
      integer(c_int) :: status
    end function

    ! The estimated relative noise of f's outputs (0: repeated evaluations agree bit for bit).
    function nanprop_pattern_noise(p) bind(C, name="nanprop_pattern_noise") result(noise)
      import :: c_ptr, c_double
      type(c_ptr), value :: p
      real(c_double) :: noise
    end function

    ! The change tolerance the trace used (verify_tolerance, or the one set from the noise).
    function nanprop_pattern_tolerance(p) bind(C, name="nanprop_pattern_tolerance") result(t)
      import :: c_ptr, c_double
      type(c_ptr), value :: p
      real(c_double) :: t
    end function

    function nanprop_pattern_csr(p, row_ptr, col_idx) bind(C, name="nanprop_pattern_csr") result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: p
      integer(c_size_t), intent(out) :: row_ptr(*), col_idx(*)
      integer(c_int) :: status
    end function

    subroutine nanprop_pattern_free(p) bind(C, name="nanprop_pattern_free")
      import :: c_ptr
      type(c_ptr), value :: p
    end subroutine

    function nanprop_jacobian(f, user_data, n, m, x0, p, options, values, evaluations) &
        bind(C, name="nanprop_jacobian") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_double, c_int, nanprop_jacobian_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_double), intent(in) :: x0(*)
      type(c_ptr), value :: p
      type(nanprop_jacobian_options), intent(in) :: options
      real(c_double), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    function nanprop_jacobian_f32(f, user_data, n, m, x0, p, options, values, evaluations) &
        bind(C, name="nanprop_jacobian_f32") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_float, c_int, nanprop_jacobian_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_float), intent(in) :: x0(*)
      type(c_ptr), value :: p
      type(nanprop_jacobian_options), intent(in) :: options
      real(c_float), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    function nanprop_loaded_open(path, symbol, convention, n, m, integer_bytes, out) &
        bind(C, name="nanprop_loaded_open") result(status)
      import :: c_char, c_int32_t, c_size_t, c_ptr, c_int
      character(kind=c_char), intent(in) :: path(*), symbol(*)
      integer(c_int32_t), value :: convention, integer_bytes
      integer(c_size_t), value :: n, m
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_loaded_trace(b, x0, options, out) bind(C, name="nanprop_loaded_trace") result(status)
      import :: c_ptr, c_double, c_int, nanprop_options
      type(c_ptr), value :: b
      real(c_double), intent(in) :: x0(*)
      type(nanprop_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    subroutine nanprop_loaded_close(b) bind(C, name="nanprop_loaded_close")
      import :: c_ptr
      type(c_ptr), value :: b
    end subroutine

    ! --- version and status
    function nanprop_version_c() bind(C, name="nanprop_version") result(v)
      import :: c_ptr
      type(c_ptr) :: v
    end function

    function nanprop_status_string_c(status) bind(C, name="nanprop_status_string") result(v)
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: v
    end function

    ! --- tracing at several points
    function nanprop_trace_points(f, user_data, n, m, points, num_points, options, out) &
        bind(C, name="nanprop_trace_points") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_double, c_int, nanprop_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m, num_points
      real(c_double), intent(in) :: points(*)
      type(nanprop_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    ! --- pattern counters, kinds, copies
    function nanprop_pattern_verification_evaluations(p) &
        bind(C, name="nanprop_pattern_verification_evaluations") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_found_by_perturbation(p) &
        bind(C, name="nanprop_pattern_found_by_perturbation") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_unresolved(p) bind(C, name="nanprop_pattern_unresolved") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_assumed(p) bind(C, name="nanprop_pattern_assumed") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_entry_kinds(p, kinds) bind(C, name="nanprop_pattern_entry_kinds") &
        result(status)
      import :: c_ptr, c_int8_t, c_int
      type(c_ptr), value :: p
      integer(c_int8_t), intent(out) :: kinds(*)
      integer(c_int) :: status
    end function

    function nanprop_pattern_num_nonfinite_rows(p) &
        bind(C, name="nanprop_pattern_num_nonfinite_rows") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t) :: k
    end function

    function nanprop_pattern_nonfinite_rows(p, rows) bind(C, name="nanprop_pattern_nonfinite_rows") &
        result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: p
      integer(c_size_t), intent(out) :: rows(*)
      integer(c_int) :: status
    end function

    function nanprop_pattern_csc(p, col_ptr, row_idx) bind(C, name="nanprop_pattern_csc") result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: p
      integer(c_size_t), intent(out) :: col_ptr(*), row_idx(*)
      integer(c_int) :: status
    end function

    function nanprop_pattern_from_csr(m, n, row_ptr, col_idx, out) bind(C, name="nanprop_pattern_from_csr") &
        result(status)
      import :: c_ptr, c_size_t, c_int
      integer(c_size_t), value :: m, n
      integer(c_size_t), intent(in) :: row_ptr(*), col_idx(*)
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    ! --- coloring and Jacobian plans (color once, evaluate many times)
    function nanprop_coloring(p, options, colors, num_colors) bind(C, name="nanprop_coloring") result(status)
      import :: c_ptr, c_size_t, c_int, nanprop_coloring_options
      type(c_ptr), value :: p
      type(nanprop_coloring_options), intent(in) :: options
      integer(c_size_t), intent(out) :: colors(*)
      integer(c_size_t), intent(out) :: num_colors
      integer(c_int) :: status
    end function

    function nanprop_jacobian_plan_create(p, options, out) bind(C, name="nanprop_jacobian_plan_create") &
        result(status)
      import :: c_ptr, c_int, nanprop_jacobian_options
      type(c_ptr), value :: p
      type(nanprop_jacobian_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_jacobian_plan_num_colors(plan) bind(C, name="nanprop_jacobian_plan_num_colors") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t) :: k
    end function

    function nanprop_jacobian_plan_values_len(plan) bind(C, name="nanprop_jacobian_plan_values_len") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t) :: k
    end function

    function nanprop_jacobian_plan_colors(plan, colors) bind(C, name="nanprop_jacobian_plan_colors") &
        result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: plan
      integer(c_size_t), intent(out) :: colors(*)
      integer(c_int) :: status
    end function

    ! fx: c_null_ptr, or c_loc of f(x) (m values), which saves one evaluation.
    function nanprop_jacobian_plan_evaluate(plan, f, user_data, x, fx, values, evaluations) &
        bind(C, name="nanprop_jacobian_plan_evaluate") result(status)
      import :: c_ptr, c_funptr, c_double, c_size_t, c_int
      type(c_ptr), value :: plan
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      real(c_double), intent(in) :: x(*)
      type(c_ptr), value :: fx
      real(c_double), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    function nanprop_jacobian_plan_evaluate_f32(plan, f, user_data, x, fx, values, evaluations) &
        bind(C, name="nanprop_jacobian_plan_evaluate_f32") result(status)
      import :: c_ptr, c_funptr, c_float, c_size_t, c_int
      type(c_ptr), value :: plan
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      real(c_float), intent(in) :: x(*)
      type(c_ptr), value :: fx
      real(c_float), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    function nanprop_jacobian_plan_num_points(plan, with_fx) bind(C, name="nanprop_jacobian_plan_num_points") &
        result(k)
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: plan
      integer(c_int), value :: with_fx
      integer(c_size_t) :: k
    end function

    function nanprop_jacobian_plan_point(plan, x, with_fx, k, xk) bind(C, name="nanprop_jacobian_plan_point") &
        result(status)
      import :: c_ptr, c_double, c_int, c_size_t
      type(c_ptr), value :: plan
      real(c_double), intent(in) :: x(*)
      integer(c_int), value :: with_fx
      integer(c_size_t), value :: k
      real(c_double), intent(out) :: xk(*)
      integer(c_int) :: status
    end function

    function nanprop_jacobian_plan_assemble(plan, x, fx, ys, values) bind(C, name="nanprop_jacobian_plan_assemble") &
        result(status)
      import :: c_ptr, c_double, c_int
      type(c_ptr), value :: plan
      real(c_double), intent(in) :: x(*)
      type(c_ptr), value :: fx
      real(c_double), intent(in) :: ys(*)
      real(c_double), intent(out) :: values(*)
      integer(c_int) :: status
    end function

    subroutine nanprop_jacobian_plan_free(plan) bind(C, name="nanprop_jacobian_plan_free")
      import :: c_ptr
      type(c_ptr), value :: plan
    end subroutine

    ! --- sparse Hessians (from a gradient routine: n inputs, n outputs) and smoothed Jacobians
    function nanprop_hessian_coloring(p, colors, num_colors) bind(C, name="nanprop_hessian_coloring") &
        result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: p
      integer(c_size_t), intent(out) :: colors(*)
      integer(c_size_t), intent(out) :: num_colors
      integer(c_int) :: status
    end function

    function nanprop_hessian(gradient, user_data, n, x0, p, options, values, evaluations) &
        bind(C, name="nanprop_hessian") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_double, c_int, nanprop_jacobian_options
      type(c_funptr), value :: gradient
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n
      real(c_double), intent(in) :: x0(*)
      type(c_ptr), value :: p
      type(nanprop_jacobian_options), intent(in) :: options
      real(c_double), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    function nanprop_hessian_plan_create(p, options, out) bind(C, name="nanprop_hessian_plan_create") &
        result(status)
      import :: c_ptr, c_int, nanprop_jacobian_options
      type(c_ptr), value :: p
      type(nanprop_jacobian_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_hessian_plan_num_colors(plan) bind(C, name="nanprop_hessian_plan_num_colors") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t) :: k
    end function

    function nanprop_hessian_plan_values_len(plan) bind(C, name="nanprop_hessian_plan_values_len") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: plan
      integer(c_size_t) :: k
    end function

    function nanprop_hessian_plan_colors(plan, colors) bind(C, name="nanprop_hessian_plan_colors") &
        result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: plan
      integer(c_size_t), intent(out) :: colors(*)
      integer(c_int) :: status
    end function

    ! gx: c_null_ptr, or c_loc of the gradient at x (n values), which saves one evaluation.
    function nanprop_hessian_plan_evaluate(plan, gradient, user_data, x, gx, values, evaluations) &
        bind(C, name="nanprop_hessian_plan_evaluate") result(status)
      import :: c_ptr, c_funptr, c_double, c_size_t, c_int
      type(c_ptr), value :: plan
      type(c_funptr), value :: gradient
      type(c_ptr), value :: user_data
      real(c_double), intent(in) :: x(*)
      type(c_ptr), value :: gx
      real(c_double), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    subroutine nanprop_hessian_plan_free(plan) bind(C, name="nanprop_hessian_plan_free")
      import :: c_ptr
      type(c_ptr), value :: plan
    end subroutine

    subroutine nanprop_smoothing_options_init(options) bind(C, name="nanprop_smoothing_options_init")
      import :: nanprop_smoothing_options
      type(nanprop_smoothing_options), intent(out) :: options
    end subroutine

    ! std_errors: c_null_ptr, or c_loc of nnz values for the standard errors.
    function nanprop_smoothed_jacobian(f, user_data, n, m, x0, p, options, values, std_errors, &
        evaluations) bind(C, name="nanprop_smoothed_jacobian") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_double, c_int, nanprop_smoothing_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m
      real(c_double), intent(in) :: x0(*)
      type(c_ptr), value :: p
      type(nanprop_smoothing_options), intent(in) :: options
      real(c_double), intent(out) :: values(*)
      type(c_ptr), value :: std_errors
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    ! --- batch sessions (you run the evaluations)
    function nanprop_session_create(n, m, x0, options, out) bind(C, name="nanprop_session_create") result(status)
      import :: c_size_t, c_double, c_ptr, c_int, nanprop_options
      integer(c_size_t), value :: n, m
      real(c_double), intent(in) :: x0(*)
      type(nanprop_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_session_ask(s, ids, capacity, count) bind(C, name="nanprop_session_ask") result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: s
      integer(c_size_t), intent(out) :: ids(*)
      integer(c_size_t), value :: capacity
      integer(c_size_t), intent(out) :: count
      integer(c_int) :: status
    end function

    function nanprop_session_input(s, id, x) bind(C, name="nanprop_session_input") result(status)
      import :: c_ptr, c_size_t, c_double, c_int
      type(c_ptr), value :: s
      integer(c_size_t), value :: id
      real(c_double), intent(out) :: x(*)
      integer(c_int) :: status
    end function

    function nanprop_session_tell(s, id, y) bind(C, name="nanprop_session_tell") result(status)
      import :: c_ptr, c_size_t, c_double, c_int
      type(c_ptr), value :: s
      integer(c_size_t), value :: id
      real(c_double), intent(in) :: y(*)
      integer(c_int) :: status
    end function

    function nanprop_session_fail(s, id, code) bind(C, name="nanprop_session_fail") result(status)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: s
      integer(c_size_t), value :: id
      integer(c_int), value :: code
      integer(c_int) :: status
    end function

    function nanprop_session_evaluations(s) bind(C, name="nanprop_session_evaluations") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: k
    end function

    function nanprop_session_finish(s, out) bind(C, name="nanprop_session_finish") result(status)
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    subroutine nanprop_session_free(s) bind(C, name="nanprop_session_free")
      import :: c_ptr
      type(c_ptr), value :: s
    end subroutine

    ! --- loaded libraries: Jacobian, the black box, the resolved name
    function nanprop_loaded_jacobian(b, x0, p, options, values, evaluations) &
        bind(C, name="nanprop_loaded_jacobian") result(status)
      import :: c_ptr, c_double, c_size_t, c_int, nanprop_jacobian_options
      type(c_ptr), value :: b
      real(c_double), intent(in) :: x0(*)
      type(c_ptr), value :: p
      type(nanprop_jacobian_options), intent(in) :: options
      real(c_double), intent(out) :: values(*)
      integer(c_size_t), intent(out) :: evaluations
      integer(c_int) :: status
    end function

    function nanprop_loaded_blackbox(b, f, user_data) bind(C, name="nanprop_loaded_blackbox") result(status)
      import :: c_ptr, c_funptr, c_int
      type(c_ptr), value :: b
      type(c_funptr), intent(out) :: f
      type(c_ptr), intent(out) :: user_data
      integer(c_int) :: status
    end function

    function nanprop_loaded_symbol_c(b) bind(C, name="nanprop_loaded_symbol") result(v)
      import :: c_ptr
      type(c_ptr), value :: b
      type(c_ptr) :: v
    end function

    ! --- flag inputs (traced again whenever discrete inputs take new values)
    function nanprop_flag_tracer_create(f, user_data, n, m, flags, num_flags, options, out) &
        bind(C, name="nanprop_flag_tracer_create") result(status)
      import :: c_funptr, c_ptr, c_size_t, c_int, nanprop_options
      type(c_funptr), value :: f
      type(c_ptr), value :: user_data
      integer(c_size_t), value :: n, m, num_flags
      integer(c_size_t), intent(in) :: flags(*)
      type(nanprop_options), intent(in) :: options
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_flag_tracer_observe(t, x, traced) bind(C, name="nanprop_flag_tracer_observe") result(status)
      import :: c_ptr, c_double, c_int
      type(c_ptr), value :: t
      real(c_double), intent(in) :: x(*)
      integer(c_int), intent(out) :: traced
      integer(c_int) :: status
    end function

    function nanprop_flag_tracer_pattern(t, out) bind(C, name="nanprop_flag_tracer_pattern") result(status)
      import :: c_ptr, c_int
      type(c_ptr), value :: t
      type(c_ptr), intent(out) :: out
      integer(c_int) :: status
    end function

    function nanprop_flag_tracer_traces(t) bind(C, name="nanprop_flag_tracer_traces") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: t
      integer(c_size_t) :: k
    end function

    subroutine nanprop_flag_tracer_free(t) bind(C, name="nanprop_flag_tracer_free")
      import :: c_ptr
      type(c_ptr), value :: t
    end subroutine

    function nanprop_last_error_c() bind(C, name="nanprop_last_error") result(msg)
      import :: c_ptr
      type(c_ptr) :: msg
    end function

    function c_strlen(s) bind(C, name="strlen") result(k)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: k
    end function
  end interface

contains

  ! A C string (NUL-terminated) as a Fortran string; "" for NULL.
  function c_string(p) result(text)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: k, length
    if (.not. c_associated(p)) then
      text = ''
      return
    end if
    length = int(c_strlen(p))
    call c_f_pointer(p, chars, [length])
    allocate(character(len=length) :: text)
    do k = 1, length
      text(k:k) = chars(k)
    end do
  end function c_string

  ! The message of the last failure on this thread, as a Fortran string.
  function nanprop_last_error() result(msg)
    character(len=:), allocatable :: msg
    msg = c_string(nanprop_last_error_c())
  end function nanprop_last_error

  ! The library's version, "MAJOR.MINOR.PATCH".
  function nanprop_version() result(v)
    character(len=:), allocatable :: v
    v = c_string(nanprop_version_c())
  end function nanprop_version

  ! The name of a status code ("NANPROP_ERR_BLACKBOX", ...).
  function nanprop_status_string(status) result(v)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: v
    v = c_string(nanprop_status_string_c(status))
  end function nanprop_status_string

  ! The symbol a loaded library resolved (e.g. "beam_").
  function nanprop_loaded_symbol(b) result(v)
    type(c_ptr), intent(in) :: b
    character(len=:), allocatable :: v
    v = c_string(nanprop_loaded_symbol_c(b))
  end function nanprop_loaded_symbol

  ! The pattern in CSR form in default-kind integer arrays, 0-based, or 1-based when one_based
  ! is present and true (row i's columns are col_idx(row_ptr(i) : row_ptr(i+1) - 1)).
  function nanprop_get_csr(p, row_ptr, col_idx, one_based) result(status)
    type(c_ptr), intent(in) :: p
    integer, allocatable, intent(out) :: row_ptr(:), col_idx(:)
    logical, intent(in), optional :: one_based
    integer(c_int) :: status
    integer(c_size_t), allocatable :: rp(:), ci(:)
    integer :: m, nnz, shift
    m = int(nanprop_pattern_rows(p))
    nnz = int(nanprop_pattern_nnz(p))
    allocate(rp(m + 1), ci(max(nnz, 1)))
    status = nanprop_pattern_csr(p, rp, ci)
    shift = 0
    if (present(one_based)) then
      if (one_based) shift = 1
    end if
    row_ptr = int(rp) + shift
    col_idx = int(ci(1:nnz)) + shift
  end function nanprop_get_csr

end module nanprop
