// One-token 4-bit GEMV on tensor cores: y = x W^T for MLX-affine 4-bit weights (w uint32
// [N, K/8], eight 4-bit values per word, value i at bits 4i; scales and biases fp16
// [N, K/G]; W[n, k] = s * q + b), x fp16 [K]. Appended to decode_attention_mma.cuh (for
// mlxcel_mma::mma) as the header of qgemv4.cu and qgemv4_silu.cu.
//
// Why: MLX's qmv kernel ran at ~0.86 TB/s in an end-to-end decode step of a Llama-3-8B
// 4-bit model (ncu, H200): 5.25 ms of the 7.5 ms of kernel time per token. A GEMV is
// bandwidth-bound only if the CUDA cores spend at most ~4 instructions per weight
// (3.3 TB/s over ~30 T thread-instructions/s); here they only unpack (lop3 + hsub2 +
// hfma2: ~2 per weight) and the dot products go to the tensor cores, in fp32.
//
// Layout: a CTA owns 16 output rows (ROWT row tiles for the fused gate/up variant) and its
// NW warps split K; a warp takes 128-value tiles, lane (r = lane/4, c = lane%4) loading
// 16 bytes (32 values, inside one quantization group since 32 | G) of rows r and r+8 at
// tile offset c*32. One m16n8k16 per 8 values of a word pair: the contraction axis is
// permuted the same way for W (nibble pairs (i, i+4) of a word, as lop3 extracts them) and
// for x (stored in shared memory in that pair order), so no shuffles are needed. All eight
// B columns carry x, so every lane's C fragment holds its rows' sums.
#pragma once

namespace mlxcel_qmv {

using mlxcel_mma::u32;

// MLXCEL_QMV_PROBE_LEVEL (defined ahead of this header by quantized_gemv.rs's run for
// MLXCEL_QMV_NOMATH_PROBE's builds, from MLXCEL_QMV_NOMATH_LEVEL; 0, the shipped kernels,
// otherwise): a measuring probe's level.
// From 1 (loop) ring_rows16_post skips each tile's arithmetic; from 2 (tables) the prologue also
// drops the scale tables and POST's per-group x sums; then 3 (nwx) reads the folded norm's weight
// from x's address (lines every CTA has just read: whether the weight's own loads cost), 4
// (xplain) stages x as the unnormed kernels do (no norm weight, no sums of squares), 5 (prologue)
// stages no x: the ring's copies, waits, slot reads and the reduction remain; 6 (nosums) stages x
// through the norm's weight (its loads and products) without the sums of squares and their
// shuffles in its 16-byte-aligned path (the late scale 1): whether the sums or the weight's part
// cost (session 41: the weight's part; nosums ran as tables). 7 (partials) is the consumer's share
// of a fold whose producer writes nw * x and per-16-row partial sums of x^2: x staged as xplain
// stages it (standing for nw * x), plus one float per 16 values of x read from the norm weight's
// address (standing for the partials) and summed through late_partial into the late scale.
// 8 (xtwice) is xplain with each thread's first two 16-byte chunks of x (all of x at K = 4096
// with 8 warps) loaded a second time (asm loads, XORed into the first): whether two more loads
// per thread from lines every CTA reads cost.
// Levels 9-11 keep the tile arithmetic (POST's loop as shipped) and drop one piece of the prologue
// each, to bound what moving it out of the prologue could save: 9 (nosb) stores the constant pair
// (1, 0) as every (scale, bias) in place of the 16 rows' tables (the stores kept, the loads from
// DRAM gone), 10 (noxsum) zeroes POST's per-group x sums instead of computing them (and leaves x's
// chunks in their staged order), 11 (noprep) both. Wrong outputs, distinct per level: timing only.
#ifndef MLXCEL_QMV_PROBE_LEVEL
#define MLXCEL_QMV_PROBE_LEVEL 0
#endif
constexpr int PROBE_LEVEL = MLXCEL_QMV_PROBE_LEVEL;
static_assert(PROBE_LEVEL >= 0 && PROBE_LEVEL <= 11, "probe levels 1-11");
constexpr bool NOMATH = PROBE_LEVEL >= 1 && PROBE_LEVEL <= 8;
constexpr bool NOTABLES = PROBE_LEVEL >= 2 && PROBE_LEVEL <= 8;
constexpr bool NOSB = PROBE_LEVEL == 9 || PROBE_LEVEL == 11;
constexpr bool NOXSUM = PROBE_LEVEL == 10 || PROBE_LEVEL == 11;
constexpr bool NWX = PROBE_LEVEL == 3;
constexpr bool XPLAIN = PROBE_LEVEL == 4;
constexpr bool NOX = PROBE_LEVEL == 5;
constexpr bool NOSUMS = PROBE_LEVEL == 6;
constexpr bool PARTIALS = PROBE_LEVEL == 7;
constexpr bool XTWICE = PROBE_LEVEL == 8;

// The GEMV kernels' dynamic shared memory on a 128-byte boundary (MLXCEL_QMV_DYN_ALIGN in
// their extern declaration; 16, defined ahead of this header by quantized_gemv.rs's run, with
// MLXCEL_QMV_ALIGN128 off): ptxas then pads the static arrays up to a multiple of 128 bytes.
// Why: the static arrays end where dynamic shared memory begins; with the folded norm's nred
// (NW floats) they ended 32 bytes past a 128-byte line (48 past in the qkv + encode kernel), and
// every ring copy's shared-memory writes then straddled lines: ncu counted 17.4 shared
// wavefronts per cp.async instruction against 12.8 aligned (ideal 3.6). Aligned, a turbo4 decode
// step at 32K took 0.066 ms less on the H200 (session 41, ADR 0017).
#ifndef MLXCEL_QMV_DYN_ALIGN
#define MLXCEL_QMV_DYN_ALIGN 128
#endif

// Nibbles (i, i + 4) of word w as one exact fp16 pair straight from one LOP3 (the fp16 bits
// 0x6400 | field): for MASK 0x000F000F at bits 0..3 of each half, (1024 + n, 1024 + n'); for
// 0x00F000F0 at bits 4..7, (1024 + 16 n, 1024 + 16 n'). POST (ring_rows16_post) feeds these to
// the mma and folds the offset into a per-group correction.
template <u32 MASK>
__device__ __forceinline__ u32 code_pair(u32 w) {
  u32 v;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(v) : "r"(w), "r"(MASK), "r"(0x64006400u));
  return v;
}

// (n_i, n_{i+4}) of word w as an exact fp16 pair, i = 0..3 (shift = 4i): code_pair less 1024.
__device__ __forceinline__ __half2 nibble_pair(u32 w, int shift) {
  u32 v = code_pair<0x000F000Fu>(w >> shift);
  const __half2 h = *reinterpret_cast<__half2*>(&v);
  return __hsub2(h, __half2half2(__ushort_as_half(0x6400)));
}

__device__ __forceinline__ u32 as_u32(__half2 h) { return *reinterpret_cast<u32*>(&h); }

// x [K] (fp16) -> shared, in nibble-pair order: xs[4b + i] = (x[8b + i], x[8b + i + 4]).
__device__ __forceinline__ void stage_x(const __half* x, __half2* xs, int K, int tid, int nt) {
  for (int i = tid; i < K / 2; i += nt) {
    const int b = i >> 2, j = i & 3;
    xs[i] = __halves2half2(x[8 * b + j], x[8 * b + j + 4]);
  }
}

// 8 fp16 values of x (one 16-byte chunk, b = chunk index) stored at xs4[b] in pair order: the
// 4 pairs (x[8b + i], x[8b + i + 4]), two byte permutes per pair.
__device__ __forceinline__ uint4 pairs8(const uint4& v) {
  return make_uint4(mlxcel_mma::prmt(v.x, v.z, 0x5410), mlxcel_mma::prmt(v.x, v.z, 0x7632),
                    mlxcel_mma::prmt(v.y, v.w, 0x5410), mlxcel_mma::prmt(v.y, v.w, 0x7632));
}
__device__ __forceinline__ void store_pairs8(uint4* xs4, int b, const uint4& v) { xs4[b] = pairs8(v); }

// XSF (MLXCEL_QMV_XSUM_STAGE, POST only): chunk b's pairs p (pair order) stored in POST's order
// ((x0, x4), (x2, x6), (x1, x5), (x3, x7)) and its group's (D, E) formed as ring_rows16_post's
// pass forms them: the chunk's even and odd sums, added over the CPG lanes of its group by the
// same xor shuffles, written to xsum[b / CPG] by the group's first lane. Every lane of the warp
// calls it (the shuffles); a lane past x's end passes on = false and adds zeros. Same values,
// same order of additions: the same (D, E) and the same shared bytes as the pass.
template <int CPG>
__device__ __forceinline__ void store_post8(uint4* xs4, float2* xsum, int b, const uint4& p, bool on, int lane) {
  float ev = 0.0f, od = 0.0f;
  if (on) {
    const __half2* h = reinterpret_cast<const __half2*>(&p);
    const float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
    const float2 f2 = __half22float2(h[2]), f3 = __half22float2(h[3]);
    ev = (f0.x + f0.y) + (f2.x + f2.y);
    od = (f1.x + f1.y) + (f3.x + f3.y);
    xs4[b] = make_uint4(p.x, p.z, p.y, p.w);
  }
#pragma unroll
  for (int o = 1; o < CPG; o <<= 1) {
    ev += __shfl_xor_sync(0xffffffffu, ev, o);
    od += __shfl_xor_sync(0xffffffffu, od, o);
  }
  if (on && lane % CPG == 0) xsum[b / CPG] = make_float2(ev + od, fmaf(1024.0f, ev, 64.0f * od));
}

