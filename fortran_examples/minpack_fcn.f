C     ------------------------------------------------------------------
C     Residuals in MINPACK's calling conventions.
C
C     TRIDG: hybrd form, SUBROUTINE FCN(N, X, FVEC, IFLAG): MINPACK's
C     Broyden tridiagonal test function. Sets IFLAG = -1 (failure) when
C     X(1) exceeds 1000, as a user function may to stop the solver.
C
C     ROSEN_CHAIN: lmdif form, SUBROUTINE FCN(M, N, X, FVEC, IFLAG):
C     M = N residuals of a chained Rosenbrock problem,
C     FVEC(I) = 10 (X(I+1) - X(I)**2), I < N, and FVEC(N) = 1 - X(1).
C     The underscore in its name makes g77/f2c export it as
C     rosen_chain__; gfortran exports rosen_chain_.
C     ------------------------------------------------------------------
      SUBROUTINE TRIDG(N, X, FVEC, IFLAG)
      INTEGER N, IFLAG
      DOUBLE PRECISION X(N), FVEC(N)
      DOUBLE PRECISION XL, XR
      INTEGER I
      IF (X(1) .GT. 1.0D3) THEN
         IFLAG = -1
         RETURN
      END IF
      DO 10 I = 1, N
         XL = 0.0D0
         XR = 0.0D0
         IF (I .GT. 1) XL = X(I-1)
         IF (I .LT. N) XR = X(I+1)
         FVEC(I) = (3.0D0 - 2.0D0*X(I))*X(I) - XL - 2.0D0*XR + 1.0D0
   10 CONTINUE
      RETURN
      END
C
      SUBROUTINE ROSEN_CHAIN(M, N, X, FVEC, IFLAG)
      INTEGER M, N, IFLAG
      DOUBLE PRECISION X(N), FVEC(M)
      INTEGER I
      DO 10 I = 1, N - 1
         FVEC(I) = 10.0D0 * (X(I+1) - X(I)**2)
   10 CONTINUE
      FVEC(N) = 1.0D0 - X(1)
      RETURN
      END
