/* stride: strided accesses across pages. */
long stride_read_int(const char *base, long n, long stride);
void stride_write_int(char *base, long n, long stride, int v);
void stride_rmw_long(char *base, long n, long stride);
long stride_read_back(const char *base, long n, long stride);
double stride_colsum(const double *m, long rows, long cols, long col);
