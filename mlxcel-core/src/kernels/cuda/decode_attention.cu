// Fused decode attention (one query position) over a packed KV cache, flash-decoding
// style. One CTA of 4 warps per (batch, KV head, split of the sequence) serves all GQA
// query heads of that KV head, so every K/V element is loaded and dequantized once.
// Each warp streams its own tokens with its own online softmax (no block barrier inside the
// loop); D/16 lanes share a token, each lane owning 16 coordinates of K and of V, so the
// softmax weight of a token never leaves the lanes that use it. The next token's raw bytes
// are loaded before the current one is computed. The 4 warp states are merged at the end;
// merge_splits.cu combines the splits (log-sum-exp) and applies the inverse V rotation.
//
// Template constants (set by mlxcel): KFMT, VFMT (see decode_attention.cuh), D (head dim),
// GQA (query heads per KV head), GROUP_K (rotation group of K), ROT_Q (rotate q by K's
// randomized Hadamard in the prologue). Inputs: q [B, Hq, D] f32; k_data/v_data the full
// cache buffers [B, Hkv, cap, row bytes]; k_aux/v_aux [B, Hkv, cap, n] fp16 norms/scales;
// lut_k/lut_v [16] f32 codebooks; rot_k [2, GROUP_K] f32 signs (s1; s2); len_marker [len] u8 (only its shape is read: the cached length); k_dep, v_dep: unused, they order this launch after in-place appends
// (4 bytes: MLX serves it from its small pool, so no per-call page migration). The
// capacity and aux widths come from the buffers' shapes; GROUP_V is a template constant;
// the softmax scale is 1/sqrt(D).
// Version 3: q lives in registers and 4-/2-bit codes are decoded a byte at a time from
// shared tables (ncu on v2 showed shared-memory/L1 traffic, not DRAM, as the limit:
// Memory Throughput 87% with DRAM 19%). Versions 1 and 2 are kept in benchmarks/kernel-notes.
constexpr int NT = 128;
constexpr int NW = NT / 32;
constexpr int LPT = D / 16;    // lanes per token
constexpr int TPW = 32 / LPT;  // tokens per warp step

__shared__ __align__(16) float qs[GQA][D];
__shared__ float lutk[16];
__shared__ float lutv[16];
__shared__ float4 btab_k[256];
__shared__ float4 btab_v[256];
__shared__ float wm[NW][GQA];
__shared__ float wl[NW][GQA];
__shared__ float wacc[NW][GQA][D];

const int tid = threadIdx.x;
const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
const int S = gridDim.x, Hkv = gridDim.y, Hq = Hkv * GQA;
const int len = len_marker_shape[0];
const int cap = k_data_shape[2];
const int naux_k = KFMT >= 1 ? k_aux_shape[3] : 1;
const int naux_v = VFMT >= 1 ? v_aux_shape[3] : 1;
constexpr int group_v = GROUP_V;
const float sc = rsqrtf(static_cast<float>(D));
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

mlxcel_fd::fill_byte_table<KFMT>(btab_k, lutk, tid, NT);
mlxcel_fd::fill_byte_table<VFMT>(btab_v, lutv, tid, NT);
__syncthreads();

const int warp = tid / 32, lane = tid % 32;
const int slot = lane / LPT;         // which token of the warp step
const int e = (lane % LPT) * 16;     // first coordinate owned by this lane
float qr[GQA][16];
#pragma unroll
for (int g = 0; g < GQA; ++g) {
#pragma unroll
  for (int i = 0; i < 16; ++i) qr[g][i] = qs[g][e + i];
}
const int rk = mlxcel_fd::row_bytes<KFMT>(D);
const int rv = mlxcel_fd::row_bytes<VFMT>(D);
const long long base_row = (static_cast<long long>(b) * Hkv + kvh) * cap;
const unsigned char* kb = reinterpret_cast<const unsigned char*>(k_data) + base_row * rk;
const unsigned char* vb = reinterpret_cast<const unsigned char*>(v_data) + base_row * rv;
const __half* ka = reinterpret_cast<const __half*>(k_aux);
const __half* va = reinterpret_cast<const __half*>(v_aux);

float m[GQA], l[GQA], acc[GQA][16];
#pragma unroll
for (int g = 0; g < GQA; ++g) {
  m[g] = mlxcel_fd::neg_inf();
  l[g] = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) acc[g][i] = 0.0f;
}

