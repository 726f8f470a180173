// Helpers of the fused decode-attention kernels (decode_attention.cu, merge_splits.cu).
// Prepended to the kernel by MLX's cuda_kernel (the "header").
//
// Storage formats (template constants KFMT / VFMT):
//   0 = fp16 rows of D halves
//   1 = int8 rows of D bytes, one fp16 scale per row (aux)
//   2, 3, 4 = turbo: packed Lloyd-Max indices, one fp16 corrected norm per GROUP values (aux)
//     4-bit: byte j holds elements 2j (low nibble), 2j+1 (high nibble)
//     3-bit: D/4 bytes of 2-bit fields (element 4j+i at bits 2i) then D/8 bytes of 1-bit
//            fields (element 8j+i at bit i); index = low | high << 2
//     2-bit: byte j holds elements 4j..4j+3 at bits 2i
#include <cuda_fp16.h>

namespace mlxcel_fd {

// -inf without relying on math.h macros (NVRTC has none by default).
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

template <int FMT>
__device__ __forceinline__ int row_bytes(int d) {
  if constexpr (FMT == 0) return 2 * d;
  else if constexpr (FMT == 1) return d;
  else return d * FMT / 8;
}

// Loads the 8 values of elements [e, e + 8) of one stored row into v (before the per-row
// factor: norm or scale). lut is the codebook in shared memory.
template <int FMT>
__device__ __forceinline__ void load8(const unsigned char* row, int e, int d, const float* lut, float v[8]) {
  if constexpr (FMT == 0) {
    const uint4 w = *reinterpret_cast<const uint4*>(row + 2 * e);
    const __half2* h = reinterpret_cast<const __half2*>(&w);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f = __half22float2(h[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
    }
  } else if constexpr (FMT == 1) {
    const uint2 w = *reinterpret_cast<const uint2*>(row + e);
    const signed char* b = reinterpret_cast<const signed char*>(&w);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = static_cast<float>(b[i]);
  } else if constexpr (FMT == 4) {
    const unsigned int w = *reinterpret_cast<const unsigned int*>(row + e / 2);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = lut[(w >> (4 * i)) & 0xF];
  } else if constexpr (FMT == 2) {
    const unsigned int w = *reinterpret_cast<const unsigned short*>(row + e / 4);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = lut[(w >> (2 * i)) & 0x3];
  } else {  // 3-bit
    const unsigned int lo = *reinterpret_cast<const unsigned short*>(row + e / 4);
    const unsigned int hi = row[d / 4 + e / 8];
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = lut[((lo >> (2 * i)) & 0x3) | (((hi >> i) & 0x1) << 2)];
  }
}

// Raw bytes of elements [e, e + 16) of one row, loaded with as few wide loads as possible.
struct Raw16 {
  uint4 a;
  uint4 b;
};

template <int FMT>
__device__ __forceinline__ Raw16 load_raw16(const unsigned char* row, int e, int d) {
  Raw16 r;
  if constexpr (FMT == 0) {
    r.a = *reinterpret_cast<const uint4*>(row + 2 * e);
    r.b = *reinterpret_cast<const uint4*>(row + 2 * e + 16);
  } else if constexpr (FMT == 1) {
    r.a = *reinterpret_cast<const uint4*>(row + e);
  } else if constexpr (FMT == 4) {
    const uint2 w = *reinterpret_cast<const uint2*>(row + e / 2);
    r.a.x = w.x;
    r.a.y = w.y;
  } else if constexpr (FMT == 2) {
    r.a.x = *reinterpret_cast<const unsigned int*>(row + e / 4);
  } else {
    r.a.x = *reinterpret_cast<const unsigned int*>(row + e / 4);
    r.a.y = *reinterpret_cast<const unsigned short*>(row + d / 4 + e / 8);
  }
  return r;
}

// The 16 values held by a Raw16 (before the per-row factor).
template <int FMT>
__device__ __forceinline__ void decode16(const Raw16& r, const float* lut, float v[16]) {
  if constexpr (FMT == 0) {
    const __half2* h = reinterpret_cast<const __half2*>(&r.a);
    const __half2* h2 = reinterpret_cast<const __half2*>(&r.b);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f = __half22float2(h[i]);
      v[2 * i] = f.x;
      v[2 * i + 1] = f.y;
      float2 g = __half22float2(h2[i]);
      v[8 + 2 * i] = g.x;
      v[8 + 2 * i + 1] = g.y;
    }
  } else if constexpr (FMT == 1) {
    const signed char* b = reinterpret_cast<const signed char*>(&r.a);
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(b[i]);
  } else if constexpr (FMT == 4) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      v[i] = lut[(r.a.x >> (4 * i)) & 0xF];
      v[8 + i] = lut[(r.a.y >> (4 * i)) & 0xF];
    }
  } else if constexpr (FMT == 2) {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = lut[(r.a.x >> (2 * i)) & 0x3];
  } else {
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = lut[((r.a.x >> (2 * i)) & 0x3) | (((r.a.y >> i) & 0x1) << 2)];
  }
}