// The folded RMSNorm's pieces (stage_x_rms and XEarly): x^2 of 8 fp16 values added to ss in
// order; n = rsqrt(sum / K + eps) from every thread's ss (warp shuffles, then red across warps:
// one barrier); one value normalized and weighted with MLX's roundings; 8 values of x
// normalized, weighted and stored in pair order at xs4[b].
__device__ __forceinline__ void sum_sq8(const uint4& v, float& ss) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 f = __half22float2(h[e]);
    ss = fmaf(f.x, f.x, ss);
    ss = fmaf(f.y, f.y, ss);
  }
}
// late_partial: a warp's sum of its threads' ss into red[warp]; late_scale: n from the NW
// warps' sums in red (LATE reads it after the kernel's reduction barrier, rms_scale after its
// own).
__device__ __forceinline__ void late_partial(float ss, int tid, float* red) {
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((tid & 31) == 0) red[tid >> 5] = ss;
}
template <int NW>
__device__ __forceinline__ float late_scale(const float* red, float eps, int K) {
  if constexpr (NOX || XPLAIN || NOSUMS || XTWICE) return 1.0f;  // the x probes never wrote red
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < NW; ++w) total += red[w];
  return rsqrtf(total / static_cast<float>(K) + eps);
}
template <int NT>
__device__ __forceinline__ float rms_scale(float ss, float eps, int K, int tid, float* red) {
  late_partial(ss, tid, red);
  __syncthreads();
  return late_scale<NT / 32>(red, eps, K);
}
__device__ __forceinline__ __half rms_norm1(__half xv, __half wv, float n) {
  return __hmul(wv, __float2half(__half2float(xv) * n));
}
__device__ __forceinline__ void rms_store8(uint4* xs4, int b, uint4 v, const uint4& wv, float n) {
  __half* hx = reinterpret_cast<__half*>(&v);
  const __half* hw = reinterpret_cast<const __half*>(&wv);
#pragma unroll
  for (int e = 0; e < 8; ++e) hx[e] = rms_norm1(hx[e], hw[e], n);
  store_pairs8(xs4, b, v);
}

// x [K] (fp16) -> shared in pair order as stage_x, 16 bytes at a time (8 values of x become
// the 4 pairs of one 16-byte chunk of xs: two byte permutes per pair); stage_x where x is
// not 16-byte aligned. Why: stage_x's 2-byte loads leave one L2 round trip per loop
// iteration ahead of the first weight use (28 at K = 14336).
__device__ __forceinline__ void stage_x_vec(const __half* x, __half2* xs, int K, int tid, int nt) {
  if ((reinterpret_cast<unsigned long long>(x) & 15) != 0) {
    stage_x(x, xs, K, tid, nt);
    return;
  }
  const uint4* x4 = reinterpret_cast<const uint4*>(x);
  uint4* xs4 = reinterpret_cast<uint4*>(xs);
#pragma unroll 4
  for (int b = tid; b < K / 8; b += nt) {
    store_pairs8(xs4, b, x4[b]);
  }
}

// x [K] (fp16) through MLX's rms_norm with weight nw [K] (fp16), into shared memory in pair
// order as stage_x_vec: n = rsqrt(sum(x^2) / K + eps) in f32, then nw * fp16(x * n) in fp16,
// the roundings of MLX's CUDA rms_norm (the sum's order differs, so n may differ in its last
// bit). Why: a decode step's RMSNorms are MLX nodes and launches of their own, two per layer
// plus the final one, ahead of GEMVs that read all of x anyway (NORM in qgemv4.cu /
// qgemv4_silu.cu). Every CTA sums x^2 itself (8 KB from L2 at K = 4096), then reads x
// again to stage it (a cache hit). `red` holds NT / 32 floats; the function ends after a barrier
// that every thread reaches, and the caller's barrier after staging publishes xs.
template <int NT>
__device__ __forceinline__ void stage_x_rms(const __half* x, const __half* nw, float eps, __half2* xs, int K, int tid,
                                            float* red) {
  const bool vec = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(nw)) & 15) == 0;
  float ss = 0.0f;
  if (vec) {
    const uint4* x4 = reinterpret_cast<const uint4*>(x);
#pragma unroll 2
    for (int b = tid; b < K / 8; b += NT) sum_sq8(x4[b], ss);
  } else {
    for (int i = tid; i < K; i += NT) {
      const float f = __half2float(x[i]);
      ss = fmaf(f, f, ss);
    }
  }
  const float n = rms_scale<NT>(ss, eps, K, tid, red);
  if (vec) {
    const uint4* x4 = reinterpret_cast<const uint4*>(x);
    const uint4* w4 = reinterpret_cast<const uint4*>(nw);
    uint4* xs4 = reinterpret_cast<uint4*>(xs);
#pragma unroll 2
    for (int b = tid; b < K / 8; b += NT) {
      // Both loads named before the call: passed as x4[b] / w4[b] directly, NVRTC scheduled the
      // shipped (EARLY) kernels, which keep this function as their unaligned fallback, differently.
      const uint4 v = x4[b];
      const uint4 wv = w4[b];
      rms_store8(xs4, b, v, wv, n);
    }
  } else {
    for (int i = tid; i < K / 2; i += NT) {
      const int b = i >> 2, j = i & 3;
      xs[i] = __halves2half2(rms_norm1(x[8 * b + j], nw[8 * b + j], n), rms_norm1(x[8 * b + j + 4], nw[8 * b + j + 4], n));
    }
  }
}

// LATE (MLXCEL_QMV_NORM_LATE): the folded norm with its scale n applied to the row sums in
// the epilogue. x is staged once as nw * x (one fp16 rounding per value; MLX's rms_norm rounds
// x n first, then nw times that), each thread's x^2 sums go, in stage_x_rms's order, through a
// warp's shuffles to red[warp] (late_partial: no barrier), and the kernel multiplies its row sums
// by late_scale's n after its reduction's barrier, which also publishes red. Same n to the bit
// as rms_scale's; the product W (nw x) n equals W (nw x n) in exact arithmetic, so the outputs
// differ from the folded norm's only by where the fp16 roundings fall. Why: the folded norm
// summed x^2 across the CTA (a barrier) and staged x in a second pass before the first tile
// could be used: 40-54% of the folded gate/up kernel's warp samples sat in that prologue
// (session 28), and with POST the fold cost 4 us per gate/up launch.
__device__ __forceinline__ uint4 mul8(uint4 v, const uint4& wv) {
  __half2* hx = reinterpret_cast<__half2*>(&v);
  const __half2* hw = reinterpret_cast<const __half2*>(&wv);
#pragma unroll
  for (int e = 0; e < 4; ++e) hx[e] = __hmul2(hw[e], hx[e]);
  return v;
}
__device__ __forceinline__ void mul_store8(uint4* xs4, int b, uint4 v, const uint4& wv) {
  store_pairs8(xs4, b, mul8(v, wv));
}
// LATE's staging without EARLY (and EARLY's fallback for unaligned x or nw).
template <int NT>
__device__ __forceinline__ void stage_x_late(const __half* x, const __half* nw, __half2* xs, int K, int tid,
                                             float* red) {
  float ss = 0.0f;
  if (((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(nw)) & 15) == 0) {
    const uint4* x4 = reinterpret_cast<const uint4*>(x);
    const uint4* w4 = reinterpret_cast<const uint4*>(nw);
    uint4* xs4 = reinterpret_cast<uint4*>(xs);
#pragma unroll 2
    for (int b = tid; b < K / 8; b += NT) {
      const uint4 v = x4[b];
      const uint4 wv = w4[b];
      sum_sq8(v, ss);
      mul_store8(xs4, b, v, wv);
    }
  } else {
    for (int i = tid; i < K; i += NT) {
      const float f = __half2float(x[i]);
      ss = fmaf(f, f, ss);
    }
    for (int i = tid; i < K / 2; i += NT) {
      const int b = i >> 2, j = i & 3;
      xs[i] = __halves2half2(__hmul(nw[8 * b + j], x[8 * b + j]), __hmul(nw[8 * b + j + 4], x[8 * b + j + 4]));
    }
  }
  late_partial(ss, tid, red);
}

