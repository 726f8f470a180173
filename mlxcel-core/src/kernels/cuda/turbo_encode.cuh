// The turbo4 encoding of one head vector by one warp (what TurboCodec::encode does with ~15
// MLX ops): norm, normalize, randomized Walsh-Hadamard rotation, nearest Lloyd-Max centroid,
// sign-magnitude relabel, corrected norm, 4-bit packing. Shared by turbo_encode.cu (one
// side per launch) and turbo_encode_kv.cu (a decode step's K and V in one launch).
// Appended to decode_attention.cuh (wht_warp) and kv_pair.cuh (load_row).
#pragma once

namespace mlxcel_enc {

// Encodes x_row[0..D) (held by the calling warp, lane l owning [l * D/32, (l + 1) * D/32))
// into packed[dst * D/2 ..] and norms[dst]. With ROPE, x_row is a key before RoPE and is
// rotated at position pos first (inv_freq: D/2 f32). Every lane of the warp must call it.
// turbo4_vals: the same from this lane's values v (loaded, before RoPE), overwritten.
template <int D, bool ROPE, bool TRAD>
__device__ __forceinline__ void turbo4_vals(float (&v)[D / 32], int lane, const float* mids, const float* lut,
                                            const float* signs, float pos, const float* inv_freq,
                                            unsigned char* packed, __half* norms, long long dst) {
  constexpr int QE = D / 32;
  rope_vals<QE, ROPE, TRAD>(v, lane, pos, inv_freq);
  float ss = 0.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) ss = fmaf(v[e], v[e], ss);
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, m);
  const float nrm = sqrtf(ss);
  const float denom = nrm > 1e-10f ? nrm : 1.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) v[e] = v[e] / denom * signs[lane * QE + e];
  mlxcel_fd::wht_warp<QE>(v, lane);
  const float inv = rsqrtf(static_cast<float>(D));
  unsigned codes = 0;
  float r2 = 0.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    const float y = v[e] * inv * signs[D + lane * QE + e];
    int idx = 0;
#pragma unroll
    for (int j = 0; j < 15; ++j) idx += y >= mids[j] ? 1 : 0;  // ties go up, as the reference
    const int code = idx >= 8 ? idx : 7 - idx;
    const float c = lut[code];
    r2 = fmaf(c, c, r2);
    codes |= static_cast<unsigned>(code) << (4 * e);
  }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) r2 += __shfl_xor_sync(0xffffffffu, r2, m);
  if constexpr (QE == 4) {
    packed[dst * (D / 2) + lane * 2] = static_cast<unsigned char>(codes & 0xff);
    packed[dst * (D / 2) + lane * 2 + 1] = static_cast<unsigned char>(codes >> 8);
  } else {
    packed[dst * (D / 2) + lane] = static_cast<unsigned char>(codes & 0xff);
  }
  if (lane == 0) norms[dst] = __float2half(r2 > 1e-10f ? nrm / sqrtf(r2) : nrm);
}
template <int D, bool ROPE, bool TRAD, typename T>
__device__ __forceinline__ void turbo4_row(const T* x_row, int lane, const float* mids, const float* lut,
                                           const float* signs, float pos, const float* inv_freq,
                                           unsigned char* packed, __half* norms, long long dst) {
  float v[D / 32];
  load_vals<D / 32>(x_row, lane, v);
  turbo4_vals<D, ROPE, TRAD>(v, lane, mids, lut, signs, pos, inv_freq, packed, norms, dst);
}

}  // namespace mlxcel_enc
