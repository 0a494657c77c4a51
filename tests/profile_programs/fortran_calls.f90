! Known MPI calls through the Fortran bindings (`use mpi`): tests/test_profile_families.py checks
! their counts and that each call's site is its line here, not the binding library's.
program fortran_calls
  use mpi
  implicit none
  integer :: ierr, r, p, i
  double precision :: a(10)
  a = 1d0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  do i = 1, 3
    if (r == 0) then
      call MPI_Send(a, 10, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD, ierr) ! site: send
    else if (r == 1) then
      call MPI_Recv(a, 10, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! site: recv
    end if
  end do
  call MPI_Allreduce(MPI_IN_PLACE, a, 10, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr) ! site: allreduce
  call MPI_Finalize(ierr)
end program fortran_calls
