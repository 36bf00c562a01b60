/* What the CPU and GPU Jacobi share (jacobi.c): the boundary condition of
 * a block, and the serial reference a gathered grid must equal. */
#ifndef CS_JACOBI_H
#define CS_JACOBI_H

#include <stddef.h>

/* The ghost cells of block (x0, y0) of lx x ly points (row stride ly + 2)
 * on the physical boundary of an nx x ny grid: u = x² + y². */
void cs_jacobi_boundary(double *u, size_t nx, size_t ny, size_t x0, size_t y0, size_t lx,
                        size_t ly);
/* `all` ((nx + 2) x (ny + 2)) against `iters` serial sweeps from the
 * initial state, bit for bit; 1 with the first differing point. */
int cs_jacobi_compare(const double *all, size_t nx, size_t ny, int iters, char *why,
                      size_t len);

#endif
