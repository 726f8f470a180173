// qgemv4.cu's store for the stacked qkv projection's three outputs (placed in front of its
// body; MLXCEL_QKV_PARTS): rows [0, NQ) go to y (q), [NQ, NQ + NK) to yk, the rest to yv.
// A CTA's 16 rows fall in one part when the parts are multiples of 16 (head dims are), so
// the branch does not diverge there.
// put_last: the value this thread stored last (the folded append's cluster tail,
// qgemv4_qkv_encode.cu with CLUSTER, sends it to the head's leader; unused elsewhere).
__half put_last = __ushort_as_half(0);
auto put = [&](long long row, __half h) {
  put_last = h;
  if (row < NQ) y[row] = h;
  else if (row < NQ + NK) yk[row - NQ] = h;
  else yv[row - NQ - NK] = h;
};
