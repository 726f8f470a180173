// Fused turbo encoder (the cache append of the turbo modes on CUDA: turbo4, and turbo3 / turbo2
// with MLXCEL_LOWBIT_CUDA): one warp per head vector (mlxcel_enc::turbo_row in turbo_encode.cuh),
// so a decode step appends with one launch per side and layer instead of ~15 MLX ops.
// Template constants: BITS (4, 3 or 2), D (head dim = rotation group, 64 or 128). Inputs: x
// [.., D] any float dtype; mids [2^BITS - 1] f32 sorted midpoints; lut [16] f32 centroids in
// stored-code order; signs [2, D] f32 (s1; s2). Outputs: packed [.., D * BITS / 8] uint8 (D/2
// at 4 bits), norms [.., 1] fp16.
// With MLXCEL_ENCODE_INPLACE defined (the decode-step append): x is [B, H, L, D] and the
// codes and norms go straight into the cache buffers packed_buf [B, H, cap, D/2] and
// norms_buf [B, H, cap, 1] at positions pos..pos+L-1 (pos = pos_marker_shape[0] - 1),
// written through the const input pointers: this kernel is the only writer of those
// positions, nothing reads them before the decode kernel, which takes `done` as an input so
// that MLX orders it after this launch (mlxcel-core/src/kv/pending.rs explains the rules).
// With MLXCEL_ENCODE_ROPE also defined, x is the key before RoPE and the kernel applies it
// (input inv_freq [D/2] f32, template TRAD), as mlxcel-core/src/rope.rs describes.
long long rows = 1;
for (int i = 0; i + 1 < x_ndim; ++i) rows *= x_shape[i];
const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
const int lane = threadIdx.x & 31;
if (row >= rows) return;  // whole warps leave together
#ifdef MLXCEL_ENCODE_INPLACE
const long long L = x_shape[x_ndim - 2];
const long long pos = (pos_marker_shape[0] - 1) + row % L;
const long long dst = (row / L) * packed_buf_shape[2] + pos;
unsigned char* out_packed = const_cast<unsigned char*>(packed_buf);
__half* out_norms = const_cast<__half*>(norms_buf);
if (row == 0 && lane == 0) done[0] = 1;
#else
const long long pos = 0;
const long long dst = row;
unsigned char* out_packed = packed;
__half* out_norms = norms;
#endif
#ifdef MLXCEL_ENCODE_ROPE
mlxcel_enc::turbo_row<BITS, D, true, TRAD>(x + row * D, lane, mids, lut, signs, static_cast<float>(pos), inv_freq, out_packed, out_norms, dst);
#else
mlxcel_enc::turbo_row<BITS, D, false, false>(x + row * D, lane, mids, lut, signs, static_cast<float>(pos), mids, out_packed, out_norms, dst);
#endif
