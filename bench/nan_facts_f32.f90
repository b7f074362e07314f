! How NaN payloads travel through gfortran REAL*4 code: the Fortran half of the README's
! single-precision facts (see nan_facts_f32.c). gfortran -O2 bench/nan_facts_f32.f90 && ./a.out
program nan_facts_f32
  use, intrinsic :: iso_c_binding
  implicit none
  real(c_float) :: a, one, zero
  real(c_double) :: d
  integer(c_int32_t) :: abits
  abits = int(z'7FC12345', c_int32_t)
  a = transfer(abits, a)
  one = 1.0
  zero = 0.0
  call row('a + 1', a + one)
  call row('a * 0', a * zero)
  call row('sin(a)', sin(a))
  call row('exp(a)', exp(a))
  call row('sqrt(a)', sqrt(a))
  call row('a**2', a**2)
  call row('max(a, 1.0)', max(a, one))
  call row('min(1.0, a)', min(one, a))
  call row('abs(-a)', abs(-a))
  d = dble(a)
  call row('real(dble(a))', real(d, c_float))
  call row('real(dble(a) + 1d0)', real(d + 1.0d0, c_float))
contains
  subroutine row(what, r)
    character(len=*), intent(in) :: what
    real(c_float), intent(in) :: r
    integer(c_int32_t) :: b
    character(len=12) :: verdict
    b = transfer(r, b)
    if (r /= r) then
      if (iand(b, int(z'3FFFFF', c_int32_t)) == int(z'12345', c_int32_t)) then
        verdict = 'A kept'
      else
        verdict = 'other NaN'
      end if
    else
      verdict = 'no NaN'
    end if
    print '(a28, 1x, z8.8, 2x, a)', what, b, verdict
  end subroutine row
end program nan_facts_f32
