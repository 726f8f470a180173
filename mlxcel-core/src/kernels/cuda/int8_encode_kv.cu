// A decode step's K and V appends of an int8 cache in one launch, written in place like
// int8_encode.cu: warps [0, rows) encode keys, warps [rows, 2 rows) values
// (mlxcel_enc::int8_row). One MLX custom-kernel node per layer and step instead of two.
// With ROPE, xk is the key before RoPE (rotated here, inv_freq input).
// Inputs: xk, xv [B, H, L, D]; k_q, v_q [B, H, cap, D] int8 and k_scale, v_scale
// [B, H, cap, 1] fp16 (the cache buffers, written through the const pointers); pos_marker
// (pos = pos_marker_shape[0] - 1); k_after, v_after (the sides' previous write tokens,
// unused); inv_freq. Output: done [4] int32, the token of both sides' write
// (kv/pending.rs). Template constants: D (a multiple of 32 up to 256), ROPE, TRAD.
long long rows = 1;
for (int i = 0; i + 1 < xk_ndim; ++i) rows *= xk_shape[i];
const long long warp_id = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
const int lane = threadIdx.x & 31;
if (warp_id >= 2 * rows) return;  // whole warps leave together
const bool is_v = warp_id >= rows;  // warp-uniform
const long long row = is_v ? warp_id - rows : warp_id;
const long long L = xk_shape[xk_ndim - 2];
const long long pos = (pos_marker_shape[0] - 1) + row % L;
const long long dst = (row / L) * k_q_shape[2] + pos;
if (warp_id == 0 && lane == 0) done[0] = 1;
if (!is_v) {
  mlxcel_enc::int8_row<D, ROPE, TRAD>(xk + row * D, lane, static_cast<float>(pos), inv_freq,
                                      const_cast<int8_t*>(k_q), const_cast<__half*>(k_scale), dst);
} else {
  mlxcel_enc::int8_row<D, false, false>(xv + row * D, lane, 0.0f, inv_freq, const_cast<int8_t*>(v_q),
                                        const_cast<__half*>(v_scale), dst);
}
