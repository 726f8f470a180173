// The greedy token: the index of the largest logit of one row x [N], as MLX's argmax gives it
// (`argmax.rs`). Why: MLX reduces a row in one CTA, 22.5 us per decode step for Llama-3's
// 128256 logits in situ on the H200 (session 32), 0.9% of a turbo4 step at 32K. Here each of
// many CTAs reduces a contiguous chunk, takes the maximum of (key, index) pairs packed into 64
// bits with one atomicMax, then a ticket; the last CTA writes the index and resets the
// accumulator and the ticket for the next call.
// MLX's semantics (0.32.4; CPU and CUDA), exactly: the first NaN wins (as numpy; MLX's argmax
// skipped NaNs before its PR #4292); otherwise the largest value, ties to the lowest index,
// -0 equal to +0; where nothing is above -inf, index 0 (MLX starts from (0, -inf) and takes
// only strictly larger values). key(v): 0xffffffff for NaN, 0 for -inf, otherwise the float's
// bits made unsigned-ordered (-0 as +0), which lie strictly between. Packed: key << 32 |
// (0xffffffff - index), so a larger packed value is a larger key, then a lower index; with
// every key 0 the maximum is index 0's.
// Inputs: x (fp16, bf16 or f32 [..., N], one row, N < 2^32), tickets (u32, persistent, zero
// between calls: this call's slot holds the u64 accumulator at words 0-1, the ticket at word 2),
// slot_marker (slot = slot_marker_shape[0] - 1). Output: out [1] uint32. Template constant:
// SLOT_WORDS, a slot's stride in tickets (argmax.rs passes decode_attention.rs's).
constexpr int NT = 256;  // threads per CTA: argmax.rs launches this many
static_assert(SLOT_WORDS >= 4 && SLOT_WORDS % 2 == 0, "a slot holds the 8-byte-aligned accumulator and the ticket");
static_assert(sizeof(T_x) == 2 || sizeof(T_x) == 4, "fp16, bf16 or f32 logits");
const float neg_inf = __int_as_float(0xff800000);
const unsigned int n = static_cast<unsigned int>(x_shape[x_ndim - 1]);  // one row: the other axes are 1
const int tid = threadIdx.x;
const unsigned int per = (n + gridDim.x - 1) / gridDim.x;
const unsigned int lo = blockIdx.x * per;
const unsigned int hi = min(n, lo + per);
unsigned long long best = 0;
for (unsigned int i = lo + tid; i < hi; i += NT) {
  const float f = static_cast<float>(x[i]);
  unsigned int key = 0;
  if (f != f) {
    key = 0xffffffffu;
  } else if (f > neg_inf) {
    unsigned int bits = __float_as_uint(f);
    if (bits == 0x80000000u) bits = 0;  // -0 ties with +0
    key = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  }
  const unsigned long long p = (static_cast<unsigned long long>(key) << 32) | (0xffffffffu - i);
  best = p > best ? p : best;
}
for (int o = 16; o > 0; o >>= 1) {
  const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, o);
  best = other > best ? other : best;
}
__shared__ unsigned long long warp_best[NT / 32];
if ((tid & 31) == 0) warp_best[tid >> 5] = best;
__syncthreads();
if (tid == 0) {
#pragma unroll
  for (int w = 1; w < NT / 32; ++w) best = warp_best[w] > best ? warp_best[w] : best;
  unsigned int* slot = const_cast<unsigned int*>(tickets) + static_cast<long long>(slot_marker_shape[0] - 1) * SLOT_WORDS;
  unsigned long long* acc = reinterpret_cast<unsigned long long*>(slot);
  unsigned int* ticket = slot + 2;
  atomicMax(acc, best);
  // Release: this CTA's maximum is in the accumulator before its ticket; the last CTA's
  // acquire on the same ticket orders its read of the accumulator after every CTA's.
  unsigned int prev;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(prev) : "l"(ticket) : "memory");
  if (prev + 1 == gridDim.x) {
    const unsigned long long all = atomicExch(acc, 0ull);
    out[0] = 0xffffffffu - static_cast<unsigned int>(all & 0xffffffffull);
    atomicExch(ticket, 0u);
  }
}
