/* stencil: a 2-D 5-point Jacobi step and column sums over n x n row-major
 * grids of doubles, both walking down the columns. */
void stencil_cols(double *restrict b, const double *restrict a, long n);
void stencil_colsum(const double *a, long n, double *sums);
