// Metal twin of cuda/selftest_axpy.cu. Not run by any test: no Apple hardware exists on
// this project's machines, so this path is unverified.
uint i = thread_position_in_grid.x;
if (i < uint(N)) {
  float acc = float(a[i]) * float(alpha[0]) + float(b[i]);
  out[i] = T_a(acc);
}
