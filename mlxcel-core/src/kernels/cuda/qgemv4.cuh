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

// (n_i, n_{i+4}) of word w as an exact fp16 pair, i = 0..3 (shift = 4i).
__device__ __forceinline__ __half2 nibble_pair(u32 w, int shift) {
  u32 v;
  const u32 mask = 0x000F000Fu, magic = 0x64006400u;  // fp16 1024 + n
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(v) : "r"(w >> shift), "r"(mask), "r"(magic));
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

// Accumulates rows [row0, row0 + 16) of W over the tiles of this warp (tile t covers
// k in [128 t, 128 t + 128)) into acc (C fragment: acc[0] row r, acc[2] row r + 8).
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
      const u32 a[4] = {q0[u].x, q0[u].y, q0[u].z, q0[u].w};
      const u32 b[4] = {q1[u].x, q1[u].y, q1[u].z, q1[u].w};
      const uint4* xv = reinterpret_cast<const uint4*>(xs + (t * 128 + c * 32) / 2);
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const uint4 xx = xv[m];  // pairs 0..3 of this lane's word m
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const u32 a0 = as_u32(__hfma2(nibble_pair(a[m], 8 * h), sc0[u], bi0[u]));
          const u32 a2 = as_u32(__hfma2(nibble_pair(a[m], 8 * h + 4), sc0[u], bi0[u]));
          const u32 a1 = as_u32(__hfma2(nibble_pair(b[m], 8 * h), sc1[u], bi1[u]));
          const u32 a3 = as_u32(__hfma2(nibble_pair(b[m], 8 * h + 4), sc1[u], bi1[u]));
          const u32 bx0 = h == 0 ? xx.x : xx.z;
          const u32 bx1 = h == 0 ? xx.y : xx.w;
          mlxcel_mma::mma(acc, a0, a1, a2, a3, bx0, bx1);
        }
      }
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
