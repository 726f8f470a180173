// The split merge of merge_splits.cu (same inputs, output and arithmetic, bit for bit) with
// its dependent phases moved from block barriers to warps.
// Why: merge_splits.cu took 6.2 us per call in situ at every context (ncu, session 11:
// 174-221 us per decode step of the 8B model in every quantized mode) for ~0.5 MB of
// partials. It is latency, not bytes: a load of the split maxima, a block barrier, the split
// weights, a barrier, the partials' loads, a barrier, then seven barrier-separated
// Walsh-Hadamard stages in shared memory.
// Here one CTA of P warps serves a (b, head); lane l owns output dims [l * QE, +QE).
//  1. Every warp first issues the loads of its first PRE partials (splits warp, warp + P, ...)
//     and of the split maxima, so the L2 round trips overlap.
//  2. Every warp computes the max, the weights and the denominator itself (shuffles, no
//     block barrier) and keeps the weights of its own splits in shared memory (__syncwarp).
//  3. Warp p sums splits p, p + P, ... in that order (as thread (p, d) of merge_splits.cu).
//  4. One barrier; warp 0 adds the P parts in order, divides, and applies the inverse
//     rotation with wht_warp (in-lane butterflies, then shuffles: the stages in the same
//     order and with the same operations as wht_shared, so bit-identical).
// The denominator is summed in merge_splits.cu's order (step 2). Needs D = 32 * QE and
// GROUP_V a power of two that QE divides or that divides QE (the caller checks:
// merge_warp_fits).
// Inputs: o_part [B, Hq, S, D] f32, ml [B, Hq, S, 2] f32, rot_v [2, GROUP_V] f32 (s1; s2).
// Output: out [B, Hq, 1, D] in T_out. S <= MAX_SPLITS (checked by the caller).
constexpr int P = mlxcel_fd::MERGE_P;
constexpr int QE = D / 32;
constexpr int MAX_SPLITS = 2048;
constexpr int PRE = 12;
constexpr int BLOCK_NT = 4 * D;  // merge_splits.cu's threads (its P * D)
static_assert(D % 32 == 0 && (QE & (QE - 1)) == 0, "D = 32 * a power of two");
__shared__ float w[MAX_SPLITS];
__shared__ __align__(16) float part[P * D];
const int tid = threadIdx.x;
const int lane = tid & 31, warp = tid >> 5;
const int bh = blockIdx.x;
const int S = o_part_shape[2];
const float* mlb = ml + static_cast<long long>(bh) * S * 2;
const float* ob = o_part + static_cast<long long>(bh) * S * D + lane * QE;
auto load = [&](int s, float (&v)[QE]) {
  const float* src = ob + static_cast<long long>(s) * D;
  if constexpr (QE == 4) {
    const float4 t = *reinterpret_cast<const float4*>(src);
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
  } else if constexpr (QE == 2) {
    const float2 t = *reinterpret_cast<const float2*>(src);
    v[0] = t.x, v[1] = t.y;
  } else {
#pragma unroll
    for (int e = 0; e < QE; ++e) v[e] = src[e];
  }
};
// 1. The first partials of this warp, in flight while the weights are computed; with MSF
// (MLXCEL_MERGE_SIGNS_FIRST) warp 0 also loads V's rotation signs for step 4 here
// (mlxcel_fd::merge_signs says why).
mlxcel_fd::MergeSigns<QE> sg;
if constexpr (MSF && ROT_V) {
  if (warp == 0) sg = mlxcel_fd::merge_signs<QE, GROUP_V>(rot_v, lane);
}
float pre[PRE][QE];
#pragma unroll
for (int i = 0; i < PRE; ++i) {
  const int s = warp + P * i;
  if (s < S) load(s, pre[i]);
}
// 2. Max, weights, denominator (each warp on its own; split_stats sums the denominator in
// merge_splits.cu's order), this warp's split weights kept in shared memory.
const float2 stats = mlxcel_fd::split_stats<BLOCK_NT, false>(mlb, S, lane, [&](int s, float wt) {
  if (s % P == warp) w[s] = wt;
});
const float den = stats.y;
__syncwarp();
// 3. This warp's splits, in order (an empty split's partial is never read into num).
float num[QE];
#pragma unroll
for (int e = 0; e < QE; ++e) num[e] = 0.0f;
#pragma unroll
for (int i = 0; i < PRE; ++i) {
  const int s = warp + P * i;
  if (s < S) {
    const float wt = w[s];
#pragma unroll
    for (int e = 0; e < QE; ++e) num[e] = wt != 0.0f ? fmaf(wt, pre[i][e], num[e]) : num[e];
  }
}
for (int s = warp + P * PRE; s < S; s += P) {
  const float wt = w[s];
  float v[QE];
  load(s, v);
#pragma unroll
  for (int e = 0; e < QE; ++e) num[e] = wt != 0.0f ? fmaf(wt, v[e], num[e]) : num[e];
}
#pragma unroll
for (int e = 0; e < QE; ++e) part[warp * D + lane * QE + e] = num[e];
__syncthreads();
if (warp != 0) return;
// 4. The parts in order, the denominator, the inverse rotation per group of GROUP_V.
float parts[P][QE];
#pragma unroll
for (int i = 0; i < P; ++i) {
#pragma unroll
  for (int e = 0; e < QE; ++e) parts[i][e] = part[i * D + lane * QE + e];
}
float y[QE];
if constexpr (MSF && ROT_V) mlxcel_fd::finish_merge_signed<QE, GROUP_V, ROT_V>(parts, den, sg, lane, y);
else mlxcel_fd::finish_merge<QE, GROUP_V, ROT_V>(parts, den, rot_v, lane, y);
#pragma unroll
for (int e = 0; e < QE; ++e) out[static_cast<long long>(bh) * D + lane * QE + e] = static_cast<T_out>(y[e]);