// Byte tables for the turbo codebooks: one shared-memory load decodes a whole byte
// (2 values at 4 bits, 4 at 2 bits) instead of one load per value.
template <int FMT>
__device__ __forceinline__ void fill_byte_table(float4* tab, const float* lut, int tid, int nthreads) {
  for (int b = tid; b < 256; b += nthreads) {
    if constexpr (FMT == 4) {
      tab[b] = make_float4(lut[b & 0xF], lut[b >> 4], 0.0f, 0.0f);
    } else if constexpr (FMT == 2) {
      tab[b] = make_float4(lut[b & 3], lut[(b >> 2) & 3], lut[(b >> 4) & 3], lut[b >> 6]);
    }
  }
}

// decode16 using the byte tables where they apply (4-bit, 2-bit); other formats as decode16.
template <int FMT>
__device__ __forceinline__ void decode16_tab(const Raw16& r, const float4* tab, const float* lut, float v[16]) {
  if constexpr (FMT == 4) {
    const float2* t2 = reinterpret_cast<const float2*>(tab);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 a = t2[2 * ((r.a.x >> (8 * i)) & 0xFF)];
      const float2 b = t2[2 * ((r.a.y >> (8 * i)) & 0xFF)];
      v[2 * i] = a.x;
      v[2 * i + 1] = a.y;
      v[8 + 2 * i] = b.x;
      v[8 + 2 * i + 1] = b.y;
    }
  } else if constexpr (FMT == 2) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 a = tab[(r.a.x >> (8 * i)) & 0xFF];
      v[4 * i] = a.x;
      v[4 * i + 1] = a.y;
      v[4 * i + 2] = a.z;
      v[4 * i + 3] = a.w;
    }
  } else {
    decode16<FMT>(r, lut, v);
  }
}

// The per-row factor of element e: 1 (fp16), the row scale (int8) or the group norm (turbo).
template <int FMT>
__device__ __forceinline__ float row_factor(const __half* aux, long long row, int e, int naux, int group) {
  if constexpr (FMT == 0) return 1.0f;
  else if constexpr (FMT == 1) return __half2float(aux[row]);
  else return __half2float(aux[row * naux + e / group]);
}

// In-place orthonormal Walsh-Hadamard transform of n = 2^k values in shared memory, done by
// nthreads threads (any count); callers __syncthreads() before and after.
__device__ __forceinline__ void wht_shared(float* x, int n, int tid, int nthreads) {
  for (int h = 1; h < n; h <<= 1) {
    for (int i = tid; i < n / 2; i += nthreads) {
      const int blk = i / h, off = i % h;
      const int a = blk * 2 * h + off, b = a + h;
      const float xa = x[a], xb = x[b];
      x[a] = xa + xb;
      x[b] = xa - xb;
    }
    __syncthreads();
  }
}

