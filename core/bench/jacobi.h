/* What the CPU and GPU Jacobi share (jacobi.c): phases, the bytes they
 * move, the boundary condition of a block, and the check of a gathered grid
 * against the serial sweeps. */
#ifndef CS_JACOBI_H
#define CS_JACOBI_H

#include <mpi.h>
#include <stddef.h>

/* Both benchmarks' phases, in their order, and a block's four neighbours
 * in the process grid. */
enum { PH_PACK, PH_EXCHANGE, PH_UNPACK, PH_COMPUTE, PH_REDUCE };
enum { UP, DOWN, LEFT, RIGHT };

/* Useful bytes per sample of `iters` sweeps of a block of lx x ly points
 * with neighbours nbr (MPI_PROC_NULL where none): `pack` and `unpack`
 * bytes per sweep, the halos sent plus received, the grid read and written
 * by the stencil (each point's value once: 16 B), and the residual's 8 B
 * each way per reduction (every `every` sweeps, and after the last). */
void cs_jacobi_phase_bytes(int np, int iters, int every, size_t lx, size_t ly, const int nbr[4],
                           double pack, double unpack, double *bytes);

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
