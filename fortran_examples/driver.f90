! Traces the F77 cantilever model BEAM (beam.f) from Fortran through the nanprop module, gets the
! pattern 1-based, and computes its Jacobian (dense, column-major) with colors + 1 evaluations,
! checked against the analytic derivatives; then the same for the REAL*4 banded residual BAND4
! (single.f) through nanprop_trace_f32 and nanprop_jacobian_f32; the smoothed Jacobian of BEAM
! (linear: the smoothed Jacobian is the Jacobian); and the sparse Hessian of a small objective from
! its gradient routine (star coloring). Prints "driver: N passed, N failed".
module beam_box
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    subroutine beam(n, x, m, y)
      integer, intent(in) :: n, m
      double precision, intent(in) :: x(n)
      double precision, intent(out) :: y(m)
    end subroutine beam
    subroutine band4(n, x, m, y)
      integer, intent(in) :: n, m
      real, intent(in) :: x(n)
      real, intent(out) :: y(m)
    end subroutine band4
  end interface
contains
  ! BEAM behind the nanprop_blackbox interface.
  function beam_f(user_data, n, x, m, y) bind(C) result(status)
    type(c_ptr), value :: user_data
    integer(c_size_t), value :: n, m
    real(c_double), intent(in) :: x(n)
    real(c_double), intent(out) :: y(m)
    integer(c_int) :: status
    call beam(int(n), x, int(m), y)
    status = 0
  end function beam_f

  ! BAND4 (REAL*4) behind the nanprop_blackbox_f32 interface.
  function band4_f(user_data, n, x, m, y) bind(C) result(status)
    type(c_ptr), value :: user_data
    integer(c_size_t), value :: n, m
    real(c_float), intent(in) :: x(n)
    real(c_float), intent(out) :: y(m)
    integer(c_int) :: status
    call band4(int(n), x, int(m), y)
    status = 0
  end function band4_f

  ! The gradient of f = sum_{i<k} x_i^2 x_{i+1} + s/2 sum_{i<=k} x_i^2 + s^2/2, k = n - 1,
  ! s = x(n) a global variable.
  function chain_gradient(user_data, n, x, m, g) bind(C) result(status)
    type(c_ptr), value :: user_data
    integer(c_size_t), value :: n, m
    real(c_double), intent(in) :: x(n)
    real(c_double), intent(out) :: g(m)
    integer(c_int) :: status
    integer :: i, k
    k = int(n) - 1
    g = 0.0d0
    do i = 1, k
      g(i) = x(n) * x(i)
      if (i < k) g(i) = g(i) + 2.0d0 * x(i) * x(i + 1)
      if (i > 1) g(i) = g(i) + x(i - 1)**2
      g(n) = g(n) + x(i)**2 / 2.0d0
    end do
    g(n) = g(n) + x(n)
    status = 0
  end function chain_gradient
end module beam_box