// x's staging in two halves for EARLY (ring_rows16): load() puts each thread's first 16-byte
// chunks of x (and of nw with the folded RMSNorm) in registers, store() finishes the staging
// from them, so that ring_rows16 can issue those loads before the ring's first weight copies
// and stage x after them. Why: ncu's source counters on the o_proj GEMV (session 20) put 28%
// of the kernel's stall samples on x's first load, which left after 3 KiB of weight copies
// per warp (the whole matrix in flight across the GPU) and so waited behind them. Chunks past
// the registers (K / 8 > XPRE * NT) take stage_x_vec's / stage_x_rms's loops; unaligned x or
// nw take those functions whole. Same sums in the same order, same roundings, same places:
// bit-identical to staging without EARLY.
template <bool NORM, int NT, bool LATE = false>
struct XEarly {
  static constexpr int XPRE = NORM ? 2 : 8;  // 2 covers K = 4096 at 8 warps; 8 covers 16384
  uint4 x[XPRE], w[NORM ? XPRE : 1];
  bool vec;
  __device__ __forceinline__ void load(const __half* xp, const __half* nw, int K, int tid) {
    vec = ((reinterpret_cast<unsigned long long>(xp) | (NORM ? reinterpret_cast<unsigned long long>(nw) : 0ull)) &
           15) == 0;
    if (!vec) return;
    const uint4* x4 = reinterpret_cast<const uint4*>(xp);
#pragma unroll
    for (int u = 0; u < XPRE; ++u) {
      if (tid + u * NT < K / 8) {
        x[u] = x4[tid + u * NT];
        if constexpr (NORM && NWX) {
          // The probe reads the weight from x's address: an asm load, so that it is not merged
          // with x's.
          const uint4* p = reinterpret_cast<const uint4*>(nw) + tid + u * NT;
          asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(w[u].x), "=r"(w[u].y), "=r"(w[u].z), "=r"(w[u].w)
                       : "l"(p));
        } else if constexpr (NORM) {
          w[u] = reinterpret_cast<const uint4*>(nw)[tid + u * NT];
        }
      }
    }
  }
  // XCPG > 0 (XSF: POST's x sums folded into the staging, store_post8; CPG chunks per group):
  // the 16-byte paths also form (D, E) into xsum and store the chunks in POST's order, and
  // return true; every other path (and XCPG = 0) returns false, leaving the pass to
  // ring_rows16_post. Their loops run whole warps (the shuffles), a lane past x's end idle.
  template <int XCPG = 0>
  __device__ __forceinline__ bool store(const __half* xp, const __half* nw, float eps, __half2* xs, int K, int tid,
                                        float* red, float2* xsum = nullptr) const {
    const uint4* x4 = reinterpret_cast<const uint4*>(xp);
    uint4* xs4 = reinterpret_cast<uint4*>(xs);
    const int lane = tid & 31;
    if constexpr (NORM && LATE) {
      if (!vec) {
        stage_x_late<NT>(xp, nw, xs, K, tid, red);
        return false;
      }
      const uint4* w4 = reinterpret_cast<const uint4*>(nw);
      float ss = 0.0f;
      if constexpr (XCPG > 0) {
#pragma unroll
        for (int u = 0; u < XPRE; ++u) {
          const int b = tid + u * NT;
          const bool on = b < K / 8;
          uint4 p = make_uint4(0u, 0u, 0u, 0u);
          if (on) {
            if constexpr (!NOSUMS) sum_sq8(x[u], ss);
            p = pairs8(mul8(x[u], w[u]));
          }
          store_post8<XCPG>(xs4, xsum, b, p, on, lane);
        }
#pragma unroll 2
        for (int b0 = tid - lane + XPRE * NT; b0 < K / 8; b0 += NT) {
          const int b = b0 + lane;
          const bool on = b < K / 8;
          uint4 p = make_uint4(0u, 0u, 0u, 0u);
          if (on) {
            const uint4 v = x4[b];
            if constexpr (!NOSUMS) sum_sq8(v, ss);
            p = pairs8(mul8(v, w4[b]));
          }
          store_post8<XCPG>(xs4, xsum, b, p, on, lane);
        }
        if constexpr (!NOSUMS) late_partial(ss, tid, red);
        return true;
      }
#pragma unroll
      for (int u = 0; u < XPRE; ++u) {
        if (tid + u * NT < K / 8) {
          if constexpr (!NOSUMS) sum_sq8(x[u], ss);
          mul_store8(xs4, tid + u * NT, x[u], w[u]);
        }
      }
#pragma unroll 2
      for (int b = tid + XPRE * NT; b < K / 8; b += NT) {
        const uint4 v = x4[b];
        const uint4 wv = w4[b];
        if constexpr (!NOSUMS) sum_sq8(v, ss);
        mul_store8(xs4, b, v, wv);
      }
      if constexpr (!NOSUMS) late_partial(ss, tid, red);
      return false;
    } else if constexpr (NORM) {
      if (!vec) {
        stage_x_rms<NT>(xp, nw, eps, xs, K, tid, red);
        return false;
      }
      const uint4* w4 = reinterpret_cast<const uint4*>(nw);
      float ss = 0.0f;
#pragma unroll
      for (int u = 0; u < XPRE; ++u) {
        if (tid + u * NT < K / 8) sum_sq8(x[u], ss);
      }
#pragma unroll 2
      for (int b = tid + XPRE * NT; b < K / 8; b += NT) sum_sq8(x4[b], ss);
      const float n = rms_scale<NT>(ss, eps, K, tid, red);
#pragma unroll
      for (int u = 0; u < XPRE; ++u) {
        if (tid + u * NT < K / 8) rms_store8(xs4, tid + u * NT, x[u], w[u], n);
      }
#pragma unroll 2
      for (int b = tid + XPRE * NT; b < K / 8; b += NT) rms_store8(xs4, b, x4[b], w4[b], n);
      return false;
    } else {
      if (!vec) {
        stage_x(xp, xs, K, tid, NT);
        return false;
      }
      if constexpr (XCPG > 0) {
#pragma unroll
        for (int u = 0; u < XPRE; ++u) {
          const int b = tid + u * NT;
          const bool on = b < K / 8;
          store_post8<XCPG>(xs4, xsum, b, on ? pairs8(x[u]) : make_uint4(0u, 0u, 0u, 0u), on, lane);
        }
        for (int b0 = tid - lane + XPRE * NT; b0 < K / 8; b0 += NT) {
          const int b = b0 + lane;
          const bool on = b < K / 8;
          store_post8<XCPG>(xs4, xsum, b, on ? pairs8(x4[b]) : make_uint4(0u, 0u, 0u, 0u), on, lane);
        }
        return true;
      }
#pragma unroll
      for (int u = 0; u < XPRE; ++u) {
        if (tid + u * NT < K / 8) store_pairs8(xs4, tid + u * NT, x[u]);
      }
      for (int b = tid + XPRE * NT; b < K / 8; b += NT) store_pairs8(xs4, b, x4[b]);
      return false;
    }
  }
};

// How a kernel stages x: as given (stage_x_vec), or through the folded RMSNorm
// (stage_x_rms; NORM; with LATE, stage_x_late and its scale in the kernel's epilogue).
// ring_rows16 takes it so that the ring's first copies leave first (with EARLY, x's loads
// leave before them: load() and store()).
template <bool NORM, int NT, bool LATE = false>
struct StageX {
  const __half* x;
  const __half* nw;  // NORM only
  float eps;         // NORM only
  float* red;        // NORM only: NT / 32 floats
  using Early = XEarly<NORM, NT, LATE>;
  static constexpr bool IS_NORM = NORM;
  __device__ __forceinline__ void operator()(__half2* xs, int K, int tid) const {
    if constexpr (NORM && LATE) stage_x_late<NT>(x, nw, xs, K, tid, red);
    else if constexpr (NORM) stage_x_rms<NT>(x, nw, eps, xs, K, tid, red);
    else stage_x_vec(x, xs, K, tid, NT);
  }
  __device__ __forceinline__ void load(Early& e, int K, int tid) const { e.load(x, nw, K, tid); }
  template <int XCPG = 0>
  __device__ __forceinline__ bool store(const Early& e, __half2* xs, int K, int tid, float2* xsum = nullptr) const {
    return e.template store<XCPG>(x, nw, eps, xs, K, tid, red, xsum);
  }
};

// Row stride (in half2) of the staged (scale, bias) table: >= K / G, and 4 mod 32 so that
// the 8 rows a warp reads at once fall in 8 different banks.
__device__ __forceinline__ int sb_stride(int kg) { return ((kg + 31) & ~31) + 4; }

// Chunk i of the 16 rows' scales sv and biases bv (8 values each, groups 8i .. 8i + 7 of the
// block in row-major order) -> their (scale, bias) pairs in sb, row stride sbs, K / G = kg.
__device__ __forceinline__ void sb_put8(__half2* sb, int sbs, int kg, int i, const uint4& sv, const uint4& bv) {
  const __half* sh = reinterpret_cast<const __half*>(&sv);
  const __half* bh = reinterpret_cast<const __half*>(&bv);
  int row = (8 * i) / kg, g = 8 * i - row * kg;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    sb[row * sbs + g] = __halves2half2(sh[k], bh[k]);
    if (++g == kg) {
      g = 0;
      ++row;
    }
  }
}

// The (scale, bias) pairs of rows [row0, row0 + 16) -> sb[row * SBS + g] (half2: scale low,
// bias high). The 16 rows' scales (and biases) are one contiguous block of 16 * K / G
// values, read 16 bytes at a time where aligned.
__device__ __forceinline__ void stage_sb(const __half* scales, const __half* biases, long long row0, int kg,
                                         __half2* sb, int tid, int nt) {
  const int sbs = sb_stride(kg);
  const __half* s = scales + row0 * kg;
  const __half* b = biases + row0 * kg;
  const int n = 16 * kg;
  if (((reinterpret_cast<unsigned long long>(s) | reinterpret_cast<unsigned long long>(b)) & 15) == 0) {
#pragma unroll 2
    for (int i = tid; i < n / 8; i += nt) {
      sb_put8(sb, sbs, kg, i, reinterpret_cast<const uint4*>(s)[i], reinterpret_cast<const uint4*>(b)[i]);
    }
  } else {
    for (int i = tid; i < n; i += nt) {
      const int row = i / kg, g = i - row * kg;
      sb[row * sbs + g] = __halves2half2(s[i], b[i]);
    }
  }
}

