// The fp16 key side of a turbo4-asym cache, written by one warp per head vector (what MLX's
// rope op followed by a slice_update into the cache buffer does). Used by
// turbo_encode_kv_asym.cu and fp16_append_kv.cu; store_f32 by rope_q_after.cu. Appended to
// kv_pair.cuh (load_row).
#pragma once

namespace mlxcel_enc {

// Stores x_row[0..D) (lane l owning [l * D/32, (l + 1) * D/32)) into buf[dst * D ..] as
// fp16; with ROPE, x_row is a key before RoPE and is rotated at position pos first
// (inv_freq: D/2 f32, computed in f32 and rounded once). Every lane of the warp must call it.
// fp16_vals: the same from this lane's values v (loaded, before RoPE), overwritten.
template <int D, bool ROPE, bool TRAD>
__device__ __forceinline__ void fp16_vals(float (&v)[D / 32], int lane, float pos, const float* inv_freq, __half* buf,
                                          long long dst) {
  constexpr int QE = D / 32;
  rope_vals<QE, ROPE, TRAD>(v, lane, pos, inv_freq);
#pragma unroll
  for (int e = 0; e < QE; ++e) buf[dst * D + lane * QE + e] = __float2half_rn(v[e]);
}
template <int D, bool ROPE, bool TRAD, typename T>
__device__ __forceinline__ void fp16_row(const T* x_row, int lane, float pos, const float* inv_freq, __half* buf,
                                         long long dst) {
  float v[D / 32];
  load_vals<D / 32>(x_row, lane, v);
  fp16_vals<D, ROPE, TRAD>(v, lane, pos, inv_freq, buf, dst);
}

// Stores x rounded once to the element type of p (the output types of rope_q_after.cu).
__device__ __forceinline__ void store_f32(__half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store_f32(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ void store_f32(float* p, float x) { *p = x; }

}  // namespace mlxcel_enc
