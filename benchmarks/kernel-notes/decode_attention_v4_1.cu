// Fused decode attention on tensor cores (version 4; versions 1-3 are CUDA-core kernels, see
// benchmarks/kernel-notes/NOTES.md). One CTA of 4 warps per (batch, KV head, split of the
// sequence); every warp streams its own 16-token tiles with its own online softmax, the
// tiles staged into shared memory by cp.async in a per-warp ring (no block barrier in the
// loop). Per tile:
//   S^T[t, g] = K_t . q_g        mma m16n8k16: A = K decoded to fp16 (16 tokens as rows; each
//                                K element decoded once, by one lane, for all heads of the
//                                group), B = q^T (up to 8 heads as columns)
//   s *= K factor (norm/scale) after the dot product; online softmax in the exp2 domain
//   O^T[d, g] += V^T[d, t] P^T[t, g]  mma m16n8k16: A = V^T decoded to fp16 (token pairs per
//                                register), B = P^T with the V factor folded into P, the
//                                C fragment of S mapping onto it lane by lane.
// The contraction (head-dim) axis is permuted consistently between q and K so that every
// lane decodes contiguous bytes: lane (r = lane/4, c = lane%4) owns K dims [c*D/4, +D/4) of
// tokens r and r+8, and V dims [r*D/8, +D/8) of tokens 2c, 2c+1, 2c+8, 2c+9; its softmax
// state is that of heads 2c and 2c+1, the columns it holds of both S^T and O^T.
// q is rotated (turbo K) and scaled by log2(e)/sqrt(D) in the prologue; the output stays in
// V's stored basis: merge_splits.cu combines the splits and applies the inverse rotation.
//
// One launch per call: every CTA writes its partial (unnormalized output, max, sum) and
// counts itself done on a per-(batch, KV head) counter; the last CTA merges the splits
// (log-sum-exp), applies the inverse V rotation and writes the output (a separate merge
// launch cost ~30 us of MLX per-op time per layer on the H200).
//
// Template constants: KFMT, VFMT in {0 fp16, 1 int8, 4 turbo4} (decode_attention.cuh),
// D in {64, 128}, GQA <= 8, group == D, ROT_Q, ROT_V, ROWS, STAGES (ring depth; mlxcel sizes the
// dynamic shared memory with the same formula), T_out. Inputs as decode_attention.cu plus
// rot_v [2, D] (V's s1; s2), q in the model's dtype. Outputs: out [B, Hq, 1, D] (T_out) and
// scratch f32, zero-filled by MLX (init value): partial outputs [B, Hq, S, D], then
// (max in natural-log units, sum) [B, Hq, S, 2], then one int counter per (b, KV head).
constexpr int NT = 128;
constexpr int NW = NT / 32;
constexpr int DK = D / 4;  // K dims per lane per token
constexpr int DV = D / 8;  // V dims per lane per token
constexpr int KSTEPS = D / 16;
constexpr int MT = D / 16;
constexpr int KROW = KFMT == 0 ? 2 * D : (KFMT == 1 ? D : D / 2);
constexpr int VROW = VFMT == 0 ? 2 * D : (VFMT == 1 ? D : D / 2);
constexpr int KW = KROW / 16;  // 32-bit words of K per lane per token (K row / 4 lanes)
constexpr int VW = VROW / 32;  // 32-bit words of V per lane per token (V row / 8 lanes)
// A ring slot holds ROWS = 16 or 32 tokens (template constant: 32 where a slot stays small,
// so the per-slot copy and loop overhead is paid once per 32 tokens), computed as ROWS / 16
// tiles of 16.
constexpr int SUBS = ROWS / 16;
constexpr int K_BYTES = ROWS * KROW, V_BYTES = ROWS * VROW;
constexpr int KA_BYTES = KFMT != 0 ? 2 * ROWS : 0, VA_BYTES = VFMT != 0 ? 2 * ROWS : 0;
constexpr int STAGE = K_BYTES + V_BYTES + KA_BYTES + VA_BYTES;
constexpr float LOG2E = 1.4426950408889634f;
static_assert(GQA >= 1 && GQA <= 8, "GQA 1..8");
static_assert(KW >= 1 && VW >= 1, "row too short");
static_assert(ROWS == 16 || ROWS == 32, "ROWS 16 or 32");

