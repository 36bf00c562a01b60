/* What the CPU and GPU Jacobi share (jacobi.c): the boundary condition of
 * a block, and the check of a gathered grid against the serial sweeps. */
#ifndef CS_JACOBI_H
#define CS_JACOBI_H

#include <mpi.h>
#include <stddef.h>

/* The ghost cells of block (x0, y0) of lx x ly points (row stride ly + 2)
 * on the physical boundary of an nx x ny grid: u = x² + y². */
void cs_jacobi_boundary(double *u, size_t nx, size_t ny, size_t x0, size_t y0, size_t lx,
                        size_t ly);
/* Rank 0 gathers every rank's interior points (u: this rank's block of
 * lx x ly points with ghosts, row stride w, on the host) and holds the grid
 * against `iters` serial sweeps from the initial state, bit for bit; 1 with
 * the first differing point. */
int cs_jacobi_check_grid(const double *u, size_t w, size_t x0, size_t lx, size_t y0, size_t ly,
                         size_t nx, size_t ny, int iters, MPI_Comm comm, char *why,
                         size_t len);

#endif
