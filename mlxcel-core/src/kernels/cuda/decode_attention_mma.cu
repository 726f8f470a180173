// Fused decode attention on tensor cores (version 4; versions 1-3 are CUDA-core kernels, see
// benchmarks/kernel-notes/NOTES.md). One CTA of WARPS warps per (batch, KV head, split of the
// sequence); every warp streams its own 16-token tiles with its own online softmax, the
// tiles staged into shared memory by cp.async in a per-warp ring (no block barrier in the
// loop). Per tile:
//   S[g, t] = q_g . K_t          mma m16n8k16: A = q (the GQA heads as rows, padded to 16),
//                                B = K^T decoded to fp16 (each K element decoded once, by
//                                one lane, for all heads of the group)
//   s *= K factor (norm/scale) after the dot product; online softmax in the exp2 domain
//   O^T[d, g] += V^T[d, t] P^T[t, g]  mma m16n8k16: A = V^T decoded to fp16 (token pairs per
//                                register), B = P^T with the V factor folded into P, the
//                                C fragment of S mapping onto it lane by lane.
// The contraction (head-dim) axis is permuted consistently between q and K so that every
// lane decodes contiguous bytes: lane (r = lane/4, c = lane%4) owns K dims [c*D/4, +D/4) of
// token r of each 8-token half, and V dims [r*D/8, +D/8) of tokens 2c, 2c+1, 2c+8, 2c+9.
// q is rotated (turbo K) and scaled by log2(e)/sqrt(D) in the prologue; the output stays in
// V's stored basis: merge_splits.cu combines the splits and applies the inverse rotation.
//
// Template constants: SWZ (the ring's bank swizzle, below), LUTK / LUTV (turbo4 K / V decoded
// through the shared-memory pair table of decode_attention_mma.cuh instead of byte permutes),
// LUTI (256-byte-row lookups address the table by an immediate offset, no per-lookup add;
// decode_attention_mma.cuh, DYN_SMEM_BASE), HOIST (the ring copies' addressing set up once, below),
// RSALL (o
// rescaled every tile without the warp vote: alpha is exactly 1 where the max did not grow, so
// the outputs are the same; default on), FTZ (the softmax's exp2 without the denormal range
// fix-up: 5 exponentials per tile, 3 instructions each; the same outputs wherever no weight
// falls below 2^-126, which fp16 P and the fp32 sums could not hold anyway), QSWZ (q's
// staging swizzled for conflict-free fragment reads; bit-identical), FILLW (the pair table
// filled by warps without a q head, its codebook loaded first; bit-identical), QFIRST (the
// ring's first copies issued right after each warp's prologue loads; bit-identical), FCP1 (the
// refill's factor rows in one copy; bit-identical: at issue_next), VZ (masked tokens' V factors
// zeroed instead of a select per softmax weight, KT's softmax; bit-identical: at update_t), CW
// (the CTA's combine computes each warp's weight per head once; bit-identical: at the combine), LAZY
// (with KT: the softmax's reference max moves only when a score passes it by more than
// LAZY_TAU, o rescaled only then; rounding differs: at update_t), MASKL
// (with PAIR: the pairs without the masks, a sequence's partial last tile one tile at a time;
// rounding differs there: at the pair loop), VSEL (the pair table's V nibble interleave by bit selects;
// bit-identical: decode8x2_t4_lut), QFIRST1
// (only the first of them), QFIRST2 (with QFIRST1 and PAIR, the first two: a pair's first wait),
// KT (S computed transposed, S^T = K q^T with the decoded K as the A operand; below the K phase),
// PAIR (with KT: two tiles per loop iteration, one softmax update; the tile loop below),
// PROBE (MLXCEL_ATTENTION_TIMING_PROBE, a diagnostic for placing the call's fixed time in situ:
// 0 the kernel; 1 no tiles, 2 a return after the prologue's barrier, 3 a return at entry; with
// 1-3 the outputs are not attention; 4 the kernel with a timeline: each warp's lane 0 stamps
// entry, the prologue's barrier, its first tile's wait, the loop's end and the partials' stores
// (%globaltimer and clock64) and prints them (see TIMELINE below; outputs unchanged)),
// LIGHT (the last split's fewer tiles: below, where the splits are sized),
// RTAB (with ROPE_Q, `inv_freq` holds the step's RoPE table instead of the frequencies: (cos,
// sin) per frequency at position len - 1, computed once per step by rope_table.cu with the same
// sincosf; q and the appended key read it instead of reducing their angles here; bit-identical),
// KFMT, VFMT in {0 fp16, 1 int8, 4 turbo4, and with MLXCEL_LOWBIT_CUDA 2 turbo2, 3 turbo3}
// (decode_attention.cuh; the 2- and 3-bit sides decode by decode_pairs2, q's dims ordered to match),
// WARPS (warps per CTA: 4, or 12 with the pair table so that one table serves more warps),
// D in {64, 128}, GQA <= 8, GROUP_K == D, ROT_Q, ROT_V (V stored rotated, one group of D:
// turbo4 and int8r values; read only by FOLD's inverse rotation), ROPE_Q and TRAD (q arrives before RoPE and
// is rotated in the prologue from inv_freq, mlxcel-core/src/rope.rs), STAGES (ring depth; mlxcel sizes the
// dynamic shared memory with the same formula). Inputs as decode_attention.cu, with q in
// the model's dtype; outputs o_part [B, Hq, S, D] (unnormalized), ml [B, Hq, S, 2] (max in
// natural-log units, sum), and with FOLD the merged, inverse-rotated out [B, Hq, 1, D] (the
// section at the end; inputs rot_v, tickets, epoch_marker). MSF (with FOLD and ROT_V): the
// merge loads V's rotation signs with its partials (mlxcel_fd::merge_signs; bit-identical).
constexpr int NT = 32 * WARPS;  // 4 warps, or 12 sharing one pair table (MLXCEL_MMA_WIDE)
constexpr int NW = NT / 32;
constexpr int DK = D / 4;  // K dims per lane per token
constexpr int DV = D / 8;  // V dims per lane per token
constexpr int KSTEPS = D / 16;
constexpr int MT = D / 16;
// Row bytes: fp16, int8, or turbo at KFMT / VFMT bits per element (2 and 3 with LOWBIT sides).
constexpr int KROW = KFMT == 0 ? 2 * D : (KFMT == 1 ? D : D * KFMT / 8);
constexpr int VROW = VFMT == 0 ? 2 * D : (VFMT == 1 ? D : D * VFMT / 8);
// 2- and 3-bit turbo sides (MLXCEL_LOWBIT_CUDA): their own decode below (decode_pairs2), rows
// that need not be a multiple of 32 bytes (the ring copies' chunk loops are bounded).
constexpr bool LOWK = KFMT == 2 || KFMT == 3, LOWV = VFMT == 2 || VFMT == 3;
constexpr int KW = KROW / 16 > 0 ? KROW / 16 : 1;  // 32-bit words of K per lane per token (K row / 4 lanes)
constexpr int VW = VROW / 32 > 0 ? VROW / 32 : 1;  // 32-bit words of V per lane per token (V row / 8 lanes)
constexpr int K_BYTES = 16 * KROW, V_BYTES = 16 * VROW;
constexpr int KA_BYTES = KFMT != 0 ? 32 : 0, VA_BYTES = VFMT != 0 ? 32 : 0;
constexpr int STAGE = K_BYTES + V_BYTES + KA_BYTES + VA_BYTES;
constexpr float LOG2E = 1.4426950408889634f;
// LAZY's threshold (update_t below): the reference max moves once a score passes it by more than
// this, in log2 units (weights up to 2^4).
constexpr float LAZY_TAU = 4.0f;
static_assert(!LAZY || KT, "LAZY is the transposed softmax's (update_t)");
static_assert(GQA >= 1 && GQA <= 8, "GQA 1..8");
static_assert(LIGHT >= 0, "LIGHT counts tiles");
static_assert(KFMT == 0 || KFMT == 1 || KFMT == 2 || KFMT == 3 || KFMT == 4, "KFMT 0-4");
static_assert(VFMT == 0 || VFMT == 1 || VFMT == 2 || VFMT == 3 || VFMT == 4, "VFMT 0-4");
static_assert(LOWK || LOWV || (KROW % 32 == 0 && VROW % 32 == 0), "fp16 / int8 / turbo4 rows are whole 32-byte lines");
static_assert(!PAIR || (KT && HOIST && STAGES >= 3), "PAIR needs KT, HOIST and STAGES >= 3");
// SWZ: the ring stores each tile's 16-byte chunks XOR-permuted within their 128-byte line so
// that the lanes' reads of one instruction fall in different banks (ncu, turbo4 at 128K:
// shared loads 4.6-way bank-conflicted on average, session 9). Chunk n of token row t moves
// to (n & ~7) | ((n & 7) ^ swz). V (lane (r, c) reads rows 2c, 2c+1, 8+2c, 9+2c at byte
// r * VROW / 8): rows 0, 2, 4, 6 of one read share banks unless moved apart. K (lane reads
// row r at byte c * KROW / 4): rows r and r + 1 share banks when a row is >= 128 bytes.
// Rows of 64 bytes or less (turbo4 K) read conflict-free as stored. Values and arithmetic
// are unchanged: outputs are bit-identical with SWZ off.
auto v_swz = [](int t) -> int {
  if constexpr (!SWZ) return 0;
  else if constexpr (VROW == 32) return ((t >> 2) & 1) << 1;
  else if constexpr (VROW == 64 || VROW == 128) return ((t >> 1) & 3) << 1;
  else return 0;
};
auto k_swz = [](int t, int n) -> int {
  if constexpr (!SWZ) return 0;
  else if constexpr (KROW == 128) return t & 1;
  else if constexpr (KROW == 256) return ((n >> 3) & 1) | ((t & 1) << 1);
  else return 0;
};
auto swz_chunk = [](int n, int sw) -> int { return (n & ~7) | ((n & 7) ^ sw); };

constexpr bool LUT_K = LUTK && KFMT == 4, LUT_V = LUTV && VFMT == 4;
// LUT_L (MLXCEL_MMA_LUT_LOW; LUTK with 2- or 3-bit keys and values of the same width): both
// sides decode through the 2-bit field table of lowbit_decode.cuh (decode_pairs2_lut), K's
// entries in the first half of each 256-byte row, V's in the second.
constexpr bool LUT_L = LUTK && LOWK && KFMT == VFMT;
constexpr bool ANY_LUT = LUT_K || LUT_V || LUT_L;  // a table in shared memory, filled by fill_warp
constexpr bool LUT_IMM = LUTI && ANY_LUT;
// mlxcel adds the table's bytes to the dynamic shared memory when either side uses it.
constexpr int LUT_ROW = 256;
constexpr int LUT_BYTES = ANY_LUT ? 256 * LUT_ROW : 0;  // 256 rows, one per code byte
static_assert(!LUT_L || LUT_ROW == mlxcel_mma::LUT2_ROW, "one row size for both tables");
extern __shared__ __align__(16) unsigned char smem[];
const unsigned char* lut_tab = smem;  // [256][LUT_ROW] if LUT_BYTES
float* qs = reinterpret_cast<float*>(smem + LUT_BYTES);        // [8][D]
unsigned char* ring = smem + LUT_BYTES + 8 * D * sizeof(float);  // [NW][STAGES][STAGE]

