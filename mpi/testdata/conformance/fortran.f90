! Fortran through MPICH's own Fortran bindings (libmpichfort.so.12, which
! calls the C interface) over cosched's library: what Fortran codes use
! most. The `use mpi` module and the Fortran datatypes (INTEGER, REAL,
! DOUBLE PRECISION, COMPLEX, LOGICAL, CHARACTER, the pair types), the
! status array (MPI_SOURCE, MPI_TAG, Get_count, MPI_STATUS_IGNORE),
! blocking and non-blocking point to point with wildcards, Sendrecv, the
! common collectives on Fortran types and operations (MAXLOC on
! 2DOUBLE_PRECISION, LAND on LOGICAL, a user op written in Fortran),
! Comm_split and Comm_dup, the predefined attributes (MPI_TAG_UB,
! MPI_WTIME_IS_GLOBAL, and MPI_Attr_get's INTEGER) and a user attribute
! with Fortran callbacks, MPI_IN_PLACE, derived types, Wtime, errors
! returned, a window's Put between fences and under a lock and, given a directory
! (argument 1), MPI-IO. Each failure prints a line starting with FAIL;
! rank 0 prints PASS when every rank passed.
module checks
  implicit none
  integer :: failures = 0, me = -1
contains
  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      failures = failures + 1
      write (*, '(A,I0,A,A)') 'FAIL rank ', me, ': ', what
      flush (6)
    end if
  end subroutine
  subroutine ok(ierr, what)
    integer, intent(in) :: ierr
    character(len=*), intent(in) :: what
    call check(ierr == 0, what // ' failed')
  end subroutine
end module

module callbacks
  implicit none
  integer :: copies = 0, deletes = 0
contains
  ! MPI's Fortran attribute callbacks: the value is an address-sized
  ! integer; the copy doubles it, the delete counts.
  subroutine copy_fn(oldcomm, keyval, extra, valin, valout, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    copies = copies + 1
    valout = valin * 2 + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine
  ! A user reduction: the largest magnitude, with its sign.
  subroutine absmax(invec, inoutvec, len, dtype)
    integer :: len, dtype
    integer :: invec(len), inoutvec(len)
    integer :: i
    do i = 1, len
      if (abs(invec(i)) > abs(inoutvec(i))) inoutvec(i) = invec(i)
    end do
  end subroutine
  subroutine delete_fn(comm, keyval, val, extra, ierr)
    use mpi
    integer :: comm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    ierr = MPI_SUCCESS
  end subroutine
end module

program conformance
  use mpi
  use checks
  use callbacks
  implicit none
  integer :: ierr, size, right, left, i, n, total, color, sub, subsize, subme, dup, key, vec, op
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2), reqs(2)
  integer :: ibuf(100), igot(100), counts
  real :: rbuf(10), rgot(10)
  double precision :: d, dmax(2), dres(2), t0, t1
  complex :: c, cres
  logical :: l, lres, flag
  character(len=16) :: name
  character(len=MPI_MAX_PROCESSOR_NAME) :: got
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  integer, allocatable :: every(:), big(:), bgot(:)
  integer :: mat(4, 3), col(4), fh, win
  ! a window changes behind the compiler's back (MPI 4.0, 19.1.17): without
  ! VOLATILE, -O2 keeps what the program stored last (MPICH's
  ! MPI_F_sync_reg, the other way, writes an ierror it was not given)
  integer, volatile :: winmem(2)
  integer(kind=MPI_OFFSET_KIND) :: offset
  character(len=1024) :: dir

  call MPI_Init(ierr)
  call ok(ierr, 'MPI_Init')
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(me + 1, size)
  left = mod(me + size - 1, size)
  call MPI_Initialized(flag, ierr)
  call check(flag, 'MPI_Initialized is .false. after MPI_Init')

  ! A ring of INTEGER: the status's source, tag and count.
  ibuf = [(me * 1000 + i, i = 1, 100)]
  call MPI_Sendrecv(ibuf, 100, MPI_INTEGER, right, 7, igot, 100, MPI_INTEGER, left, 7, &
                    MPI_COMM_WORLD, status, ierr)
  call ok(ierr, 'MPI_Sendrecv')
  call check(all(igot == [(left * 1000 + i, i = 1, 100)]), 'ring of INTEGER: wrong data')
  call check(status(MPI_SOURCE) == left .and. status(MPI_TAG) == 7, 'ring: status source/tag')
  call MPI_Get_count(status, MPI_INTEGER, counts, ierr)
  call check(counts == 100, 'MPI_Get_count on INTEGER')

  ! REAL with wildcards, non-blocking, Waitall with a status array.
  rbuf = [(real(me) + real(i) / 10.0, i = 1, 10)]
  call MPI_Irecv(rgot, 10, MPI_REAL, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(rbuf, 10, MPI_REAL, right, 8 + me, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call ok(ierr, 'MPI_Waitall')
  call check(all(rgot == [(real(left) + real(i) / 10.0, i = 1, 10)]), 'REAL: wrong data')
  call check(statuses(MPI_SOURCE, 1) == left .and. statuses(MPI_TAG, 1) == 8 + left, &
             'ANY_SOURCE/ANY_TAG: the status names the sender')
  call check(reqs(1) == MPI_REQUEST_NULL .and. reqs(2) == MPI_REQUEST_NULL, 'Waitall left requests')

  ! MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE.
  call MPI_Irecv(igot, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send(me, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, ierr)
  call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  call check(igot(1) == left, 'Wait with MPI_STATUS_IGNORE')
  call MPI_Irecv(igot, 1, MPI_INTEGER, left, 10, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(me, 1, MPI_INTEGER, right, 10, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(igot(1) == left, 'Waitall with MPI_STATUSES_IGNORE')
  call MPI_Recv(igot, 0, MPI_INTEGER, MPI_PROC_NULL, 0, MPI_COMM_WORLD, status, ierr)
  call check(status(MPI_SOURCE) == MPI_PROC_NULL, 'receive from MPI_PROC_NULL')

  ! Collectives on Fortran types.
  n = merge(42, 0, me == 0)
  call MPI_Bcast(n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(n == 42, 'Bcast of INTEGER')
  call MPI_Allreduce(me + 1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(total == size * (size + 1) / 2, 'Allreduce SUM of INTEGER')
  d = dble(me) * 1.5d0
  call MPI_Reduce(d, dres(1), 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (me == 0) call check(dres(1) == dble(size - 1) * 1.5d0, 'Reduce MAX of DOUBLE PRECISION')
  dmax = [dble(mod(me * 7, size)), dble(me)]
  call MPI_Allreduce(dmax, dres, 1, MPI_2DOUBLE_PRECISION, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(dres(1) == dble(size - 1), 'MAXLOC on 2DOUBLE_PRECISION: value')
  c = cmplx(real(me), 1.0)
  call MPI_Allreduce(c, cres, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(cres == cmplx(real(size * (size - 1) / 2), real(size)), 'Allreduce SUM of COMPLEX')
  l = me >= 0
  call MPI_Allreduce(l, lres, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(lres, 'Allreduce LAND of LOGICAL')
  l = me == 0
  call MPI_Allreduce(l, lres, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(lres, 'Allreduce LOR of LOGICAL')
  allocate (every(size))
  call MPI_Allgather(me * 3, 1, MPI_INTEGER, every, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(all(every == [(i * 3, i = 0, size - 1)]), 'Allgather of INTEGER')
  total = me + 1
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(total == size * (size + 1) / 2, 'Allreduce with MPI_IN_PLACE')
  name = 'rank-0-says-hi'
  if (me /= 0) name = ''
  call MPI_Bcast(name, len(name), MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
  call check(name == 'rank-0-says-hi', 'Bcast of CHARACTER')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call ok(ierr, 'MPI_Barrier')
  call MPI_Op_create(absmax, .true., op, ierr)
  call ok(ierr, 'MPI_Op_create')
  ibuf(1:2) = [merge(-me, me, mod(me, 2) == 1), me]
  call MPI_Allreduce(ibuf, igot, 2, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(igot(1) == merge(-(size - 1), size - 1, mod(size - 1, 2) == 1) .and. igot(2) == size - 1, &
             'Allreduce with a user op written in Fortran')
  call MPI_Op_free(op, ierr)
  call check(op == MPI_OP_NULL, 'Op_free leaves MPI_OP_NULL')

  ! A message of 4.4 MB: the library cuts one above 4 MiB into fragments.
  allocate (big(1100000), bgot(1100000))
  big = [(i + me, i = 1, 1100000)]
  call MPI_Sendrecv(big, 1100000, MPI_INTEGER, right, 11, bgot, 1100000, MPI_INTEGER, left, 11, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(all(bgot == [(i + left, i = 1, 1100000)]), 'a 4.4 MB message of INTEGER')

  ! A derived type: a column of a Fortran array (contiguous) and a row
  ! (a vector with the leading dimension as stride).
  mat = reshape([(i + 100 * me, i = 1, 12)], [4, 3])
  call MPI_Type_vector(3, 1, 4, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  call MPI_Sendrecv(mat(2, 1), 1, vec, right, 12, igot, 3, MPI_INTEGER, left, 12, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(all(igot(1:3) == [2, 6, 10] + 100 * left), 'a row of a Fortran array by Type_vector')
  call MPI_Type_free(vec, ierr)
  call check(vec == MPI_DATATYPE_NULL, 'Type_free leaves MPI_DATATYPE_NULL')
  col = mat(:, 3)
  call check(all(col == [9, 10, 11, 12] + 100 * me), 'column')

  ! Communicators.
  color = mod(me, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, -me, sub, ierr)
  call ok(ierr, 'MPI_Comm_split')
  call MPI_Comm_size(sub, subsize, ierr)
  call MPI_Comm_rank(sub, subme, ierr)
  call check(subsize == (size + 1 - color) / 2, 'Comm_split: size')
  call MPI_Allreduce(me, total, 1, MPI_INTEGER, MPI_MAX, sub, ierr)
  call check(subme == (total - me) / 2, 'Comm_split: key -rank reverses the order')
  call MPI_Comm_free(sub, ierr)
  call check(sub == MPI_COMM_NULL, 'Comm_free leaves MPI_COMM_NULL')

  ! Attributes: the predefined ones as Fortran reads them, a user one
  ! with Fortran callbacks run by Comm_dup and Comm_free.
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  call ok(ierr, 'MPI_Comm_get_attr(MPI_TAG_UB)')
  call check(flag .and. val >= 32767 .and. val <= huge(0), 'MPI_TAG_UB as an integer (a tag is an INTEGER)')
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, n, flag, ierr)
  call check(flag .and. n >= 32767, 'MPI_TAG_UB by MPI_Attr_get, an INTEGER')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, val, flag, ierr)
  call check(flag .and. (val == 0 .or. val == 1), 'MPI_WTIME_IS_GLOBAL as an integer')
  extra = 5
  call MPI_Comm_create_keyval(copy_fn, delete_fn, key, extra, ierr)
  call ok(ierr, 'MPI_Comm_create_keyval')
  val = 1000 + me
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, val, ierr)
  call ok(ierr, 'MPI_Comm_set_attr')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, key, val, flag, ierr)
  call check(flag .and. val == 1000 + me, 'a user attribute read back')
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, key, val, flag, ierr)
  call check(flag .and. val == 2 * (1000 + me) + 5, 'the copy callback ran on Comm_dup')
  call check(copies == 1, 'the copy callback ran once')
  call MPI_Comm_free(dup, ierr)
  call check(deletes == 1, 'the delete callback ran on Comm_free')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call check(deletes == 2, 'the delete callback ran on Comm_delete_attr')
  call MPI_Comm_free_keyval(key, ierr)

  ! Errors returned rather than fatal.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Send(me, 1, MPI_INTEGER, size + 5, 0, MPI_COMM_WORLD, ierr)
  call check(ierr /= MPI_SUCCESS, 'a send to a rank outside the communicator returned success')
  call MPI_Error_class(ierr, n, ierr)
  call check(n == MPI_ERR_RANK, 'the error class is MPI_ERR_RANK')

  t0 = MPI_Wtime()
  t1 = MPI_Wtime()
  call check(t1 >= t0 .and. MPI_Wtick() > 0, 'Wtime and Wtick')
  call MPI_Get_processor_name(got, n, ierr)
  call check(n > 0, 'MPI_Get_processor_name')

  ! One-sided: each rank's INTEGER into its right neighbour's window.
  winmem = -1
  call MPI_Win_create(winmem, int(2 * 4, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call ok(ierr, 'MPI_Win_create')
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  call check(flag .and. val == 8, 'MPI_WIN_SIZE as an integer')
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(me + 300, 1, MPI_INTEGER, right, int(1, MPI_ADDRESS_KIND), 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(winmem(2) == left + 300 .and. winmem(1) == -1, 'MPI_Put between fences')
  ! … and under a passive-target lock, into the first slot
  call MPI_Win_fence(MPI_MODE_NOSUCCEED, win, ierr)
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win, ierr)
  call ok(ierr, 'MPI_Win_lock')
  call MPI_Put(me + 400, 1, MPI_INTEGER, right, int(0, MPI_ADDRESS_KIND), 1, MPI_INTEGER, win, ierr)
  call MPI_Win_unlock(right, win, ierr)
  call ok(ierr, 'MPI_Win_unlock')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call check(winmem(1) == left + 400, 'MPI_Put under MPI_Win_lock')
  call MPI_Win_free(win, ierr)
  call check(win == MPI_WIN_NULL, 'MPI_Win_free')

  ! MPI-IO, when given a directory: each rank's INTEGER at its offset,
  ! the neighbour's read back, the file deleted on close.
  if (command_argument_count() >= 1) then
    call get_command_argument(1, dir)
    call MPI_File_open(MPI_COMM_WORLD, trim(dir) // '/fortran.dat', &
                       MPI_MODE_CREATE + MPI_MODE_RDWR + MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, fh, ierr)
    call ok(ierr, 'MPI_File_open')
    offset = me * 4
    call MPI_File_write_at_all(fh, offset, me + 500, 1, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
    call ok(ierr, 'MPI_File_write_at_all')
    call MPI_File_sync(fh, ierr)
    offset = right * 4
    call MPI_File_read_at(fh, offset, n, 1, MPI_INTEGER, status, ierr)
    call MPI_Get_count(status, MPI_INTEGER, counts, ierr)
    call check(n == right + 500 .and. counts == 1, 'MPI_File_read_at of the neighbour''s INTEGER')
    call MPI_File_close(fh, ierr)
    call check(ierr == MPI_SUCCESS .and. fh == MPI_FILE_NULL, 'MPI_File_close')
  end if

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
  call ok(ierr, 'MPI_Finalize')
  if (me == 0 .and. total == 0 .and. failures == 0) print '(A)', 'PASS'
  if (failures > 0) stop 1
end program
