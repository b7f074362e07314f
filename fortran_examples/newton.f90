! An optimization loop in Fortran the way nanprop is meant to be used: trace the pattern once,
! make a Jacobian plan once (the coloring), then at every Newton iteration evaluate the residual
! and its Jacobian from the plan, reusing F(x) so a Jacobian costs one evaluation per color.
! The residual is MINPACK's Broyden tridiagonal function (TRIDG in minpack_fcn.f, hybrd form).
! Also traces the same function through a batch session (the caller runs each evaluation), and
! reads the entry kinds and counters. Prints "newton: N passed, N failed".
module tridg_box
  use, intrinsic :: iso_c_binding
  implicit none
  integer, save :: calls = 0
  interface
    subroutine tridg(n, x, fvec, iflag)
      integer, intent(in) :: n
      double precision, intent(in) :: x(n)
      double precision, intent(out) :: fvec(n)
      integer, intent(inout) :: iflag
    end subroutine tridg
  end interface
contains
  function tridg_f(user_data, n, x, m, y) bind(C) result(status)
    type(c_ptr), value :: user_data
    integer(c_size_t), value :: n, m
    real(c_double), intent(in) :: x(n)
    real(c_double), intent(out) :: y(m)
    integer(c_int) :: status
    integer :: iflag
    iflag = 1
    calls = calls + 1
    call tridg(int(n), x, y, iflag)
    status = merge(0, 1, iflag >= 0)
  end function tridg_f
end module tridg_box

program newton
  use, intrinsic :: iso_c_binding
  use nanprop
  use tridg_box
  implicit none
  integer, parameter :: n = 40
  real(c_double), target :: x(n), fx(n)
  real(c_double) :: jac(n, n), dx(n), norm
  type(nanprop_options) :: opts
  type(nanprop_jacobian_options) :: jopts
  type(c_ptr) :: p, plan, session, q
  integer(c_int) :: status, iflag
  integer(c_size_t) :: evals, colors, ids(64), count, k, total_jacobian
  integer(c_int8_t), allocatable :: kinds(:)
  integer :: it, passed, failed, calls_before

  passed = 0
  failed = 0
  call check(len(nanprop_version()) > 0, 'version')
  call check(nanprop_status_string(NANPROP_ERR_BLACKBOX) == 'black box failed', 'status string')
  x = -1.0d0   ! MINPACK's standard starting point

  ! The pattern, once.
  call nanprop_options_init(opts)
  status = nanprop_trace(c_funloc(tridg_f), c_null_ptr, int(n, c_size_t), int(n, c_size_t), x, opts, p)
  call check(status == NANPROP_OK, 'trace: '//nanprop_last_error())
  call check(nanprop_pattern_nnz(p) == 3 * n - 2, 'tridiagonal pattern')
  allocate(kinds(nanprop_pattern_nnz(p)))
  status = nanprop_pattern_entry_kinds(p, kinds)
  call check(status == NANPROP_OK .and. all(kinds == NANPROP_ENTRY_TRACED), 'entry kinds')
  call check(nanprop_pattern_unresolved(p) == 0 .and. nanprop_pattern_assumed(p) == 0, 'counters')

  ! The plan, once: dense column-major, as Fortran stores matrices.
  call nanprop_jacobian_options_init(jopts)
  jopts%layout = NANPROP_LAYOUT_DENSE_COLUMN_MAJOR
  status = nanprop_jacobian_plan_create(p, jopts, plan)
  call check(status == NANPROP_OK, 'plan: '//nanprop_last_error())
  colors = nanprop_jacobian_plan_num_colors(plan)
  call check(colors == 3, 'three colors')

  ! Newton: F(x) from the residual, J(x) from the plan with F(x) given (colors evaluations).
  total_jacobian = 0
  calls_before = calls
  do it = 1, 20
    iflag = 1
    call tridg(n, x, fx, iflag)
    norm = sqrt(sum(fx**2))
    if (norm < 1.0d-12) exit
    status = nanprop_jacobian_plan_evaluate(plan, c_funloc(tridg_f), c_null_ptr, x, c_loc(fx), jac, evals)
    call check(status == NANPROP_OK, 'plan evaluate: '//nanprop_last_error())
    total_jacobian = total_jacobian + evals
    dx = -fx
    call solve(jac, dx)
    x = x + dx
  end do
  print '(a, i0, a, es9.2, a, i0, a)', 'newton: converged in ', it - 1, ' iterations, |F| = ', norm, &
      ', ', total_jacobian, ' evaluations for the Jacobians'
  call check(norm < 1.0d-10, 'Newton converged')
  call check(total_jacobian == (it - 1) * colors, 'colors evaluations per Jacobian')
  call check(calls - calls_before == total_jacobian, 'no other call of f')

  ! The same pattern through a batch session: nanprop asks, we evaluate, we tell.
  x = -1.0d0
  status = nanprop_session_create(int(n, c_size_t), int(n, c_size_t), x, opts, session)
  call check(status == NANPROP_OK, 'session: '//nanprop_last_error())
  do
    status = nanprop_session_ask(session, ids, int(size(ids), c_size_t), count)
    if (status /= NANPROP_OK .or. count == 0) exit
    do k = 1, min(count, int(size(ids), c_size_t))
      status = nanprop_session_input(session, ids(k), dx)
      iflag = 1
      call tridg(n, dx, fx, iflag)
      status = nanprop_session_tell(session, ids(k), fx)
    end do
  end do
  status = nanprop_session_finish(session, q)
  call check(status == NANPROP_OK, 'session finish: '//nanprop_last_error())
  call check(nanprop_pattern_nnz(q) == nanprop_pattern_nnz(p), 'session gives the same pattern')
  call nanprop_session_free(session)
  call nanprop_pattern_free(q)

  call nanprop_jacobian_plan_free(plan)
  call nanprop_pattern_free(p)
  print '(a, i0, a, i0, a)', 'newton: ', passed, ' passed, ', failed, ' failed'
  if (failed > 0) stop 1

contains

  ! Solves a x = b by Gaussian elimination with partial pivoting (b overwritten by x).
  subroutine solve(a, b)
    real(c_double), intent(inout) :: a(:, :), b(:)
    integer :: i, j, piv, m
    real(c_double) :: t
    m = size(b)
    do j = 1, m
      piv = j - 1 + maxloc(abs(a(j:m, j)), 1)
      if (piv /= j) then
        a([j, piv], :) = a([piv, j], :)
        b([j, piv]) = b([piv, j])
      end if
      do i = j + 1, m
        t = a(i, j) / a(j, j)
        a(i, j:m) = a(i, j:m) - t * a(j, j:m)
        b(i) = b(i) - t * b(j)
      end do
    end do
    do i = m, 1, -1
      b(i) = (b(i) - sum(a(i, i + 1:m) * b(i + 1:m))) / a(i, i)
    end do
  end subroutine solve

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (cond) then
      passed = passed + 1
    else
      failed = failed + 1
      print '(a, a)', 'newton: CHECK failed: ', what
    end if
  end subroutine check
end program newton
