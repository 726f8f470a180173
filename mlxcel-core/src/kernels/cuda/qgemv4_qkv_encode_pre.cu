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
// CLUSTER (qgemv4_qkv_encode.cu): rank 0 of each K or V head's cluster sets up enc_bar, the
// mbarrier its tail waits on for the head's D fp16 values (D * 2 bytes of st.async from the
// cluster's CTAs); then every K and V CTA arrives at the cluster barrier, whose phase each tail
// waits for before its st.async (rank 0's barrier then exists and is initialized).
static_assert(!CLUSTER || (NQ % D == 0 && D / 16 <= 8), "clusters of one head's D / 16 CTAs, at most 8");
__shared__ __align__(8) unsigned long long enc_bar;
if constexpr (CLUSTER) {
  if (static_cast<long long>(blockIdx.x) * 16 >= NQ) {
    unsigned int rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (rank == 0 && threadIdx.x == 0) {
      const unsigned int bar = static_cast<unsigned int>(__cvta_generic_to_shared(&enc_bar));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "n"(D * 2) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  }
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
