// Fused int8 cache append for decode steps on CUDA, written in place: one warp per head
// vector encodes it (mlxcel_enc::int8_row, int8_encode.cuh) and stores q and the scale
// straight into the cache buffers at positions pos..pos+L-1 (pos = pos_marker_shape[0] - 1),
// like turbo_encode.cu's in-place variant (same ordering rules: mlxcel-core/src/kv/pending.rs).
// Template constants: D (head dim, a multiple of 32 up to 256). Inputs: x [B, H, L, D] any
// float dtype; q_buf [B, H, cap, D] int8; scale_buf [B, H, cap, 1] fp16; pos_marker; after
// (the previous write's token, unused). Output: done [4] int32 (this write's token).
// With MLXCEL_ENCODE_ROPE defined, x is the key before RoPE and the kernel applies it (input
// inv_freq [D/2] f32, template TRAD; mlxcel-core/src/rope.rs).
long long rows = 1;
for (int i = 0; i + 1 < x_ndim; ++i) rows *= x_shape[i];
const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
const int lane = threadIdx.x & 31;
if (row >= rows) return;  // whole warps leave together
const long long L = x_shape[x_ndim - 2];
const long long pos = (pos_marker_shape[0] - 1) + row % L;
const long long dst = (row / L) * q_buf_shape[2] + pos;
#ifdef MLXCEL_ENCODE_ROPE
mlxcel_enc::int8_row<D, true, TRAD>(x + row * D, lane, static_cast<float>(pos), inv_freq,
                                    const_cast<int8_t*>(q_buf), const_cast<__half*>(scale_buf), dst);
#else
mlxcel_enc::int8_row<D, false, false>(x + row * D, lane, 0.0f, nullptr, const_cast<int8_t*>(q_buf),
                                      const_cast<__half*>(scale_buf), dst);
#endif
if (row == 0 && lane == 0) done[0] = 1;