const int tid = threadIdx.x;
const int warp = tid >> 5, lane = tid & 31;
const int r = lane >> 2, c = lane & 3;
static_assert(PROBE >= 0 && PROBE <= 4, "PROBE 0..4");
if constexpr (PROBE == 3) return;
// PROBE 4 (timeline): this warp's stamps (lane 0's are printed). Why: the 128K call spends ~5.8
// us over its bytes' copy time in the loop's ramp and drain (session 32's probes); per-warp
// stamps split the ramp (first tiles of every CTA at once) from the drain (the last tiles and
// the CTA's combine while DRAM idles).
constexpr bool TIMELINE = PROBE == 4;
unsigned long long tl_g0 = 0, tl_g4 = 0;
long long tl_c[5] = {0, 0, 0, 0, 0};
auto tl_stamp = [&](int k) {
  if constexpr (TIMELINE) {
    tl_c[k] = clock64();
    if (k == 0) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tl_g0));
    if (k == 4) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tl_g4));
  }
};
tl_stamp(0);
const int split = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
const int S = gridDim.x, Hkv = gridDim.y, Hq = Hkv * GQA;
const int len = len_marker_shape[0];
const int cap = k_data_shape[2];
if constexpr (LUT_IMM) {
  // The lookups address the table (at smem) as DYN_SMEM_BASE + offset: fail loudly if the
  // dynamic shared memory starts anywhere else (static shared memory, clusters, another
  // architecture's reservation).
  if (static_cast<unsigned int>(__cvta_generic_to_shared(smem)) != mlxcel_mma::DYN_SMEM_BASE) __trap();
}

// This CTA's tiles, then this warp's: tiles tb + warp, tb + warp + NW, ...
// LIGHT (tiles, 0 = off): the splits are sized for LIGHT more tiles than the sequence holds,
// so the last split (the one holding position len - 1) gets between LIGHT and LIGHT + S - 1
// fewer tiles than the others. Why: with MLXCEL_ATTN_APPEND that split's CTA also encodes and
// writes the step's key and value before its barrier, and the timeline probe (H200, session 46,
// turbo4 at 128K) put its first tile 2.0 us after the other splits' and its end 1.2 us after
// theirs although it had 15 fewer tiles: it set each launch's end. Both attention kernels (with
// and without the append) split the same way, so their outputs stay bit-identical to each other.
const int n_tiles = (len + 15) / 16;
const int per = (n_tiles + LIGHT + S - 1) / S;
const int tb = split * per;
const int te = min(n_tiles, tb + per);
const int count = (PROBE == 0 || TIMELINE) && te - tb - warp > 0 ? (te - tb - warp + NW - 1) / NW : 0;

const long long base_row = (static_cast<long long>(b) * Hkv + kvh) * cap;
const unsigned char* kg = reinterpret_cast<const unsigned char*>(k_data) + base_row * KROW;
const unsigned char* vg = reinterpret_cast<const unsigned char*>(v_data) + base_row * VROW;
const unsigned char* kag = reinterpret_cast<const unsigned char*>(k_aux) + base_row * 2;
const unsigned char* vag = reinterpret_cast<const unsigned char*>(v_aux) + base_row * 2;
unsigned char* my_ring = ring + warp * STAGES * STAGE;

// Stage tile i of this warp (16 rows of K, V and their factors) into slot i % STAGES.
auto issue = [&](int i) {
  const int t0 = (tb + warp + i * NW) * 16;
  unsigned char* st = my_ring + (i % STAGES) * STAGE;
#pragma unroll
  for (int ch = lane; ch < K_BYTES / 16; ch += 32) {
    const int row = ch * 16 / KROW;
    mlxcel_mma::cp_async16(st + swz_chunk(ch, k_swz(row, ch)) * 16, kg + static_cast<long long>(t0) * KROW + ch * 16, t0 + row < len);
  }
#pragma unroll
  for (int ch = lane; ch < V_BYTES / 16; ch += 32) {
    const int row = ch * 16 / VROW;
    mlxcel_mma::cp_async16(st + K_BYTES + swz_chunk(ch, v_swz(row)) * 16, vg + static_cast<long long>(t0) * VROW + ch * 16, t0 + row < len);
  }
  // Factors: two 16-byte chunks of 8 rows each (rows past the end are masked in compute).
  if constexpr (KFMT != 0) {
    if (lane < 2) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + lane * 16, kag + static_cast<long long>(t0) * 2 + lane * 16, t0 + 8 * lane < cap);
  }
  if constexpr (VFMT != 0) {
    if (lane >= 2 && lane < 4) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + KA_BYTES + (lane - 2) * 16, vag + static_cast<long long>(t0) * 2 + (lane - 2) * 16, t0 + 8 * (lane - 2) < cap);
  }
};

// HOIST: the same copies with their addressing set up once. issue() is called for tiles 0, 1,
// 2, ... in order, so each stream keeps a per-lane global pointer that advances by one tile
// stride (NW tiles of 16 rows) per call, and the slot offsets (lane constants) are computed
// from compile-time trip counts; ncu found the kernel issue-bound and NVRTC's SASS spent ~70
// of its ~427 loop instructions per tile on recomputing these 64-bit addresses. Same bytes
// copied to the same places: the outputs are bit-identical.
constexpr int TSTRIDE = NW * 16;  // tokens from one of this warp's tiles to its next
int next_t0 = (tb + warp) * 16;
const unsigned char* kp = kg + static_cast<long long>(next_t0) * KROW + lane * 16;
const unsigned char* vp = vg + static_cast<long long>(next_t0) * VROW + lane * 16;
const unsigned char* fp = (lane < 2 ? kag + lane * 16 : vag + (lane - 2) * 16) + static_cast<long long>(next_t0) * 2;
// FCP1 (with two factor sides): the factor rows' copy of issue_next as one copy on lanes 0-3
// against a bound computed once (cap - 8 for the second 8 rows of a chunk) instead of one copy
// per side, each recomputing its bound (NVRTC SASS of the turbo4 pair loop: each refill
// reloads cap and builds two predicates). The same chunks into the same bytes: bit-identical.
constexpr bool FCP1_ON = FCP1 && KFMT != 0 && VFMT != 0;
const int fcap = cap - 8 * (lane & 1);
// PIN (with LAZY and MASKL): the lanes' constant slot offsets (the refill's destinations here,
// the K and V phases' reads below) computed once and passed through an empty asm, so NVVM
// cannot recompute them from the lane inside the loop. Why: with LAZY and MASKL together NVVM did
// (NVRTC SASS of the turbo4 pair loop with VSEL too: the swizzled offsets rebuilt in every
// pair, 615 instructions per pair instead of 554 with the pins; with --maxrregcount=168, which
// MLX's compile does not pass, it kept them). Pinned with LAZY alone the loop grew 596 -> 603,
// so only that pairing pins. Same offsets: the same bytes.
constexpr bool PIN = LAZY && MASKL;
auto pin = [](int x) {
  if constexpr (PIN) asm("" : "+r"(x));
  return x;
};
// This lane's chunk j of a tile's K (V) codes: its slot offset, and its row of the tile in `row`.
auto k_dst_at = [&](int j, int& row) {
  const int ch = lane + 32 * j;
  row = ch * 16 / KROW;
  return swz_chunk(ch, k_swz(row, ch)) * 16;
};
auto v_dst_at = [&](int j, int& row) {
  const int ch = lane + 32 * j;
  row = ch * 16 / VROW;
  return K_BYTES + swz_chunk(ch, v_swz(row)) * 16;
};
// Rounds of 32 chunks per tile side (the last one partial for 2- and 3-bit rows).
constexpr int K_CH = (KROW + 31) / 32, V_CH = (VROW + 31) / 32;
// Without PIN the arrays are left unset and unread (the build's code as before PIN).
int k_dst[K_CH], k_dst_row[K_CH], v_dst[V_CH], v_dst_row[V_CH];
if constexpr (PIN) {
#pragma unroll
  for (int j = 0; j < K_CH; ++j) {
    k_dst[j] = pin(k_dst_at(j, k_dst_row[j]));
    k_dst_row[j] = pin(k_dst_row[j]);
  }
#pragma unroll
  for (int j = 0; j < V_CH; ++j) {
    v_dst[j] = pin(v_dst_at(j, v_dst_row[j]));
    v_dst_row[j] = pin(v_dst_row[j]);
  }
}
auto issue_next = [&](unsigned char* st) {
  const int rem = len - next_t0;  // rows of this tile inside the sequence
  // A tile's K (V) bytes are KROW (VROW) 16-byte chunks; where that is not a multiple of 32 (2-
  // and 3-bit rows) the last round's lanes past it copy nothing (a zero-filling copy would still
  // write its 16 bytes past the tile).
#pragma unroll
  for (int j = 0; j < K_CH; ++j) {
    if (KROW % 32 == 0 || lane + 32 * j < KROW) {
      int row;
      const int off = PIN ? k_dst[j] : k_dst_at(j, row);
      mlxcel_mma::cp_async16(st + off, kp + 512 * j, (PIN ? k_dst_row[j] : row) < rem);
    }
  }
#pragma unroll
  for (int j = 0; j < V_CH; ++j) {
    if (VROW % 32 == 0 || lane + 32 * j < VROW) {
      int row;
      const int off = PIN ? v_dst[j] : v_dst_at(j, row);
      mlxcel_mma::cp_async16(st + off, vp + 512 * j, (PIN ? v_dst_row[j] : row) < rem);
    }
  }
  if constexpr (FCP1_ON) {
    // FCP1: both sides' factor rows are 32 bytes each and adjacent in the slot, so lanes 0-3
    // copy them with one predicated copy (lane & 1: the chunk's second 8 rows).
    if (lane < 4) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + lane * 16, fp, next_t0 < fcap);
  } else {
    if constexpr (KFMT != 0) {
      if (lane < 2) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + lane * 16, fp, next_t0 + 8 * lane < cap);
    }
    if constexpr (VFMT != 0) {
      if (lane >= 2 && lane < 4) mlxcel_mma::cp_async16(st + K_BYTES + V_BYTES + KA_BYTES + (lane - 2) * 16, fp, next_t0 + 8 * (lane - 2) < cap);
    }
  }
  kp += static_cast<long long>(TSTRIDE) * KROW;
  vp += static_cast<long long>(TSTRIDE) * VROW;
  fp += TSTRIDE * 2;
  next_t0 += TSTRIDE;
};