// The inv_freq index of element e of lane `lane` in rope_warp (its frequency).
template <int QE, bool TRAD>
__device__ __forceinline__ int rope_index(int lane, int e) {
  return TRAD ? (lane * QE + e) / 2 : (lane * QE + e) % (16 * QE);
}
// RoPE of one head vector of D = 32 * QE values held by one warp (lane l owns elements
// [l * QE, (l + 1) * QE)), as MLX's rope computes it: theta = pos * inv_freq in f32, cos/sin of
// it. Halves (i, i + D/2): element j < D/2 sits in lane l < 16 and its partner in lane l ^ 16.
// Adjacent pairs (TRAD; QE even): both in one lane. Every lane of the warp must call it
// (shuffles). rope_warp_sc takes element e's sine and cosine from sc(e, s, c); the others are
// its sources:
// - rope_warp_by: sincosf(pos * freq(e)), freq(e) = inv_freq[rope_index(lane, e)] from memory
//   (rope_warp) or from registers loaded earlier (QFIRST in decode_attention_mma.cu);
// - rope_warp_table: the step's table of the same cos/sin (rope_table.cu; RTAB in
//   decode_attention_mma.cu). Why a table: past ~106K positions sincosf leaves its fast
//   reduction for the slow exact one on RoPE's highest frequencies (six dependent loads of a
//   2/pi table per angle; ~1.6 us of each 128K attention launch's prologue in ncu's source
//   counters, H200 session 46).
template <int QE, bool TRAD, typename SinCos>
__device__ __forceinline__ void rope_warp_sc(float (&x)[QE], int lane, const SinCos& sc) {
  if constexpr (TRAD) {
    static_assert(QE % 2 == 0, "adjacent-pair RoPE needs an even count per lane");
#pragma unroll
    for (int e = 0; e < QE; e += 2) {
      float s, c;
      sc(e, s, c);
      const float a = x[e], b = x[e + 1];
      x[e] = a * c - b * s;
      x[e + 1] = a * s + b * c;
    }
  } else {
#pragma unroll
    for (int e = 0; e < QE; ++e) {
      const float other = __shfl_xor_sync(0xffffffffu, x[e], 16);
      float s, c;
      sc(e, s, c);
      x[e] = lane < 16 ? x[e] * c - other * s : other * s + x[e] * c;
    }
  }
}
template <int QE, bool TRAD, typename Freq>
__device__ __forceinline__ void rope_warp_by(float (&x)[QE], int lane, float pos, const Freq& freq) {
  rope_warp_sc<QE, TRAD>(x, lane, [&](int e, float& s, float& c) { sincosf(pos * freq(e), &s, &c); });
}
template <int QE, bool TRAD>
__device__ __forceinline__ void rope_warp(float (&x)[QE], int lane, float pos, const float* inv_freq) {
  rope_warp_by<QE, TRAD>(x, lane, pos, [&](int e) { return inv_freq[rope_index<QE, TRAD>(lane, e)]; });
}
// cs: the step's table, (cos, sin) of frequency i at cs[2 i], cs[2 i + 1] (rope_table.cu).
template <int QE, bool TRAD>
__device__ __forceinline__ void rope_warp_table(float (&x)[QE], int lane, const float* cs) {
  rope_warp_sc<QE, TRAD>(x, lane, [&](int e, float& s, float& c) {
    const float2 t = reinterpret_cast<const float2*>(cs)[rope_index<QE, TRAD>(lane, e)];
    c = t.x;
    s = t.y;
  });
}