// stage_sb in two halves for EARLY (ring_rows16): the loads of each thread's first PRE
// 16-byte chunks of scales and biases, issued with x's (before the ring's first copies) and
// held in registers, then their stores (the same pairs to the same places as stage_sb) after
// x's, with any chunks past PRE * nt loaded and stored there as stage_sb does. Why: stage_sb's
// loads could not move above x's shared stores, so a CTA paid x's round trip to L2 and then
// the scales' round trip to DRAM one after the other before its first tile. Unaligned tables
// take stage_sb whole.
template <int PRE>
struct SbEarly {
  uint4 s[PRE], b[PRE];
};
template <int PRE>
__device__ __forceinline__ void stage_sb_load(const __half* scales, const __half* biases, long long row0, int kg,
                                              SbEarly<PRE>& e, int tid, int nt) {
  const __half* s = scales + row0 * kg;
  const __half* b = biases + row0 * kg;
  if (((reinterpret_cast<unsigned long long>(s) | reinterpret_cast<unsigned long long>(b)) & 15) != 0) return;
#pragma unroll
  for (int u = 0; u < PRE; ++u) {
    const int i = tid + u * nt;
    if (i < 2 * kg) {  // 16 * kg values, 8 per chunk
      e.s[u] = reinterpret_cast<const uint4*>(s)[i];
      e.b[u] = reinterpret_cast<const uint4*>(b)[i];
    }
  }
}
template <int PRE>
__device__ __forceinline__ void stage_sb_store(const __half* scales, const __half* biases, long long row0, int kg,
                                               const SbEarly<PRE>& e, __half2* sb, int tid, int nt) {
  const __half* s = scales + row0 * kg;
  const __half* b = biases + row0 * kg;
  if (((reinterpret_cast<unsigned long long>(s) | reinterpret_cast<unsigned long long>(b)) & 15) != 0) {
    stage_sb(scales, biases, row0, kg, sb, tid, nt);
    return;
  }
  const int sbs = sb_stride(kg);
#pragma unroll
  for (int u = 0; u < PRE; ++u) {
    if (tid + u * nt < 2 * kg) sb_put8(sb, sbs, kg, tid + u * nt, e.s[u], e.b[u]);
  }
  for (int i = tid + PRE * nt; i < 2 * kg; i += nt) {
    sb_put8(sb, sbs, kg, i, reinterpret_cast<const uint4*>(s)[i], reinterpret_cast<const uint4*>(b)[i]);
  }
}

// One 128-value tile of a lane's two rows: q0 / q1 its 16 bytes of rows r and r + 8 (32
// values each), scale and bias of each, xt = xs at the tile's offset for this lane (its 32
// values of x in pair order). Eight m16n8k16, fp32 accumulation into acc (C fragment).
__device__ __forceinline__ void tile_mma(const uint4& q0, const uint4& q1, __half2 sc0, __half2 bi0,
                                         __half2 sc1, __half2 bi1, const __half2* xt, float (&acc)[4]) {
  const u32 a[4] = {q0.x, q0.y, q0.z, q0.w};
  const u32 b[4] = {q1.x, q1.y, q1.z, q1.w};
  const uint4* xv = reinterpret_cast<const uint4*>(xt);
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const uint4 xx = xv[m];  // pairs 0..3 of this lane's word m
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const u32 a0 = as_u32(__hfma2(nibble_pair(a[m], 8 * h), sc0, bi0));
      const u32 a2 = as_u32(__hfma2(nibble_pair(a[m], 8 * h + 4), sc0, bi0));
      const u32 a1 = as_u32(__hfma2(nibble_pair(b[m], 8 * h), sc1, bi1));
      const u32 a3 = as_u32(__hfma2(nibble_pair(b[m], 8 * h + 4), sc1, bi1));
      const u32 bx0 = h == 0 ? xx.x : xx.z;
      const u32 bx1 = h == 0 ? xx.y : xx.w;
      mlxcel_mma::mma(acc, a0, a1, a2, a3, bx0, bx1);
    }
  }
}

// The batched schedule: accumulates rows [row0, row0 + 16) of W over the tiles of this
// warp (tile t covers k in [128 t, 128 t + 128)) into acc (C fragment: acc[0] row r, acc[2]
// row r + 8); U tiles' loads in registers, then their math.
template <int G, int NW, int U>
__device__ __forceinline__ void rows16(const u32* w, const __half* scales, const __half* biases,
                                       const __half2* xs, int K, long long row0, int warp, int lane,
                                       float (&acc)[4]) {
  const int r = lane >> 2, c = lane & 3;
  const int words = K / 8, groups = K / G;
  const u32* w0 = w + (row0 + r) * words + c * 4;
  const u32* w1 = w0 + 8LL * words;
  const __half* s0 = scales + (row0 + r) * groups;
  const __half* b0 = biases + (row0 + r) * groups;
  const __half* s1 = s0 + 8LL * groups;
  const __half* b1 = b0 + 8LL * groups;
  const int tiles = K / 128;
  for (int t0 = warp; t0 < tiles; t0 += NW * U) {
    uint4 q0[U], q1[U];
    __half2 sc0[U], bi0[U], sc1[U], bi1[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int t = t0 + u * NW;
      if (t < tiles) {
        q0[u] = *reinterpret_cast<const uint4*>(w0 + t * 16);
        q1[u] = *reinterpret_cast<const uint4*>(w1 + t * 16);
        const int g = (t * 128 + c * 32) / G;
        sc0[u] = __half2half2(s0[g]);
        bi0[u] = __half2half2(b0[g]);
        sc1[u] = __half2half2(s1[g]);
        bi1[u] = __half2half2(b1[g]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int t = t0 + u * NW;
      if (t >= tiles) break;
      tile_mma(q0[u], q1[u], sc0[u], bi0[u], sc1[u], bi1[u], xs + (t * 128 + c * 32) / 2, acc);
    }
  }
}

// cp.async and its wait with a memory clobber: the ring's shared reads and writes must stay
// on their side of these (the attention kernel's variants have none; it orders its ring
// through barriers).
__device__ __forceinline__ void ring_copy16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
// An 8-byte cp.async (through L1: .cg takes 16 bytes only), ordered as ring_copy16.
__device__ __forceinline__ void ring_copy8(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void ring_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void ring_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// One 4-bit matrix of the ring schedule: packed words, scales, biases.
struct QMat {
  const u32* w;
  const __half* s;
  const __half* b;
};

// A grid-wide barrier in the ring prologue (MLXCEL_QMV_GBAR_PROBE, qgemv4.cu's GBAR): every CTA
// of the launch arrives before any reads x. Why: fusing a GEMV with the launch before it (the
// split merge into o_proj, down into the next qkv) needs one such barrier between the two
// phases, with the GEMV's first weight copies issued before it (weights do not depend on the
// previous phase); what that barrier costs in situ decides whether those fusions can pay
// (NOTES, "Next lever (after session 37)"). Only for grids whose CTAs are all resident at
// once (quantized_gemv.rs checks the grid), else it would never release.
// words[0] counts arrivals and words[1] is the generation: each CTA reads the generation, then
// arrives; the last to arrive zeroes the count and advances the generation (release), which
// the others wait for (acquire). The count is zero again for the next launch on the slot.
__device__ __forceinline__ void grid_barrier(unsigned* words, int tid) {
  __syncthreads();
  if (tid == 0) {
    unsigned gen, old;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(gen) : "l"(words + 1) : "memory");
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(words) : "memory");
    if (old == gridDim.x - 1) {
      asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(words) : "memory");
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(words + 1) : "memory");
    } else {
      unsigned now;
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(words + 1) : "memory");
      } while (now == gen);
    }
  }
  __syncthreads();
}

// The prologue's gate: none (every shipped kernel), or grid_barrier at one of two places:
// AT_START before anything (its bare cost), else after the tables' loads and the ring's first
// copies, before x's loads (where a fused kernel's previous phase must have written x).
struct NoGate {
  static constexpr bool ACTIVE = false, AT_START = false;
  __device__ __forceinline__ void operator()(int) const {}
};
template <bool START>
struct GridGate {
  static constexpr bool ACTIVE = true, AT_START = START;
  unsigned* words;
  __device__ __forceinline__ void operator()(int tid) const { grid_barrier(words, tid); }
};

// The probe's constant tables (level nosb): (1, 0) as every (scale, bias), as many stores as the
// tables' staging, no loads.
__device__ __forceinline__ void sb_fill_probe(__half2* sb, int n, int tid, int nt) {
  for (int i = tid; i < n; i += nt) sb[i] = __floats2half2_rn(1.0f, 0.0f);
}