// QSWZ: q's 16-byte chunks XOR-permuted within their row's aligned groups of 8, so that the
// A-fragment reads below are conflict-free. Without it every lane (r, c) of one LDS.128 reads
// chunk c * DK / 4 + s of row r: rows are D floats and the c blocks DK floats apart, all
// multiples of the 128 bytes the banks span, so a phase's 8 lanes (r in {2k, 2k + 1}, c in
// 0..3) hit one group of 4 banks (ncu source counters at 32K, session 18: ~7% of the
// kernel's stall samples on these reads). The key (c + 4 (r & 1) for D = 128; (c >> 1) + 2
// (r & 1) for D = 64, where a row's c blocks are 4 chunks) separates those 8 lanes; the
// prologue's writes (chunk = lane / (4 / QE) of row g) stay conflict-free. Same values in the
// same places of q's fragments: bit-identical outputs. Measured (H200, session 18, ncu
// medians of 18 launches, turbo4 D=128): 10.43 -> 9.25 us per call at 4K, 19.78 -> 18.54 at
// 32K, 50.43 -> 49.14 at 128K, although ptxas grew the loop 381 -> 393 instructions per tile.
auto q_chunk = [](int row, int n) -> int {
  if constexpr (!QSWZ) return n;
  else if constexpr (D == 128) return n ^ ((n >> 3) + 4 * (row & 1));
  else return n ^ (((n >> 2) >> 1) + 2 * (row & 1));
};
// The ring's first STAGES - 1 tiles of this warp. Without QFIRST they are issued after the
// prologue (below its barrier). Issuing them before it (EARLY, session 18) overlapped the
// first tiles' DRAM latency with the prologue on paper, but measured slower (ncu medians of 18
// launches: +1.2 us per call at 32K, +1.4 us at 128K) and was removed: q's loads then queued
// behind the copies. QFIRST issues them right after each warp's own prologue loads (q, RoPE's
// frequencies, the rotation's signs, or the pair table's codebook), so those loads leave first
// and the copies' DRAM latency overlaps the RoPE, the rotation, the fill and the barrier. Why:
// ncu's source counters at 4K (session 20) put 9% of the call's stall samples on the loop's
// first wait for a tile and 10% on q's loads. Same copies into the same slots, same values:
// bit-identical outputs. QFIRST1 issues only the first of those tiles early and the rest after
// the barrier: with all of them early, ncu's source samples at 32K (session 20) showed the
// first tile's wait gone (82 -> 5 samples) but the barrier's wait grown (45 -> 324), the warps
// arriving late from issuing 4 tiles of copies.
constexpr bool QF = QFIRST || QFIRST1;
// QFIRST2 (with QFIRST1 and PAIR): the first two tiles early instead of one. Why: the paired
// loop's first wait needs tiles 0 and 1, so with one early tile every warp still waited for a
// copy issued at the barrier (the timeline of session 46 at 32K: barrier ~2.1 us after entry,
// first pair ~4.1 us; QFIRST1 was measured in session 21, before pairs).
constexpr int EARLY_TILES = QF ? (QFIRST1 ? ((QFIRST2 && PAIR) ? 2 : 1) : STAGES - 1) : 0;
#ifdef MLXCEL_ATTN_APPEND
// MLXCEL_ATTN_APPEND (the attention-append source only: decode_attention.rs): the CTA whose
// split holds the new position len - 1 writes the step's keys and values into the cache in
// its prologue (below, before the barrier), as the qkv GEMV's folded append does for the
// same formats: turbo4 K and V (KFMT 4, VFMT 4, both rotated), fp16 K with turbo4 V
// (turbo4-asym) and int8 K and V (not rotated), and as fp16_append_kv.cu does for the turbo
// modes' boundary layers (fp16 K, int8 V). Its ring copies the new position's tile only
// after that barrier: where the tile is among its warp's first EARLY_TILES (short contexts),
// this CTA issues no copies before the barrier (app_hold), so none reads the position before
// it is written.
static_assert((KFMT == 4 && VFMT == 4 && ROT_Q && ROT_V) || (KFMT == 0 && VFMT == 4 && ROT_V) ||
                  (KFMT == 1 && VFMT == 1 && !ROT_Q && !ROT_V) || (KFMT == 0 && VFMT == 1 && !ROT_V),
              "the attention append writes turbo4, turbo4-asym, int8 or fp16-K / int8-V sides");
const int app_tile = (len - 1) / 16;
const bool app_cta = (PROBE == 0 || TIMELINE) && tb <= app_tile && app_tile < te;
const bool app_hold = app_cta && (app_tile - tb) / NW < EARLY_TILES;
// The writers: two warps that stage no q head where the group leaves them (GQA <= 6 with 8 or
// more warps), else warps 0 and 1; the key by APP_KW, the value by APP_KW + 1.
constexpr int APP_KW = (NW >= 8 && GQA <= 6) ? GQA : 0;
const bool app_writer = app_cta && (warp == APP_KW || warp == APP_KW + 1);
const long long app_row = static_cast<long long>(b) * Hkv + kvh;
#else
constexpr bool app_hold = false;
#endif
auto prefill = [&](int from, int to) {
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    if (i >= from && i < to) {
      if (i < count) {
        if constexpr (HOIST) issue_next(my_ring + i * STAGE);
        else issue(i);
      }
      mlxcel_mma::cp_commit();
    }
  }
};
// q of the group -> shared (f32), rotated for turbo K: one warp per head, D/32 values per
// lane, the Walsh-Hadamard butterflies in registers and shuffles (no block barriers).
constexpr int QE = D / 32;
#ifdef MLXCEL_ATTN_APPEND
// The writers load their vector at entry: its L2 round trip overlaps the q staging below.
float app_x[QE];
if (app_writer) mlxcel_enc::load_vals<QE>((warp == APP_KW ? k_new : v_new) + app_row * D, lane, app_x);
#endif
for (int g = warp; g < 8; g += NW) {
#ifdef MLXCEL_ATTN_APPEND
  // A writer's padding head (g >= GQA) is stored as zeros without RoPE and the rotation, which
  // would only turn zeros into signed zeros: the writer reaches its encode sooner. Padding heads'
  // scores and outputs are computed and dropped; the real heads' bits do not depend on them.
  const bool pad_skip = app_writer && g >= GQA;
#else
  constexpr bool pad_skip = false;
#endif
  float x[QE];
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    const int d = lane * QE + e;
    x[e] = g < GQA ? static_cast<float>(q[(static_cast<long long>(b) * Hq + kvh * GQA + g) * D + d]) : 0.0f;
  }
  if constexpr (QF) {
    // RoPE's frequencies and the rotation's signs into registers too, then the ring's copies.
    float fr[QE], s1[QE], s2[QE];
    float2 cs[QE];  // RTAB: (cos, sin) from the step's table
#pragma unroll
    for (int e = 0; e < QE; ++e) {
      if constexpr (ROPE_Q && RTAB) cs[e] = reinterpret_cast<const float2*>(inv_freq)[mlxcel_fd::rope_index<QE, TRAD>(lane, e)];
      else if constexpr (ROPE_Q) fr[e] = inv_freq[mlxcel_fd::rope_index<QE, TRAD>(lane, e)];
      if constexpr (ROT_Q) {
        s1[e] = rot_k[lane * QE + e];
        s2[e] = rot_k[32 * QE + lane * QE + e];
      }
    }
    if (g == warp && !app_hold) prefill(0, EARLY_TILES);
    if (!pad_skip) {
      if constexpr (ROPE_Q && RTAB) {
        mlxcel_fd::rope_warp_sc<QE, TRAD>(x, lane, [&](int e, float& sn, float& cn) {
          cn = cs[e].x;
          sn = cs[e].y;
        });
      } else if constexpr (ROPE_Q) {
        mlxcel_fd::rope_warp_by<QE, TRAD>(x, lane, static_cast<float>(len - 1), [&](int e) { return fr[e]; });
      }
      if constexpr (ROT_Q) mlxcel_fd::rotate_warp_by<QE>(x, lane, [&](int k, int e) { return k ? s2[e] : s1[e]; });
    }
  } else if (!pad_skip) {
    if constexpr (ROPE_Q && RTAB) {
      mlxcel_fd::rope_warp_table<QE, TRAD>(x, lane, inv_freq);
    } else if constexpr (ROPE_Q) {
      // q before RoPE: rotate it at the new token's position (len - 1), MLX's formula.
      mlxcel_fd::rope_warp<QE, TRAD>(x, lane, static_cast<float>(len - 1), inv_freq);
    }
    if constexpr (ROT_Q) mlxcel_fd::rotate_warp<QE>(x, lane, rot_k);
  }
