// qgemv4.cu's store for the stacked qkv projection's three outputs (placed in front of its
// body; MLXCEL_QKV_PARTS): rows [0, NQ) go to y (q), [NQ, NQ + NK) to yk, the rest to yv.
// A CTA's 16 rows fall in one part when the parts are multiples of 16 (head dims are), so
// the branch does not diverge there.
auto put = [&](long long row, __half h) {
  if (row < NQ) y[row] = h;
  else if (row < NQ + NK) yk[row - NQ] = h;
  else yv[row - NQ - NK] = h;
};