extern __shared__ __align__(16) unsigned char smem[];
float* qs = reinterpret_cast<float*>(smem);                // [8][D]
unsigned char* ring = smem + 8 * D * sizeof(float);          // [NW][STAGES][STAGE]

const int tid = threadIdx.x;
const int warp = tid >> 5, lane = tid & 31;
const int r = lane >> 2, c = lane & 3;
const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
const int S = gridDim.x, Hkv = gridDim.y, Hq = Hkv * GQA;
const int len = len_arr[0];
const int cap = k_data_shape[2];

// q of the group -> shared (f32), rotated for turbo K: one warp per head, D/32 values per
// lane, the Walsh-Hadamard butterflies in registers and shuffles (no block barriers).
constexpr int QE = D / 32;
for (int g = warp; g < 8; g += NW) {
  float x[QE];
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    const int d = lane * QE + e;
    x[e] = g < GQA ? static_cast<float>(q[(static_cast<long long>(b) * Hq + kvh * GQA + g) * D + d]) : 0.0f;
  }
  if constexpr (ROT_Q) {
#pragma unroll
    for (int e = 0; e < QE; ++e) x[e] *= rot_k[lane * QE + e];
    mlxcel_fd::wht_warp<QE>(x, lane);
    const float inv = rsqrtf(static_cast<float>(D));
#pragma unroll
    for (int e = 0; e < QE; ++e) x[e] *= rot_k[D + lane * QE + e] * inv;
  }
#pragma unroll
  for (int e = 0; e < QE; ++e) qs[g * D + lane * QE + e] = x[e];
}
__syncthreads();
// B fragments of q^T (columns = heads; heads >= GQA are zero): step s covers dims c*DK + 4s + [0, 4).
const float qscale = rsqrtf(static_cast<float>(D)) * LOG2E;
mlxcel_mma::u32 qa[KSTEPS][2];
#pragma unroll
for (int s = 0; s < KSTEPS; ++s) {
  const float* x = qs + r * D + c * DK + 4 * s;
  qa[s][0] = mlxcel_mma::pack_half2(x[0] * qscale, x[1] * qscale);
  qa[s][1] = mlxcel_mma::pack_half2(x[2] * qscale, x[3] * qscale);
}
mlxcel_mma::Book4 bk = {0, 0, 0, 0}, bv = {0, 0, 0, 0};
if constexpr (KFMT == 4) bk = mlxcel_mma::make_book4(lut_k);
if constexpr (VFMT == 4) bv = mlxcel_mma::make_book4(lut_v);

// This CTA's slots of ROWS tokens, then this warp's: slots tb + warp, tb + warp + NW, ...
const int n_tiles = (len + ROWS - 1) / ROWS;
const int per = (n_tiles + S - 1) / S;
const int tb = split * per;
const int te = min(n_tiles, tb + per);
const int count = te - tb - warp > 0 ? (te - tb - warp + NW - 1) / NW : 0;

const long long base_row = (static_cast<long long>(b) * Hkv + kvh) * cap;
const unsigned char* kg = reinterpret_cast<const unsigned char*>(k_data) + base_row * KROW;
const unsigned char* vg = reinterpret_cast<const unsigned char*>(v_data) + base_row * VROW;
const unsigned char* kag = reinterpret_cast<const unsigned char*>(k_aux) + base_row * 2;
const unsigned char* vag = reinterpret_cast<const unsigned char*>(v_aux) + base_row * 2;
unsigned char* my_ring = ring + warp * STAGES * STAGE;