#pragma unroll
  for (int e = 0; e < QE; ++e) {
    const int d = lane * QE + e;
    qs[g * D + q_chunk(g, d / 4) * 4 + d % 4] = x[e];
  }
}
// The table fill takes 128 threads: the first 4 warps, or with FILLW in CTAs of 12 or more
// warps, warps 8-11, which stage no q head (the loop above gives warps 0-7 one head each).
// Why: ncu's source counters at 32K (session 18) put ~9% of the stall samples in the fill,
// which warps 0-3 ran after their q head while warps 8-11 idled at the barrier; FILLW also
// loads the codebook's 8 magnitudes before the first store (fill_lut's PRELOAD: the loop's
// loads could not move above its shared stores, 4 rounds of load latency). The same table
// bytes: bit-identical outputs.
constexpr int FILL_WARP0 = (FILLW && NW >= 12) ? 8 : 0;
const int fill_tid = tid - 32 * FILL_WARP0;
// Without FILLW the test is the measured build's `tid < 128` exactly (the same SASS).
const bool fill_warp = FILL_WARP0 > 0 ? (fill_tid >= 0 && fill_tid < 128) : tid < 128;
// QFIRST: warps without a q head issue their copies once the fill's codebook loads have left,
// or at once where they do not fill.
auto after_book = [&]() {
  if constexpr (QF) {
    if (warp >= 8 && !app_hold) prefill(0, EARLY_TILES);
  }
};
if constexpr (QF) {
  if (warp >= 8 && !(ANY_LUT && fill_warp) && !app_hold) prefill(0, EARLY_TILES);
}
if (fill_warp) {
  if constexpr (LUT_K) mlxcel_mma::fill_lut<128, LUT_ROW, FILLW>(smem, lut_k, 0, fill_tid, after_book);
  if constexpr (LUT_V) {
    if constexpr (LUT_K) mlxcel_mma::fill_lut<128, LUT_ROW, FILLW>(smem, lut_v, 1, fill_tid);
    else mlxcel_mma::fill_lut<128, LUT_ROW, FILLW>(smem, lut_v, 1, fill_tid, after_book);
  }
  if constexpr (LUT_L) {
    // The books' loads first (as FILLW's PRELOAD), then QFIRST's copies, then the stores.
    const mlxcel_mma::Book2 fk = mlxcel_mma::make_book2<KFMT>(lut_k), fv = mlxcel_mma::make_book2<VFMT>(lut_v);
    after_book();
    auto store16 = [](unsigned char* p, mlxcel_mma::u32 a, mlxcel_mma::u32 b, mlxcel_mma::u32 c2, mlxcel_mma::u32 d2) {
      *reinterpret_cast<uint4*>(p) = make_uint4(a, b, c2, d2);
    };
    mlxcel_mma::fill_lut2(smem, fk, 0, fill_tid, store16);
    mlxcel_mma::fill_lut2(smem, fv, 1, fill_tid, store16);
  }
}
#ifdef MLXCEL_ATTN_APPEND
// The new position's key (RoPE at len - 1, as q) and value, written exactly as the qkv GEMV's
// folded append and the K+V append launches do (mlxcel_enc's turbo4, fp16 and int8 writers).
// The barrier below orders their stores before every copy of the ring.
if (app_writer) {
  const long long dst = app_row * cap + (len - 1);
  unsigned char* const kd = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(k_data));
  unsigned char* const vd = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(v_data));
  __half* const ka = const_cast<__half*>(reinterpret_cast<const __half*>(k_aux));
  __half* const va = const_cast<__half*>(reinterpret_cast<const __half*>(v_aux));
  const float pos = static_cast<float>(len - 1);
  if (warp == APP_KW) {
    // RTAB: the key's RoPE from the step's table here, the encoders' first step (rope_vals).
    constexpr bool K_ROPE = ROPE_Q && !RTAB;
    if constexpr (ROPE_Q && RTAB) mlxcel_fd::rope_warp_table<QE, TRAD>(app_x, lane, inv_freq);
    if constexpr (KFMT == 4) {
      mlxcel_enc::turbo4_vals<D, K_ROPE, TRAD>(app_x, lane, k_mids, lut_k, rot_k, pos, inv_freq, kd, ka, dst);
    } else if constexpr (KFMT == 0) {
      mlxcel_enc::fp16_vals<D, K_ROPE, TRAD>(app_x, lane, pos, inv_freq, reinterpret_cast<__half*>(kd), dst);
    } else {
      mlxcel_enc::int8_vals<D, K_ROPE, TRAD>(app_x, lane, pos, inv_freq, reinterpret_cast<int8_t*>(kd), ka, dst);
    }
  } else {
    if constexpr (VFMT == 4) {
      mlxcel_enc::turbo4_vals<D, false, false>(app_x, lane, v_mids, lut_v, rot_v, 0.0f, inv_freq, vd, va, dst);
    } else {
      mlxcel_enc::int8_vals<D, false, false>(app_x, lane, 0.0f, inv_freq, reinterpret_cast<int8_t*>(vd), va, dst);
    }
  }
}
if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && tid == 0) done[0] = 1;
#endif
__syncthreads();
tl_stamp(1);
if constexpr (PROBE == 2) return;
// A fragments of q (rows = heads; rows 8..15 are zero): step s covers dims c*DK + 4s + [0, 4).
const float qscale = rsqrtf(static_cast<float>(D)) * LOG2E;
mlxcel_mma::u32 qa[KSTEPS][2];
#pragma unroll
for (int s = 0; s < KSTEPS; ++s) {
  if constexpr (LOWK) {
    // 2- and 3-bit keys decode dims j and j + DK / 2 of a lane's slice into one half2
    // (k_row_low): step s takes j = 2s and 2s + 1, and q's registers pair the same dims.
    auto qv = [&](int j) {
      const int dd = c * DK + j;
      return qs[r * D + q_chunk(r, dd / 4) * 4 + dd % 4] * qscale;
    };
    qa[s][0] = mlxcel_mma::pack_half2(qv(2 * s), qv(2 * s + DK / 2));
    qa[s][1] = mlxcel_mma::pack_half2(qv(2 * s + 1), qv(2 * s + 1 + DK / 2));
  } else {
    const float* x = qs + r * D + q_chunk(r, (c * DK + 4 * s) / 4) * 4;
    qa[s][0] = mlxcel_mma::pack_half2(x[0] * qscale, x[1] * qscale);
    qa[s][1] = mlxcel_mma::pack_half2(x[2] * qscale, x[3] * qscale);
  }
}
mlxcel_mma::Book4 bk = {0, 0, 0, 0}, bv = {0, 0, 0, 0};
if constexpr (KFMT == 4 && !LUT_K) bk = mlxcel_mma::make_book4(lut_k);
if constexpr (VFMT == 4 && !LUT_V) bv = mlxcel_mma::make_book4(lut_v);
mlxcel_mma::Book2 bk2 = {0, 0}, bv2 = {0, 0};
if constexpr (LOWK && !LUT_L) bk2 = mlxcel_mma::make_book2<KFMT>(lut_k);
if constexpr (LOWV && !LUT_L) bv2 = mlxcel_mma::make_book2<VFMT>(lut_v);
// LUT_L: this lane's copies of K's and V's entries, and the table's 8-byte load (by an
// immediate offset with LUTI, as lut_pair's).
const mlxcel_mma::u32 lut2_lane_k = mlxcel_mma::lut2_lane(lane, 0), lut2_lane_v = mlxcel_mma::lut2_lane(lane, 1);
auto lut2_load = [&](mlxcel_mma::u32 addr, mlxcel_mma::u32& lo, mlxcel_mma::u32& hi) {
  if constexpr (LUT_IMM) {
    asm("ld.shared.v2.u32 {%0, %1}, [%2+%3];" : "=r"(lo), "=r"(hi) : "r"(addr), "n"(mlxcel_mma::DYN_SMEM_BASE));
  } else {
    const uint2 w = *reinterpret_cast<const uint2*>(lut_tab + addr);
    lo = w.x;
    hi = w.y;
  }
};
// This lane's table entries (lut_pair): offsets in a 256-byte row, K's half then V's.
const mlxcel_mma::u32 lut_lane_k = 4u * lane;
const mlxcel_mma::u32 lut_lane_v = lut_lane_k + 128u;

