// Body of the self-test kernel (MLX generates the signature: a, b, alpha inputs; out output).
// out[i] = a[i] * alpha[0] + b[i], computed in float and stored in a's own type T_a, which
// mlxcel's wrapper passes as a template argument. Exercises: the JIT path, an int template
// argument (N) and the automatic per-input dtype arguments.
const int i = blockIdx.x * blockDim.x + threadIdx.x;
if (i < N) {
  float acc = static_cast<float>(a[i]) * static_cast<float>(alpha[0]) + static_cast<float>(b[i]);
  out[i] = static_cast<T_a>(acc);
}