const int step = NW * TPW;
int t = t0 + warp * TPW + slot;
// Zero-initialized: a slot past the end must decode to finite values (0 * NaN = NaN).
mlxcel_fd::Raw16 kr = {}, vr = {};
float fk = 0.0f, fv = 0.0f;
if (t < t1) {
  kr = mlxcel_fd::load_raw16<KFMT>(kb + static_cast<long long>(t) * rk, e, D);
  vr = mlxcel_fd::load_raw16<VFMT>(vb + static_cast<long long>(t) * rv, e, D);
  fk = mlxcel_fd::row_factor<KFMT>(ka, base_row + t, e, naux_k, GROUP_K);
  fv = mlxcel_fd::row_factor<VFMT>(va, base_row + t, e, naux_v, group_v);
}
for (int base = t0 + warp * TPW; base < t1; base += step) {
  const bool live = t < t1;
  // Prefetch the next step's bytes.
  const int tn = t + step;
  mlxcel_fd::Raw16 krn = kr, vrn = vr;
  float fkn = 0.0f, fvn = 0.0f;
  if (tn < t1) {
    krn = mlxcel_fd::load_raw16<KFMT>(kb + static_cast<long long>(tn) * rk, e, D);
    vrn = mlxcel_fd::load_raw16<VFMT>(vb + static_cast<long long>(tn) * rv, e, D);
    fkn = mlxcel_fd::row_factor<KFMT>(ka, base_row + tn, e, naux_k, GROUP_K);
    fvn = mlxcel_fd::row_factor<VFMT>(va, base_row + tn, e, naux_v, group_v);
  }
  float kv[16];
  mlxcel_fd::decode16_tab<KFMT>(kr, btab_k, lutk, kv);
  float s[GQA];
#pragma unroll
  for (int g = 0; g < GQA; ++g) {
    float acc_s = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) acc_s = fmaf(qr[g][i], kv[i], acc_s);
    s[g] = acc_s * fk;
  }
#pragma unroll
  for (int off = LPT / 2; off > 0; off >>= 1) {
#pragma unroll
    for (int g = 0; g < GQA; ++g) s[g] += __shfl_xor_sync(0xffffffffu, s[g], off);
  }
  float vv[16];
  mlxcel_fd::decode16_tab<VFMT>(vr, btab_v, lutv, vv);
#pragma unroll
  for (int g = 0; g < GQA; ++g) {
    const float sg = live ? s[g] * sc : mlxcel_fd::neg_inf();
    float mx = sg;
#pragma unroll
    for (int off = LPT; off < 32; off <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    if (mx > m[g]) {
      const float c = __expf(m[g] - mx);
      l[g] *= c;
#pragma unroll
      for (int i = 0; i < 16; ++i) acc[g][i] *= c;
      m[g] = mx;
    }
    const float p = live ? __expf(sg - m[g]) : 0.0f;
    float ps = p;
#pragma unroll
    for (int off = LPT; off < 32; off <<= 1) ps += __shfl_xor_sync(0xffffffffu, ps, off);
    l[g] += ps;
    const float w = p * fv;
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[g][i] = fmaf(w, vv[i], acc[g][i]);
  }
  kr = krn;
  vr = vrn;
  fk = fkn;
  fv = fvn;
  t = tn;
}

// Sum the token slots of the warp, then merge the warps.
#pragma unroll
for (int g = 0; g < GQA; ++g) {
#pragma unroll
  for (int i = 0; i < 16; ++i) {
#pragma unroll
    for (int off = LPT; off < 32; off <<= 1) acc[g][i] += __shfl_xor_sync(0xffffffffu, acc[g][i], off);
  }
}
if (slot == 0) {
#pragma unroll
  for (int g = 0; g < GQA; ++g) {
#pragma unroll
    for (int i = 0; i < 16; ++i) wacc[warp][g][e + i] = acc[g][i];
  }
}
if (lane == 0) {
#pragma unroll
  for (int g = 0; g < GQA; ++g) {
    wm[warp][g] = m[g];
    wl[warp][g] = l[g];
  }
}
__syncthreads();
for (int idx = tid; idx < GQA * D; idx += NT) {
  const int g = idx / D, d = idx % D;
  float M = mlxcel_fd::neg_inf();
#pragma unroll
  for (int w = 0; w < NW; ++w) M = fmaxf(M, wm[w][g]);
  float o = 0.0f, L = 0.0f;
  if (M != mlxcel_fd::neg_inf()) {
#pragma unroll
    for (int w = 0; w < NW; ++w) {
      const float c = __expf(wm[w][g] - M);
      o = fmaf(c, wacc[w][g][d], o);
      L = fmaf(c, wl[w][g], L);
    }
  }
  const long long row = (static_cast<long long>(b) * Hq + kvh * GQA + g) * S + split;
  o_part[row * D + d] = o;
  if (d == 0) {
    ml[row * 2] = M;
    ml[row * 2 + 1] = L;
  }
}
