C     FORTRAN 77 with include 'mpif.h' (fixed form): the oldest way MPI
C     programs are written, through MPICH's bindings over cosched's
C     library. A ring with a status and with MPI_STATUS_IGNORE, Bcast,
C     Allreduce, Barrier, MPI_Attr_get of MPI_TAG_UB. Rank 0 prints PASS
C     when every rank passed; each failure prints a line starting FAIL.
      PROGRAM F77
      INCLUDE 'mpif.h'
      INTEGER IERR, ME, NP, RIGHT, LEFT, N, TOTAL, NBAD, ALLBAD, TAGUB
      INTEGER STATUS(MPI_STATUS_SIZE)
      DOUBLE PRECISION X(8), Y(8)
      LOGICAL FLAG
      NBAD = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, ME, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      RIGHT = MOD(ME + 1, NP)
      LEFT = MOD(ME + NP - 1, NP)
      DO 10 N = 1, 8
         X(N) = ME * 10 + N
   10 CONTINUE
      CALL MPI_SENDRECV(X, 8, MPI_DOUBLE_PRECISION, RIGHT, 1, Y, 8,
     &     MPI_DOUBLE_PRECISION, LEFT, 1, MPI_COMM_WORLD, STATUS, IERR)
      IF (Y(8) .NE. LEFT * 10 + 8 .OR. STATUS(MPI_SOURCE) .NE. LEFT)
     &     THEN
         PRINT *, 'FAIL ring', ME
         NBAD = NBAD + 1
      END IF
      CALL MPI_SENDRECV(X, 8, MPI_DOUBLE_PRECISION, RIGHT, 2, Y, 8,
     &     MPI_DOUBLE_PRECISION, LEFT, 2, MPI_COMM_WORLD,
     &     MPI_STATUS_IGNORE, IERR)
      IF (Y(1) .NE. LEFT * 10 + 1) THEN
         PRINT *, 'FAIL ring with MPI_STATUS_IGNORE', ME
         NBAD = NBAD + 1
      END IF
      N = 0
      IF (ME .EQ. 0) N = 77
      CALL MPI_BCAST(N, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, IERR)
      IF (N .NE. 77) THEN
         PRINT *, 'FAIL bcast', ME
         NBAD = NBAD + 1
      END IF
      CALL MPI_ALLREDUCE(ME, TOTAL, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      IF (TOTAL .NE. NP * (NP - 1) / 2) THEN
         PRINT *, 'FAIL allreduce', ME
         NBAD = NBAD + 1
      END IF
      CALL MPI_ATTR_GET(MPI_COMM_WORLD, MPI_TAG_UB, TAGUB, FLAG, IERR)
      IF (.NOT. FLAG .OR. TAGUB .LT. 32767) THEN
         PRINT *, 'FAIL MPI_TAG_UB', ME
         NBAD = NBAD + 1
      END IF
      CALL MPI_BARRIER(MPI_COMM_WORLD, IERR)
      CALL MPI_ALLREDUCE(NBAD, ALLBAD, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, IERR)
      CALL MPI_FINALIZE(IERR)
      IF (ME .EQ. 0 .AND. ALLBAD .EQ. 0) PRINT '(A)', 'PASS'
      IF (NBAD .GT. 0) STOP 1
      END
