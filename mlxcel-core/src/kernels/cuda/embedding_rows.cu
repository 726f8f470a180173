// A decode step's token embedding: out [n, K] = the rows ids [n] of an MLX-affine 4-bit table
// (w uint32 [V, K/8], eight 4-bit values per word, value i at bits 4i; scales, biases [V, K/G]
// in the model's dtype), dequantized as MLX's CUDA affine_dequantize computes each value:
// `scale * T(q) + bias` in the model's dtype T (two roundings, or one where the compiler fuses
// them: the same expression compiled the same way; NVRTC fuses it into one HFMA2, and the GPU
// test found MLX's bits equal). Why: MLX's path is four launches per step (three gathers, then
// the dequantize) for 2 KB of codes; measured level per step (embedding.rs), off by default
// (MLXCEL_FAST_EMBED). One thread per word of codes: grid (ceil(K/8 / NT), n). embedding.rs
// checks the shapes; ids of an integer dtype.
constexpr int NT = 256;  // threads per CTA: embedding.rs launches this many
const long long words = w_shape[1];
const long long j = static_cast<long long>(blockIdx.x) * NT + threadIdx.x;
if (j >= words) return;
const long long K = words * 8;
// Ids outside [0, V) are not tokens of the table: clamped, so that no read leaves it.
const long long V = w_shape[0];
long long id = static_cast<long long>(ids[blockIdx.y]);
id = id < 0 ? 0 : (id >= V ? V - 1 : id);
const unsigned int val = w[id * words + j];
const long long g = (8 * j) / G;
const T_scales scale = scales[id * (K / G) + g];
const T_scales bias = biases[id * (K / G) + g];
T_scales* o = out + static_cast<long long>(blockIdx.y) * K + 8 * j;
#pragma unroll
for (int i = 0; i < 8; ++i) {
  const unsigned char d = static_cast<unsigned char>((val >> (4 * i)) & 0x0fu);
  o[i] = scale * static_cast<T_scales>(d) + bias;
}