// Unnormalized Walsh-Hadamard transform of 32 * QE values held by one warp, lane l owning
// elements [l * QE, (l + 1) * QE): butterflies inside the lane, then across lanes by shuffles
// (no shared memory, no block barrier), stage by stage in the order of wht_shared (the same
// bits). With GROUP < 32 * QE, independent transforms of each GROUP consecutive elements
// (GROUP a power of two). Callers scale by 1/sqrt(GROUP).
template <int QE, int GROUP = 32 * QE>
__device__ __forceinline__ void wht_warp(float (&x)[QE], int lane) {
#pragma unroll
  for (int h = 1; h < QE && h < GROUP; h <<= 1) {
#pragma unroll
    for (int e = 0; e < QE; ++e) {
      if ((e & h) == 0) {
        const float a = x[e], b = x[e + h];
        x[e] = a + b;
        x[e + h] = a - b;
      }
    }
  }
#pragma unroll
  for (int lm = 1; lm < 32 && lm * QE < GROUP; lm <<= 1) {
#pragma unroll
    for (int e = 0; e < QE; ++e) {
      const float other = __shfl_xor_sync(0xffffffffu, x[e], lm);
      x[e] = (lane & lm) ? other - x[e] : x[e] + other;
    }
  }
}

// The randomized Hadamard rotation of one group of 32 * QE values held by one warp (lane l
// owning [l * QE, (l + 1) * QE)), as Rotation::forward computes it: R x = s2 * H(s1 * x) /
// sqrt(32 * QE), with signs = s1 then s2 (2 * 32 * QE f32). The multiply by s2 * 1/sqrt(n)
// is exact in either order (s2 is +-1).
template <int QE, typename Sign>
__device__ __forceinline__ void rotate_warp_by(float (&x)[QE], int lane, const Sign& sign) {
  constexpr int N = 32 * QE;
#pragma unroll
  for (int e = 0; e < QE; ++e) x[e] *= sign(0, e);
  wht_warp<QE>(x, lane);
  const float inv = rsqrtf(static_cast<float>(N));
#pragma unroll
  for (int e = 0; e < QE; ++e) x[e] *= sign(1, e) * inv;
}
// Sign k (0: s1, 1: s2) of lane `lane`'s element e: signs[k * 32 * QE + lane * QE + e];
// rotate_warp_by takes it as sign(k, e), from memory (rotate_warp) or from registers loaded
// earlier (QFIRST in decode_attention_mma.cu).
template <int QE>
__device__ __forceinline__ void rotate_warp(float (&x)[QE], int lane, const float* signs) {
  rotate_warp_by<QE>(x, lane, [&](int k, int e) { return signs[k * 32 * QE + lane * QE + e]; });
}

// ---- The split merge's arithmetic, shared by merge_splits_warp.cu and the tensor-core
// kernel's folded merge (FOLD in decode_attention_mma.cu), so that both give merge_splits.cu's
// bits: the same operations in the same order.

// Warps of merge_splits_warp.cu: split s is summed into part s % MERGE_P, then the parts are
// added in order.
constexpr int MERGE_P = 4;

// A split's softmax weight from its max m (natural-log units) and the maximum M over splits;
// an empty split (m = -inf) weighs 0 whatever its partial holds.
__device__ __forceinline__ float split_weight(float m, float M) { return m == neg_inf() ? 0.0f : __expf(m - M); }

// One warp's pass over the split statistics ml [S][2] (max, sum) of one (batch, head):
// returns (M, denominator), the denominator summed as merge_splits.cu's BLOCK_NT threads do
// (thread i sums splits i, i + BLOCK_NT, ...; then each warp's shuffle tree; then the warps
// in order), which lane l of chunk j reproduces as thread 32 j + l. keep(s, wt) sees every
// split's weight once. CG: loads through L2 only (statistics written by other CTAs of the
// same launch).
template <int BLOCK_NT, bool CG, typename Keep>
__device__ __forceinline__ float2 split_stats(const float* mlb, int S, int lane, Keep keep) {
  auto ld = [](const float* p) -> float {
    if constexpr (CG) return __ldcg(p);
    else return *p;
  };
  float M = neg_inf();
  for (int s = lane; s < S; s += 32) M = fmaxf(M, ld(mlb + 2 * s));
  for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  float den = 0.0f;
  for (int s0 = 0; s0 < S && s0 < BLOCK_NT; s0 += 32) {
    float dj = 0.0f;
    for (int s = s0 + lane; s < S; s += BLOCK_NT) {
      const float wt = split_weight(ld(mlb + 2 * s), M);
      dj = fmaf(wt, ld(mlb + 2 * s + 1), dj);
      keep(s, wt);
    }
    for (int o = 16; o > 0; o >>= 1) dj += __shfl_xor_sync(0xffffffffu, dj, o);
    den += dj;
  }
  return make_float2(M, den);
}

