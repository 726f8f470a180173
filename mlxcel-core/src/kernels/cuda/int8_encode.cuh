// The int8 encoding of one head vector by one warp (what Int8Side::quantize does with ~10
// MLX ops): absmax, scale = absmax / 127 rounded to fp16, q = clip(rint(x / scale), -127,
// 127) against that stored scale. Shared by int8_encode.cu (one side per launch) and
// int8_encode_kv.cu (a decode step's K and V in one launch). Appended to kv_pair.cuh
// (load_row).
#pragma once

namespace mlxcel_enc {

// Encodes x_row[0..D) (lane l owning [l * D/32, (l + 1) * D/32)) into q[dst * D ..] and
// scale[dst]. With ROPE, x_row is a key before RoPE and is rotated at position pos first
// (inv_freq: D/2 f32). With ROT (int8r), the vector is first rotated by the side's
// randomized Hadamard transform of one group of D (signs: s1 then s2, 2 * D f32), as
// Rotation::forward does: R x = s2 * H(s1 * x) / sqrt(D). Every lane of the warp must call it.
// int8_vals: the same from this lane's values v (loaded, before RoPE), overwritten.
template <int D, bool ROPE, bool TRAD, bool ROT = false>
__device__ __forceinline__ void int8_vals(float (&v)[D / 32], int lane, float pos, const float* inv_freq, int8_t* q,
                                          __half* scale, long long dst, const float* signs = nullptr) {
  constexpr int QE = D / 32;
  rope_vals<QE, ROPE, TRAD>(v, lane, pos, inv_freq);
  if constexpr (ROT) mlxcel_fd::rotate_warp<QE>(v, lane, signs);
  float amax = 0.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) amax = fmaxf(amax, fabsf(v[e]));
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
  // As the reference: the f32 product with 1/127, rounded to fp16; q against the stored scale.
  const __half sh = __float2half_rn(amax * (1.0f / 127.0f));
  const float s = __half2float(sh);
  const float safe = s > 0.0f ? s : 1.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    const float r = fminf(fmaxf(rintf(v[e] / safe), -127.0f), 127.0f);
    q[dst * D + lane * QE + e] = static_cast<int8_t>(r);
  }
  if (lane == 0) scale[dst] = sh;
}
template <int D, bool ROPE, bool TRAD, bool ROT = false, typename T>
__device__ __forceinline__ void int8_row(const T* x_row, int lane, float pos, const float* inv_freq, int8_t* q,
                                         __half* scale, long long dst, const float* signs = nullptr) {
  float v[D / 32];
  load_vals<D / 32>(x_row, lane, v);
  int8_vals<D, ROPE, TRAD, ROT>(v, lane, pos, inv_freq, q, scale, dst, signs);
}

}  // namespace mlxcel_enc