// Stage this warp's next tile (16 rows of K, V and their factors) into the next ring slot.
// Called for the warp's tiles in order; source pointers and the slot advance by constants.
constexpr long long K_STEP = static_cast<long long>(NW) * K_BYTES;
constexpr long long V_STEP = static_cast<long long>(NW) * V_BYTES;
const unsigned char* k_src = kg + static_cast<long long>(tb + warp) * K_BYTES;
const unsigned char* v_src = vg + static_cast<long long>(tb + warp) * V_BYTES;
const unsigned char* ka_src = kag + static_cast<long long>(tb + warp) * 2 * ROWS;
const unsigned char* va_src = vag + static_cast<long long>(tb + warp) * 2 * ROWS;
int issue_t0 = (tb + warp) * ROWS;
int issue_slot = 0;
auto issue = [&]() {
  unsigned char* st = my_ring + issue_slot * STAGE;
  const bool full = issue_t0 + ROWS <= len;
#pragma unroll
  for (int ch = lane; ch < K_BYTES / 16; ch += 32) {
    mlxcel_mma::cp_async16(st + ch * 16, k_src + ch * 16, full || issue_t0 + ch * 16 / KROW < len);
  }
#pragma unroll
  for (int ch = lane; ch < V_BYTES / 16; ch += 32) {
    mlxcel_mma::cp_async16(st + K_BYTES + ch * 16, v_src + ch * 16, full || issue_t0 + ch * 16 / VROW < len);
  }
  // Factors: 16-byte chunks of 8 rows (rows past the end are masked in compute); K's by
  // lanes [0, ROWS/8), V's by the next ROWS/8 lanes.
  constexpr int NA = ROWS / 8;
  if constexpr (KFMT != 0) {
    if (lane < NA) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + lane * 16, ka_src + lane * 16, issue_t0 + 8 * lane < cap);
  }
  if constexpr (VFMT != 0) {
    if (lane >= NA && lane < 2 * NA) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + KA_BYTES + (lane - NA) * 16, va_src + (lane - NA) * 16, issue_t0 + 8 * (lane - NA) < cap);
  }
  k_src += K_STEP;
  v_src += V_STEP;
  ka_src += NW * 2 * ROWS;
  va_src += NW * 2 * ROWS;
  issue_t0 += NW * ROWS;
  issue_slot = issue_slot + 1 == STAGES ? 0 : issue_slot + 1;
};