// The ring schedules' prologue: the first SS - 1 copies (issue_first(j), j = 0 .. SS - 2), x's
// staging and the 16 rows' (scale, bias) tables, then a barrier; with EARLY, x's and the tables'
// loads leave before the copies (held in registers, stored after them). Shared by ring_rows16
// and ring_rows16_post. An active gate (GridGate) moves x's loads after the copies and itself.
// SB false: no tables (ring_rows16_post's RT: they ride the ring with their tiles). XCPG > 0
// (ring_rows16_post's XSF): EARLY's staging also forms POST's per-group x sums into xsum where
// it can (XEarly::store); returns whether it did.
template <int NW, int SS, int MATS, bool EARLY, bool SB = true, int XCPG = 0, typename Stage, typename IssueFirst,
          typename Gate = NoGate>
__device__ __forceinline__ bool ring_prologue(const QMat (&mats)[MATS], const Stage& stage, __half2* xs, __half2* sb,
                                              int K, long long row0, int kg, int sbs, int tid,
                                              IssueFirst issue_first, const Gate& gate = Gate{},
                                              float2* xsum = nullptr) {
  bool summed = false;
  constexpr int NT = NW * 32;
  if constexpr (Gate::AT_START) gate(tid);
  if constexpr (NOTABLES) {
    // The prologue probes (MLXCEL_QMV_NOMATH_LEVEL): the copies, x's staging as EARLY does it
    // (none under NOX; without the folded norm under XPLAIN; its weight read from x under NWX;
    // without the sums of squares under NOSUMS), no tables. Timing only.
#ifdef MLXCEL_QMV_PROBE_PAD
    // Shared memory that holds the probe's CTAs per SM at the shipped builds' 4: their fewer
    // registers would let 5-6 in, another schedule than the one timed.
    __shared__ unsigned char probe_pad[MLXCEL_QMV_PROBE_PAD];
    if (tid == 0) *reinterpret_cast<volatile unsigned char*>(probe_pad) = 0;
#endif
    if constexpr (XPLAIN || PARTIALS || XTWICE) {
      XEarly<false, NT> xe;
      xe.load(stage.x, nullptr, K, tid);
      // PARTIALS (folded-norm kernels only): a float's bits per 16 values of x, from nw's address,
      // made a value in [1, 2) (nw's fp16 pairs read as floats can be NaN).
      constexpr bool PART = PARTIALS && Stage::IS_NORM;
      unsigned pb = 0;
      if constexpr (PART) {
        if (tid < K / 16) pb = reinterpret_cast<const unsigned*>(stage.nw)[tid];
      }
      uint4 x2[2];
      if constexpr (XTWICE) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          if (tid + u * NT < K / 8) {
            const uint4* p = reinterpret_cast<const uint4*>(stage.x) + tid + u * NT;
            asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(x2[u].x), "=r"(x2[u].y), "=r"(x2[u].z), "=r"(x2[u].w)
                         : "l"(p));
          }
        }
      }
#pragma unroll
      for (int j = 0; j < SS - 1; ++j) issue_first(j);
      if constexpr (XTWICE) {
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          if (tid + u * NT < K / 8) {
            xe.x[u].x ^= x2[u].x;
            xe.x[u].y ^= x2[u].y;
            xe.x[u].z ^= x2[u].z;
            xe.x[u].w ^= x2[u].w;
          }
        }
      }
      xe.store(stage.x, nullptr, 0.0f, xs, K, tid, nullptr);
      if constexpr (PART) {
        float p = tid < K / 16 ? __uint_as_float((pb & 0x007fffffu) | 0x3f800000u) : 0.0f;
        for (int i = tid + NT; i < K / 16; i += NT) {
          p += __uint_as_float((reinterpret_cast<const unsigned*>(stage.nw)[i] & 0x007fffffu) | 0x3f800000u);
        }
        late_partial(p, tid, stage.red);
      }
    } else {
      Stage st = stage;
      if constexpr (NWX) st.nw = stage.x;
      typename Stage::Early xe;
      if constexpr (!NOX) st.load(xe, K, tid);
#pragma unroll
      for (int j = 0; j < SS - 1; ++j) issue_first(j);
      if constexpr (!NOX) st.store(xe, xs, K, tid);
    }
  } else if constexpr (EARLY) {
    // Enough chunks in registers for one 16-row table at K / G <= 256 (2 K / G chunks) with
    // 8 warps; gate/up's two tables take one each (K / G <= 128 at 8 warps).
    // A gate between the copies and x (GridGate, not at the start) moves x's loads after it.
    constexpr bool X_AFTER_GATE = Gate::ACTIVE && !Gate::AT_START;
    constexpr int PRE = MATS == 1 ? 2 : 1;
    typename Stage::Early xe;
    if constexpr (!X_AFTER_GATE) stage.load(xe, K, tid);
    SbEarly<PRE> early[MATS];
    if constexpr (SB && !NOSB) {
#pragma unroll
      for (int m = 0; m < MATS; ++m) stage_sb_load<PRE>(mats[m].s, mats[m].b, row0, kg, early[m], tid, NT);
    }
#pragma unroll
    for (int j = 0; j < SS - 1; ++j) issue_first(j);
    if constexpr (X_AFTER_GATE) {
      gate(tid);
      stage.load(xe, K, tid);
    }
    summed = stage.template store<XCPG>(xe, xs, K, tid, xsum);
    if constexpr (!SB) {
    } else if constexpr (NOSB) {
      sb_fill_probe(sb, MATS * 16 * sbs, tid, NT);
    } else {
#pragma unroll
      for (int m = 0; m < MATS; ++m) stage_sb_store<PRE>(mats[m].s, mats[m].b, row0, kg, early[m], sb + m * 16 * sbs, tid, NT);
    }
  } else {
#pragma unroll
    for (int j = 0; j < SS - 1; ++j) issue_first(j);
    if constexpr (Gate::ACTIVE && !Gate::AT_START) gate(tid);
    stage(xs, K, tid);
    if constexpr (!SB) {
    } else if constexpr (NOSB) {
      sb_fill_probe(sb, MATS * 16 * sbs, tid, NT);
    } else {
#pragma unroll
      for (int m = 0; m < MATS; ++m) stage_sb(mats[m].s, mats[m].b, row0, kg, sb + m * 16 * sbs, tid, NT);
    }
  }
  __syncthreads();
  return summed;
}

// The ring schedule: rows [row0, row0 + 16) of MATS matrices (gate then up for the SwiGLU
// kernel) into acc[m]. Each warp streams its tiles (t = warp, warp + NW, ... of each matrix
// in turn) through a ring of S shared-memory stages filled by cp.async: S - 1 tiles per warp
// (NW * (S - 1) KiB per CTA) stay in flight without holding registers, and the first loads
// leave before x and the scales are staged. Dynamic shared memory: 2 K bytes of x, MATS
// (scale, bias) tables of 16 * sb_stride(K / G) * 4 bytes, NW * S KiB of ring. A lane reads back
// only the 2 x 16 bytes it copied itself, so its own cp.async.wait_group is the only
// synchronisation the ring needs. Same tiles, same per-lane order of accumulation, same
// arithmetic as rows16: bit-identical outputs.
//
// EARLY (MLXCEL_QMV_EARLY): x's loads (XEarly; with the folded norm, its weight's too) and
// the scale and bias loads (stage_sb_load) leave before the ring's first weight copies, held
// in registers, and are stored after them; same values in the same places: bit-identical to
// EARLY off. Session 19's EARLY (scale loads before x's staging, both after the copies)
// measured no faster in situ (the four layer GEMVs 2.127 -> 2.124 ms per step at 32K);
// session 20's source counters then showed x's first load waiting behind the copies.
//
// TILED (MLXCEL_QMV_TILED): the packed words were reordered once at load (tile_rows16 in
// quantized_gemv.rs) so that each 16-row x 128-value tile is 1 KiB of contiguous memory, its
// 16 rows' 64-byte pieces in row order: row block b's tile t at word (b * K / 128 + t) * 256.
// Lane (r, c)'s two 16-byte copies are then bytes 16 lane and 512 + 16 lane of the tile
// (a warp's copy instruction reads 512 contiguous bytes, not 8 rows' 64-byte pieces 2 K / 8
// words apart) and land in the same ring slots as before: same shared-memory contents, same
// arithmetic, bit-identical outputs.
//
// BULK (the `bulk:W:S` schedules; needs TILED): each tile arrives by one bulk copy of its KiB
// (cp.async.bulk through the TMA unit, issued by lane 0) that completes on a per-slot
// mbarrier, instead of 64 16-byte cp.async by the 32 lanes. Why: with per-lane copies neither
// fewer instructions (POST), deeper rings, more warps nor the tiled layout moved the GEMVs
// from ~2.6-2.9 TB/s; bulk copies leave the SM's load path and its per-request tracking out.
// The slot's bytes are the same: bit-identical outputs. Lanes read bytes lane 0's copy wrote,
// so a __syncwarp precedes each refill (every lane's reads of the slot's previous tile done).
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bulk_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}
// Waits until `bar` completes the phase of parity `parity` (its fill number & 1).
__device__ __forceinline__ void bulk_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

