// Fused decode attention (one query position) over a packed KV cache, flash-decoding
// style: one CTA of 128 threads per (batch, KV head, split of the sequence) serves all GQA
// query heads of that KV head, so every K/V element is loaded and dequantized once.
// Writes unnormalized partial outputs and (max, sum) per split; merge_splits.cu combines
// them with a log-sum-exp merge and applies the inverse V rotation.
//
// Template constants (set by mlxcel): KFMT, VFMT (see decode_attention.cuh), D (head dim),
// GQA (query heads per KV head), GROUP_K (rotation group of K), ROT_Q (rotate q by K's
// randomized Hadamard in the prologue). Inputs: q [B, Hq, D] f32; k_data/v_data the full
// cache buffers [B, Hkv, cap, row bytes]; k_aux/v_aux [B, Hkv, cap, n] fp16 norms/scales;
// lut_k/lut_v [16] f32 codebooks; rot_k [2, GROUP_K] f32 signs (s1; s2);
// params [len, cap, n_aux_k, n_aux_v, group_v] int32; scale [1] f32.
constexpr int NT = 128;
constexpr int KL = D / 16;     // K phase: lanes per token, 16 elements each
constexpr int KTOK = NT / KL;  // K phase: tokens per pass
constexpr int VL = D / 8;      // V phase: lanes per token, 8 elements each
constexpr int VTOK = NT / VL;  // V phase: token lanes
constexpr int TILE = 64;

__shared__ float qs[GQA][D];
__shared__ float lutk[16];
__shared__ float lutv[16];
__shared__ float ps[GQA][TILE];
__shared__ float mst[GQA];
__shared__ float lst[GQA];
__shared__ float corr[GQA];
__shared__ float red[VTOK * GQA * VL * 8];

const int tid = threadIdx.x;
const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
const int S = gridDim.x, Hkv = gridDim.y, Hq = Hkv * GQA;
const int len = params[0], cap = params[1], naux_k = params[2], naux_v = params[3], group_v = params[4];
const float sc = scale[0];
const int per = (len + S - 1) / S;
const int t0 = split * per;
const int t1 = min(len, t0 + per);

for (int i = tid; i < GQA * D; i += NT) {
  qs[i / D][i % D] = q[(static_cast<long long>(b) * Hq + kvh * GQA + i / D) * D + i % D];
}
if (tid < 16) {
  lutk[tid] = lut_k[tid];
  lutv[tid] = lut_v[tid];
}
if (tid < GQA) {
  mst[tid] = mlxcel_fd::neg_inf();
  lst[tid] = 0.0f;
}
__syncthreads();
if constexpr (ROT_Q) {
  const float inv = rsqrtf(static_cast<float>(GROUP_K));
  for (int g = 0; g < GQA; ++g) {
    for (int grp = 0; grp < D / GROUP_K; ++grp) {
      float* x = &qs[g][grp * GROUP_K];
      for (int i = tid; i < GROUP_K; i += NT) x[i] *= rot_k[i];
      __syncthreads();
      mlxcel_fd::wht_shared(x, GROUP_K, tid, NT);
      for (int i = tid; i < GROUP_K; i += NT) x[i] *= rot_k[GROUP_K + i] * inv;
      __syncthreads();
    }
  }
}

const int klane = tid % KL, ktok = tid / KL, ke = klane * 16;
const int vlane = tid % VL, vtok = tid / VL, ve = vlane * 8;
float qr[GQA][16];
#pragma unroll
for (int g = 0; g < GQA; ++g) {
#pragma unroll
  for (int i = 0; i < 16; ++i) qr[g][i] = qs[g][ke + i];
}
float acc[GQA][8];
#pragma unroll
for (int g = 0; g < GQA; ++g) {
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[g][i] = 0.0f;
}

const int rk = mlxcel_fd::row_bytes<KFMT>(D);
const int rv = mlxcel_fd::row_bytes<VFMT>(D);
const long long base_row = (static_cast<long long>(b) * Hkv + kvh) * cap;
const unsigned char* kb = reinterpret_cast<const unsigned char*>(k_data) + base_row * rk;
const unsigned char* vb = reinterpret_cast<const unsigned char*>(v_data) + base_row * rv;
const __half* ka = reinterpret_cast<const __half*>(k_aux);
const __half* va = reinterpret_cast<const __half*>(v_aux);
const int warp = tid / 32, lane = tid % 32;

