! A known sequence of MPI calls from Fortran (`use mpi`), for the profiler's
! tests: rank 0 sends 128 doubles to rank 1 and gets them back, three times;
! then one allreduce of one double and one barrier.  Under Open MPI these
! calls reach the profiler through its PMPI_ names (its Fortran bindings call
! PMPI_ directly), under MPICH through the MPI_ ones: counted once either way.
program profiled_f
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i, peer
  integer :: status(MPI_STATUS_SIZE)
  double precision :: buf(128), mine, total

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  peer = 1 - rank
  buf = rank
  do i = 1, 3
    if (rank == 0) then
      call MPI_Send(buf, 128, MPI_DOUBLE_PRECISION, peer, 7, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 128, MPI_DOUBLE_PRECISION, peer, 7, MPI_COMM_WORLD, status, ierr)
    else if (rank == 1) then
      call MPI_Recv(buf, 128, MPI_DOUBLE_PRECISION, peer, 7, MPI_COMM_WORLD, status, ierr)
      call MPI_Send(buf, 128, MPI_DOUBLE_PRECISION, peer, 7, MPI_COMM_WORLD, ierr)
    end if
  end do
  mine = rank + 1
  call MPI_Allreduce(mine, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= nprocs * (nprocs + 1) / 2) then
    print *, 'wrong sum', total
    call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program profiled_f
