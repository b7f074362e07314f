C     ------------------------------------------------------------------
C     Single-precision (REAL*4) residuals, as older CFD, structural and
C     atmospheric codes and the single-precision test sets write them.
C
C     BAND4: SUBROUTINE BAND4(N, X, M, Y), M = N: Broyden's banded
C     function with half-bandwidth 2,
C       Y(I) = X(I) (2 + 5 X(I)**2) + 1 - SUM X(J) (1 + X(J)),
C     the sum over J = I-2 .. I+2, J /= I, 1 <= J <= N.
C
C     TRIDG4: MINPACK hybrd form, SUBROUTINE FCN(N, X, FVEC, IFLAG):
C     the Broyden tridiagonal function in REAL*4,
C       FVEC(I) = (3 - 2 X(I)) X(I) - X(I-1) - 2 X(I+1) + 1.
C     ------------------------------------------------------------------
      SUBROUTINE BAND4(N, X, M, Y)
      INTEGER N, M
      REAL X(N), Y(M)
      REAL S
      INTEGER I, J
      DO 20 I = 1, N
         S = 0.0
         DO 10 J = MAX(1, I-2), MIN(N, I+2)
            IF (J .NE. I) S = S + X(J) * (1.0 + X(J))
   10    CONTINUE
         Y(I) = X(I) * (2.0 + 5.0 * X(I)**2) + 1.0 - S
   20 CONTINUE
      RETURN
      END
C
      SUBROUTINE TRIDG4(N, X, FVEC, IFLAG)
      INTEGER N, IFLAG
      REAL X(N), FVEC(N)
      REAL XL, XR
      INTEGER I
      DO 10 I = 1, N
         XL = 0.0
         XR = 0.0
         IF (I .GT. 1) XL = X(I-1)
         IF (I .LT. N) XR = X(I+1)
         FVEC(I) = (3.0 - 2.0*X(I))*X(I) - XL - 2.0*XR + 1.0
   10 CONTINUE
      RETURN
      END
