// Fused int8 cache append for decode steps on CUDA, written in place: one warp per head
// vector does what Int8Side::quantize does with ~10 MLX ops (absmax, scale = absmax / 127
// rounded to fp16, q = clip(rint(x / scale), -127, 127)), then stores q and the scale
// straight into the cache buffers at positions pos..pos+L-1 (pos = pos_marker_shape[0] - 1),
// like turbo_encode.cu's in-place variant (same ordering rules: mlxcel-core/src/kv/pending.rs).
// Template constants: D (head dim, a multiple of 32 up to 256). Inputs: x [B, H, L, D] any
// float dtype; q_buf [B, H, cap, D] int8; scale_buf [B, H, cap, 1] fp16; pos_marker; after
// (the previous write's token, unused). Output: done [4] int32 (this write's token).
// With MLXCEL_ENCODE_ROPE defined, x is the key before RoPE and the kernel applies it (input
// inv_freq [D/2] f32, template TRAD; mlxcel-core/src/rope.rs).
constexpr int QE = D / 32;
long long rows = 1;
for (int i = 0; i + 1 < x_ndim; ++i) rows *= x_shape[i];
const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
const int lane = threadIdx.x & 31;
if (row >= rows) return;  // whole warps leave together
float v[QE];
float amax = 0.0f;
#pragma unroll
for (int e = 0; e < QE; ++e) v[e] = static_cast<float>(x[row * D + lane * QE + e]);
#ifdef MLXCEL_ENCODE_ROPE
// The key before RoPE: rotate it here at its position (pos + row % L), MLX's formula.
mlxcel_fd::rope_warp<QE, TRAD>(v, lane, static_cast<float>(pos_marker_shape[0] - 1 + row % x_shape[x_ndim - 2]), inv_freq);
#endif
#pragma unroll
for (int e = 0; e < QE; ++e) amax = fmaxf(amax, fabsf(v[e]));
#pragma unroll
for (int m = 16; m > 0; m >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
// As the reference: the f32 product with 1/127, rounded to fp16; q against the stored scale.
const __half sh = __float2half_rn(amax * (1.0f / 127.0f));
const float s = __half2float(sh);
const float safe = s > 0.0f ? s : 1.0f;
const long long L = x_shape[x_ndim - 2];
const long long dst = (row / L) * q_buf_shape[2] + (pos_marker_shape[0] - 1) + row % L;
int8_t* q = const_cast<int8_t*>(q_buf);
#pragma unroll
for (int e = 0; e < QE; ++e) {
  const float r = fminf(fmaxf(rintf(v[e] / safe), -127.0f), 127.0f);
  q[dst * D + lane * QE + e] = static_cast<int8_t>(r);
}
if (lane == 0) const_cast<__half*>(scale_buf)[dst] = sh;
if (row == 0 && lane == 0) done[0] = 1;
