C     The common residual form: F = R(X), as many residuals as unknowns, no M argument.
C     F(I) = X(I-1) - 2 X(I) + X(I+1) + X(I)**3 (X(0) = X(N+1) = 0): tridiagonal.
      SUBROUTINE RESID(N, X, F)
      INTEGER N, I
      DOUBLE PRECISION X(N), F(N), XL, XR
      DO 10 I = 1, N
         XL = 0.0D0
         XR = 0.0D0
         IF (I .GT. 1) XL = X(I - 1)
         IF (I .LT. N) XR = X(I + 1)
         F(I) = XL - 2.0D0 * X(I) + XR + X(I)**3
   10 CONTINUE
      END
