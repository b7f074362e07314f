C     ------------------------------------------------------------------
C     LSOLVE: a black box built on LAPACK (Debian liblapack3): solves
C     A Y = X with DGESV for the fixed DIAGONAL matrix A = diag(2 + i).
C     Mathematically Y(I) depends on X(I) alone; NaN tracing reports
C     every output depending on every input, because the LU solve
C     computes 0 * NaN = NaN for every off-diagonal zero (NAN_FACTS 4).
C     ------------------------------------------------------------------
      SUBROUTINE LSOLVE(N, X, M, Y)
      INTEGER N, M
      DOUBLE PRECISION X(N), Y(M)
      INTEGER NMAX
      PARAMETER (NMAX = 64)
      DOUBLE PRECISION A(NMAX, NMAX)
      INTEGER IPIV(NMAX), INFO, I, J
      DO 20 J = 1, N
         DO 10 I = 1, N
            A(I, J) = 0.0D0
   10    CONTINUE
         A(J, J) = 2.0D0 + J
         Y(J) = X(J)
   20 CONTINUE
      CALL DGESV(N, 1, A, NMAX, IPIV, Y, N, INFO)
      RETURN
      END
