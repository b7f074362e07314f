C     ------------------------------------------------------------------
C     BEAM: a cantilever discretized into N equal elements, element 1 at
C     the root, written the way legacy structural codes are (fixed form,
C     COMMON block, SAVE'd initialization flag).
C
C     X(J)    load on element J (N/m), J = 1..N
C     Y(I)    bending stress at the root end of element I, I = 1..N:
C             the moment of the loads outboard of it over the section
C             modulus, so Y(I) depends on X(I..N) only
C     Y(N+1)  tip deflection, by superposition: depends on every load
C
C     M must be N + 1.
C     ------------------------------------------------------------------
      SUBROUTINE BEAM(N, X, M, Y)
      INTEGER N, M
      DOUBLE PRECISION X(N), Y(M)
      DOUBLE PRECISION EL, EI, Z
      COMMON /SECT/ EL, EI, Z
      DOUBLE PRECISION DX, ARM, S
      INTEGER I, J
      LOGICAL INIT
      SAVE INIT
      DATA INIT /.FALSE./
C
      IF (.NOT. INIT) THEN
         EL = 2.0D0
         EI = 5.0D4
         Z = 1.0D-4
         INIT = .TRUE.
      END IF
      DX = EL / N
      DO 20 I = 1, N
         S = 0.0D0
         DO 10 J = I, N
            ARM = (J - I + 0.5D0) * DX
            S = S + X(J) * DX * ARM
   10    CONTINUE
         Y(I) = S / Z
   20 CONTINUE
      S = 0.0D0
      DO 30 J = 1, N
         ARM = (J - 0.5D0) * DX
         S = S + X(J) * DX * ARM**2 * (3.0D0*EL - ARM) / (6.0D0*EI)
   30 CONTINUE
      Y(N+1) = S
      RETURN
      END
