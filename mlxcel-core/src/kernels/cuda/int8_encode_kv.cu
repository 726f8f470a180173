// A decode step's K and V appends of an int8 cache in one launch, written in place like
// int8_encode.cu: warps [0, rows) encode keys, warps [rows, 2 rows) values
// (mlxcel_enc::pair_row, mlxcel_enc::int8_row). One MLX custom-kernel node per layer and step instead of two.
// With ROPE, xk is the key before RoPE (rotated here, inv_freq input).
// Inputs: xk, xv [B, H, L, D]; k_q, v_q [B, H, cap, D] int8 and k_scale, v_scale
// [B, H, cap, 1] fp16 (the cache buffers, written through the const pointers); k_signs,
// v_signs; pos_marker
// (pos = pos_marker_shape[0] - 1); k_after, v_after (the sides' previous write tokens,
// unused); inv_freq. Output: done [4] int32, the token of both sides' write
// (kv/pending.rs). Template constants: D (a multiple of 32 up to 256), ROPE, TRAD. With
// MLXCEL_INT8_ROT defined (int8r sides), k_signs / v_signs [2, D] f32 rotate each vector
// first (int8_row's ROT); otherwise they are placeholders, never read.
#ifdef MLXCEL_INT8_ROT
constexpr bool ROT = true;
#else
constexpr bool ROT = false;
#endif
const mlxcel_enc::PairRow p = mlxcel_enc::pair_row(xk_shape, xk_ndim, pos_marker_shape[0] - 1);
const int lane = threadIdx.x & 31;
if (!p.active) return;
const long long L = xk_shape[xk_ndim - 2];
const long long row = p.row, pos = p.pos;
const long long dst = (row / L) * k_q_shape[2] + pos;
if (row == 0 && !p.is_v && lane == 0) done[0] = 1;
if (!p.is_v) {
  mlxcel_enc::int8_row<D, ROPE, TRAD, ROT>(xk + row * D, lane, static_cast<float>(pos), inv_freq,
                                           const_cast<int8_t*>(k_q), const_cast<__half*>(k_scale), dst, k_signs);
} else {
  mlxcel_enc::int8_row<D, false, false, ROT>(xv + row * D, lane, 0.0f, inv_freq, const_cast<int8_t*>(v_q),
                                             const_cast<__half*>(v_scale), dst, v_signs);
}
