/* matmul: dense matrix multiply. */
void matmul_rows(double *c, const double *a, const double *b, long n, long r0, long r1);
void matmul_tiled(float *c, const float *a, const float *b, long n, long r0, long r1);
