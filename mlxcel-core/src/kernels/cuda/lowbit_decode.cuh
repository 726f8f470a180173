// The 2- and 3-bit turbo decode of the tensor-core decode-attention kernel
// (decode_attention_mma.cu, KFMT / VFMT 2 and 3 with MLXCEL_LOWBIT_CUDA), appended to
// decode_attention_mma.cuh. It needs u32, prmt and bit_select of namespace mlxcel_mma; without
// __CUDACC__ (the CPU test tests/lowbit_decode_host.rs) the includer defines them and
// __device__ / __forceinline__, and the fp16 table builder is left out.
#pragma once

namespace mlxcel_mma {

// ---- 2- and 3-bit turbo sides (KFMT / VFMT 2 and 3, MLXCEL_LOWBIT_CUDA) ----
// Both store a plane of 2-bit fields (element 4j + i at bits 2i of byte j); 3-bit adds a plane of
// sign bits (decode_attention.cuh). Codes are sign-magnitude (kv/turbo/codec.rs): a 2-bit code
// is the whole value (bit 1 set = positive, bit 0 the magnitude's rank); a 3-bit code's 2-bit
// field is the magnitude's rank and its sign bit set means positive. So a 4-entry table of fp16
// values serves both: turbo2's four values, or turbo3's four magnitudes with the sign applied
// after the lookup. Why byte permutes and not a shared-memory table: the turbo4-asym kernel
// measured its V side faster without the pair table (mma_luts in decode_attention.rs), and these
// sides' fp16 keys (turbo3-asym, turbo2-asym) keep the kernel bound by its key bytes.
// Byte m of lo / hi: the low / high byte of the fp16 value of field m.
struct Book2 {
  u32 lo, hi;
};

#ifdef __CUDACC__
// FMT 2: the values of codes 0-3 (lut[0..4)); FMT 3: the magnitudes of ranks 0-3, the positive
// codes' values (lut[4..8)).
template <int FMT>
__device__ __forceinline__ Book2 make_book2(const float* lut) {
  constexpr int BASE = FMT == 3 ? 4 : 0;
  u32 lo = 0, hi = 0;
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const unsigned short h = __half_as_ushort(__float2half_rn(lut[BASE + m]));
    lo |= static_cast<u32>(h & 0xff) << (8 * m);
    hi |= static_cast<u32>(h >> 8) << (8 * m);
  }
  return Book2{lo, hi};
}
#endif

// out[k] = half2(value of field k of a, value of field k of b), k < N (N = 16: a and b hold 16
// fields each; N = 8: their low 16 bits). SIGN (3-bit): sab holds a's sign bits at bits 0..N-1
// and b's at 16..16+N-1 (set = positive); the table holds magnitudes.
// The fields of a and b are interleaved by bit selects (byte j of x: fields 4j of a, 4j of b,
// 4j + 2 of a, 4j + 2 of b; y the same for 4j + 1 and 4j + 3), each byte's four fields are
// spread into nibbles (the permutes' selectors), and two permutes per four fields give the low
// and high bytes, two more the half2 pairs: ~3.75 instructions per pair, 2 more with SIGN.
// The same arrangement serves K (a, b: two halves of a lane's dims; the kernel orders q's
// dims to match) and V (a, b: two tokens, the same dims).
template <int N, bool SIGN>
__device__ __forceinline__ void decode_pairs2(const Book2& bk, u32 a, u32 b, u32 sab, u32 (&out)[N]) {
  static_assert(N == 8 || N == 16, "8 or 16 fields");
  const u32 x = bit_select(a, b << 2, 0x33333333u);
  const u32 y = bit_select(a >> 2, b, 0x33333333u);
#pragma unroll
  for (int o = 0; o < 2; ++o) {
    const u32 v = o ? y : x;
#pragma unroll
    for (int h = 0; h < N / 8; ++h) {
      // Bytes 2h and 2h + 1 of v, one field per nibble.
      u32 t = prmt(v, 0u, h ? 0x4342u : 0x4140u);
      t = (t | (t << 4)) & 0x0f0f0f0fu;
      t = (t | (t << 2)) & 0x33333333u;
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const u32 sel = s ? t >> 16 : t;
        const u32 lo = prmt(bk.lo, 0u, sel), hi = prmt(bk.hi, 0u, sel);
        const int k = 4 * (2 * h + s) + o;  // byte 2h + s of v: fields k and k + 2
        out[k] = prmt(lo, hi, 0x5140u);
        out[k + 2] = prmt(lo, hi, 0x7362u);
      }
    }
  }
  if constexpr (SIGN) {
    // a's sign bit k to bit 15, b's (bit 16 + k) to bit 31; a clear bit negates.
#pragma unroll
    for (int k = 0; k < N; ++k) out[k] ^= ~(sab << (15 - k)) & 0x80008000u;
  }
}

}  // namespace mlxcel_mma
