// A decode step's K and V appends of a symmetric turbo cache (turbo4; turbo3 / turbo2 with
// MLXCEL_LOWBIT_CUDA) in one launch, written in
// place like turbo_encode.cu's in-place variant: warps [0, rows) encode keys, warps
// [rows, 2 rows) values (mlxcel_enc::pair_row, mlxcel_enc::turbo_row). One MLX custom-kernel node per layer and
// step instead of two. With ROPE, xk is the key before RoPE (rotated here, inv_freq input).
// Inputs: xk, xv [B, H, L, D]; k_mids, k_lut, k_signs and v_*: each side's codec;
// k_packed, v_packed [B, H, cap, D * BITS / 8] uint8 and k_norms, v_norms [B, H, cap, 1] fp16 (the
// cache buffers, written through the const pointers); pos_marker (pos =
// pos_marker_shape[0] - 1); k_after, v_after (the sides' previous write tokens, unused);
// inv_freq. Output: done [4] int32, the token of both sides' write (kv/pending.rs).
// Template constants: BITS (both sides' bit width), D (64 or 128), ROPE, TRAD.
const mlxcel_enc::PairRow p = mlxcel_enc::pair_row(xk_shape, xk_ndim, pos_marker_shape[0] - 1);
const int lane = threadIdx.x & 31;
if (!p.active) return;
const long long L = xk_shape[xk_ndim - 2];
const long long row = p.row, pos = p.pos;
const long long dst = (row / L) * k_packed_shape[2] + pos;
if (row == 0 && !p.is_v && lane == 0) done[0] = 1;
if (!p.is_v) {
  mlxcel_enc::turbo_row<BITS, D, ROPE, TRAD>(xk + row * D, lane, k_mids, k_lut, k_signs, static_cast<float>(pos), inv_freq,
                                             const_cast<unsigned char*>(k_packed), const_cast<__half*>(k_norms), dst);
} else {
  mlxcel_enc::turbo_row<BITS, D, false, false>(xv + row * D, lane, v_mids, v_lut, v_signs, 0.0f, inv_freq,
                                               const_cast<unsigned char*>(v_packed), const_cast<__half*>(v_norms), dst);
}