float o[MT][4];
#pragma unroll
for (int j = 0; j < MT; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
float m_run = mlxcel_fd::neg_inf(), l_run = 0.0f;
// KT: this lane's second head (2c + 1; m_run / l_run then hold head 2c). l_run holds the sum
// over this lane's tokens only (r and 8 + r of each tile) until the end.
float m_run1 = mlxcel_fd::neg_inf(), l_run1 = 0.0f;

prefill(app_hold ? 0 : EARLY_TILES, STAGES - 1);

// This lane's tokens of a tile in S's C fragment and P^T's B fragment.
const int toks[4] = {2 * c, 2 * c + 1, 8 + 2 * c, 9 + 2 * c};
// One tile in three phases (the loop below runs them in this order).
// K phase: S = q K^T for the tile's 16 tokens.
// This lane's KW words of K row krow of the tile in slot st (bytes [c * KROW / 4, + KROW / 4)),
// read where the ring's swizzle put them.
// The slot offset of 16-byte chunk u / 4 of this lane's K bytes in row krow, where the ring
// put it; PIN: those of rows r and 8 + r (the only rows the K phases read: krow = h * 8 + r).
auto k_src_at = [&](int krow, int u) {
  const int n = (krow * KROW + c * (KROW / 4)) / 16 + u / 4;
  return swz_chunk(n, k_swz(krow, n)) * 16;
};
int k_src[2][(KW + 3) / 4];
if constexpr (PIN) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int u = 0; u < KW; u += 4) k_src[h][u / 4] = pin(k_src_at(h * 8 + r, u));
  }
}
auto k_row_words = [&](const unsigned char* st, int krow, mlxcel_mma::u32 (&w)[KW]) {
  const mlxcel_mma::u32* kw = reinterpret_cast<const mlxcel_mma::u32*>(st + krow * KROW + c * (KROW / 4));
#pragma unroll
  for (int u = 0; u < KW; u += 4) {
    if constexpr (KW % 4 == 0) {
      uint4 x;
      if constexpr (PIN) x = *reinterpret_cast<const uint4*>(st + k_src[krow >= 8][u / 4]);
      else x = *reinterpret_cast<const uint4*>(st + k_src_at(krow, u));
      w[u] = x.x; w[u + 1] = x.y; w[u + 2] = x.z; w[u + 3] = x.w;
    } else {
#pragma unroll
      for (int e = 0; e < KW - u && e < 4; ++e) w[u + e] = kw[u + e];
    }
  }
};
// 2- and 3-bit keys: row krow's dims c * DK + j and + DK / 2 as half2 p[j], j < DK / 2. The
// lane's DK 2-bit fields are D / 16 bytes at c * D / 16 (two words for D 128: the slice's first
// and second halves; one for D 64, whose halves are its low and high 16 bits); 3-bit rows follow
// them with D / 8 bytes of sign bits, the lane's D / 32 at D / 4 + c * D / 32 (bit j: dim j).
// The rows are not swizzled (k_swz: rows of 16-48 bytes).
auto k_row_low = [&](const unsigned char* st, int krow, mlxcel_mma::u32 (&p)[DK / 2]) {
  const unsigned char* row = st + krow * KROW;
  mlxcel_mma::u32 a, b2, sab = 0;
  if constexpr (D == 128) {
    const uint2 m = *reinterpret_cast<const uint2*>(row + c * 8);
    a = m.x;
    b2 = m.y;
    if constexpr (KFMT == 3) sab = *reinterpret_cast<const mlxcel_mma::u32*>(row + D / 4 + c * 4);
  } else {
    a = *reinterpret_cast<const mlxcel_mma::u32*>(row + c * 4);
    b2 = a >> 16;
    if constexpr (KFMT == 3) {
      // Bits 0-7 (dims 0-7) stay, bits 8-15 (dims 8-15) move to 16-23.
      sab = mlxcel_mma::prmt(*reinterpret_cast<const unsigned short*>(row + D / 4 + c * 2), 0u, 0x4140u);
    }
  }
  if constexpr (LUT_L) mlxcel_mma::decode_pairs2_lut<DK / 2, KFMT == 3>(lut2_load, lut2_lane_k, a, b2, sab, p);
  else mlxcel_mma::decode_pairs2<DK / 2, KFMT == 3>(bk2, a, b2, sab, p);
};
// KT: S^T = K q^T instead, one m16n8k16 chain per tile: A = the tile's 16 decoded K rows
// (rows r and 8 + r of this lane: the same bytes and decoded values the two n-tiles below use
// as B), B = q^T (the same registers as q's A fragments: rows r of A and columns r of B hold
// the same lane's values). Why: with q as A its rows 8..15 are zero, and ptxas rebuilds each
// mma's four-register A operand around the zeros (NVRTC SASS of the turbo4 D=128 GQA-4 loop:
// 42 moves in 401 instructions per tile) and runs 16 mmas where 8 carry the work. C is then
// S^T: this lane holds tokens r and 8 + r of heads 2c and 2c + 1 (softmax_phase's KT branch;
// movmatrix turns its P into P^T's B fragment). Only sacc[0] is used.
// k_phase_t_low: the same for 2- and 3-bit keys (k_row_low's pairs and q's matching order).
auto k_phase_t_low = [&](const unsigned char* st, float (&acc)[4]) {
  acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
  mlxcel_mma::u32 p0[DK / 2], p1[DK / 2];
  k_row_low(st, r, p0);
  k_row_low(st, 8 + r, p1);
#pragma unroll
  for (int s = 0; s < KSTEPS; ++s) mlxcel_mma::mma(acc, p0[2 * s], p1[2 * s], p0[2 * s + 1], p1[2 * s + 1], qa[s][0], qa[s][1]);
};
auto k_phase_t_words = [&](const unsigned char* st, float (&acc)[4]) {
  acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
  mlxcel_mma::u32 w[2][KW];
#pragma unroll
  for (int h = 0; h < 2; ++h) k_row_words(st, h * 8 + r, w[h]);
  if constexpr (KFMT == 0) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) mlxcel_mma::mma(acc, w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1], qa[s][0], qa[s][1]);
  } else if constexpr (KFMT == 1) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) {
      mlxcel_mma::u32 b0[2], b1[2];
      mlxcel_mma::decode4_i8(w[0][s], b0);
      mlxcel_mma::decode4_i8(w[1][s], b1);
      mlxcel_mma::mma(acc, b0[0], b1[0], b0[1], b1[1], qa[s][0], qa[s][1]);
    }
  } else {
#pragma unroll
    for (int u = 0; u < KW; ++u) {
      mlxcel_mma::u32 b0[4], b1[4];
      if constexpr (LUT_K) {
        mlxcel_mma::decode8_t4_lut<LUT_IMM>(lut_tab, w[0][u], lut_lane_k, b0);
        mlxcel_mma::decode8_t4_lut<LUT_IMM>(lut_tab, w[1][u], lut_lane_k, b1);
      } else {
        mlxcel_mma::decode8_t4(bk, w[0][u], b0);
        mlxcel_mma::decode8_t4(bk, w[1][u], b1);
      }
      mlxcel_mma::mma(acc, b0[0], b1[0], b0[1], b1[1], qa[2 * u][0], qa[2 * u][1]);
      mlxcel_mma::mma(acc, b0[2], b1[2], b0[3], b1[3], qa[2 * u + 1][0], qa[2 * u + 1][1]);
    }
  }
};
auto k_phase_t = [&](const unsigned char* st, float (&acc)[4]) {
  if constexpr (LOWK) k_phase_t_low(st, acc);
  else k_phase_t_words(st, acc);
};
auto k_phase_n_low = [&](const unsigned char* st, float (&sacc)[2][4]) {
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    sacc[nt][0] = sacc[nt][1] = sacc[nt][2] = sacc[nt][3] = 0.0f;
    mlxcel_mma::u32 p[DK / 2];
    k_row_low(st, nt * 8 + r, p);
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) mlxcel_mma::mma(sacc[nt], qa[s][0], 0u, qa[s][1], 0u, p[2 * s], p[2 * s + 1]);
  }
};
auto k_phase_n_words = [&](const unsigned char* st, float (&sacc)[2][4]) {
  // ---- S = q K^T for tokens [t0, t0 + 16): two n-tiles of 8 tokens.
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    sacc[nt][0] = sacc[nt][1] = sacc[nt][2] = sacc[nt][3] = 0.0f;
    mlxcel_mma::u32 w[KW];
    k_row_words(st, nt * 8 + r, w);
    if constexpr (KFMT == 0) {
#pragma unroll
      for (int s = 0; s < KSTEPS; ++s) mlxcel_mma::mma(sacc[nt], qa[s][0], 0u, qa[s][1], 0u, w[2 * s], w[2 * s + 1]);
    } else if constexpr (KFMT == 1) {
#pragma unroll
      for (int s = 0; s < KSTEPS; ++s) {
        mlxcel_mma::u32 bb[2];
        mlxcel_mma::decode4_i8(w[s], bb);
        mlxcel_mma::mma(sacc[nt], qa[s][0], 0u, qa[s][1], 0u, bb[0], bb[1]);
      }
    } else {
#pragma unroll
      for (int u = 0; u < KW; ++u) {
        mlxcel_mma::u32 bb[4];
        if constexpr (LUT_K) mlxcel_mma::decode8_t4_lut<LUT_IMM>(lut_tab, w[u], lut_lane_k, bb);
        else mlxcel_mma::decode8_t4(bk, w[u], bb);
        mlxcel_mma::mma(sacc[nt], qa[2 * u][0], 0u, qa[2 * u][1], 0u, bb[0], bb[1]);
        mlxcel_mma::mma(sacc[nt], qa[2 * u + 1][0], 0u, qa[2 * u + 1][1], 0u, bb[2], bb[3]);
      }
    }
  }
};
auto k_phase_n = [&](const unsigned char* st, float (&sacc)[2][4]) {
  if constexpr (LOWK) k_phase_n_low(st, sacc);
  else k_phase_n_words(st, sacc);
};
auto k_phase = [&](const unsigned char* st, float (&sacc)[2][4]) {
  if constexpr (KT) k_phase_t(st, sacc[0]);
  else k_phase_n(st, sacc);
};
// Softmax: scores scaled by the K factors, masked past len, the running max and sum, o
// rescaled when the max grew; P^T's B fragments with the V factors folded in.
// FTZ: exp2 with denormal results flushed to zero (exp2_ftz in decode_attention_mma.cuh); NVRTC
// SASS of the turbo4 D=128 GQA-4 loop (12 warps): 399 -> 384 instructions per tile.
auto ex2 = [](float x) { return FTZ ? mlxcel_mma::exp2_ftz(x) : exp2f(x); };
// KT: the same from S^T's fragment (k_phase_t), in two parts so that PAIR can run one update
// over two tiles. scores_t: this lane's four scores of a tile, (token r, head 2c), (r, 2c + 1),
// (8 + r, 2c), (8 + r, 2c + 1), scaled by the K factors and masked past len; the V factors of
// tokens r and 8 + r. `mask` (BoolTag): false where every token of the tile is inside the
// sequence (MASKL's unmasked pairs), which skips the masks.
auto scores_t = [&](auto mask, const unsigned char* st, int t0, const float (&sacc)[4], float (&sc)[4], float (&vf)[2]) {
  constexpr bool MASK = decltype(mask)::value;
#pragma unroll
  for (int e = 0; e < 4; ++e) sc[e] = sacc[e];
  vf[0] = vf[1] = 1.0f;
  if constexpr (KFMT != 0) {
    const __half* ka = reinterpret_cast<const __half*>(st + K_BYTES + V_BYTES);
    const float f0 = __half2float(ka[r]), f1 = __half2float(ka[8 + r]);
    sc[0] *= f0; sc[1] *= f0; sc[2] *= f1; sc[3] *= f1;
  }
  if constexpr (VFMT != 0) {
    const __half* va = reinterpret_cast<const __half*>(st + K_BYTES + V_BYTES + KA_BYTES);
    vf[0] = __half2float(va[r]);
    vf[1] = __half2float(va[8 + r]);
  }
  if constexpr (MASK) {
    if (t0 + r >= len) sc[0] = sc[1] = mlxcel_fd::neg_inf();
    if (t0 + 8 + r >= len) sc[2] = sc[3] = mlxcel_fd::neg_inf();
  }
  if constexpr (VZ && MASK) {
    // VZ: a masked token's V factor (a never-written slot may hold NaN) is zeroed here, so
    // update_t can fold the factors into P without a select per weight (below).
    if (t0 + r >= len) vf[0] = 0.0f;
    if (t0 + 8 + r >= len) vf[1] = 0.0f;
  }
};
// o *= alpha: O^T's fragment holds heads 2c and 2c + 1 (a0, a1; KT has them in this lane, the
// untransposed softmax shuffles them over).
auto scale_o = [&](float a0, float a1) {
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    o[j][0] *= a0; o[j][1] *= a1; o[j][2] *= a0; o[j][3] *= a1;
  }
};
// update_t: the online softmax over N tiles' scores (sc[N][4], vf[N][2]): each head's max over
// the tiles' tokens (this lane's, then across r; every tile's first token is inside the
// sequence, so the maxima are finite), o rescaled once, and P^T's B fragments pb[2N]. `mask`
// as scores_t's: unmasked tiles' factors are all written, so their weights need no select.
auto update_t = [&](auto mask, auto& sc, auto& vf, mlxcel_mma::u32* pb) {
  constexpr bool MASK = decltype(mask)::value;
  constexpr int N = sizeof(sc) / sizeof(sc[0]);
  float mx0 = fmaxf(sc[0][0], sc[0][2]), mx1 = fmaxf(sc[0][1], sc[0][3]);
#pragma unroll
  for (int n = 1; n < N; ++n) {
    mx0 = fmaxf(mx0, fmaxf(sc[n][0], sc[n][2]));
    mx1 = fmaxf(mx1, fmaxf(sc[n][1], sc[n][3]));
  }
#pragma unroll
  for (int off = 4; off < 32; off *= 2) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
  }
  if constexpr (LAZY) {
    // LAZY: the reference maxima m_run / m_run1 move only when a score passes them by more
    // than LAZY_TAU (log2 units), decided for the whole warp by one vote; then o and the sums
    // are rescaled as below. Otherwise the weights are exp2(s - m_run) <= 2^LAZY_TAU and o is
    // left alone: the pair loop's 32 multiplies of o, two exponentials and two maxima skipped
    // in most iterations (the max of a warp's later tokens rarely passes its first tokens' by
    // a factor of 16). Exact in real arithmetic (o, l and m share one reference; the combine
    // and the merge take any), so the outputs differ from the eager update in rounding only.
    // The first tile passes (m_run = -inf). Weights <= 16 keep P times a V factor inside fp16
    // for factors below 4094 (the eager update's bound is 65504); l stays >= 1 (FTZ's
    // argument holds).
    const bool over = mx0 > m_run + LAZY_TAU || mx1 > m_run1 + LAZY_TAU;
    if (__any_sync(0xffffffffu, over)) {
      const float mn0 = fmaxf(m_run, mx0), mn1 = fmaxf(m_run1, mx1);
      const float a0 = ex2(m_run - mn0), a1 = ex2(m_run1 - mn1);  // 0 on the first tile
      l_run *= a0;
      l_run1 *= a1;
      scale_o(a0, a1);
      m_run = mn0;
      m_run1 = mn1;
    }
  }
  const float mn0 = LAZY ? m_run : fmaxf(m_run, mx0), mn1 = LAZY ? m_run1 : fmaxf(m_run1, mx1);
  const float a0 = LAZY ? 1.0f : ex2(m_run - mn0), a1 = LAZY ? 1.0f : ex2(m_run1 - mn1);  // 0 on the first tile
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const float p0 = ex2(sc[n][0] - mn0), p1 = ex2(sc[n][1] - mn1), p2 = ex2(sc[n][2] - mn0), p3 = ex2(sc[n][3] - mn1);
    // LAZY: the first tile's sums start s0 and s1 (0 + x is not folded away in IEEE).
    if (LAZY && n == 0) {
      s0 = p0 + p2;
      s1 = p1 + p3;
    } else {
      s0 += p0 + p2;
      s1 += p1 + p3;
    }
    // P (tokens x heads) as two 8x8 fp16 blocks, V factors folded in, masked tokens exactly
    // 0; transposed in registers they are P^T's B fragments (tokens 2c, 2c + 1 / 8 + 2c,
    // 9 + 2c of head r).
    const float v0 = vf[n][0], v1 = vf[n][1];
    // Without VZ a weight is p * v where p > 0 and exactly 0 elsewhere (a masked token's p is
    // 0 and its factor may be NaN). With VZ (masked factors zeroed by scores_t) p * v alone is
    // the same value: p >= 0 and v >= 0 finite (a norm or an absmax scale), so p = 0 gives +0
    // either way. Only a stored factor of +inf with p = 0 would differ (NaN against 0).
    // In an unmasked tile (MASKL) every factor was written: p * v as with VZ.
    auto weight = [](float p, float v) { return (VZ || !MASK) ? p * v : (p > 0.0f ? p * v : 0.0f); };
    pb[2 * n] = mlxcel_mma::transpose8x8(mlxcel_mma::pack_half2(weight(p0, v0), weight(p1, v0)));
    pb[2 * n + 1] = mlxcel_mma::transpose8x8(mlxcel_mma::pack_half2(weight(p2, v1), weight(p3, v1)));
  }
  if constexpr (LAZY) {
    l_run += s0;
    l_run1 += s1;
  } else {
    l_run = l_run * a0 + s0;
    l_run1 = l_run1 * a1 + s1;
    const bool grew = mn0 > m_run || mn1 > m_run1;
    m_run = mn0;
    m_run1 = mn1;
    if (RSALL || __any_sync(0xffffffffu, grew)) scale_o(a0, a1);
  }
};
auto softmax_phase_t = [&](const unsigned char* st, int t0, const float (&sacc)[4], mlxcel_mma::u32& pb0, mlxcel_mma::u32& pb1) {
  float sc[1][4], vf[1][2];
  scores_t(mlxcel_mma::BoolTag<true>{}, st, t0, sacc, sc[0], vf[0]);
  mlxcel_mma::u32 pb[2];
  update_t(mlxcel_mma::BoolTag<true>{}, sc, vf, pb);
  pb0 = pb[0];
  pb1 = pb[1];
};
auto softmax_phase_n = [&](const unsigned char* st, int t0, float (&sacc)[2][4], mlxcel_mma::u32& pb0, mlxcel_mma::u32& pb1) {
  // Scores of head r for tile tokens 2c, 2c+1, 8+2c, 9+2c.
  float sc[4] = {sacc[0][0], sacc[0][1], sacc[1][0], sacc[1][1]};
  float vf[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  if constexpr (KFMT != 0) {
    const __half2* ka = reinterpret_cast<const __half2*>(st + K_BYTES + V_BYTES);
    const float2 f0 = __half22float2(ka[c]), f1 = __half22float2(ka[4 + c]);
    sc[0] *= f0.x; sc[1] *= f0.y; sc[2] *= f1.x; sc[3] *= f1.y;
  }
  if constexpr (VFMT != 0) {
    const __half2* va = reinterpret_cast<const __half2*>(st + K_BYTES + V_BYTES + KA_BYTES);
    const float2 f0 = __half22float2(va[c]), f1 = __half22float2(va[4 + c]);
    vf[0] = f0.x; vf[1] = f0.y; vf[2] = f1.x; vf[3] = f1.y;
  }
  float mx = mlxcel_fd::neg_inf();
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    if (t0 + toks[e] >= len) sc[e] = mlxcel_fd::neg_inf();
    mx = fmaxf(mx, sc[e]);
  }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(m_run, mx);
  const float alpha = ex2(m_run - m_new);  // 0 on the first tile (m_run = -inf)
  float p[4], psum = 0.0f;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    p[e] = ex2(sc[e] - m_new);  // masked: exp2(-inf) = 0
    psum += p[e];
  }
  l_run = l_run * alpha + psum;
  const bool grew = m_new > m_run;
  m_run = m_new;
  // RSALL: every tile, without the vote and its branch (alpha = exp2(0) = 1 exactly where the
  // max did not grow, so o is unchanged there); ptxas can then schedule across the rescale.
  if (RSALL || __any_sync(0xffffffffu, grew)) {
    const float a0 = __shfl_sync(0xffffffffu, alpha, 8 * c);
    const float a1 = __shfl_sync(0xffffffffu, alpha, 8 * c + 4);
    scale_o(a0, a1);
  }
  // B fragments of P^T (k = tokens, n = heads), V factor folded in; masked tokens exactly 0.
  pb0 = mlxcel_mma::pack_half2(p[0] > 0.0f ? p[0] * vf[0] : 0.0f, p[1] > 0.0f ? p[1] * vf[1] : 0.0f);
  pb1 = mlxcel_mma::pack_half2(p[2] > 0.0f ? p[2] * vf[2] : 0.0f, p[3] > 0.0f ? p[3] * vf[3] : 0.0f);
};
auto softmax_phase = [&](const unsigned char* st, int t0, float (&sacc)[2][4], mlxcel_mma::u32& pb0, mlxcel_mma::u32& pb1) {
  if constexpr (KT) softmax_phase_t(st, t0, sacc[0], pb0, pb1);
  else softmax_phase_n(st, t0, sacc, pb0, pb1);
};
// V phase: O^T += V^T P^T.
// This lane's V bytes of token toks[e] in a slot: VROW / 8 of them inside one 16-byte chunk
// (VROW <= 128) or, unswizzled, wherever they are (VROW 256: v_swz is 0). PIN: all four once.
auto v_src_at = [&](int e) {
  const int vb = toks[e] * VROW + r * (VROW / 8);
  return K_BYTES + swz_chunk(vb / 16, v_swz(toks[e])) * 16 + (vb & 15);
};
int v_src[4];
if constexpr (PIN) {
#pragma unroll
  for (int e = 0; e < 4; ++e) v_src[e] = pin(v_src_at(e));
}
// 2- and 3-bit values: pairs[h][k] = dim r * DV + k of tokens toks[2h] and toks[2h + 1]. A lane's
// DV 2-bit fields are D / 32 bytes at r * D / 32 of a row (at v_src_at for 2-bit rows, which the
// ring swizzles at D 128 as turbo4's D 64 rows); 3-bit rows (not swizzled) follow them with the
// sign bits, the lane's D / 64 bytes at D / 4 + r * D / 64.
auto v_pairs_low = [&](const unsigned char* st, mlxcel_mma::u32 (&pairs)[2][DV]) {
  auto mag_at = [&](int e) {
    if constexpr (VFMT == 2) return PIN ? v_src[e] : v_src_at(e);
    else return K_BYTES + toks[e] * VROW + r * (D / 32);
  };
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned char* ma = st + mag_at(2 * h);
    const unsigned char* mb = st + mag_at(2 * h + 1);
    mlxcel_mma::u32 a, b2, sab = 0;
    if constexpr (D == 128) {
      a = *reinterpret_cast<const mlxcel_mma::u32*>(ma);
      b2 = *reinterpret_cast<const mlxcel_mma::u32*>(mb);
    } else {
      a = *reinterpret_cast<const unsigned short*>(ma);
      b2 = *reinterpret_cast<const unsigned short*>(mb);
    }
    if constexpr (VFMT == 3) {
      const unsigned char* sa = st + K_BYTES + toks[2 * h] * VROW + D / 4 + r * (D / 64);
      const unsigned char* sb = st + K_BYTES + toks[2 * h + 1] * VROW + D / 4 + r * (D / 64);
      if constexpr (D == 128) {
        sab = mlxcel_mma::prmt(*reinterpret_cast<const unsigned short*>(sa), *reinterpret_cast<const unsigned short*>(sb), 0x5410u);
      } else {
        sab = static_cast<mlxcel_mma::u32>(*sa) | (static_cast<mlxcel_mma::u32>(*sb) << 16);
      }
    }
    if constexpr (LUT_L) mlxcel_mma::decode_pairs2_lut<DV, VFMT == 3>(lut2_load, lut2_lane_v, a, b2, sab, pairs[h]);
    else mlxcel_mma::decode_pairs2<DV, VFMT == 3>(bv2, a, b2, sab, pairs[h]);
  }
};
auto v_phase_low = [&](const unsigned char* st, mlxcel_mma::u32 pb0, mlxcel_mma::u32 pb1) {
  mlxcel_mma::u32 pairs[2][DV];
  v_pairs_low(st, pairs);
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    mlxcel_mma::mma(o[j], pairs[0][2 * j], pairs[0][2 * j + 1], pairs[1][2 * j], pairs[1][2 * j + 1], pb0, pb1);
  }
};
auto v_phase_words = [&](const unsigned char* st, mlxcel_mma::u32 pb0, mlxcel_mma::u32 pb1) {
  // ---- O^T += V^T P^T: A = V^T of tokens (2c, 2c+1) and (8+2c, 9+2c), dims r*DV + [0, DV).
  mlxcel_mma::u32 va[4][VW];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const mlxcel_mma::u32* src;
    if constexpr (PIN) src = reinterpret_cast<const mlxcel_mma::u32*>(st + v_src[e]);
    else src = reinterpret_cast<const mlxcel_mma::u32*>(st + v_src_at(e));
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
      for (int u = 0; u < VW; ++u) {
        if constexpr (LUT_V) mlxcel_mma::decode8x2_t4_lut<LUT_IMM, VSEL>(lut_tab, va[2 * h][u], va[2 * h + 1][u], lut_lane_v, &pairs[h][8 * u]);
        else mlxcel_mma::decode8x2_t4(bv, va[2 * h][u], va[2 * h + 1][u], &pairs[h][8 * u]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    mlxcel_mma::mma(o[j], pairs[0][2 * j], pairs[0][2 * j + 1], pairs[1][2 * j], pairs[1][2 * j + 1], pb0, pb1);
  }
};

auto v_phase = [&](const unsigned char* st, mlxcel_mma::u32 pb0, mlxcel_mma::u32 pb1) {
  if constexpr (LOWV) v_phase_low(st, pb0, pb1);
  else v_phase_words(st, pb0, pb1);
};

// Ring slots without the division (HOIST): the slot after p, and the one before it,
// where tile i + STAGES - 1 goes while tile i is read from p.
auto next_slot = [&](unsigned char* p) { return p + STAGE == my_ring + STAGES * STAGE ? my_ring : p + STAGE; };
auto prev_slot = [&](unsigned char* p) { return p == my_ring ? my_ring + (STAGES - 1) * STAGE : p - STAGE; };
// Refills the ring behind tile i (read from slot cur) with tile i + STAGES - 1, if it exists.
auto refill = [&](int i, unsigned char* cur) {
  if (i + STAGES - 1 < count) {
    if constexpr (HOIST) issue_next(prev_slot(cur));
    else issue(i + STAGES - 1);
  }
};

if constexpr (PAIR) {
  // PAIR (with KT and HOIST): two of this warp's tiles per iteration, one softmax update over
  // their 32 tokens. Why: KT cut the loop's instructions by 9% and the 128K call by 0.7%
  // (session 25): the warps are bound by each tile's dependent chain (ring read, lookups,
  // the S mma chain, the max across lanes, the exponentials, the O mmas) with 3 warps per
  // scheduler, not by issue. Two tiles give ptxas two independent S chains and V phases to
  // interleave, and halve the max reductions, alpha exponentials and o rescales per token.
  // The ring keeps STAGES - 3 copies in flight during a pair (one fewer than the single-tile
  // loop's STAGES - 2 during a tile; both cover the next pair / the next tiles), and is
  // refilled by two tiles per pair, one commit group each. An odd count ends with one tile.
  unsigned char* cur = my_ring;  // slot of tile i
  int i = 0;
  // One pair, tiles i and i + 1 (`mask` as scores_t's).
  auto pair_step = [&](auto mask) {
    mlxcel_mma::cp_wait<STAGES - 3>();
    __syncwarp();
    if (TIMELINE && i == 0) tl_stamp(2);
    unsigned char* nx = next_slot(cur);
    const int t0 = (tb + warp + i * NW) * 16;
    float sa[4], sb[4];
    k_phase_t(cur, sa);
    k_phase_t(nx, sb);
    float sc[2][4], vf[2][2];
    scores_t(mask, cur, t0, sa, sc[0], vf[0]);
    scores_t(mask, nx, t0 + TSTRIDE, sb, sc[1], vf[1]);
    mlxcel_mma::u32 pb[4];
    update_t(mask, sc, vf, pb);
    v_phase(cur, pb[0], pb[1]);
    v_phase(nx, pb[2], pb[3]);
    __syncwarp();  // every lane is done with both slots before they are refilled
    // Tiles i + STAGES - 1 and i + STAGES into the slots of tiles i - 1 and i.
    if (i + STAGES - 1 < count) issue_next(prev_slot(cur));
    mlxcel_mma::cp_commit();
    if (i + STAGES < count) issue_next(cur);
    mlxcel_mma::cp_commit();
    cur = next_slot(nx);
  };
  // MASKL: only a sequence's last tile can hold positions past len (every tile starts inside
  // it), and it is the last tile of the warp that holds it. So the pairs run without the masks
  // (scores_t: 8 selects and the compares per pair; update_t: the select per weight) and leave
  // that tile, with the one before it where the count is even, to the masked one-tile path
  // below (one copy of the pair body in the code, not two). NVRTC SASS of the turbo4 pair loop
  // (D 128, GQA 4): 633 -> 600 instructions per pair. Same values wherever a token is inside
  // the sequence, but the last two tiles' softmax updates are split: rounding differs there.
  // Without MASKL every pair takes the masked body, as before.
  if constexpr (MASKL) {
    const bool last_partial = len % 16 != 0 && count > 0 && tb + warp + (count - 1) * NW == n_tiles - 1;
    const int paired = last_partial ? ((count - 1) & ~1) : count;
    for (; i + 1 < paired; i += 2) pair_step(mlxcel_mma::BoolTag<false>{});
  } else {
    for (; i + 1 < count; i += 2) pair_step(mlxcel_mma::BoolTag<true>{});
  }
  // One tile at a time: an odd count's last tile; with MASKL also the tiles the pairs left (at
  // most two, every copy issued: the ring is not refilled).
  auto one_tile = [&]() {
    mlxcel_mma::cp_wait<0>();
    __syncwarp();
    if (TIMELINE && i == 0) tl_stamp(2);
    float sacc[2][4];
    k_phase(cur, sacc);
    mlxcel_mma::u32 pb0, pb1;
    softmax_phase(cur, (tb + warp + i * NW) * 16, sacc, pb0, pb1);
    v_phase(cur, pb0, pb1);
  };
  if constexpr (MASKL) {
    for (; i < count; ++i) {
      one_tile();
      cur = next_slot(cur);
    }
  } else if (i < count) {
    one_tile();
  }
} else {
  unsigned char* cur = my_ring;  // HOIST: slot i % STAGES, advanced without the division
  for (int i = 0; i < count; ++i) {
    mlxcel_mma::cp_wait<STAGES - 2>();
    __syncwarp();
    const unsigned char* st = HOIST ? cur : my_ring + (i % STAGES) * STAGE;
    const int t0 = (tb + warp + i * NW) * 16;

    float sacc[2][4];
    k_phase(st, sacc);
    mlxcel_mma::u32 pb0, pb1;
    softmax_phase(st, t0, sacc, pb0, pb1);
    v_phase(st, pb0, pb1);

    __syncwarp();  // every lane is done with this slot before it is refilled
    refill(i, cur);
    if constexpr (HOIST) cur = next_slot(cur);
    mlxcel_mma::cp_commit();
  }
}
mlxcel_mma::cp_wait<0>();
tl_stamp(3);

// ---- Merge the CTA's warps (the ring is reused as scratch).
if constexpr (KT) {
  // Heads 2c and 2c + 1: the sums over the lanes' tokens (r = 0..7).
#pragma unroll
  for (int off = 4; off < 32; off *= 2) {
    l_run += __shfl_xor_sync(0xffffffffu, l_run, off);
    l_run1 += __shfl_xor_sync(0xffffffffu, l_run1, off);
  }
} else {
  l_run += __shfl_xor_sync(0xffffffffu, l_run, 1);
  l_run += __shfl_xor_sync(0xffffffffu, l_run, 2);
}
__syncthreads();
float* wacc = reinterpret_cast<float*>(ring);  // [NW][GQA][D]
float* wm = wacc + NW * GQA * D;               // [NW][8]
float* wl = wm + NW * 8;                       // [NW][8]
if constexpr (KT) {
  if (r == 0) {
    wm[warp * 8 + 2 * c] = m_run;
    wl[warp * 8 + 2 * c] = l_run;
    wm[warp * 8 + 2 * c + 1] = m_run1;
    wl[warp * 8 + 2 * c + 1] = l_run1;
  }
} else if (c == 0) {
  wm[warp * 8 + r] = m_run;
  wl[warp * 8 + r] = l_run;
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
// CW: each warp's weight per head, exp2f(m_w - M), computed once by thread (w, g) into shared
// memory (with each head's M) behind one more barrier, instead of by every output of the head
// (D of them, NW exp2f and NW maxima each). Why: the timeline (session 46) put ~2 us between the
// slowest warp's loop end and the CTA's end, and the combine's short_sb stalls and exponentials
// are in it. The same weights from the same arguments, summed in the same order: bit-identical.
float* wf = wl + NW * 8;  // CW: [NW][8] weights, then [8] maxima
static_assert(!CW || (NW * GQA * D + NW * 8 * 3 + 8) * 4 <= NW * STAGES * STAGE, "the combine's scratch fits the ring");
if constexpr (CW) {
  if (tid < NW * GQA) {
    const int w = tid / GQA, g = tid % GQA;
    float M = mlxcel_fd::neg_inf();
#pragma unroll
    for (int u = 0; u < NW; ++u) M = fmaxf(M, wm[u * 8 + g]);
    wf[w * 8 + g] = M != mlxcel_fd::neg_inf() ? exp2f(wm[w * 8 + g] - M) : 0.0f;
    if (w == 0) wf[NW * 8 + g] = M;
  }
  __syncthreads();
}
for (int idx = tid; idx < GQA * D; idx += NT) {
  const int g = idx / D, d = idx % D;
  float M = mlxcel_fd::neg_inf();
  if constexpr (CW) {
    M = wf[NW * 8 + g];
  } else {
#pragma unroll
    for (int w = 0; w < NW; ++w) M = fmaxf(M, wm[w * 8 + g]);
  }
  float acc = 0.0f, L = 0.0f;
  if (M != mlxcel_fd::neg_inf()) {
#pragma unroll
    for (int w = 0; w < NW; ++w) {
      const float f = CW ? wf[w * 8 + g] : exp2f(wm[w * 8 + g] - M);
      acc = fmaf(f, wacc[(w * GQA + g) * D + d], acc);
      if (!CW || d == 0) L = fmaf(f, wl[w * 8 + g], L);
    }
  }
  const long long row = (static_cast<long long>(b) * Hq + kvh * GQA + g) * S + split;
  o_part[row * D + d] = acc;
  if (d == 0) {
    ml[row * 2] = M == mlxcel_fd::neg_inf() ? M : M * 0.6931471805599453f;
    ml[row * 2 + 1] = L;
  }
}
tl_stamp(4);
// TIMELINE: one line per warp of KV head 0 (batch 0) at every 16th context length (bounded
// output: 16 splits x 12 warps per launch). The first wait is stamped in PAIR's loop only (the
// default with the pair table); elsewhere, and for a warp without tiles, it prints -1.
// Read with benchmarks/gpu/attn_timeline.py. With FOLD the lines are printed after the CTA's
// ticket (and by the last CTA after its merge). Why: printed before the ticket, device printf
// delayed every ticket (on an H100 the fold's ticket came ~410 us after the last partials were
// stored, session 69), and the fold's stamps measured the printf, not the ticket's round trip.
auto tl_print_warp = [&]() {
  if constexpr (TIMELINE) {
    if (lane == 0 && kvh == 0 && b == 0 && (len & 15) == 0) {
      printf("MLXCEL_TL %d %d %d %d %d %d %llu %llu %lld %lld %lld %lld\n", len, S, split, NW, warp, count, tl_g0,
             tl_g4, tl_c[1] - tl_c[0], tl_c[2] == 0 ? -1LL : tl_c[2] - tl_c[0], tl_c[3] - tl_c[0],
             tl_c[4] - tl_c[0]);
    }
  }
};
if constexpr (!FOLD) tl_print_warp();

// ---- FOLD: the split merge in this launch. The last CTA of each (batch, KV head) to finish
// combines every split of its GQA heads and applies the inverse V rotation, writing `out`
// (no separate merge_splits launch). Arrival counters `tickets` are persistent and reset by
// the last CTA; a call uses slot `epoch_marker_shape[0] - 1` (mlxcel rotates it over
// FOLD_SLOTS calls, so calls that may run concurrently in one CUDA graph never share one).
if constexpr (FOLD) {
  // FTAIL: no fences. The barrier orders every thread's partials before tid 0's ticket, whose
  // release makes them visible with it; the last CTA's acquire on the same ticket, then its
  // barrier, order its reads after every CTA's stores (qgemv4_qkv_encode.cu's ETAIL).
  if constexpr (!FTAIL) __threadfence();  // this CTA's partials are visible device-wide before its ticket
  __syncthreads();
  // In q's staging area (unused after the prologue), not a static __shared__ variable: the
  // kernel declares none, so its dynamic shared memory starts at DYN_SMEM_BASE (LUTI).
  int& last_cta = *reinterpret_cast<int*>(qs);
  if (tid == 0) {
    const int slot = epoch_marker_shape[0] - 1;
    unsigned int* t = const_cast<unsigned int*>(tickets) + (static_cast<long long>(slot) * gridDim.z + b) * Hkv + kvh;
    unsigned int prev;
    if constexpr (FTAIL) {
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(t) : "memory");
    } else {
      prev = atomicAdd(t, 1u);
    }
    last_cta = prev + 1 == static_cast<unsigned int>(S);
    if (last_cta) atomicExch(t, 0u);  // ready for the next call on this slot
  }
  __syncthreads();
  if (!last_cta) {
    tl_print_warp();
    return;
  }
  if constexpr (!FTAIL) __threadfence();
  // TIMELINE: the fold's tail, which the MLXCEL_TL lines (stamped at the partials' stores) do not
  // reach: %globaltimer when this CTA knows it is the last (after the ticket and its barrier) and
  // when its merged output is stored (after a barrier: every warp's heads), printed by thread 0
  // as one `MLXCEL_TLF len S NW t_last t_end` line per launch (same filter as the warp lines).
  // Why: the fixed time per call (~10 us at 32K, session 67) includes this tail; the warp lines
  // end before it.
  unsigned long long tl_last = 0;
  if constexpr (TIMELINE) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(tl_last));
  auto tl_fold_end = [&]() {
    if constexpr (TIMELINE) {
      __syncthreads();
      if (tid == 0 && kvh == 0 && b == 0 && (len & 15) == 0) {
        unsigned long long t_end;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_end));
        printf("MLXCEL_TLF %d %d %d %llu %llu\n", len, S, NW, tl_last, t_end);
      }
      tl_print_warp();
    }
  };
  // One warp per query head of the group merges it in registers with merge_splits_warp.cu's
  // arithmetic (mlxcel_fd::split_stats, finish_merge): splits s, s + MERGE_P, ... summed apart
  // in order, the parts in order, the inverse rotation on shuffles. No block barrier; the
  // split loop is unrolled so that a lane's loads of 16 splits can be in flight at once. Why:
  // fold v2 (one merge in shared memory with a barrier per Walsh-Hadamard stage, the heads
  // one after another) left the lone last CTA's tail longer than the separate merge launch it
  // replaced (ADR 0005, NOTES sessions 5 and 7). v3 is slower too (H200, session 18: in situ
  // at 32K the turbo4 call took 27.30 us against 20.58 + 4.13 for kernel + separate merge,
  // turbo4 device time per step 2.99 -> 3.11 ms at 32K and 4.45 -> 4.63 ms at 128K; NVRTC
  // SASS: the fold's registers also grow the loop, 383 -> 407 instructions per tile). With
  // FTAIL below (session 31) it costs +0.05 ms per 32K step against the separate merge and saves
  // 0.15-0.26 ms of host, so mlxcel folds where the tail takes that path (fold_fits).
  const long long head0 = static_cast<long long>(b) * Hq + kvh * GQA;
  // FTAIL with at most FTAIL_S splits (16 on the H200 for 8 KV heads at any context: one wave
  // of CTAs): one round trip. Each lane loads split `lane`'s (max, sum) and every split's
  // partial of its dims at once, before any of them is needed; the statistics reduce on
  // shuffles and each split's weight comes from its lane. The operations and their order are
  // split_stats' and the loop's below (max tree, then the weights, the denominator's tree, the
  // splits summed into parts s % MERGE_P in order): the same bits.
  // FT32 (MLXCEL_FOLD_32): up to 2 x FTAIL_S splits, the lanes' statistics as before (one
  // split per lane) and the partials in two rounds of FTAIL_S, the second loaded once the first
  // is summed (both at once would hold 32 x QE floats per lane, growing the kernel's registers
  // and with them the loop's). Why: 4 KV heads at D 128 (Qwen2.5-7B) run 22-33 splits on one
  // wave of CTAs and a separate merge launch. Same splits, same order: the same bits.
  constexpr int FTAIL_S = 16;
  constexpr int FTAIL_MAX = FT32 ? 2 * FTAIL_S : FTAIL_S;
  if (FTAIL && S <= FTAIL_MAX) {
    for (int g = warp; g < GQA; g += NW) {
      const float* mlb = ml + (head0 + g) * S * 2;
      const float* ob = o_part + (head0 + g) * S * D + lane * QE;
      // MSF (MLXCEL_MERGE_SIGNS_FIRST): V's rotation signs in the same round trip as the
      // partials (mlxcel_fd::merge_signs says why).
      mlxcel_fd::MergeSigns<QE> sg;
      if constexpr (MSF && ROT_V) sg = mlxcel_fd::merge_signs<QE, D>(rot_v, lane);
      float2 mls = make_float2(mlxcel_fd::neg_inf(), 0.0f);
      if (lane < S) mls = __ldcg(reinterpret_cast<const float2*>(mlb) + lane);
      float v[FTAIL_S][QE];
      // Splits s0 .. s0 + FTAIL_S - 1 (those below S) into v.
      auto load_round = [&](int s0) {
#pragma unroll
        for (int j = 0; j < FTAIL_S; ++j) {
          const int s = s0 + j;
          if (s < S) {
            if constexpr (QE == 4) {
              const float4 t = __ldcg(reinterpret_cast<const float4*>(ob + static_cast<long long>(s) * D));
              v[j][0] = t.x, v[j][1] = t.y, v[j][2] = t.z, v[j][3] = t.w;
            } else {
              const float2 t = __ldcg(reinterpret_cast<const float2*>(ob + static_cast<long long>(s) * D));
              v[j][0] = t.x, v[j][1] = t.y;
            }
          }
        }
      };
      load_round(0);
      float M = fmaxf(mlxcel_fd::neg_inf(), mls.x);
      for (int o = 16; o > 0; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
      const float wt = lane < S ? mlxcel_fd::split_weight(mls.x, M) : 0.0f;
      float dj = lane < S ? fmaf(wt, mls.y, 0.0f) : 0.0f;
      for (int o = 16; o > 0; o >>= 1) dj += __shfl_xor_sync(0xffffffffu, dj, o);
      const float den = 0.0f + dj;
      float parts[mlxcel_fd::MERGE_P][QE];
#pragma unroll
      for (int p = 0; p < mlxcel_fd::MERGE_P; ++p) {
#pragma unroll
        for (int e = 0; e < QE; ++e) parts[p][e] = 0.0f;
      }
      // v's splits (s0 + j) summed into parts (s0 + j) % MERGE_P, in order.
      auto add_round = [&](int s0) {
#pragma unroll
        for (int j = 0; j < FTAIL_S; ++j) {
          const int s = s0 + j;
          const float ws = __shfl_sync(0xffffffffu, wt, s);
          if (s < S) {
#pragma unroll
            for (int e = 0; e < QE; ++e) {
              float& acc = parts[s % mlxcel_fd::MERGE_P][e];
              acc = ws != 0.0f ? fmaf(ws, v[j][e], acc) : acc;
            }
          }
        }
      };
      add_round(0);
      if constexpr (FT32) {
        if (S > FTAIL_S) {
          load_round(FTAIL_S);
          add_round(FTAIL_S);
        }
      }
      float y[QE];
      if constexpr (MSF && ROT_V) mlxcel_fd::finish_merge_signed<QE, D, ROT_V>(parts, den, sg, lane, y);
      else mlxcel_fd::finish_merge<QE, D, ROT_V>(parts, den, rot_v, lane, y);
#pragma unroll
      for (int e = 0; e < QE; ++e) out[(head0 + g) * D + lane * QE + e] = static_cast<T_q>(y[e]);
    }
    tl_fold_end();
    return;
  }
  for (int g = warp; g < GQA; g += NW) {
    const float* mlb = ml + (head0 + g) * S * 2;
    const float* ob = o_part + (head0 + g) * S * D + lane * QE;
    mlxcel_fd::MergeSigns<QE> sg;
    if constexpr (MSF && ROT_V) sg = mlxcel_fd::merge_signs<QE, D>(rot_v, lane);
    const float2 stats = mlxcel_fd::split_stats<4 * D, true>(mlb, S, lane, [](int, float) {});
    float parts[mlxcel_fd::MERGE_P][QE];
#pragma unroll
    for (int p = 0; p < mlxcel_fd::MERGE_P; ++p) {
#pragma unroll
      for (int e = 0; e < QE; ++e) parts[p][e] = 0.0f;
    }
#pragma unroll 4
    for (int s0 = 0; s0 < S; s0 += mlxcel_fd::MERGE_P) {
#pragma unroll
      for (int p = 0; p < mlxcel_fd::MERGE_P; ++p) {
        const int s = s0 + p;
        if (s < S) {
          const float wt = mlxcel_fd::split_weight(__ldcg(mlb + 2 * s), stats.x);
          float v[QE];
          if constexpr (QE == 4) {
            const float4 t = __ldcg(reinterpret_cast<const float4*>(ob + static_cast<long long>(s) * D));
            v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
          } else {
            const float2 t = __ldcg(reinterpret_cast<const float2*>(ob + static_cast<long long>(s) * D));
            v[0] = t.x, v[1] = t.y;
          }
#pragma unroll
          for (int e = 0; e < QE; ++e) parts[p][e] = wt != 0.0f ? fmaf(wt, v[e], parts[p][e]) : parts[p][e];
        }
      }
    }
    float y[QE];
    if constexpr (MSF && ROT_V) mlxcel_fd::finish_merge_signed<QE, D, ROT_V>(parts, stats.y, sg, lane, y);
    else mlxcel_fd::finish_merge<QE, D, ROT_V>(parts, stats.y, rot_v, lane, y);
#pragma unroll
    for (int e = 0; e < QE; ++e) out[(head0 + g) * D + lane * QE + e] = static_cast<T_q>(y[e]);
  }
  tl_fold_end();
}
