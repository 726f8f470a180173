// Combines the per-split partial outputs of the decode kernels: out = sum_s e^(m_s - M) o_s
// / sum_s e^(m_s - M) l_s, then (ROT_V) applies the inverse rotation of V's stored basis,
// x = s1 * H (s2 * y) / sqrt(G), per group of GROUP_V. One CTA of P * D threads per
// (b, head): the split weights are computed once into shared memory (block reductions for
// the max and the denominator), then P threads per output dimension each sum every P-th
// split with independent loads in flight (the first version ran the split loop serially,
// one thread per dimension: ~18 us per call in an end-to-end step, longer than the main
// kernel at 4K).
// Inputs: o_part [B, Hq, S, D] f32, ml [B, Hq, S, 2] f32, rot_v [2, GROUP_V] f32 (s1; s2).
// Output: out [B, Hq, 1, D] in T_out. S <= MAX_SPLITS (checked by the caller).
constexpr int P = 4;
constexpr int NT = P * D;
constexpr int MAX_SPLITS = 2048;
__shared__ float w[MAX_SPLITS];
__shared__ float part[P * D];
__shared__ float red[NT / 32];
__shared__ float x[D];
const int tid = threadIdx.x;
const int lane = tid & 31, warp = tid >> 5;
const int d = tid % D, p = tid / D;
const int bh = blockIdx.x;
const int S = o_part_shape[2];
const float* mlb = ml + static_cast<long long>(bh) * S * 2;
// Block max of the split maxima.
float M = mlxcel_fd::neg_inf();
for (int s = tid; s < S; s += NT) M = fmaxf(M, mlb[2 * s]);
for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
if (lane == 0) red[warp] = M;
__syncthreads();
M = red[0];
for (int i = 1; i < NT / 32; ++i) M = fmaxf(M, red[i]);
__syncthreads();
// Split weights (0 for empty splits) and the denominator.
float den = 0.0f;
for (int s = tid; s < S; s += NT) {
  const float m = mlb[2 * s];
  const float wt = m == mlxcel_fd::neg_inf() ? 0.0f : __expf(m - M);
  w[s] = wt;
  den = fmaf(wt, mlb[2 * s + 1], den);
}
for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
if (lane == 0) red[warp] = den;
__syncthreads();
den = 0.0f;
for (int i = 0; i < NT / 32; ++i) den += red[i];
// Numerators: thread (p, d) sums splits p, p + P, ...
const float* ob = o_part + static_cast<long long>(bh) * S * D + d;
float num = 0.0f;
#pragma unroll 8
for (int s = p; s < S; s += P) {
  const float wt = w[s];
  const float v = ob[static_cast<long long>(s) * D];
  num = wt != 0.0f ? fmaf(wt, v, num) : num;  // an empty split's partial is never read into num
}
part[p * D + d] = num;
__syncthreads();
float y = 0.0f;
if (p == 0) {
#pragma unroll
  for (int i = 0; i < P; ++i) y += part[i * D + d];
  y /= den;
}
if constexpr (ROT_V) {
  const int gi = d % GROUP_V;
  if (p == 0) x[d] = y * rot_v[GROUP_V + gi];
  __syncthreads();
  for (int grp = 0; grp < D / GROUP_V; ++grp) mlxcel_fd::wht_shared(&x[grp * GROUP_V], GROUP_V, tid, NT);
  y = x[d] * rot_v[gi] * rsqrtf(static_cast<float>(GROUP_V));
}
if (p == 0) out[static_cast<long long>(bh) * D + d] = static_cast<T_out>(y);
