// Fused turbo4 encoder (the cache append of turbo4 / turbo4-asym on CUDA): one warp per head
// vector does what TurboCodec::encode does with ~15 MLX ops (norm, normalize, randomized
// Walsh-Hadamard rotation, nearest Lloyd-Max centroid, sign-magnitude relabel, corrected
// norm, 4-bit packing), so a decode step appends with one launch per side and layer.
// Template constants: D (head dim = rotation group, 64 or 128). Inputs: x [.., D] any float
// dtype; mids [15] f32 sorted midpoints; lut [16] f32 centroids in stored-code order;
// signs [2, D] f32 (s1; s2). Outputs: packed [.., D/2] uint8, norms [.., 1] fp16.
// With MLXCEL_ENCODE_INPLACE defined (the decode-step append): x is [B, H, L, D] and the
// codes and norms go straight into the cache buffers packed_buf [B, H, cap, D/2] and
// norms_buf [B, H, cap, 1] at positions pos..pos+L-1 (pos = pos_marker_shape[0] - 1),
// written through the const input pointers: this kernel is the only writer of those
// positions, nothing reads them before the decode kernel, which takes `done` as an input so
// that MLX orders it after this launch (mlxcel-core/src/kv/pending.rs explains the rules).
// With MLXCEL_ENCODE_ROPE also defined, x is the key before RoPE and the kernel applies it
// (input inv_freq [D/2] f32, template TRAD), as mlxcel-core/src/rope.rs describes.
constexpr int QE = D / 32;
long long rows = 1;
for (int i = 0; i + 1 < x_ndim; ++i) rows *= x_shape[i];
const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
const int lane = threadIdx.x & 31;
if (row >= rows) return;  // whole warps leave together
float v[QE];
float ss = 0.0f;
#pragma unroll
for (int e = 0; e < QE; ++e) v[e] = static_cast<float>(x[row * D + lane * QE + e]);
#ifdef MLXCEL_ENCODE_ROPE
// The key before RoPE: rotate it here at its position (pos + row % L), MLX's formula.
mlxcel_fd::rope_warp<QE, TRAD>(v, lane, static_cast<float>(pos_marker_shape[0] - 1 + row % x_shape[x_ndim - 2]), inv_freq);
#endif
#pragma unroll
for (int e = 0; e < QE; ++e) ss = fmaf(v[e], v[e], ss);
#pragma unroll
for (int m = 16; m > 0; m >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, m);
const float nrm = sqrtf(ss);
const float denom = nrm > 1e-10f ? nrm : 1.0f;
#pragma unroll
for (int e = 0; e < QE; ++e) v[e] = v[e] / denom * signs[lane * QE + e];
mlxcel_fd::wht_warp<QE>(v, lane);
const float inv = rsqrtf(static_cast<float>(D));
unsigned codes = 0;
float r2 = 0.0f;
#pragma unroll
for (int e = 0; e < QE; ++e) {
  const float y = v[e] * inv * signs[D + lane * QE + e];
  int idx = 0;
#pragma unroll
  for (int j = 0; j < 15; ++j) idx += y >= mids[j] ? 1 : 0;  // ties go up, as the reference
  const int code = idx >= 8 ? idx : 7 - idx;
  const float c = lut[code];
  r2 = fmaf(c, c, r2);
  codes |= static_cast<unsigned>(code) << (4 * e);
}
#pragma unroll
for (int m = 16; m > 0; m >>= 1) r2 += __shfl_xor_sync(0xffffffffu, r2, m);
#ifdef MLXCEL_ENCODE_INPLACE
const long long L = x_shape[x_ndim - 2];
const long long dst = (row / L) * packed_buf_shape[2] + (pos_marker_shape[0] - 1) + row % L;
unsigned char* packed = const_cast<unsigned char*>(packed_buf);
__half* norms = const_cast<__half*>(norms_buf);
if (row == 0 && lane == 0) done[0] = 1;
#else
const long long dst = row;
#endif
if constexpr (QE == 4) {
  packed[dst * (D / 2) + lane * 2] = static_cast<unsigned char>(codes & 0xff);
  packed[dst * (D / 2) + lane * 2 + 1] = static_cast<unsigned char>(codes >> 8);
} else {
  packed[dst * (D / 2) + lane] = static_cast<unsigned char>(codes & 0xff);
}
if (lane == 0) norms[dst] = __float2half(r2 > 1e-10f ? nrm / sqrtf(r2) : nrm);