float o[MT][4];
#pragma unroll
for (int j = 0; j < MT; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
float m_run[2] = {mlxcel_fd::neg_inf(), mlxcel_fd::neg_inf()}, l_run[2] = {0.0f, 0.0f};  // heads 2c, 2c+1

#pragma unroll
for (int i = 0; i < STAGES - 1; ++i) {
  if (i < count) issue();
  mlxcel_mma::cp_commit();
}

int slot = 0;
for (int i = 0; i < count; ++i) {
  mlxcel_mma::cp_wait<STAGES - 2>();
  __syncwarp();
  const unsigned char* slot_base = my_ring + slot * STAGE;
  slot = slot + 1 == STAGES ? 0 : slot + 1;
#pragma unroll
  for (int sub = 0; sub < SUBS; ++sub) {
  const int t0 = (tb + warp + i * NW) * ROWS + 16 * sub;
  if (sub > 0 && t0 >= len) break;  // warp-uniform: the rest of the slot is past the end
  // This 16-token tile's rows of K, V and factors inside the slot.
  const unsigned char* kst = slot_base + sub * 16 * KROW;
  const unsigned char* vst = slot_base + K_BYTES + sub * 16 * VROW;
  const __half* ka_st = reinterpret_cast<const __half*>(slot_base + K_BYTES + V_BYTES) + 16 * sub;
  const __half* va_st = reinterpret_cast<const __half*>(slot_base + K_BYTES + V_BYTES + KA_BYTES) + 16 * sub;

  // ---- S^T = K q^T for tokens [t0, t0 + 16): A = K (tokens r and r + 8 of this lane, as
  // rows; no padding), B = q^T (the heads as columns), one mma per 16 head dims.
  mlxcel_mma::u32 w[2][KW];
#pragma unroll
  for (int hlf = 0; hlf < 2; ++hlf) {
    const mlxcel_mma::u32* kw = reinterpret_cast<const mlxcel_mma::u32*>(kst + (hlf * 8 + r) * KROW + c * (KROW / 4));
#pragma unroll
    for (int u = 0; u < KW; u += 4) {
      if constexpr (KW % 4 == 0) {
        const uint4 x = *reinterpret_cast<const uint4*>(kw + u);
        w[hlf][u] = x.x; w[hlf][u + 1] = x.y; w[hlf][u + 2] = x.z; w[hlf][u + 3] = x.w;
      } else {
#pragma unroll
        for (int e = 0; e < KW - u && e < 4; ++e) w[hlf][u + e] = kw[u + e];
      }
    }
  }
  // sacc: (token r, head 2c), (token r, head 2c+1), (token r+8, head 2c), (token r+8, head 2c+1).
  float sacc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if constexpr (KFMT == 0) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) mlxcel_mma::mma(sacc, w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1], qa[s][0], qa[s][1]);
  } else if constexpr (KFMT == 1) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) {
      mlxcel_mma::u32 a0[2], a1[2];
      mlxcel_mma::decode4_i8(w[0][s], a0);
      mlxcel_mma::decode4_i8(w[1][s], a1);
      mlxcel_mma::mma(sacc, a0[0], a1[0], a0[1], a1[1], qa[s][0], qa[s][1]);
    }
  } else {
#pragma unroll
    for (int u = 0; u < KW; ++u) {
      mlxcel_mma::u32 a0[4], a1[4];
      mlxcel_mma::decode8_t4(bk, w[0][u], a0);
      mlxcel_mma::decode8_t4(bk, w[1][u], a1);
      mlxcel_mma::mma(sacc, a0[0], a1[0], a0[1], a1[1], qa[2 * u][0], qa[2 * u][1]);
      mlxcel_mma::mma(sacc, a0[2], a1[2], a0[3], a1[3], qa[2 * u + 1][0], qa[2 * u + 1][1]);
    }
  }
  float kf0 = 1.0f, kf1 = 1.0f, vf0 = 1.0f, vf1 = 1.0f;
  if constexpr (KFMT != 0) {
    kf0 = __half2float(ka_st[r]);
    kf1 = __half2float(ka_st[8 + r]);
  }
  if constexpr (VFMT != 0) {
    vf0 = __half2float(va_st[r]);
    vf1 = __half2float(va_st[8 + r]);
  }
  const bool live0 = t0 + r < len, live1 = t0 + 8 + r < len;
  float sc[4] = {live0 ? sacc[0] * kf0 : mlxcel_fd::neg_inf(), live0 ? sacc[1] * kf0 : mlxcel_fd::neg_inf(),
                 live1 ? sacc[2] * kf1 : mlxcel_fd::neg_inf(), live1 ? sacc[3] * kf1 : mlxcel_fd::neg_inf()};
  // Per head (2c, 2c+1): max over the 16 tokens = this lane's two and the other 7 rows.
  float mx0 = fmaxf(sc[0], sc[2]), mx1 = fmaxf(sc[1], sc[3]);
