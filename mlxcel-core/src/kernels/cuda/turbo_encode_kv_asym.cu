// A decode step's K and V appends of a turbo4-asym cache (turbo3-asym / turbo2-asym with
// MLXCEL_LOWBIT_CUDA) in one launch, written in place
// like turbo_encode_kv.cu: warps [0, rows) store keys as fp16 (mlxcel_enc::fp16_row,
// rotated by RoPE first with ROPE), warps [rows, 2 rows) encode values
// (mlxcel_enc::turbo_row). One MLX custom-kernel node per layer and step instead of three
// (MLX rope, slice_update, value encoder).
// Inputs: xk, xv [B, H, L, D]; v_mids, v_lut, v_signs: the value codec; k_buf [B, H, cap, D]
// fp16, v_packed [B, H, cap, D * BITS / 8] uint8 and v_norms [B, H, cap, 1] fp16 (the cache buffers,
// written through the const pointers); pos_marker (pos = pos_marker_shape[0] - 1);
// k_after, v_after (the sides' previous write tokens, unused); inv_freq. Output: done [4]
// int32, the token of both sides' write (kv/pending.rs). Template constants: D (64 or 128),
// ROPE, TRAD, BITS (the values' bit width).
const mlxcel_enc::PairRow p = mlxcel_enc::pair_row(xk_shape, xk_ndim, pos_marker_shape[0] - 1);
const int lane = threadIdx.x & 31;
if (!p.active) return;
const long long L = xk_shape[xk_ndim - 2];
const long long row = p.row, pos = p.pos;
if (row == 0 && !p.is_v && lane == 0) done[0] = 1;
if (!p.is_v) {
  const long long dst = (row / L) * k_buf_shape[2] + pos;
  mlxcel_enc::fp16_row<D, ROPE, TRAD>(xk + row * D, lane, static_cast<float>(pos), inv_freq, const_cast<__half*>(k_buf),
                                      dst);
} else {
  const long long dst = (row / L) * v_packed_shape[2] + pos;
  mlxcel_enc::turbo_row<BITS, D, false, false>(xv + row * D, lane, v_mids, v_lut, v_signs, 0.0f, inv_freq,
                                               const_cast<unsigned char*>(v_packed), const_cast<__half*>(v_norms), dst);
}