program driver
  use, intrinsic :: iso_c_binding
  use nanprop
  use beam_box
  implicit none
  integer, parameter :: n = 12, m = n + 1
  real(c_double) :: x0(n), jac(m, n), exact, dx, arm, worst
  real(c_float) :: x4(n), jac4(n, n)
  type(nanprop_options) :: opts
  type(nanprop_jacobian_options) :: jopts
  type(nanprop_smoothing_options) :: sopts
  type(c_ptr) :: hplan
  integer, parameter :: nh = 9
  real(c_double) :: xh(nh), hess(nh, nh), hexact
  real(c_double), allocatable :: smooth(:)
  integer(c_size_t) :: colors(nh), num_colors
  type(c_ptr) :: p
  integer, allocatable :: row_ptr(:), col_idx(:)
  integer(c_int) :: status
  integer(c_size_t) :: evals
  integer :: i, j, k, passed, failed
  logical :: ok

  passed = 0
  failed = 0
  do j = 1, n
    x0(j) = 100.0d0 + 10.0d0 * j
  end do

  ! The structs as the library sees them.
  call nanprop_options_init(opts)
  call check(opts%struct_size == c_sizeof(opts), 'nanprop_options size')
  call nanprop_jacobian_options_init(jopts)
  call check(jopts%struct_size == c_sizeof(jopts), 'nanprop_jacobian_options size')
  call check(jopts%coloring%struct_size == c_sizeof(jopts%coloring), 'nanprop_coloring_options size')

  status = nanprop_trace(c_funloc(beam_f), c_null_ptr, int(n, c_size_t), int(m, c_size_t), x0, opts, p)
  call check(status == NANPROP_OK, 'trace: '//nanprop_last_error())
  status = nanprop_get_csr(p, row_ptr, col_idx, one_based=.true.)
  call check(status == NANPROP_OK, 'csr')

  ! Stress at element i depends on the loads at elements i..n; the tip deflection on all.
  ok = .true.
  do i = 1, m
    k = row_ptr(i)
    do j = merge(i, 1, i <= n), n
      ok = ok .and. k < row_ptr(i + 1)
      if (k < row_ptr(i + 1)) ok = ok .and. col_idx(k) == j
      k = k + 1
    end do
    ok = ok .and. k == row_ptr(i + 1)
  end do
  call check(ok, 'pattern (1-based CSR)')
  call check(nanprop_pattern_num_failed_columns(p) == 0, 'no NaN-intolerant input')
  call check(nanprop_pattern_noise(p) == 0.0d0, 'no noise')
  print '(a, i0, a, i0, a)', 'driver: pattern found with ', nanprop_pattern_evaluations(p), &
      ' evaluations (one-hot: ', n + 1, ')'

  ! The Jacobian, dense column-major as Fortran stores it.
  jopts%layout = NANPROP_LAYOUT_DENSE_COLUMN_MAJOR
  status = nanprop_jacobian(c_funloc(beam_f), c_null_ptr, int(n, c_size_t), int(m, c_size_t), x0, p, &
      jopts, jac, evals)
  call check(status == NANPROP_OK, 'jacobian: '//nanprop_last_error())
  dx = 2.0d0 / n
  worst = 0.0d0
  do j = 1, n
    do i = 1, n
      exact = 0.0d0
      if (j >= i) exact = dx * (j - i + 0.5d0) * dx / 1.0d-4
      worst = max(worst, abs(jac(i, j) - exact) / max(abs(exact), 1.0d0))
    end do
    arm = (j - 0.5d0) * dx
    exact = dx * arm**2 * (3.0d0 * 2.0d0 - arm) / (6.0d0 * 5.0d4)
    worst = max(worst, abs(jac(m, j) - exact) / max(abs(exact), 1.0d0))
  end do
  ! BEAM is linear, so the error is rounding alone: about eps |y| / h relative to |J|, with
  ! |y| ~ 1e7 and h ~ 3e-6 here, a few 1e-6.
  call check(worst < 2.0d-5, 'jacobian accuracy')
  ! The tip deflection depends on every load, so no two columns share a color: n + 1.
  call check(evals == n + 1, 'colors + 1 evaluations')
  print '(a, i0, a, es9.2)', 'driver: Jacobian in ', evals, ' evaluations, max relative error ', worst

  ! The smoothed Jacobian of BEAM: linear, so the per-row regression gives its Jacobian.
  call nanprop_smoothing_options_init(sopts)
  call check(sopts%struct_size == c_sizeof(sopts), 'nanprop_smoothing_options size')
  sopts%samples = 40
  allocate(smooth(nanprop_pattern_nnz(p)))
  status = nanprop_smoothed_jacobian(c_funloc(beam_f), c_null_ptr, int(n, c_size_t), &
      int(m, c_size_t), x0, p, sopts, smooth, c_null_ptr, evals)
  call check(status == NANPROP_OK, 'smoothed jacobian: '//nanprop_last_error())
  call check(evals == 80, 'two evaluations per sample')
  worst = 0.0d0
  do i = 1, m
    do k = row_ptr(i), row_ptr(i + 1) - 1
      worst = max(worst, abs(smooth(k) - jac(i, col_idx(k))) / max(abs(jac(i, col_idx(k))), 1.0d0))
    end do
  end do
  call check(worst < 1.0d-4, 'smoothed Jacobian of a linear model')
  print '(a, es9.2)', 'driver: smoothed Jacobian of the linear beam, max relative difference ', worst

  call nanprop_pattern_free(p)

  ! A sparse Hessian from a gradient routine: star coloring, central differences, dense.
  do j = 1, nh
    xh(j) = 0.3d0 + 0.1d0 * j
  end do
  status = nanprop_trace(c_funloc(chain_gradient), c_null_ptr, int(nh, c_size_t), int(nh, c_size_t), &
      xh, opts, p)
  call check(status == NANPROP_OK, 'trace gradient: '//nanprop_last_error())
  status = nanprop_hessian_coloring(p, colors, num_colors)
  call check(status == NANPROP_OK .and. num_colors <= 4, 'star coloring')
  jopts%difference = NANPROP_DIFFERENCE_CENTRAL
  status = nanprop_hessian_plan_create(p, jopts, hplan)
  call check(status == NANPROP_OK, 'hessian plan: '//nanprop_last_error())
  call check(nanprop_hessian_plan_values_len(hplan) == nh * nh, 'dense Hessian')
  status = nanprop_hessian_plan_evaluate(hplan, c_funloc(chain_gradient), c_null_ptr, xh, c_null_ptr, &
      hess, evals)
  call check(status == NANPROP_OK, 'hessian: '//nanprop_last_error())
  call check(evals == 2 * num_colors, 'two gradient evaluations per color')
  worst = 0.0d0
  do j = 1, nh
    do i = 1, nh
      hexact = 0.0d0
      if (i == j .and. i < nh) hexact = xh(nh)
      if (i == j .and. i < nh - 1) hexact = hexact + 2.0d0 * xh(i + 1)
      if (i == j .and. i == nh) hexact = 1.0d0
      if (j == i + 1 .and. j < nh) hexact = 2.0d0 * xh(i)
      if (i == j + 1 .and. i < nh) hexact = 2.0d0 * xh(j)
      if (i /= j .and. (i == nh .or. j == nh)) hexact = xh(min(i, j))
      worst = max(worst, abs(hess(i, j) - hexact))
    end do
  end do
  call check(worst < 1.0d-8, 'Hessian accuracy')
  print '(a, i0, a, i0, a, es9.2)', 'driver: Hessian with ', num_colors, ' star colors in ', evals, &
      ' gradient evaluations, max error ', worst
  call nanprop_hessian_plan_free(hplan)
  call nanprop_pattern_free(p)
  jopts%difference = NANPROP_DIFFERENCE_FORWARD

  ! REAL*4: BAND4 (half-bandwidth 2) traced and differentiated in single precision.
  do j = 1, n
    x4(j) = 0.25 + real(mod(j, 7)) / 8.0
  end do
  status = nanprop_trace_f32(c_funloc(band4_f), c_null_ptr, int(n, c_size_t), int(n, c_size_t), x4, &
      opts, p)
  call check(status == NANPROP_OK, 'trace_f32: '//nanprop_last_error())
  call check(nanprop_pattern_nnz(p) == 5 * n - 6, 'REAL*4 band pattern')
  status = nanprop_jacobian_f32(c_funloc(band4_f), c_null_ptr, int(n, c_size_t), int(n, c_size_t), x4, &
      p, jopts, jac4, evals)
  call check(status == NANPROP_OK, 'jacobian_f32: '//nanprop_last_error())
  worst = 0.0d0
  do j = 1, n
    do i = 1, n
      exact = 0.0d0
      if (i == j) exact = 2.0d0 + 15.0d0 * dble(x4(i))**2
      if (i /= j .and. abs(i - j) <= 2) exact = -(1.0d0 + 2.0d0 * dble(x4(j)))
      worst = max(worst, abs(jac4(i, j) - exact) / 10.0d0)
    end do
  end do
  ! Forward differences in float: about sqrt(eps_f32) = 3.5e-4 relative.
  call check(worst < 2.0d-3, 'REAL*4 jacobian accuracy')
  print '(a, i0, a, es9.2)', 'driver: REAL*4 Jacobian in ', evals, ' evaluations, max relative error ', worst
  call nanprop_pattern_free(p)

  print '(a, i0, a, i0, a)', 'driver: ', passed, ' passed, ', failed, ' failed'
  if (failed > 0) stop 1

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) then
      passed = passed + 1
    else
      failed = failed + 1
      print '(a, a)', 'driver: CHECK failed: ', what
    end if
  end subroutine check

end program driver
