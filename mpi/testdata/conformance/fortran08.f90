! The Fortran 2008 interface (`use mpi_f08`: derived-type handles,
! TYPE(MPI_Status), optional ierror) through MPICH's own bindings over
! cosched's library: a ring with a status, the common collectives, a
! split communicator, non-blocking requests and a subarray of an array
! section (which the bindings pass as a descriptor). Rank 0 prints PASS
! when every rank passed; each failure prints a line starting with FAIL.
program conformance08
  use mpi_f08
  implicit none
  integer :: me, size, right, left, i, n, total, failures = 0, subsize
  integer :: buf(50), got(50), every(64)
  double precision :: d, dres
  type(MPI_Status) :: status
  type(MPI_Request) :: reqs(2)
  type(MPI_Comm) :: sub
  logical :: flag
  integer(kind=MPI_ADDRESS_KIND) :: val
  integer :: grid(6, 4), col(4)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  right = mod(me + 1, size)
  left = mod(me + size - 1, size)

  buf = [(me * 100 + i, i = 1, 50)]
  call MPI_Sendrecv(buf, 50, MPI_INTEGER, right, 3, got, 50, MPI_INTEGER, left, 3, MPI_COMM_WORLD, status)
  call check(all(got == [(left * 100 + i, i = 1, 50)]), 'ring: data')
  call check(status%MPI_SOURCE == left .and. status%MPI_TAG == 3, 'ring: status%MPI_SOURCE, %MPI_TAG')
  call MPI_Get_count(status, MPI_INTEGER, n)
  call check(n == 50, 'Get_count')

  call MPI_Irecv(got, 50, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(buf, 50, MPI_INTEGER, right, 4, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  call check(got(50) == left * 100 + 50, 'Irecv/Isend/Waitall')
  call check(reqs(1) == MPI_REQUEST_NULL, 'Waitall frees the requests')

  ! A strided section of an array: the bindings pass a descriptor.
  grid = reshape([(i + 1000 * me, i = 1, 24)], [6, 4])
  call MPI_Sendrecv(grid(2, :), 4, MPI_INTEGER, right, 5, col, 4, MPI_INTEGER, left, 5, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE)
  call check(all(col == [2, 8, 14, 20] + 1000 * left), 'a strided array section')

  d = dble(me) + 0.5d0
  call MPI_Allreduce(d, dres, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call check(dres == dble(size * (size - 1)) / 2 + 0.5d0 * size, 'Allreduce SUM of DOUBLE PRECISION')
  n = merge(7, 0, me == 0)
  call MPI_Bcast(n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call check(n == 7, 'Bcast')
  call MPI_Allgather(me, 1, MPI_INTEGER, every, 1, MPI_INTEGER, MPI_COMM_WORLD)
  call check(all(every(1:size) == [(i, i = 0, size - 1)]), 'Allgather')

  call MPI_Comm_split(MPI_COMM_WORLD, mod(me, 2), me, sub)
  call MPI_Comm_size(sub, subsize)
  call check(subsize == (size + 1 - mod(me, 2)) / 2, 'Comm_split')
  call MPI_Comm_free(sub)
  call check(sub == MPI_COMM_NULL, 'Comm_free')

  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag)
  call check(flag .and. val >= 32767 .and. val <= huge(0), 'MPI_TAG_UB as an integer (a tag is an INTEGER)')

  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Finalize()
  if (me == 0 .and. total == 0) print '(A)', 'PASS'
  if (failures > 0) stop 1
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
end program