// The merged output of one head, lane l holding dims [l * QE, +QE): the MERGE_P parts summed
// in order and divided by the denominator, then (ROT_V) brought back from V's stored basis:
// x = s1 * H (s2 * y) / sqrt(GROUP_V) per rotation group, with s2(e) and s1(e) the signs of
// the lane's element e (rot_v = s1; s2).
template <int QE, int GROUP_V, bool ROT_V, typename S2, typename S1>
__device__ __forceinline__ void finish_merge_by(const float (&parts)[MERGE_P][QE], float den, int lane, float (&y)[QE],
                                                S2 s2, S1 s1) {
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    float t = 0.0f;
#pragma unroll
    for (int i = 0; i < MERGE_P; ++i) t += parts[i][e];
    y[e] = t / den;
  }
  if constexpr (ROT_V) {
#pragma unroll
    for (int e = 0; e < QE; ++e) y[e] *= s2(e);
    wht_warp<QE, GROUP_V>(y, lane);
#pragma unroll
    for (int e = 0; e < QE; ++e) y[e] = y[e] * s1(e) * rsqrtf(static_cast<float>(GROUP_V));
  }
}

// finish_merge_by with the signs read from rot_v where they are used: after the parts are
// summed (s2), and after the Walsh-Hadamard stages (s1).
template <int QE, int GROUP_V, bool ROT_V>
__device__ __forceinline__ void finish_merge(const float (&parts)[MERGE_P][QE], float den, const float* rot_v, int lane,
                                             float (&y)[QE]) {
  finish_merge_by<QE, GROUP_V, ROT_V>(
      parts, den, lane, y, [&](int e) { return rot_v[GROUP_V + (lane * QE + e) % GROUP_V]; },
      [&](int e) { return rot_v[(lane * QE + e) % GROUP_V]; });
}

// The signs of lane's dims that finish_merge reads from rot_v, loaded ahead (MLXCEL_MERGE_SIGNS_FIRST).
// Why: read where they are used, they are two more dependent global round trips after the
// merge's one round trip for the partials (SASS of the fold's tail, NVRTC sm_90, session 70:
// the loads of s2 follow the split weights' shuffles, those of s1 the Walsh-Hadamard
// shuffles), on the critical path of the last CTA (the fold) or of the merge launch.
template <int QE>
struct MergeSigns {
  float s1[QE];
  float s2[QE];
};

template <int QE, int GROUP_V>
__device__ __forceinline__ MergeSigns<QE> merge_signs(const float* rot_v, int lane) {
  MergeSigns<QE> sg;
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    sg.s2[e] = rot_v[GROUP_V + (lane * QE + e) % GROUP_V];
    sg.s1[e] = rot_v[(lane * QE + e) % GROUP_V];
  }
  return sg;
}

// finish_merge with the signs merge_signs loaded: the same values in the same operations.
template <int QE, int GROUP_V, bool ROT_V>
__device__ __forceinline__ void finish_merge_signed(const float (&parts)[MERGE_P][QE], float den,
                                                    const MergeSigns<QE>& sg, int lane, float (&y)[QE]) {
  finish_merge_by<QE, GROUP_V, ROT_V>(
      parts, den, lane, y, [&](int e) { return sg.s2[e]; }, [&](int e) { return sg.s1[e]; });
}

}  // namespace mlxcel_fd
