// A decode step's K and V appends of an fp16-key cache in one launch, written in place into
// the cache buffers (kv/pending.rs has the ordering rules): warps [0, rows) store keys as fp16
// (rotated by RoPE first with ROPE; mlxcel_enc::fp16_row), warps [rows, 2 rows) store values:
// as fp16 (the fp16 mode), or with MLXCEL_V_INT8 defined quantized to int8
// (mlxcel_enc::int8_row; the turbo modes' fp16-key / int8-value boundary layers). Why: MLX's
// slice_update writes into the cache buffer only when nothing else holds it as it is encoded;
// in the pipelined decode loop the previous step's attention often still does, and MLX then
// copies the layer's whole cache (268 MB per side at 128K for Llama-3-8B; H200 session 23
// counted 27-30% of fp16's appends copied at 128K).
// Inputs: xk, xv [B, H, L, D]; k_buf [B, H, cap, D] fp16 and the value buffers, v_buf
// [B, H, cap, D] fp16, or with MLXCEL_V_INT8 v_q [B, H, cap, D] int8 and v_scale [B, H, cap, 1]
// fp16 (the cache buffers, written through the const pointers); pos_marker
// (pos = pos_marker_shape[0] - 1); k_after, v_after (the sides' previous write tokens,
// unused); inv_freq. Output: done [4] int32, the token of both sides' write. Template
// constants: D (a multiple of 32, at most 256), ROPE, TRAD.
const mlxcel_enc::PairRow p = mlxcel_enc::pair_row(xk_shape, xk_ndim, pos_marker_shape[0] - 1);
const int lane = threadIdx.x & 31;
if (!p.active) return;
const long long L = xk_shape[xk_ndim - 2];
if (p.row == 0 && !p.is_v && lane == 0) done[0] = 1;
const long long dst = (p.row / L) * k_buf_shape[2] + p.pos;
if (!p.is_v) {
  mlxcel_enc::fp16_row<D, ROPE, TRAD>(xk + p.row * D, lane, static_cast<float>(p.pos), inv_freq,
                                      const_cast<__half*>(k_buf), dst);
} else {
#ifdef MLXCEL_V_INT8
  mlxcel_enc::int8_row<D, false, false, false>(xv + p.row * D, lane, 0.0f, inv_freq, const_cast<int8_t*>(v_q),
                                               const_cast<__half*>(v_scale), dst);
#else
  mlxcel_enc::fp16_row<D, false, false>(xv + p.row * D, lane, 0.0f, inv_freq, const_cast<__half*>(v_buf), dst);
#endif
}
