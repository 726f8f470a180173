// The folded K+V append's tables, copied into shared memory at the start of the launch
// (MLXCEL_QKV_ENC_TAIL; ETAIL; placed before qgemv4.cu in the qkv + append kernel; the tail
// that reads them is qgemv4_qkv_encode.cu). Why: the encode is the serial tail of a head's
// last CTA, after its GEMV, and each of its global reads is a round trip there: the rotation
// signs and RoPE's inverse frequencies, the centroid midpoints, and the centroid of each code
// (a load that depends on the code). In situ at 32K (session 24) the launch took 12.64 us
// against 8.91 for the same GEMV without the append. Here every K or V CTA (any of them may be
// the last of its head) copies its side's tables with cp.async before the ring's first weight
// copies: no register waits for them, and the ring's first cp.async.wait_group covers their
// group (the oldest), so they cost the GEMV nothing but the copies themselves. enc_tab holds
// the signs [2 D] at 0, the midpoints [15] at ENC_MIDS, the centroids [16] at ENC_LUT and the
// inverse frequencies [D / 2] at ENC_FREQ; a side's codec only where its format has one (turbo4
// keys with KVFMT 0, turbo4 values with KVFMT 0 and 1), the frequencies for K with ROPE.
// CLUSTER (qgemv4_qkv_encode.cu): every K and V CTA arrives at its cluster's barrier on entry;
// its tail waits for that phase before writing into rank 0's shared memory.
static_assert(!CLUSTER || (NQ % D == 0 && D / 16 <= 8), "clusters of one head's D / 16 CTAs, at most 8");
if constexpr (CLUSTER) {
  if (static_cast<long long>(blockIdx.x) * 16 >= NQ) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
constexpr int ENC_MIDS = 2 * D, ENC_LUT = ENC_MIDS + 16, ENC_FREQ = ENC_LUT + 16, ENC_TAB = ENC_FREQ + D / 2;
__shared__ __align__(16) float enc_tab[ETAIL ? ENC_TAB : 1];
if constexpr (ETAIL) {
  const long long first_row = static_cast<long long>(blockIdx.x) * 16;
  if (first_row >= NQ) {
    const bool v_side = first_row >= NQ + NK;
    const bool codec = v_side ? KVFMT != 2 : KVFMT == 0;
    const float* signs = v_side ? v_signs : k_signs;
    const float* mids = v_side ? v_mids : k_mids;
    const float* lut = v_side ? v_lut : k_lut;
    auto copy4 = [](float* dst, const float* src) {
      const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(src) : "memory");
    };
    for (int i = threadIdx.x; i < ENC_TAB; i += blockDim.x) {
      if (i < ENC_MIDS) {
        if (codec) copy4(enc_tab + i, signs + i);
      } else if (i < ENC_MIDS + 15) {
        if (codec) copy4(enc_tab + i, mids + (i - ENC_MIDS));
      } else if (i >= ENC_LUT && i < ENC_FREQ) {
        if (codec) copy4(enc_tab + i, lut + (i - ENC_LUT));
      } else if (i >= ENC_FREQ) {
        if (ROPE && !v_side) copy4(enc_tab + i, inv_freq + (i - ENC_FREQ));
      }
    }
    mlxcel_qmv::ring_commit();
  }
}
