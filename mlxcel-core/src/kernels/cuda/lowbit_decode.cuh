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

// 3-bit sides: a's sign bit k (of sab) to bit 15 of out[k], b's (bit 16 + k) to bit 31; a clear
// bit negates the table's magnitude.
template <int N>
__device__ __forceinline__ void apply_signs2(u32 sab, u32 (&out)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) out[k] ^= ~(sab << (15 - k)) & 0x80008000u;
}

// out[k] = half2(value of field k of a, value of field k of b), k < N (N = 16: a and b hold 16
// fields each; N = 8: their low 16 bits). SIGN (3-bit): sab holds a's sign bits at bits 0..N-1
// and b's at 16..16+N-1 (set = positive); the table holds magnitudes.
// The fields of a and b are interleaved by bit selects (byte j of x: fields 4j of a, 4j of b,
// 4j + 2 of a, 4j + 2 of b; y the same for 4j + 1 and 4j + 3), each byte's four fields are
// spread into nibbles (the permutes' selectors), and two permutes per four fields give the low
// and high bytes, two more the half2 pairs: ~3.75 instructions per pair, 2 more with SIGN.
// The same arrangement serves K (a, b: two halves of a lane's dims; the kernel orders q's
// dims to match) and V (a, b: two tokens, the same dims).
// The two half2 of the four fields in nibbles 0-3 of sel: (f0, f1) and (f2, f3).
__device__ __forceinline__ void nibble_pairs2(const Book2& bk, u32 sel, u32& p01, u32& p23) {
  const u32 lo = prmt(bk.lo, 0u, sel), hi = prmt(bk.hi, 0u, sel);
  p01 = prmt(lo, hi, 0x5140u);
  p23 = prmt(lo, hi, 0x7362u);
}

// What both decodes (decode_pairs2, decode_pairs2_lut) share: the interleave of a's and b's
// fields into x and y, WORDS(o, v) for v = x (o = 0) and y (o = 1), which writes out[4i + o]
// and out[4i + o + 2] from byte i of v, then the signs.
template <int N, bool SIGN, typename Words>
__device__ __forceinline__ void interleaved_pairs2(u32 a, u32 b, u32 sab, u32 (&out)[N], const Words& words) {
  static_assert(N == 8 || N == 16, "8 or 16 fields");
  const u32 x = bit_select(a, b << 2, 0x33333333u);
  const u32 y = bit_select(a >> 2, b, 0x33333333u);
  words(0, x);
  words(1, y);
  if constexpr (SIGN) apply_signs2<N>(sab, out);
}

template <int N, bool SIGN>
__device__ __forceinline__ void decode_pairs2(const Book2& bk, u32 a, u32 b, u32 sab, u32 (&out)[N]) {
  interleaved_pairs2<N, SIGN>(a, b, sab, out, [&](int o, u32 v) {
#pragma unroll
    for (int h = 0; h < N / 8; ++h) {
      // Bytes 2h and 2h + 1 of v, one field per nibble.
      u32 t = prmt(v, 0u, h ? 0x4342u : 0x4140u);
      t = (t | (t << 4)) & 0x0f0f0f0fu;
      t = (t | (t << 2)) & 0x33333333u;
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const int k = 4 * (2 * h + s) + o;  // byte 2h + s of v: fields k and k + 2
        nibble_pairs2(bk, s ? t >> 16 : t, out[k], out[k + 2]);
      }
    }
  });
}

// ---- The shared-memory table of 2-bit field bytes (LUT_L in decode_attention_mma.cu,
// MLXCEL_MMA_LUT_LOW) ----
// decode_pairs2 spends ~3.75 instructions per element pair spreading fields into nibbles and
// permuting twice; turbo3 / turbo2 keys and values on both sides made the symmetric kernels'
// loop 1081 / 807 SASS instructions per pair of tiles against turbo4's 582 (NVRTC, D 128 GQA 4).
// The table maps a byte of decode_pairs2's interleaved words (fields f0..f3 at bits 0-1, 2-3,
// 4-5, 6-7) straight to its two half2, (f0, f1) and (f2, f3): one address prmt and one 8-byte
// load per two pairs. A row per byte value, 256 bytes: K's entry in bytes 0-127, V's in
// 128-255, each 16 times, so that the 16 lanes of a half-warp's 8-byte loads (one wavefront)
// read 16 different bank pairs whatever their bytes. The entries come from the same permutes
// as decode_pairs2's, so the decoded values are the same bits.
constexpr int LUT2_ROW = 256;

// The two half2 of interleaved byte v (decode_pairs2's out[k] and out[k + 2]).
__device__ __forceinline__ void byte_pairs2(const Book2& bk, u32 v, u32& p01, u32& p23) {
  u32 t = (v | (v << 4)) & 0x0f0fu;
  t = (t | (t << 2)) & 0x3333u;
  nibble_pairs2(bk, t, p01, p23);
}

// This lane's offset in a row: its copy (lane mod 16) of K's entry (part 0) or V's (part 1).
__device__ __forceinline__ u32 lut2_lane(int lane, int part) {
  return static_cast<u32>(128 * part + 8 * (lane & 15));
}

// Fills one part of the 256-row table with 128 threads: thread t writes the 16-byte chunk t & 7
// (two copies of an entry) of rows (t >> 3) + 16 j, j = 0..15. STORE16(ptr, a, b, c, d) stores
// four words.
template <typename Store16>
__device__ __forceinline__ void fill_lut2(unsigned char* table, const Book2& bk, int part, int tid,
                                          const Store16& store16) {
  const int q = tid & 7, row0 = tid >> 3;
#pragma unroll 4
  for (int j = 0; j < 16; ++j) {
    const int row = row0 + 16 * j;
    u32 p01, p23;
    byte_pairs2(bk, static_cast<u32>(row), p01, p23);
    store16(table + row * LUT2_ROW + part * 128 + q * 16, p01, p23, p01, p23);
  }
}

// decode_pairs2 through the table: the same interleave, then for byte i of x (o = 0) or y
// (o = 1) one load of out[4i + o] and out[4i + o + 2]. LOAD(addr, lo, hi) reads the two words at
// byte offset addr of the table (addr = the byte's row, this lane's copy `lane_off`).
template <int N, bool SIGN, typename Load>
__device__ __forceinline__ void decode_pairs2_lut(const Load& load, u32 lane_off, u32 a, u32 b, u32 sab, u32 (&out)[N]) {
  interleaved_pairs2<N, SIGN>(a, b, sab, out, [&](int o, u32 v) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) {
      // Row = byte i of v (address byte 1), lane_off in byte 0, bytes 2-3 from its zero byte 1.
      load(prmt(v, lane_off, 0x5504u | (static_cast<u32>(i) << 4)), out[4 * i + o], out[4 * i + o + 2]);
    }
  });
}

}  // namespace mlxcel_mma
