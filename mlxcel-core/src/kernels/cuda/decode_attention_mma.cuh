// Helpers of the tensor-core decode-attention kernel (decode_attention_mma.cu): fragment
// decoders that turn stored K/V words into fp16 mma operands, the mma and cp.async
// wrappers. Appended to decode_attention.cuh as the kernel's header.
//
// Why these decoders: at 4.25 bits per element HBM leaves ~3.7 instructions per KV element
// (spec §3.3). The dot products go to the tensor cores (one m16n8k16 per 4 elements per
// lane), so the CUDA cores only unpack: a 4-bit sign-magnitude code becomes an fp16
// centroid with byte permutes over an 8-entry magnitude table held in 4 registers (no
// shared-memory lookups), ~2 instructions per element.
#include <cuda_fp16.h>

namespace mlxcel_mma {

typedef unsigned int u32;

// A compile-time bool as a value, for the kernel's generic lambdas (MASKL's masked and unmasked
// copies of the pair loop's body in decode_attention_mma.cu).
template <bool B>
struct BoolTag {
  static constexpr bool value = B;
};

__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 sel) {
  u32 d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// D += A * B with A 16x16 (row-major fragments a0..a3), B 16x8 (b0, b1), fp32 accumulate.
__device__ __forceinline__ void mma(float c[4], u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The 8x8 matrix of 16-bit values whose m8n8 fragment this lane holds (row lane / 4, columns
// 2 (lane % 4) and + 1), transposed: the same fragment of its transpose (KT in
// decode_attention_mma.cu turns S^T's C fragment into P^T's B fragment with it).
__device__ __forceinline__ u32 transpose8x8(u32 x) {
  u32 y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

// 2^x with denormal results flushed to zero (FTZ): exp2f compiles to the same MUFU.EX2 with a
// range check and two predicated multiplies around it so that results below 2^-126 stay
// denormal. The kernel's weights that small vanish anyway: P is packed to fp16 (smallest
// subnormal 2^-24) and the fp32 sums they join hold a term >= 1.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 16-byte global -> shared copy; copies zeros when !valid (rows past the sequence end:
// a never-written fp16 slot may hold NaN, and 0 * NaN would poison the output).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

__device__ __forceinline__ u32 pack_half2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<u32*>(&h);
}

// Magnitude table of a 4-bit sign-magnitude book: byte m of lo0:lo1 / hi0:hi1 is the low /
// high byte of the fp16 magnitude of rank m.
struct Book4 {
  u32 lo0, lo1, hi0, hi1;
};

__device__ __forceinline__ Book4 make_book4(const float* lut) {
  u32 lo[2] = {0, 0}, hi[2] = {0, 0};
#pragma unroll
  for (int m = 0; m < 8; ++m) {
    const unsigned short h = __half_as_ushort(__float2half_rn(lut[8 + m]));
    lo[m / 4] |= static_cast<u32>(h & 0xff) << (8 * (m % 4));
    hi[m / 4] |= static_cast<u32>(h >> 8) << (8 * (m % 4));
  }
  return Book4{lo[0], lo[1], hi[0], hi[1]};
}

// The low 4 nibbles of x are codes e0..e3 (bit 3 set = positive, bits 0-2 = magnitude
// rank); x4 = x << 4, sign_sel = 0x1504 for nibbles 0-3 of the original word or 0x3726 for
// nibbles 4-7 (x then holds them shifted down). Returns byte k of lo / hi = low / high byte
// of the fp16 value of e_k.
__device__ __forceinline__ void lookup4(const Book4& bk, u32 codes, u32 x, u32 x4, u32 sign_sel, u32& lo, u32& hi) {
  const u32 sel = codes & 0x7777u;
  lo = prmt(bk.lo0, bk.lo1, sel);
  hi = prmt(bk.hi0, bk.hi1, sel);
  // Byte k of s has as its top bit the sign bit (bit 3) of nibble k.
  const u32 s = prmt(x, x4, sign_sel);
  hi ^= ~s & 0x80808080u;
}

// 8 codes of one token (word w: element i in nibble i) -> 4 half2 (elements 2i, 2i+1).
__device__ __forceinline__ void decode8_t4(const Book4& bk, u32 w, u32 out[4]) {
  const u32 w4 = w << 4;
  u32 lo, hi;
  lookup4(bk, w, w, w4, 0x1504u, lo, hi);
  out[0] = prmt(lo, hi, 0x5140u);
  out[1] = prmt(lo, hi, 0x7362u);
  lookup4(bk, w >> 16, w, w4, 0x3726u, lo, hi);
  out[2] = prmt(lo, hi, 0x5140u);
  out[3] = prmt(lo, hi, 0x7362u);
}

// 8 codes of token t1 (w1) and of token t2 (w2), same elements -> 8 half2 (t1, t2) pairs,
// out[i] = element i of both tokens.
__device__ __forceinline__ void decode8x2_t4(const Book4& bk, u32 w1, u32 w2, u32 out[8]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // Nibbles of z: (t1 e0, t1 e1, t2 e0, t2 e1, t1 e2, t1 e3, t2 e2, t2 e3) of this half.
    const u32 z = prmt(w1, w2, h == 0 ? 0x5140u : 0x7362u);
    const u32 z4 = z << 4;
    u32 lo, hi;
    lookup4(bk, z, z, z4, 0x1504u, lo, hi);
    out[4 * h + 0] = prmt(lo, hi, 0x6240u);
    out[4 * h + 1] = prmt(lo, hi, 0x7351u);
    lookup4(bk, z >> 16, z, z4, 0x3726u, lo, hi);
    out[4 * h + 2] = prmt(lo, hi, 0x6240u);
    out[4 * h + 3] = prmt(lo, hi, 0x7351u);
  }
}

// Shared-memory decode tables (LUTK / LUTV in decode_attention_mma.cu). Why: ncu of the
// turbo4 kernel at 128K (session 10) found the ALU pipe 68% busy and DRAM at 42%: the
// byte-permute decoders above cost ~2 ALU instructions per element, while HBM at 4.25 bits
// per element leaves the H200's ALU pipe (64 lanes per SM per clock) ~1.7. A table of all
// 256 code pairs (one byte of codes -> one half2) turns 2 elements into 1 prmt (the
// address) + 1 shared load (the MIO pipe). Entries are replicated for the 32 lanes at byte
// 4 * lane of their row, so a warp's 32 random lookups hit 32 banks (one wavefront).
// ROW 256 (64 KiB): K's entries in bytes 0-127 of a row, V's in 128-255. (A 32-KiB table of
// 128-byte rows shared by both sides, 3 CTAs per SM instead of 2, measured no faster in
// session 11 and was removed in session 50.)
// fp16 bits of code `code` of a sign-magnitude book (bit 3 set = positive, bits 0-2 =
// magnitude rank, magnitudes at lut[8..16)): the values lookup4 produces. code_bits takes the
// code's magnitude m = lut[8 + (code & 7)] already loaded.
__device__ __forceinline__ unsigned short code_bits(float m, int code) {
  const unsigned short h = __half_as_ushort(__float2half_rn(m));
  return (code & 8) ? h : static_cast<unsigned short>(h ^ 0x8000u);
}
__device__ __forceinline__ unsigned short book_code_bits(const float* lut, int code) {
  return code_bits(lut[8 + (code & 7)], code);
}

// Fills the lane entries at bytes part * 128 + [0, 128) of every row: entry e = half2(code
// e & 15, code e >> 4), 16 bytes (4 lanes) per store. With 128 threads, thread t writes the
// 16-byte chunk t & 7 of rows (t >> 3) + 16 j, j = 0..15: its low code is fixed, the high
// code is j.
// PRELOAD: the book's 8 magnitudes are loaded into registers before the first store (the
// loop's own loads cannot move above its stores: the compiler does not know that the table
// and the book never alias), and the loop is unrolled fully. The same bytes either way.
// after_loads() runs once the book's loads are issued (PRELOAD) or first (otherwise): QFIRST
// in decode_attention_mma.cu issues the ring's first copies there.
struct NoOp {
  __device__ __forceinline__ void operator()() const {}
};
template <int NTHREADS, int ROW, bool PRELOAD = false, typename After = NoOp>
__device__ __forceinline__ void fill_lut(unsigned char* table, const float* lut, int part, int tid,
                                         const After& after_loads = After{}) {
  static_assert(NTHREADS == 128, "the fill assumes 128 threads");
  const int q = tid & 7, lo_code = tid >> 3;
  // Entry half2(lo, hi) of row lo_code + 16 j, j = the high code.
  auto put = [&](int j, u32 v) {
    *reinterpret_cast<uint4*>(table + (lo_code + 16 * j) * ROW + part * 128 + q * 16) = make_uint4(v, v, v, v);
  };
  if constexpr (PRELOAD) {
    float mag[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) mag[i] = lut[8 + i];
    after_loads();
    // This thread's low code's magnitude by selects (a dynamic index would put mag in local
    // memory).
    float lo_mag = mag[0];
#pragma unroll
    for (int i = 1; i < 8; ++i) lo_mag = (lo_code & 7) == i ? mag[i] : lo_mag;
    const u32 lo = code_bits(lo_mag, lo_code);
#pragma unroll
    for (int j = 0; j < 16; ++j) put(j, lo | (static_cast<u32>(code_bits(mag[j & 7], j)) << 16));
  } else {
    after_loads();
    const u32 lo = book_code_bits(lut, lo_code);
#pragma unroll 4
    for (int j = 0; j < 16; ++j) put(j, lo | (static_cast<u32>(book_code_bits(lut, j)) << 16));
  }
}

// Shared-window address of the first byte of a kernel's dynamic shared memory when the
// kernel declares no static shared memory and runs without clusters: sm_80 and later
// reserve the first 1 KB of a CTA's shared memory for the system. IMM lookups
// (LUTI in decode_attention_mma.cu) fold it into the load's immediate offset; the kernel
// traps if its dynamic shared memory starts elsewhere, so a wrong assumption fails the
// launch instead of reading the wrong bytes.
constexpr u32 DYN_SMEM_BASE = 1024;

// The half2 of code byte k (0-3) of w from the table's 256-byte rows (measured in session 10):
// `lane` is this lane's offset in a row (4 * lane, + 128 for V); the row offset is one prmt (byte 1 = byte k of w, byte 0 from lane, bytes 2-3
// from lane's zero byte 1), loaded relative to `table`. NVRTC keeps the table's shared
// address in a register and adds it before every load (one IMAD per lookup: the default
// build's main loop has 498 instructions per tile); with IMM the load takes the prmt result
// plus the immediate DYN_SMEM_BASE (table at the start of dynamic shared memory): 427.
template <int K, bool IMM>
__device__ __forceinline__ u32 lut_pair(const unsigned char* table, u32 w, u32 lane) {
  if constexpr (IMM) {
    u32 v;
    asm("ld.shared.u32 %0, [%1+%2];" : "=r"(v) : "r"(prmt(w, lane, 0x5504u | (K << 4))), "n"(DYN_SMEM_BASE));
    return v;
  } else {
    return *reinterpret_cast<const u32*>(table + prmt(w, lane, 0x5504u | (K << 4)));
  }
}

// decode8_t4 through the table: out[k] = (element 2k, element 2k + 1) of word w.
template <bool IMM>
__device__ __forceinline__ void decode8_t4_lut(const unsigned char* table, u32 w, u32 lane, u32 out[4]) {
  out[0] = lut_pair<0, IMM>(table, w, lane);
  out[1] = lut_pair<1, IMM>(table, w, lane);
  out[2] = lut_pair<2, IMM>(table, w, lane);
  out[3] = lut_pair<3, IMM>(table, w, lane);
}

// Bits of a where m is set, of b elsewhere: one LOP3 (0xe4 = (a & m) | (b & ~m) over the
// operands' truth tables 0xf0, 0xcc, 0xaa), which ptxas does not always find for the masked
// or.
__device__ __forceinline__ u32 bit_select(u32 a, u32 b, u32 m) {
  u32 d;
  asm("lop3.b32 %0, %1, %2, %3, 0xe4;" : "=r"(d) : "r"(a), "r"(b), "r"(m));
  return d;
}

// decode8x2_t4 through the table: nibbles of the two tokens interleaved first (byte j of x
// = element 2j of t1 and t2, of y = element 2j + 1), then one lookup per pair. SEL: the
// interleave as two bit selects (a shift and one LOP3 each) instead of the masked ors (ptxas
// made 4 LOP3 and 2 shifts of them in the shipped build, 9 and 3.5 in another: NVRTC SASS);
// the same bits.
template <bool IMM, bool SEL = false>
__device__ __forceinline__ void decode8x2_t4_lut(const unsigned char* table, u32 w1, u32 w2, u32 lane, u32 out[8]) {
  const u32 x = SEL ? bit_select(w1, w2 << 4, 0x0f0f0f0fu) : (w1 & 0x0f0f0f0fu) | ((w2 << 4) & 0xf0f0f0f0u);
  const u32 y = SEL ? bit_select(w1 >> 4, w2, 0x0f0f0f0fu) : ((w1 >> 4) & 0x0f0f0f0fu) | (w2 & 0xf0f0f0f0u);
  out[0] = lut_pair<0, IMM>(table, x, lane);
  out[1] = lut_pair<0, IMM>(table, y, lane);
  out[2] = lut_pair<1, IMM>(table, x, lane);
  out[3] = lut_pair<1, IMM>(table, y, lane);
  out[4] = lut_pair<2, IMM>(table, x, lane);
  out[5] = lut_pair<2, IMM>(table, y, lane);
  out[6] = lut_pair<3, IMM>(table, x, lane);
  out[7] = lut_pair<3, IMM>(table, y, lane);
}

// 4 int8 values (bytes of w) -> 2 half2 (bytes 0,1 and 2,3), exact: 0x64XX is 1024 + XX.
__device__ __forceinline__ void decode4_i8(u32 w, u32 out[2]) {
  const u32 x = w ^ 0x80808080u;
  const __half2 bias = __half2half2(__ushort_as_half(0x6480));  // 1152 = 1024 + 128
  u32 a = prmt(x, 0x64646464u, 0x4140u), b = prmt(x, 0x64646464u, 0x4342u);
  __half2 ha = __hsub2(*reinterpret_cast<__half2*>(&a), bias);
  __half2 hb = __hsub2(*reinterpret_cast<__half2*>(&b), bias);
  out[0] = *reinterpret_cast<u32*>(&ha);
  out[1] = *reinterpret_cast<u32*>(&hb);
}

// 4 int8 values of token t1 (w1) and t2 (w2) -> 4 half2 (t1, t2) pairs, out[i] = element i.
__device__ __forceinline__ void decode4x2_i8(u32 w1, u32 w2, u32 out[4]) {
  u32 tmp[2];
  decode4_i8(prmt(w1, w2, 0x5140u), tmp);
  out[0] = tmp[0];
  out[1] = tmp[1];
  decode4_i8(prmt(w1, w2, 0x7362u), tmp);
  out[2] = tmp[0];
  out[3] = tmp[1];
}

}  // namespace mlxcel_mma