#pragma unroll
  for (int off = 4; off < 32; off <<= 1) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
  }
  const float mn0 = fmaxf(m_run[0], mx0), mn1 = fmaxf(m_run[1], mx1);
  // 0 on the first tile (m_run = -inf); masked scores give exp2(-inf) = 0.
  const float al0 = mlxcel_mma::exp2_fast(m_run[0] - mn0), al1 = mlxcel_mma::exp2_fast(m_run[1] - mn1);
  const float p0 = mlxcel_mma::exp2_fast(sc[0] - mn0), p1 = mlxcel_mma::exp2_fast(sc[1] - mn1);
  const float p2 = mlxcel_mma::exp2_fast(sc[2] - mn0), p3 = mlxcel_mma::exp2_fast(sc[3] - mn1);
  l_run[0] = l_run[0] * al0 + p0 + p2;
  l_run[1] = l_run[1] * al1 + p1 + p3;
  const bool grew = mn0 > m_run[0] || mn1 > m_run[1];
  m_run[0] = mn0;
  m_run[1] = mn1;
  if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
    for (int j = 0; j < MT; ++j) {
      o[j][0] *= al0; o[j][1] *= al1; o[j][2] *= al0; o[j][3] *= al1;
    }
  }
  // P^T as the B operand of PV (k = tokens, n = heads): this lane holds (token r / r+8,
  // heads 2c, 2c+1) with the V factor folded in; one 8x8 transpose per half gives the lane
  // (head r, tokens 2c, 2c+1 / 2c+8, 2c+9). Masked tokens are exactly 0.
  const mlxcel_mma::u32 pb0 = mlxcel_mma::transpose8x8(mlxcel_mma::pack_half2(live0 ? p0 * vf0 : 0.0f, live0 ? p1 * vf0 : 0.0f));
  const mlxcel_mma::u32 pb1 = mlxcel_mma::transpose8x8(mlxcel_mma::pack_half2(live1 ? p2 * vf1 : 0.0f, live1 ? p3 * vf1 : 0.0f));
  const int toks[4] = {2 * c, 2 * c + 1, 8 + 2 * c, 9 + 2 * c};

  // ---- O^T += V^T P^T: A = V^T of tokens (2c, 2c+1) and (8+2c, 9+2c), dims r*DV + [0, DV).
  const unsigned char* vrow = vst + r * (VROW / 8);
  mlxcel_mma::u32 va[4][VW];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const mlxcel_mma::u32* src = reinterpret_cast<const mlxcel_mma::u32*>(vrow + toks[e] * VROW);
    if constexpr (VW % 4 == 0) {
#pragma unroll
      for (int u = 0; u < VW; u += 4) {
        const uint4 x = *reinterpret_cast<const uint4*>(src + u);
        va[e][u] = x.x; va[e][u + 1] = x.y; va[e][u + 2] = x.z; va[e][u + 3] = x.w;
      }
    } else if constexpr (VW % 2 == 0) {
#pragma unroll
      for (int u = 0; u < VW; u += 2) {
        const uint2 x = *reinterpret_cast<const uint2*>(src + u);
        va[e][u] = x.x; va[e][u + 1] = x.y;
      }
    } else {
      va[e][0] = src[0];
    }
  }
  // pairs[h][k]: (token pair h, V dim r*DV + k) as half2.
  mlxcel_mma::u32 pairs[2][DV];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if constexpr (VFMT == 0) {
#pragma unroll
      for (int u = 0; u < VW; ++u) {
        pairs[h][2 * u] = mlxcel_mma::prmt(va[2 * h][u], va[2 * h + 1][u], 0x5410u);
        pairs[h][2 * u + 1] = mlxcel_mma::prmt(va[2 * h][u], va[2 * h + 1][u], 0x7632u);
      }
    } else if constexpr (VFMT == 1) {
#pragma unroll
      for (int u = 0; u < VW; ++u) mlxcel_mma::decode4x2_i8(va[2 * h][u], va[2 * h + 1][u], &pairs[h][4 * u]);
    } else {
#pragma unroll
      for (int u = 0; u < VW; ++u) mlxcel_mma::decode8x2_t4(bv, va[2 * h][u], va[2 * h + 1][u], &pairs[h][8 * u]);
    }
  }
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    mlxcel_mma::mma(o[j], pairs[0][2 * j], pairs[0][2 * j + 1], pairs[1][2 * j], pairs[1][2 * j + 1], pb0, pb1);
  }
  }  // sub-tiles

  __syncwarp();  // every lane is done with this slot before it is refilled
  if (i + STAGES - 1 < count) issue();
  mlxcel_mma::cp_commit();
}
mlxcel_mma::cp_wait<0>();

