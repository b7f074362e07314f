C     A residual scaled by the largest input, the way legacy codes find a pivot: the index of
C     the largest |X(I)| is chosen by comparisons. When every input is NaN no comparison holds,
C     IMAX keeps its sentinel and the code reads far outside X: the process dies (SIGSEGV).
C     nanprop traces it under isolation by splitting the all-NaN probe.
C
C     Y(I) = X(I)**2 + X(I+1) + X(IMAX) / 1000, I = 1..M (X(N+1) is X(1)); at a point with a
C     unique largest input, row I depends on X(I), X(I+1) and that input.
      SUBROUTINE PIVOT(N, X, M, Y)
      INTEGER N, M, I, IMAX
      DOUBLE PRECISION X(N), Y(M), ZMAX
      IMAX = -100000000
      ZMAX = -1.0D0
      DO 10 I = 1, N
         IF (ABS(X(I)) .GT. ZMAX) THEN
            ZMAX = ABS(X(I))
            IMAX = I
         END IF
   10 CONTINUE
      DO 20 I = 1, M
         Y(I) = X(I)**2 + X(MOD(I, N) + 1) + X(IMAX) / 1000.0D0
   20 CONTINUE
      END
