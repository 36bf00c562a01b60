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

struct cs_ctx;
/* The grid a run uses: N per side (scale=strong), or N per rank and side,
 * the grid growing with the process grid (scale=weak); px = py = 0 where
 * the process count does not decompose as asked. */
void cs_jacobi_grid(const struct cs_ctx *c, int *px, int *py, size_t *nx, size_t *ny);

/* The update of rows i0..i1 and columns k0..k1 (1-based, inclusive) of a
 * block with row stride w, from u into un; with want_res, the sum of the
 * squared changes (else 0).  The CPU Jacobi's loop, and the GPU Jacobi's
 * on host memory standing in for the device. */
double cs_jacobi_rows(const double *u, double *un, size_t w, size_t i0, size_t i1, size_t k0,
                      size_t k1, double hx2, double hy2, double src, double inv, int want_res);

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