// ---- Merge the 4 warps (the ring is reused as scratch).
#pragma unroll
for (int off = 4; off < 32; off <<= 1) {
  l_run[0] += __shfl_xor_sync(0xffffffffu, l_run[0], off);
  l_run[1] += __shfl_xor_sync(0xffffffffu, l_run[1], off);
}
__syncthreads();
float* wacc = reinterpret_cast<float*>(ring);  // [NW][GQA][D]
float* wm = wacc + NW * GQA * D;               // [NW][8]
float* wl = wm + NW * 8;                       // [NW][8]
if (r == 0) {
  wm[warp * 8 + 2 * c] = m_run[0];
  wm[warp * 8 + 2 * c + 1] = m_run[1];
  wl[warp * 8 + 2 * c] = l_run[0];
  wl[warp * 8 + 2 * c + 1] = l_run[1];
}
#pragma unroll
for (int j = 0; j < MT; ++j) {
  const int d0 = r * DV + 2 * j;
  const int h0 = 2 * c, h1 = 2 * c + 1;
  if (h0 < GQA) {
    wacc[(warp * GQA + h0) * D + d0] = o[j][0];
    wacc[(warp * GQA + h0) * D + d0 + 1] = o[j][2];
  }
  if (h1 < GQA) {
    wacc[(warp * GQA + h1) * D + d0] = o[j][1];
    wacc[(warp * GQA + h1) * D + d0 + 1] = o[j][3];
  }
}
__syncthreads();
float* o_part = scratch;
float* ml = scratch + static_cast<long long>(gridDim.z) * Hq * S * D;
int* sem = reinterpret_cast<int*>(ml + static_cast<long long>(gridDim.z) * Hq * S * 2);
for (int idx = tid; idx < GQA * D; idx += NT) {
  const int g = idx / D, d = idx % D;
  float M = mlxcel_fd::neg_inf();
#pragma unroll
  for (int w = 0; w < NW; ++w) M = fmaxf(M, wm[w * 8 + g]);
  float acc = 0.0f, L = 0.0f;
  if (M != mlxcel_fd::neg_inf()) {
#pragma unroll
    for (int w = 0; w < NW; ++w) {
      const float f = exp2f(wm[w * 8 + g] - M);
      acc = fmaf(f, wacc[(w * GQA + g) * D + d], acc);
      L = fmaf(f, wl[w * 8 + g], L);
    }
  }
  const long long row = (static_cast<long long>(b) * Hq + kvh * GQA + g) * S + split;
  o_part[row * D + d] = acc;
  if (d == 0) {
    ml[row * 2] = M == mlxcel_fd::neg_inf() ? M : M * 0.6931471805599453f;
    ml[row * 2 + 1] = L;
  }
}

// ---- The last CTA of this (batch, KV head) merges the splits.
__shared__ int am_last;
__threadfence();  // this CTA's partials are visible device-wide before it is counted
__syncthreads();
if (tid == 0) am_last = atomicAdd(&sem[b * Hkv + kvh], 1) == S - 1;
__syncthreads();
if (!am_last) return;
__threadfence();
float* xs = qs;  // [GQA][D], q is no longer needed
for (int idx = tid; idx < GQA * D; idx += NT) {
  const int g = idx / D, d = idx % D;
  const long long row0 = (static_cast<long long>(b) * Hq + kvh * GQA + g) * S;
  float M = mlxcel_fd::neg_inf();
  for (int sp = 0; sp < S; ++sp) M = fmaxf(M, __ldcg(&ml[(row0 + sp) * 2]));
  float num = 0.0f, den = 0.0f;
  if (M != mlxcel_fd::neg_inf()) {
    for (int sp = 0; sp < S; ++sp) {
      const float m = __ldcg(&ml[(row0 + sp) * 2]);
      if (m == mlxcel_fd::neg_inf()) continue;
      const float w = __expf(m - M);
      num = fmaf(w, __ldcg(&o_part[(row0 + sp) * D + d]), num);
      den = fmaf(w, __ldcg(&ml[(row0 + sp) * 2 + 1]), den);
    }
  }
  xs[g * D + d] = den > 0.0f ? num / den : 0.0f;
}
__syncthreads();
for (int g = warp; g < GQA; g += NW) {
  float x[QE];
#pragma unroll
  for (int e = 0; e < QE; ++e) x[e] = xs[g * D + lane * QE + e];
  if constexpr (ROT_V) {
    // Back from V's stored basis: x = s1 * H (s2 * y) / sqrt(D).
#pragma unroll
    for (int e = 0; e < QE; ++e) x[e] *= rot_v[D + lane * QE + e];
    mlxcel_fd::wht_warp<QE>(x, lane);
    const float inv = rsqrtf(static_cast<float>(D));
#pragma unroll
    for (int e = 0; e < QE; ++e) x[e] *= rot_v[lane * QE + e] * inv;
  }
  const long long orow = (static_cast<long long>(b) * Hq + kvh * GQA + g) * D;
#pragma unroll
  for (int e = 0; e < QE; ++e) out[orow + lane * QE + e] = static_cast<T_out>(x[e]);
}