for (int tile = t0; tile < t1; tile += TILE) {
  const int n = min(TILE, t1 - tile);
  // Scores: KL lanes per token, reduced with shuffles inside the lane group.
  for (int j0 = 0; j0 < n; j0 += KTOK) {
    const int j = j0 + ktok;
    const bool live = j < n;
    float part[GQA];
#pragma unroll
    for (int g = 0; g < GQA; ++g) part[g] = 0.0f;
    if (live) {
      const int t = tile + j;
      const unsigned char* row = kb + static_cast<long long>(t) * rk;
      float kv[16];
      mlxcel_fd::load8<KFMT>(row, ke, D, lutk, kv);
      mlxcel_fd::load8<KFMT>(row, ke + 8, D, lutk, kv + 8);
      const float f = mlxcel_fd::row_factor<KFMT>(ka, base_row + t, ke, naux_k, GROUP_K);
#pragma unroll
      for (int g = 0; g < GQA; ++g) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 16; ++i) s = fmaf(qr[g][i], kv[i], s);
        part[g] = s * f;
      }
    }
#pragma unroll
    for (int off = KL / 2; off > 0; off >>= 1) {
#pragma unroll
      for (int g = 0; g < GQA; ++g) part[g] += __shfl_xor_sync(0xffffffffu, part[g], off);
    }
    if (live && klane == 0) {
#pragma unroll
      for (int g = 0; g < GQA; ++g) ps[g][j] = part[g] * sc;
    }
  }
  __syncthreads();
  // Online softmax update, one warp per head.
  for (int g = warp; g < GQA; g += NT / 32) {
    float m = mlxcel_fd::neg_inf();
    for (int j = lane; j < n; j += 32) m = fmaxf(m, ps[g][j]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    const float m_old = mst[g];
    const float m_new = fmaxf(m_old, m);
    float l = 0.0f;
    for (int j = lane; j < n; j += 32) {
      const float p = __expf(ps[g][j] - m_new);
      ps[g][j] = p;
      l += p;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    if (lane == 0) {
      const float c = __expf(m_old - m_new);
      corr[g] = c;
      lst[g] = lst[g] * c + l;
      mst[g] = m_new;
    }
  }
  __syncthreads();
  // Values: VL lanes per token, the per-row factor folded into the weight.
#pragma unroll
  for (int g = 0; g < GQA; ++g) {
    const float c = corr[g];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[g][i] *= c;
  }
  for (int j = vtok; j < n; j += VTOK) {
    const int t = tile + j;
    float vv[8];
    mlxcel_fd::load8<VFMT>(vb + static_cast<long long>(t) * rv, ve, D, lutv, vv);
    const float f = mlxcel_fd::row_factor<VFMT>(va, base_row + t, ve, naux_v, group_v);
#pragma unroll
    for (int g = 0; g < GQA; ++g) {
      const float w = ps[g][j] * f;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[g][i] = fmaf(w, vv[i], acc[g][i]);
    }
  }
  __syncthreads();
}

// Sum the token lanes and write this split's partial output.
#pragma unroll
for (int g = 0; g < GQA; ++g) {
#pragma unroll
  for (int i = 0; i < 8; ++i) red[(vtok * GQA + g) * D + ve + i] = acc[g][i];
}
__syncthreads();
for (int idx = tid; idx < GQA * D; idx += NT) {
  const int g = idx / D, d = idx % D;
  float s = 0.0f;
  for (int r = 0; r < VTOK; ++r) s += red[(r * GQA + g) * D + d];
  o_part[((static_cast<long long>(b) * Hq + kvh * GQA + g) * S + split) * D + d] = s;
}
if (tid < GQA) {
  const long long o = ((static_cast<long long>(b) * Hq + kvh * GQA + tid) * S + split) * 2;
  ml[o] = mst[tid];
  ml[o + 1] = lst[tid];
}
