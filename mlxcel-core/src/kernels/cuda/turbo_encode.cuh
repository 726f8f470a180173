// The turbo encoding of one head vector by one warp (what TurboCodec::encode does with ~15
// MLX ops), turbo4 and (turbo_low_vals, MLXCEL_LOWBIT_CUDA) turbo3 / turbo2: norm, normalize, randomized Walsh-Hadamard rotation, nearest Lloyd-Max centroid,
// sign-magnitude relabel, corrected norm, 4-bit packing. Shared by turbo_encode.cu (one
// side per launch) and turbo_encode_kv.cu (a decode step's K and V in one launch).
// Appended to decode_attention.cuh (wht_warp) and kv_pair.cuh (load_row).
#pragma once

namespace mlxcel_enc {

// Encodes x_row[0..D) (held by the calling warp, lane l owning [l * D/32, (l + 1) * D/32))
// into packed[dst * D/2 ..] and norms[dst]. With ROPE, x_row is a key before RoPE and is
// rotated at position pos first (inv_freq: D/2 f32). Every lane of the warp must call it.
// turbo4_vals: the same from this lane's values v (loaded, before RoPE), overwritten.
// Steps 1-3 of every bit width's encode: RoPE (with ROPE), the norm (returned), and the
// normalized vector times the rotation's first signs through the Walsh-Hadamard butterflies
// (the caller applies 1/sqrt(D) and the second signs).
template <int D, bool ROPE, bool TRAD>
__device__ __forceinline__ float unit_rotated(float (&v)[D / 32], int lane, const float* signs, float pos,
                                              const float* inv_freq) {
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
  return nrm;
}

// Steps 3-5 for one rotated coordinate y: its nearest centroid's index (the number of the
// 2^BITS - 1 midpoints <= y: ties go up, as the reference) relabelled to its sign-magnitude
// code; the centroid's square is added to r2 (for the corrected norm).
template <int BITS>
__device__ __forceinline__ int nearest_code(float y, const float* mids, const float* lut, float& r2) {
  constexpr int NM = (1 << BITS) - 1, HALF = 1 << (BITS - 1);
  int idx = 0;
#pragma unroll
  for (int j = 0; j < NM; ++j) idx += y >= mids[j] ? 1 : 0;
  const int code = idx >= HALF ? idx : HALF - 1 - idx;
  const float c = lut[code];
  r2 = fmaf(c, c, r2);
  return code;
}

template <int D, bool ROPE, bool TRAD>
__device__ __forceinline__ void turbo4_vals(float (&v)[D / 32], int lane, const float* mids, const float* lut,
                                            const float* signs, float pos, const float* inv_freq,
                                            unsigned char* packed, __half* norms, long long dst) {
  constexpr int QE = D / 32;
  const float nrm = unit_rotated<D, ROPE, TRAD>(v, lane, signs, pos, inv_freq);
  const float inv = rsqrtf(static_cast<float>(D));
  unsigned codes = 0;
  float r2 = 0.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    // nearest_code<4>'s steps written out: through the helper NVVM picked other compares
    // (the same results, different SASS), and this path's machine code is the one the H200
    // measured and the tests checked.
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
// The byte that lanes [G k, G (k + 1)) hold together, G = 8 / B, lane l's B bits at bits
// B (l % G) of it, returned to lane G k (other lanes get a partial value). Every lane of the
// warp must call it.
template <int B>
__device__ __forceinline__ unsigned lanes_byte(unsigned bits) {
  static_assert(B == 2 || B == 4 || B == 8, "2, 4 or 8 bits per lane");
  if constexpr (B < 8) bits |= __shfl_down_sync(0xffffffffu, bits, 1) << B;
  if constexpr (B < 4) bits |= __shfl_down_sync(0xffffffffu, bits, 2) << (2 * B);
  return bits & 0xffu;
}

// The 2- and 3-bit encode (MLXCEL_LOWBIT_CUDA): turbo4_vals's steps with 2^BITS - 1 midpoints and
// pack.rs's layout, D * BITS / 8 bytes per vector: a plane of 2-bit fields (element 4j + i at
// bits 2i of byte j: the whole code at 2 bits, its low two bits at 3), and at 3 bits a plane of
// the codes' top bits after it (element 8j + i at bit i of byte D / 4 + j). Lane l holds
// elements l * D/32 + e, so a byte of fields comes from 1 (D 128) or 2 (D 64) lanes and a byte
// of top bits from 2 or 4 (lanes_byte).
template <int BITS, int D, bool ROPE, bool TRAD>
__device__ __forceinline__ void turbo_low_vals(float (&v)[D / 32], int lane, const float* mids, const float* lut,
                                               const float* signs, float pos, const float* inv_freq,
                                               unsigned char* packed, __half* norms, long long dst) {
  static_assert(BITS == 2 || BITS == 3, "2 or 3 bits");
  constexpr int QE = D / 32, ROWB = D * BITS / 8;
  const float nrm = unit_rotated<D, ROPE, TRAD>(v, lane, signs, pos, inv_freq);
  const float inv = rsqrtf(static_cast<float>(D));
  unsigned fields = 0, tops = 0;
  float r2 = 0.0f;
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    const int code = nearest_code<BITS>(v[e] * inv * signs[D + lane * QE + e], mids, lut, r2);
    fields |= static_cast<unsigned>(code & 3) << (2 * e);
    tops |= static_cast<unsigned>(code >> 2) << e;
  }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) r2 += __shfl_xor_sync(0xffffffffu, r2, m);
  constexpr int FG = 8 / (2 * QE);  // lanes per byte of fields
  const unsigned fb = lanes_byte<2 * QE>(fields);
  if (lane % FG == 0) packed[dst * ROWB + lane / FG] = static_cast<unsigned char>(fb);
  if constexpr (BITS == 3) {
    constexpr int TG = 8 / QE;  // lanes per byte of top bits
    const unsigned tb = lanes_byte<QE>(tops);
    if (lane % TG == 0) packed[dst * ROWB + D / 4 + lane / TG] = static_cast<unsigned char>(tb);
  }
  if (lane == 0) norms[dst] = __float2half(r2 > 1e-10f ? nrm / sqrtf(r2) : nrm);
}

// turbo4_vals or turbo_low_vals by bit width.
template <int BITS, int D, bool ROPE, bool TRAD>
__device__ __forceinline__ void turbo_vals(float (&v)[D / 32], int lane, const float* mids, const float* lut,
                                           const float* signs, float pos, const float* inv_freq, unsigned char* packed,
                                           __half* norms, long long dst) {
  if constexpr (BITS == 4) turbo4_vals<D, ROPE, TRAD>(v, lane, mids, lut, signs, pos, inv_freq, packed, norms, dst);
  else turbo_low_vals<BITS, D, ROPE, TRAD>(v, lane, mids, lut, signs, pos, inv_freq, packed, norms, dst);
}

template <int BITS, int D, bool ROPE, bool TRAD, typename T>
__device__ __forceinline__ void turbo_row(const T* x_row, int lane, const float* mids, const float* lut,
                                          const float* signs, float pos, const float* inv_freq, unsigned char* packed,
                                          __half* norms, long long dst) {
  float v[D / 32];
  load_vals<D / 32>(x_row, lane, v);
  turbo_vals<BITS, D, ROPE, TRAD>(v, lane, mids, lut, signs, pos, inv_freq, packed, norms, dst);
}

}  // namespace mlxcel_enc
