// Body of the device-clock probe (MLX generates the signature: inputs tok, after; outputs
// tok_out, clock; `after` only orders the probe after another node and is not read). One thread copies the token through (so every later node of the step depends on
// this one, or it on every earlier node) and records the GPU's global nanosecond timer.
if (threadIdx.x == 0 && blockIdx.x == 0) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  tok_out[0] = tok[0];
  clock[0] = t;
}