template <int G, int NW, int S, int MATS, bool EARLY, bool TILED, bool BULK, typename Stage, typename Gate = NoGate>
__device__ __forceinline__ void ring_rows16(const QMat (&mats)[MATS], const Stage& stage, unsigned char* smem, int K,
                                            long long row0, int tid, int warp, int lane, float (&acc)[MATS][4],
                                            const Gate& gate = Gate{}) {
  constexpr int SS = S > 1 ? S : 2;  // S itself where the ring is used (S >= 2)
  const int r = lane >> 2, c = lane & 3;
  const int words = K / 8, kg = K / G, sbs = sb_stride(kg);
  const int tiles = K / 128;
  const int tw = (tiles - warp + NW - 1) / NW;  // this warp's tiles of each matrix
  const int jobs = MATS * tw;
  __half2* xs = reinterpret_cast<__half2*>(smem);
  __half2* sb = xs + K / 2;
  uint4* ring = reinterpret_cast<uint4*>(sb + MATS * 16 * sbs) + warp * SS * 64;
  static_assert(!BULK || TILED, "bulk copies take whole tiles: the tiled layout");
  const long long lane_off = TILED ? (row0 / 16) * tiles * 256 + lane * 4 : (row0 + r) * words + c * 4;
  __shared__ __align__(8) unsigned long long bars[BULK ? NW * SS : 1];
  unsigned long long* bar = bars + (BULK ? warp * SS : 0);
  if constexpr (BULK) {
    if (lane == 0) {
#pragma unroll
      for (int s = 0; s < SS; ++s) bulk_init(bar + s);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
  }
  auto issue = [&](int j) {
    if (j < jobs) {
      const int m = MATS == 1 ? 0 : j / tw;
      const int t = warp + NW * (j - m * tw);
      const u32* src = (m == 0 ? mats[0].w : mats[MATS - 1].w) + lane_off + t * (TILED ? 256 : 16);
      uint4* dst = ring + (j % SS) * 64;
      if constexpr (BULK) {
        // Lane 0's source is the tile's first word (lane_off's lane term is 0 there).
        __syncwarp();
        if (lane == 0) bulk_copy(dst, src, 1024u, bar + j % SS);
      } else {
        ring_copy16(dst + lane, src);
        ring_copy16(dst + 32 + lane, src + (TILED ? 128LL : 8LL * words));
      }
    }
    if constexpr (!BULK) ring_commit();
  };
  ring_prologue<NW, SS, MATS, EARLY>(mats, stage, xs, sb, K, row0, kg, sbs, tid, [&](int j) { issue(j); }, gate);
#pragma unroll
  for (int m = 0; m < MATS; ++m) {
    const __half2* sbm = sb + m * 16 * sbs;
    for (int i = 0; i < tw; ++i) {
      const int j = m * tw + i;
      issue(j + SS - 1);
      if constexpr (BULK) {
        bulk_wait(bar + j % SS, static_cast<unsigned>(j / SS) & 1u);
      } else {
        ring_wait<SS - 1>();
      }
      const uint4* slot = ring + (j % SS) * 64;
      const uint4 q0 = slot[lane], q1 = slot[32 + lane];
      const int t = warp + NW * i;
      const int g = (t * 128 + c * 32) / G;
      const __half2 p0 = sbm[r * sbs + g], p1 = sbm[(r + 8) * sbs + g];
      tile_mma(q0, q1, __low2half2(p0), __high2half2(p0), __low2half2(p1), __high2half2(p1),
               xs + (t * 128 + c * 32) / 2, acc[m]);
    }
  }
}

// POST (MLXCEL_QMV_POST): the ring schedule with each quantization group's scale and bias
// applied after the mma, in fp32, instead of to every weight before it. Why: the layer GEMVs
// are issue-bound (ncu, session 26: gate/up 4.31 thread-instructions per weight, 62% of issue
// slots busy at 54% of DRAM); ring_rows16's loop spends 215 SASS instructions per tile, 64 of
// them on the per-weight HSUB2 + HFMA2 of tile_mma and ~80 on bookkeeping (a runtime integer
// division among them). Here a code is fed to the mma as an exact fp16 straight from one LOP3:
// 1024 + n for the nibbles at bits 0..3 of a word's halves (even nibbles: one mma, C_lo), 1024
// + 16 n for those at bits 4..7 (odd nibbles: another, C_hi), the word shifted once for its
// upper byte pair. Each warp first sums x over the groups of its own tiles (D, and E = 1024
// D_even + 64 D_odd, fp32, into xsum: no barrier, only its lanes read them), and per group and
// row
//   y += s (C_lo + C_hi / 16 - E) + b D
// = sum (s n + b) x. For that every mma's 16 k values must lie in one group: lane c's word s
// (s = 0..3) is the tile's word 4 s + c, so step s covers the tile's values [32 s, 32 s + 32),
// one group for G >= 32. The copies stay 16 bytes per lane (row r's chunk c, stored at chunk
// (c + r / 2) % 4 of its 64 bytes so that the reads of word c of chunk s by all lanes at once
// hit 32 banks); a lane reads words other lanes copied, so each tile's wait is followed by a
// __syncwarp, and each refill is preceded by one. The next copy's source is walked by a
// pointer, the ring slot by a counter (no division). Numerics: products exact in fp32, no
// fp16 rounding of the weights, so not bit-identical to ring_rows16 (which rounds s n + b
// to fp16); the GEMV tests bound it against float64. One CTA per 16 rows only (no MB).
// TILED (MLXCEL_QMV_TILED with POST): the weights in the tiled layout, as ring_rows16 reads
// them: lane (r, c)'s copies are bytes 16 lane and 512 + 16 lane of the warp's tile, the same
// 16 bytes as row r's (and r + 8's) chunk c in MLX's layout, stored in the same slot places:
// bit-identical to POST on MLX's layout. Why: a copy instruction then reads 512 contiguous bytes
// instead of 8 rows' 64-byte pieces; session 41's source counters put 12.8 shared wavefronts on
// each of these copies against ncu's ideal 3.6 (the tiled layout was measured before POST only).
// OWN (MLXCEL_QMV_OWN_CHUNKS with POST): each lane reads back only the 16 bytes it copied (row
// r's and r + 8's chunk c, one 16-byte load each), and step s feeds the mma word s of that chunk:
// values [32 c + 8 s, 32 c + 8 s + 8) of the tile, so the 4 lanes of an mma row hold values of
// up to 4 different groups. The mma's B columns keep them apart: column n carries x only for
// the group of the lanes whose C columns (2 c, 2 c + 1) it is (n / (8 / NG)); lane (n, c) loads
// zeros where its chunk's group is another (a zeroed 64 bytes of shared memory, reached by
// the lane's own base pointer and stride, so the loop has no extra instruction). A lane's C
// fragment then holds its own group's sums over the tile's 4 steps: one per-group epilogue per
// tile instead of NG, no swizzled slot stores, no cross-lane slot reads and no __syncwarp
// around the ring, and the lanes' groups are added once after the loop (shuffles). Why: POST's
// loop spent ~168 SASS instructions per 1 KiB tile (ncu, session 42's gate/up), against ~250
// issue slots an SM has per KiB at the copy roofline; the shipped head issued in 79% of its
// cycles (session 43). Same products, other summation order: not bit-identical to OWN off
// (the GEMV tests bound both against float64); the same on either weight layout.
// RT (MLXCEL_QMV_RING_TABLES, with OWN and TILED): the (scale, bias) pairs were reordered once at
// load (tile_tables16 in quantized_gemv.rs; `scales` holds them, `biases` is unused) so that each
// tile's 16 rows x NG groups of pairs are 64 NG contiguous bytes: row block b's tile t at u32
// (b * K / 128 + t) * 16 NG, group g's rows r and r + 8 as the two pairs at u32 (8 g + r) * 2.
// Each lane copies its own 8 bytes (rows r and r + 8 of its chunk's group gl) with the tile's
// words into its own 8 bytes of the slot (a slot holds 1 KiB of words and 256 bytes of pairs),
// and its epilogue reads them there: no per-CTA tables in the prologue. Why: probe level nosb
// (constant tables, their loads gone) ran a turbo4 32K decode step 0.231 ms faster on the H200
// (session 44): the tables' DRAM round trip, behind the whole GPU's first ring copies, held every
// CTA's prologue barrier. Same pairs, same arithmetic: bit-identical to RT off.
// XSF (MLXCEL_QMV_XSUM_STAGE): the per-group (D, E) below are formed while x is staged (EARLY's
// 16-byte paths, store_post8) instead of in a second pass over x after the prologue's barrier;
// the pass stays for the other paths. Why: probe level noxsum (the sums zeroed) ran the turbo4
// 32K step's kernels 0.072 ms faster in situ (session 44). Same sums in the same order, the same
// chunks in shared memory: bit-identical to XSF off.
template <int G, int NW, int S, int MATS, bool EARLY, bool TILED, bool OWN, bool RT, bool XSF, typename Stage,
          typename Gate = NoGate>
__device__ __forceinline__ void ring_rows16_post(const QMat (&mats)[MATS], const Stage& stage, unsigned char* smem,
                                                 int K, long long row0, int tid, int warp, int lane,
                                                 float (&acc)[MATS][4], const Gate& gate = Gate{}) {
  static_assert(G == 32 || G == 64 || G == 128, "a 32-value step must lie in one group");
  static_assert(!RT || (OWN && TILED), "tables in the ring: POST's OWN loop over tiled words");
  constexpr int SS = S > 1 ? S : 2;
  constexpr int NG = 128 / G;  // groups per tile
  constexpr int CPG = G / 8;   // 16-byte chunks of x per group
  constexpr int SLOT = RT ? 80 : 64;  // 16-byte chunks per ring slot: 1 KiB of words (and 32 lanes' 8 bytes of pairs)
  // Per group (D, E): the sum of x and the offsets' share (K / G <= 20480 / G: MAX_K in
  // quantized_gemv.rs).
  __shared__ float2 xsum[20480 / G];
  const int r = lane >> 2, c = lane & 3;
  const int words = K / 8, kg = K / G, sbs = sb_stride(kg);
  const int tiles = K / 128;
  const int tw = (tiles - warp + NW - 1) / NW;
  const int jobs = MATS * tw;
  __half2* xs = reinterpret_cast<__half2*>(smem);
  __half2* sb = xs + K / 2;
  uint4* ring = reinterpret_cast<uint4*>(sb + (RT ? 0 : MATS * 16 * sbs)) + warp * SS * SLOT;
  const int put = OWN ? lane : r * 4 + ((c + (r >> 1)) & 3);
  // A tile's words: 16 of each of 16 rows in MLX's layout (the next tile 16 words on, row
  // r + 8 at 8 rows' words), 256 contiguous in the tiled one (row block b's tile t at
  // (b * tiles + t) * 256, row r + 8 at 128).
  const long long lane_off =
      TILED ? (row0 / 16) * tiles * 256 + lane * 4 + warp * 256 : (row0 + r) * words + c * 4 + warp * 16;
  const u32* src = mats[0].w + lane_off;
  // RT: this lane's pairs of the warp's first tile (u32 offsets in the tiled tables): rows r and
  // r + 8 of its chunk's group (c NG) / 4 (gl below).
  const long long tab_off = RT ? ((row0 / 16) * tiles + warp) * 16 * NG + ((c * NG) / 4 * 8 + r) * 2 : 0;
  const u32* tsrc = reinterpret_cast<const u32*>(mats[0].s) + tab_off;
  // left (the first matrix's copies still to issue) is derivable from issued, but testing
  // `issued == tw` instead took NVRTC 2 more instructions per tile (139 -> 141, gate/up).
  int issued = 0, left = tw, fill = 0;
  auto issue = [&]() {
    if (issued < jobs) {
      uint4* dst = ring + fill * SLOT;
      ring_copy16(dst + put, src);
      ring_copy16(dst + 32 + put, src + (TILED ? 128LL : 8LL * words));
      if constexpr (RT) {
        ring_copy8(reinterpret_cast<uint2*>(dst + 64) + lane, tsrc);
        tsrc += NW * 16 * NG;
      }
      ++issued;
      src += NW * (TILED ? 256 : 16);
      if (MATS > 1 && --left == 0) {  // the second matrix's first tile
        src = mats[MATS - 1].w + lane_off;
        if constexpr (RT) tsrc = reinterpret_cast<const u32*>(mats[MATS - 1].s) + tab_off;
      }
    }
    ring_commit();
    fill = fill + 1 == SS ? 0 : fill + 1;
  };
  // OWN: 64 zero bytes at 32 mod 128 (banks 8-11 + 4 s at step s, none of which the matching
  // lanes' chunks at 64 c + 16 s take), published by the prologue's barrier.
  __shared__ __align__(128) uint4 xzero[OWN ? 6 : 1];
  if constexpr (OWN) {
    if (tid < 4) xzero[2 + tid] = make_uint4(0u, 0u, 0u, 0u);
  }
  if constexpr (NOXSUM) {
    // The probe's zero x sums (level noxsum), published by the prologue's barrier.
    for (int i = tid; i < kg; i += NW * 32) xsum[i] = make_float2(0.0f, 0.0f);
  }
  // XSF: the staging forms (D, E) where it can (its 16-byte paths), else the pass below does.
  constexpr int XCPG = XSF && !NOTABLES && !NOXSUM ? CPG : 0;
  const bool summed = ring_prologue<NW, SS, MATS, EARLY, !RT, XCPG>(mats, stage, xs, sb, K, row0, kg, sbs, tid,
                                                                    [&](int) { issue(); }, gate, xsum);
  // (D, E) of this warp's groups: lanes 0-15 take the 16 chunks of one tile, lanes 16-31 the
  // next tile's; each sums its chunk's even and odd values in fp32 (a chunk in pair order holds
  // (x0, x4), (x1, x5), (x2, x6), (x3, x7)), then the CPG lanes of a group add theirs. Each
  // chunk is also rewritten as (x0, x4), (x2, x6), (x1, x5), (x3, x7), so that the even and
  // the odd mma each take their B operand as two adjacent registers of one 16-byte load (NVRTC
  // otherwise moves 6 registers per tile into place). Only this warp reads its tiles' chunks.
  for (int i0 = 0; i0 < (NOTABLES || NOXSUM || summed ? 0 : tw); i0 += 2) {
    const int i = i0 + (lane >> 4), q = lane & 15;
    float ev = 0.0f, od = 0.0f;
    if (i < tw) {
      uint4* chp = reinterpret_cast<uint4*>(xs) + (warp + NW * i) * 16 + q;
      const uint4 ch = *chp;
      *chp = make_uint4(ch.x, ch.z, ch.y, ch.w);
      const __half2* h = reinterpret_cast<const __half2*>(&ch);
      const float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
      const float2 f2 = __half22float2(h[2]), f3 = __half22float2(h[3]);
      ev = (f0.x + f0.y) + (f2.x + f2.y);
      od = (f1.x + f1.y) + (f3.x + f3.y);
    }
#pragma unroll
    for (int o = 1; o < CPG; o <<= 1) {
      ev += __shfl_xor_sync(0xffffffffu, ev, o);
      od += __shfl_xor_sync(0xffffffffu, od, o);
    }
    if (i < tw && q % CPG == 0) xsum[(warp + NW * i) * NG + q / CPG] = make_float2(ev + od, fmaf(1024.0f, ev, 64.0f * od));
  }
  __syncwarp();
  // Word c of chunk s of row r (and of row r + 8, 128 words further) in a slot, as u32 offsets.
  int at[4];
#pragma unroll
  for (int s = 0; s < 4; ++s) at[s] = (r * 4 + ((s + (r >> 1)) & 3)) * 4 + c;
  int slot = 0;
  // This lane's x word of step 0: chunk c of the tile (word 4 s + c at step s); with OWN chunk 4 c
  // (word 4 c + s at step s) where its group is column r's, else the zeros (stride 0).
  const bool xmatch = !OWN || (c * NG) / 4 == (r * NG) / 8;
  const uint4* xw = xmatch ? reinterpret_cast<const uint4*>(xs) + warp * 16 + (OWN ? 4 * c : c) : xzero + 2;
  const int xstride = xmatch ? NW * 16 : 0;
  const int gl = OWN ? (c * NG) / 4 : 0;  // OWN: the group of this lane's chunk
#pragma unroll
  for (int m = 0; m < MATS; ++m) {
    const __half2* sbr = sb + m * 16 * sbs + r * sbs + warp * NG;
    const float2* dg = xsum + warp * NG;
    const uint4* xt = xw;
    for (int i = 0; i < tw; ++i) {
      if constexpr (!OWN) __syncwarp();  // every lane is done with the slot the refill reuses
      issue();
      ring_wait<SS - 1>();
      if constexpr (!OWN) __syncwarp();  // every lane's copies of this tile have landed
      const u32* sl = reinterpret_cast<const u32*>(ring + slot * SLOT);
      slot = slot + 1 == SS ? 0 : slot + 1;
      u32 w0[4], w1[4];
      if constexpr (OWN) {
        const uint4 q0 = reinterpret_cast<const uint4*>(sl)[lane], q1 = reinterpret_cast<const uint4*>(sl)[32 + lane];
        w0[0] = q0.x, w0[1] = q0.y, w0[2] = q0.z, w0[3] = q0.w;
        w1[0] = q1.x, w1[1] = q1.y, w1[2] = q1.z, w1[3] = q1.w;
      } else {
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          w0[s] = sl[at[s]];
          w1[s] = sl[128 + at[s]];
        }
      }
      if constexpr (NOMATH) {
        // MLXCEL_QMV_NOMATH_PROBE (quantized_gemv.rs's run): a measuring probe that keeps the
        // copies, the waits and the slot's reads but drops the tile's arithmetic (the decode, the
        // mma, x's and the tables' shared loads, the per-group epilogue): one add of the words'
        // parity keeps the reads alive. Wrong outputs on purpose: it times the copy pattern.
        u32 f = 0u;
#pragma unroll
        for (int s = 0; s < 4; ++s) f ^= w0[s] ^ w1[s];
        acc[m][0] += static_cast<float>(f & 1u);
      } else {
        // Per epilogue (one per group, or with OWN one per tile for the lane's group gl): the
        // steps' mma into lo / hi, then s (C_lo + C_hi / 16 - E) + b D into the rows' sums.
        constexpr int EPI = OWN ? 1 : NG;   // epilogues per tile
        constexpr int STEPS = 4 / EPI;      // 32-value steps per epilogue
#pragma unroll
        for (int gi = 0; gi < EPI; ++gi) {
          float lo[4] = {0.0f, 0.0f, 0.0f, 0.0f}, hi[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
          for (int q = 0; q < STEPS; ++q) {
            const int s = gi * STEPS + q;
            // Word 4 s + c of the tile (with OWN word 4 c + s, or zeros): (x0, x4), (x2, x6), (x1, x5), (x3, x7).
            const uint4 xx = xt[OWN ? s : 4 * s];
            const u32 u0 = w0[s] >> 8, u1 = w1[s] >> 8;
            // Even nibbles (0, 4 | 2, 6) against x's first two pairs, odd ones (1, 5 | 3, 7) against the last two.
            mlxcel_mma::mma(lo, code_pair<0x000F000Fu>(w0[s]), code_pair<0x000F000Fu>(w1[s]), code_pair<0x000F000Fu>(u0),
                            code_pair<0x000F000Fu>(u1), xx.x, xx.y);
            mlxcel_mma::mma(hi, code_pair<0x00F000F0u>(w0[s]), code_pair<0x00F000F0u>(w1[s]), code_pair<0x00F000F0u>(u0),
                            code_pair<0x00F000F0u>(u1), xx.z, xx.w);
          }
          const int g = OWN ? gl : gi;
          const float2 de = dg[g];
          float2 p0, p1;
          if constexpr (RT) {
            const uint2 pp = reinterpret_cast<const uint2*>(sl + 256)[lane];  // this lane's copy: rows r, r + 8
            p0 = __half22float2(*reinterpret_cast<const __half2*>(&pp.x));
            p1 = __half22float2(*reinterpret_cast<const __half2*>(&pp.y));
          } else {
            p0 = __half22float2(sbr[g]);
            p1 = __half22float2(sbr[8 * sbs + g]);
          }
          acc[m][0] = fmaf(p0.y, de.x, fmaf(p0.x, fmaf(hi[0], 0.0625f, lo[0]) - de.y, acc[m][0]));
          acc[m][2] = fmaf(p1.y, de.x, fmaf(p1.x, fmaf(hi[2], 0.0625f, lo[2]) - de.y, acc[m][2]));
        }
      }
      xt += xstride;
      sbr += NW * NG;
      dg += NW * NG;
    }
  }
  if constexpr (OWN && NG > 1) {
    // A row's groups sit in lanes c of different groups (c, c ^ 2 at NG = 2; all four at NG =
    // 4): their sum into every lane (reduce_rows reads lanes c = 0).
#pragma unroll
    for (int m = 0; m < MATS; ++m) {
#pragma unroll
      for (int o = 4 / NG; o < 4; o <<= 1) {
        acc[m][0] += __shfl_xor_sync(0xffffffffu, acc[m][0], o);
        acc[m][2] += __shfl_xor_sync(0xffffffffu, acc[m][2], o);
      }
    }
  }
  if constexpr (NOTABLES) {
    // The level in the outputs (rows r + 8: PROBE_LEVEL - 1, one value per level), so that the
    // probe's test can tell its builds apart.
#pragma unroll
    for (int m = 0; m < MATS; ++m) acc[m][2] += static_cast<float>(PROBE_LEVEL - 1);
  }
}

// The ring schedule with CTAs that own several 16-row blocks (blockIdx.x, blockIdx.x +
// gridDim.x, ... below nblocks), for grids capped near the number of CTAs the GPU holds at
// once. Why: with one block per CTA, the layer GEMVs (1-3.4 waves of CTAs) streamed at ~50%
// of copy while the LM head (8016 CTAs) reached 88% (session 9): each CTA's prologue (x and
// scale staging, a barrier) and its drain are exposed when there are few waves. Here x is
// staged once per CTA and the ring's job sequence runs on across blocks (block, matrix,
// tile), so copies for block i + 1 are in flight while block i finishes. Per block: the
// warps' partial sums go to red (double-buffered by block parity, [2][NW][MATS][16]), the
// next block's (scale, bias) table is staged into the other half of sb (two tables of
// MATS * 16 * sb_stride pairs), one barrier, then threads tid < 16 sum the partials (in
// the order reduce_rows uses: bit-identical results) and call out(row, sums[MATS]).
// Its issue and per-tile steps repeat ring_rows16's on purpose: factoring them into shared
// helpers changed the registers of both kernels under NVRTC (46/53 -> 48/48 for ring_rows16,
// the schedule measured in session 9; 61 -> 71 here), so the measured code stays as it is.
template <int G, int NW, int S, int MATS, typename Out>
__device__ __forceinline__ void ring_blocks(const QMat (&mats)[MATS], const __half* x, unsigned char* smem, int K,
                                            int nblocks, int tid, int warp, int lane, float* red, Out out) {
  constexpr int NT = NW * 32;
  constexpr int SS = S > 1 ? S : 2;
  const int r = lane >> 2, c = lane & 3;
  const int words = K / 8, kg = K / G, sbs = sb_stride(kg);
  const int tiles = K / 128;
  const int tw = (tiles - warp + NW - 1) / NW;
  const int per_block = MATS * tw;
  const int first = blockIdx.x, step = gridDim.x;
  const int nb = nblocks > first ? (nblocks - first + step - 1) / step : 0;
  const int jobs = nb * per_block;
  __half2* xs = reinterpret_cast<__half2*>(smem);
  __half2* sb = xs + K / 2;
  const int table = MATS * 16 * sbs;
  uint4* ring = reinterpret_cast<uint4*>(sb + 2 * table) + warp * SS * 64;
  auto issue = [&](int j) {
    if (j < jobs) {
      const int i = j / per_block, jj = j - i * per_block;
      const int m = MATS == 1 ? 0 : jj / tw;
      const int t = warp + NW * (jj - m * tw);
      const long long row = static_cast<long long>(first + i * step) * 16 + r;
      const u32* src = (m == 0 ? mats[0].w : mats[MATS - 1].w) + row * words + c * 4 + t * 16;
      uint4* dst = ring + (j % SS) * 64;
      ring_copy16(dst + lane, src);
      ring_copy16(dst + 32 + lane, src + 8LL * words);
    }
    ring_commit();
  };
#pragma unroll
  for (int j = 0; j < SS - 1; ++j) issue(j);
  stage_x_vec(x, xs, K, tid, NT);
  if (nb > 0) {
#pragma unroll
    for (int m = 0; m < MATS; ++m)
      stage_sb(mats[m].s, mats[m].b, static_cast<long long>(first) * 16, kg, sb + m * 16 * sbs, tid, NT);
  }
  __syncthreads();
  int j = 0;
  for (int i = 0; i < nb; ++i) {
    const __half2* sbi = sb + (i & 1) * table;
    float acc[MATS][4];
#pragma unroll
    for (int m = 0; m < MATS; ++m) acc[m][0] = acc[m][1] = acc[m][2] = acc[m][3] = 0.0f;
#pragma unroll
    for (int m = 0; m < MATS; ++m) {
      const __half2* sbm = sbi + m * 16 * sbs;
      for (int ii = 0; ii < tw; ++ii, ++j) {
        issue(j + SS - 1);
        ring_wait<SS - 1>();
        const uint4* slot = ring + (j % SS) * 64;
        const uint4 q0 = slot[lane], q1 = slot[32 + lane];
        const int t = warp + NW * ii;
        const int g = (t * 128 + c * 32) / G;
        const __half2 p0 = sbm[r * sbs + g], p1 = sbm[(r + 8) * sbs + g];
        tile_mma(q0, q1, __low2half2(p0), __high2half2(p0), __low2half2(p1), __high2half2(p1),
                 xs + (t * 128 + c * 32) / 2, acc[m]);
      }
    }
    float* rd = red + (i & 1) * NW * MATS * 16;
    if (c == 0) {
#pragma unroll
      for (int m = 0; m < MATS; ++m) {
        rd[(warp * MATS + m) * 16 + r] = acc[m][0];
        rd[(warp * MATS + m) * 16 + r + 8] = acc[m][2];
      }
    }
    if (i + 1 < nb) {
      const long long next0 = static_cast<long long>(first + (i + 1) * step) * 16;
#pragma unroll
      for (int m = 0; m < MATS; ++m)
        stage_sb(mats[m].s, mats[m].b, next0, kg, sb + ((i + 1) & 1) * table + m * 16 * sbs, tid, NT);
    }
    __syncthreads();
    if (tid < 16) {
      float v[MATS];
#pragma unroll
      for (int m = 0; m < MATS; ++m) {
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < NW; ++w) s += rd[(w * MATS + m) * 16 + tid];
        v[m] = s;
      }
      out(static_cast<long long>(first + i * step) * 16 + tid, v);
    }
  }
}

// Sums the per-warp row sums of ROWT row tiles through shared memory: returns, for threads
// tid < 16 * ROWT, the total of row (tid / 16) * 16 + tid % 16 of the CTA's tiles.
template <int NW, int ROWT>
__device__ __forceinline__ float reduce_rows(float (&acc)[ROWT][4], float* red, int warp, int lane, int tid) {
  const int r = lane >> 2, c = lane & 3;
  if (c == 0) {
#pragma unroll
    for (int rt = 0; rt < ROWT; ++rt) {
      red[(warp * ROWT + rt) * 16 + r] = acc[rt][0];
      red[(warp * ROWT + rt) * 16 + r + 8] = acc[rt][2];
    }
  }
  __syncthreads();
  float s = 0.0f;
  if (tid < 16 * ROWT) {
#pragma unroll
    for (int w = 0; w < NW; ++w) s += red[w * ROWT * 16 + tid];
  }
  return s;
}

}  // namespace mlxcel_qmv
