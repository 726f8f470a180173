"""Compile-checks mlxcel's CUDA kernels on a machine without a GPU (NVRTC from PyPI:
`pip install nvidia-cuda-nvrtc cuda-bindings nvidia-cuda-runtime`), for sm_90, and prints
registers / spills / shared memory per variant. The kernels are wrapped in a signature like
the one MLX's cuda_kernel generates.

    python benchmarks/gpu/nvrtc_check.py
    NVRTC_ONLY="qkv encode" python benchmarks/gpu/nvrtc_check.py   # only variants whose name has it
"""
import glob
import itertools
import os
import re
import sys

from cuda.bindings import nvrtc

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "mlxcel-core", "src", "kernels", "cuda")
INC = glob.glob(os.path.join(os.path.dirname(nvrtc.__file__), "..", "..", "nvidia", "cu*", "include"))


def read(n):
    return open(os.path.join(ROOT, n)).read()


def row(fmt, d):
    return 2 * d if fmt == 0 else (d if fmt == 1 else d * fmt // 8)


def gemv_static_bound(nw, g, post, enc_d=None):
    """quantized_gemv.rs's SharedMemory bound on a GEMV build's static shared memory (gemv,
    with_encoder): 256 bytes a warp + 256, POST's xsum, the qkv + append kernel's tables."""
    b = 256 * nw + 256 + (20480 // g * 8 if post else 0)
    return b + (4 * (5 * enc_d // 2 + 32) + 2 * enc_d + 16 if enc_d else 0)


def compile_one(name, src, static_bound=None):
    """Compiles one variant; with static_bound, its static shared memory (ptxas's "bytes
    smem") must not pass it (mlxcel asks MLX to opt in from the bound: quantized_gemv.rs)."""
    if os.environ.get("NVRTC_ONLY", "") not in name:
        return True
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), name.encode(), 0, [], [])
    opts = [b"--gpu-architecture=sm_90", b"-std=c++17", b"--ptxas-options=-v", b"-default-device"]
    opts += [("-I" + os.path.abspath(p)).encode() for p in INC]
    # NVRTC_OPTS="..." (space-separated): more NVRTC options, e.g. --maxrregcount=168 to see
    # what ptxas does with more registers than its default choice.
    opts += [o.encode() for o in os.environ.get("NVRTC_OPTS", "").split()]
    (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(prog, log)
    text = log.decode(errors="replace").strip()
    ok = res == nvrtc.nvrtcResult.NVRTC_SUCCESS
    # NVRTC_CUBIN_DIR=dir: also write each variant's cubin (for nvdisasm instruction counts);
    # NVRTC_PTX_DIR=dir: its PTX (to see the order NVVM left loads and copies in).
    for var, size_of, get, ext in (("NVRTC_CUBIN_DIR", nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN, ".cubin"),
                                   ("NVRTC_PTX_DIR", nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, ".ptx")):
        if ok and os.environ.get(var):
            err, n = size_of(prog)
            data = b" " * n
            get(prog, data)
            if ext == ".ptx":
                data = data.rstrip(b"\0 ")
            fname = "".join(ch if ch.isalnum() else "_" for ch in name) + ext
            with open(os.path.join(os.environ[var], fname), "wb") as f:
                f.write(data)
    lines = [l for l in text.splitlines() if ("registers" in l or "spill" in l or "error" in l or "warning" in l)]
    if ok and static_bound is not None:
        smem = [int(w) for l in lines for w in re.findall(r"(\d+) bytes smem", l)]
        if max(smem, default=0) > static_bound:
            print(f"static shared memory {max(smem)} bytes > the bound {static_bound}")
            ok = False
    print(f"{'OK ' if ok else 'ERR'} {name}: " + " | ".join(l.strip() for l in lines[-3:]))
    if not ok:
        print(text)
    return ok


def signature_attribute(attribute):
    """What mlx/kernel.rs's KernelSource::with_signature_attribute appends to a header: the next
    __global__ (MLX's generated signature) gains `attribute`."""
    return f"\n#undef __global__\n#define __global__ __location__(global) {attribute}\n"


def cluster_signature(n):
    """A clustered kernel's header end (quantized_gemv.rs's qkv_encode_source_clustered)."""
    return signature_attribute(f"__cluster_dims__({n}, 1, 1)")


def b(x):
    return "true" if x else "false"


# Template flags of the tensor-core decode kernel, each variant naming the ones it turns on
# (swz is on unless a variant says otherwise).
MMA_FLAGS = ("rope", "trad", "fold", "swz", "lutk", "lutv", "luti", "hoist", "rsall", "wide", "ftz", "qswz", "fillw", "qfirst", "qfirst1", "kt", "pair")


def mma_variant(**on):
    assert set(on) <= set(MMA_FLAGS), on
    return {f: on.get(f, f == "swz") for f in MMA_FLAGS}


MMA_VARIANTS = [
    mma_variant(),
    mma_variant(fold=True),
    mma_variant(rope=True, fold=True),
    mma_variant(rope=True, trad=True, fold=True),
    mma_variant(rope=True, swz=False),
    mma_variant(rope=True, fold=True, lutk=True, lutv=True),
    mma_variant(fold=True, lutk=True),
    mma_variant(lutv=True),
    mma_variant(rope=True, lutk=True, lutv=True, luti=True),
    mma_variant(rope=True, fold=True, lutk=True, lutv=True, luti=True),
    mma_variant(lutk=True, luti=True),
    mma_variant(rope=True, lutk=True, lutv=True),  # the default build (fold off)
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True),
    mma_variant(rope=True, fold=True, hoist=True),
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True),
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True),
    mma_variant(rope=True, fold=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True),
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True),
    mma_variant(rope=True, fold=True, hoist=True, rsall=True, ftz=True),
    # Session 18: fold v3 on the session-17 defaults; the swizzled q staging.
    mma_variant(rope=True, fold=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True),
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True),
    mma_variant(rope=True, fold=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True),
    mma_variant(hoist=True, rsall=True, ftz=True, qswz=True),
    # The pair table filled by the warps without a q head (MLXCEL_MMA_FILLW), on the defaults and alone.
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, fillw=True),
    # Session 20: the ring's first copies right after each warp's prologue loads (MLXCEL_MMA_QFIRST), on the
    # defaults, with the fill on warps 0-3, and with the fold.
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, fillw=True, qfirst=True),
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, qfirst=True),
    mma_variant(rope=True, trad=True, fold=True, qfirst=True),
    # Only the first tile early (MLXCEL_MMA_QFIRST1), on the defaults and in 4-warp CTAs with the fold.
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, fillw=True, qfirst1=True),
    mma_variant(rope=True, trad=True, fold=True, qfirst1=True),
    # KT (MLXCEL_MMA_KT): S computed transposed, the default build's flags otherwise; with fold.
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, fillw=True, qfirst1=True, kt=True),
    mma_variant(rope=True, trad=True, fold=True, qfirst1=True, kt=True),
    # PAIR (MLXCEL_MMA_PAIR, with KT): two tiles per loop iteration.
    mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, fillw=True, qfirst1=True, kt=True, pair=True),
    mma_variant(rope=True, fold=True, hoist=True, qfirst1=True, kt=True, pair=True),
]
# The shipped defaults (MLXCEL_MMA_HOIST, MLXCEL_MMA_RSALL, MLXCEL_MMA_WIDE, MLXCEL_MMA_FTZ, MLXCEL_MMA_QSWZ,
# MLXCEL_MMA_FILLW, MLXCEL_MMA_QFIRST1, MLXCEL_MMA_PAIR with its KT layout, and the pair table with immediate
# offsets on; fold off). QFIRST1 is off in the fp16-K / turbo4-V kernel (mma_qfirst1 in decode_attention.rs).
DEFAULT_VARIANT = mma_variant(rope=True, lutk=True, lutv=True, luti=True, hoist=True, rsall=True, wide=True, ftz=True, qswz=True, fillw=True,
                              qfirst1=True, kt=True, pair=True)
# The shipped build with the fold (MLXCEL_FOLD_MERGE; its tail per NVRTC_FTAIL).
MMA_VARIANTS.append(dict(DEFAULT_VARIANT, fold=True))
# The 2- and 3-bit sides (MLXCEL_LOWBIT_CUDA): the shipped build with and without the fold, the one-tile KT loop,
# and the untransposed loop with and without HOIST's copies (issue() and issue_next()'s partial chunk rounds).
# For symmetric 2- and 3-bit sides the default variant's LUTK is the 2-bit field table (MLXCEL_MMA_LUT_LOW); the
# builds without it (the table's flag off: lut=false/false/true) too.
LOWBIT_VARIANTS = [DEFAULT_VARIANT, dict(DEFAULT_VARIANT, fold=True), dict(DEFAULT_VARIANT, pair=False),
                   mma_variant(rope=True, fold=True), mma_variant(hoist=True, rsall=True, ftz=True, qswz=True),
                   dict(DEFAULT_VARIANT, lutk=False, lutv=False), dict(DEFAULT_VARIANT, lutk=False, lutv=False, fold=True)]


# The fold's tail (MLXCEL_FOLD_TAIL, on by default): NVRTC_FTAIL=0 compiles the fenced one.
FTAIL = os.environ.get("NVRTC_FTAIL", "1") != "0"
# The fold's second round of partials (MLXCEL_FOLD_32, on since session 65; fold builds of 17-32 splits):
# NVRTC_FT32=0 compiles the fold builds of at most 16 splits.
FT32 = os.environ.get("NVRTC_FT32", "1") == "1"
# The timing probe (MLXCEL_ATTENTION_TIMING_PROBE): NVRTC_PROBE=1..3 compiles a probe build, 0 the kernel.
PROBE = int(os.environ.get("NVRTC_PROBE", "0"))
# The last split's fewer tiles per warp (MLXCEL_MMA_LIGHT_LAST: 2, mma_light_tiles); NVRTC_LIGHT=0 compiles equal splits.
LIGHT_PER_WARP = int(os.environ.get("NVRTC_LIGHT", "2"))
# RoPE from the step's table (MLXCEL_ROPE_TABLE, on); NVRTC_RTAB=0 compiles each launch's own sincosf.
RTAB = "false" if os.environ.get("NVRTC_RTAB", "1") == "0" else "true"
# The first two ring tiles early in paired loops (MLXCEL_MMA_QFIRST2, off); NVRTC_QFIRST2=1 compiles them.
QFIRST2 = "true" if os.environ.get("NVRTC_QFIRST2", "0") == "1" else "false"
# The refill's factor rows in one copy (MLXCEL_MMA_FCOPY1) and masked V factors zeroed (MLXCEL_MMA_VZERO), on since session 51; NVRTC_FCP1=0 / NVRTC_VZ=0 compile without them.
FCP1 = "true" if os.environ.get("NVRTC_FCP1", "1") == "1" else "false"
VZ = "true" if os.environ.get("NVRTC_VZ", "1") == "1" else "false"
# The combine's weights once per (warp, head) (MLXCEL_MMA_COMBINE_W1, off); NVRTC_CW=1 compiles them.
CW = "true" if os.environ.get("NVRTC_CW", "0") == "1" else "false"
# V's rotation signs loaded with the merge's partials (MLXCEL_MERGE_SIGNS_FIRST, off; the fold
# and merge_splits_warp.cu); NVRTC_MSF=1 compiles them.
MSF = "true" if os.environ.get("NVRTC_MSF", "0") == "1" else "false"
# The softmax's lazy rescale (MLXCEL_MMA_LAZY_RESCALE, on; with KT only); NVRTC_LAZY=0 compiles without it.
LAZY = os.environ.get("NVRTC_LAZY", "1") == "1"
# The pair loop's unmasked pairs (MLXCEL_MMA_MASK_LAST, on; with PAIR only); NVRTC_MASKL=0 compiles the masked pairs.
MASKL = os.environ.get("NVRTC_MASKL", "1") == "1"
# The V nibble interleave by bit selects (MLXCEL_MMA_VSEL, on); NVRTC_VSEL=0 compiles the masked ors.
VSEL = "true" if os.environ.get("NVRTC_VSEL", "1") == "1" else "false"
# An experiment on the append kernels' signature: NVRTC_LB=1 adds __launch_bounds__(threads, 1), NVRTC_LB=2
# __maxnreg__(168) (session 49: neither kept NVVM from recomputing the lanes' slot offsets in the LAZY + MASKL
# loop; NVRTC_OPTS=--maxrregcount=168 did, an option MLX's compile does not pass; the kernel pins them: PIN).
LB = os.environ.get("NVRTC_LB", "0")
# 12-warp CTAs for the append kernels without the pair table (MLXCEL_MMA_WIDE_PLAIN, on); NVRTC_WIDE_PLAIN=0 compiles 4-warp CTAs.
WIDE_PLAIN = os.environ.get("NVRTC_WIDE_PLAIN", "1") == "1"


def mma_stages(kf, vf, d):
    """The tensor-core kernel's ring depth (decode_attention.rs's mma_stage_bytes / mma_stages)."""
    stage = 16 * (row(kf, d) + row(vf, d)) + (32 if kf else 0) + (32 if vf else 0)
    return min(6, max(3, -(-8192 // stage) + 1))


def mma_consts(v, kf, vf, d, gqa, stages, warps, rot_q, rot_v, qt):
    """The constexpr block the tensor-core kernel (decode_attention_mma.cu) gets as template
    arguments from decode_attention.rs, for variant `v` (MMA_FLAGS) and the settings above."""
    rope, trad, fold, swz, lutk, lutv, luti, hoist, rsall, _, ftz, qswz, fillw, qfirst, qfirst1, kt, pair = (b(v[f]) for f in MMA_FLAGS)
    kt = b(kt == "true" or pair == "true")
    return (f"constexpr bool SWZ = {swz}; constexpr bool LUTK = {lutk}; constexpr bool LUTV = {lutv}; constexpr bool LUTI = {luti}; constexpr bool HOIST = {hoist}; constexpr bool RSALL = {rsall}; constexpr bool FTZ = {ftz}; constexpr bool QSWZ = {qswz}; constexpr bool FILLW = {fillw}; constexpr bool QFIRST = {qfirst}; constexpr bool QFIRST1 = {qfirst1}; constexpr bool KT = {kt}; constexpr bool PAIR = {pair}; constexpr int WARPS = {warps}; constexpr int LIGHT = {LIGHT_PER_WARP} * WARPS; constexpr bool RTAB = {RTAB}; constexpr bool QFIRST2 = {QFIRST2}; constexpr bool FCP1 = {FCP1}; constexpr bool VZ = {VZ}; constexpr bool CW = {CW}; constexpr bool LAZY = {b(LAZY and kt == 'true')}; constexpr bool MASKL = {b(MASKL and pair == 'true')}; constexpr bool VSEL = {VSEL}; constexpr int KFMT = {kf}; constexpr int VFMT = {vf}; constexpr int D = {d}; "
            f"constexpr int GQA = {gqa}; constexpr bool ROT_Q = {b(rot_q)}; constexpr bool ROT_V = {b(rot_v)}; "
            f"constexpr int STAGES = {stages}; constexpr bool ROPE_Q = {rope}; constexpr bool TRAD = {trad}; "
            f"constexpr bool FOLD = {fold}; constexpr bool FTAIL = {b(fold == 'true' and FTAIL)}; constexpr bool FT32 = {b(fold == 'true' and FT32)}; constexpr bool MSF = {MSF}; constexpr int PROBE = {PROBE}; using T_q = {qt};\n")

SHAPE = "\nstruct Shape { int v[8]; __device__ int operator[](int i) const { return v[i]; } };\n"


def main():
    header = read("decode_attention.cuh")
    body = read("decode_attention.cu")
    merge = read("merge_splits.cu")
    ok = True
    sig = ("const float* q, const unsigned char* k_data, const Shape k_data_shape, const __half* k_aux, const Shape k_aux_shape, const unsigned char* v_data, "
           "const __half* v_aux, const Shape v_aux_shape, const float* lut_k, const float* lut_v, const float* rot_k, const unsigned char* len_marker, const Shape len_marker_shape, const int* k_dep, const int* v_dep, const float* inv_freq, "
           "const float* rot_v, const unsigned int* tickets, const unsigned char* epoch_marker, const Shape epoch_marker_shape, "
           "float* o_part, float* ml")
    v3 = [(0, 0), (1, 1), (0, 4), (4, 4), (0, 3), (3, 3), (0, 2), (2, 2)] if len(sys.argv) == 1 else []
    for kf, vf in v3 + ([("1r", 1)] if v3 else []):  # 1r: int8r (int8 K with ROT_Q)
        rot = kf == "1r" or kf >= 2
        kf = 1 if kf == "1r" else kf
        for d, gqa in [(128, 4), (128, 8), (64, 3), (64, 7), (128, 1)]:
            gk = 128 if d == 128 else 64
            consts = f"constexpr int KFMT = {kf}; constexpr int VFMT = {vf}; constexpr int D = {d}; constexpr int GQA = {gqa}; constexpr int GROUP_K = {gk}; constexpr int GROUP_V = {gk}; constexpr bool ROT_Q = {b(rot)};\n"
            src = header + SHAPE + "\n__global__ void k(" + sig + ") {\n" + consts + body + "\n}\n"
            ok &= compile_one(f"decode k{kf} v{vf} d{d} g{gqa}" + (" rot" if rot and kf == 1 else ""), src)
    mma_header = header + "\n#include <cuda_bf16.h>\n" + read("decode_attention_mma.cuh") + "\n" + read("lowbit_decode.cuh")
    mma_body = read("decode_attention_mma.cu")
    sel = sys.argv[1:] or None
    # (0, 1): fp16 keys with int8 values, the boundary layers' default storage since session 16.
    # (0, 3), (0, 2), (3, 3), (2, 2): turbo3-asym, turbo2-asym, turbo3 and turbo2 (MLXCEL_LOWBIT_CUDA).
    for kf, vf in [(4, 4), (0, 4), (1, 1), (0, 0), (4, 1), (1, 4), (0, 1), (0, 3), (0, 2), (3, 3), (2, 2)]:
        for d, gqa in [(128, 4), (128, 8), (64, 3), (64, 7), (128, 1)]:
            for qt in ("__half", "__nv_bfloat16", "float"):
                if qt != "__half" and (d, gqa) != (128, 4):
                    continue
                name = f"mma k{kf} v{vf} d{d} g{gqa} q{qt}"
                if sel and not any(x in name for x in sel):
                    continue
                stages = mma_stages(kf, vf, d)
                # int8 K with ROT_Q: rotated int8 (int8r) sides, in the default build's variant.
                rots = [kf >= 2] + ([True] if kf == 1 else [])
                low = kf in (2, 3) or vf in (2, 3)
                for v in (LOWBIT_VARIANTS if low else MMA_VARIANTS):
                    for rot in rots:
                        if rot and kf == 1 and v != DEFAULT_VARIANT:
                            continue
                        rope, trad, fold, swz, lutk, lutv, luti, wide = (b(v[f]) for f in ("rope", "trad", "fold", "swz", "lutk", "lutv", "luti", "wide"))
                        if rope == "true" and qt != "__half":
                            continue
                        consts = mma_consts(v, kf, vf, d, gqa, stages, 12 if wide == "true" else 4, rot,
                                            vf >= 2 or (rot and kf == 1), qt)
                        src = (mma_header + SHAPE + "\n__global__ void k(" + sig.replace("const float* q", f"const {qt}* q")
                               + f", {qt}* out) {{\n" + consts + mma_body + "\n}\n")
                        named = "".join(f" {f}" for f in MMA_FLAGS[7:] if b(v[f]) == "true")
                        ok &= compile_one(name + f" rope={rope} trad={trad} fold={fold} swz={swz} lut={lutk}/{lutv}/{luti}" + named + (" rot" if rot and kf == 1 else ""), src)
    # The attention append (MLXCEL_ATTN_APPEND: decode_attention.rs's mma_append_source): the formats the qkv
    # GEMV's folded append writes (turbo4, fp16 K + turbo4 V, int8) and the boundary layers' fp16 K + int8 V, the shipped build (12-warp CTAs, or 4 without the
    # pair table with NVRTC_WIDE_PLAIN=0) with and without the fold, RoPE in both layouts; the probe builds' setting from NVRTC_PROBE.
    app_header = ("#define MLXCEL_ATTN_APPEND\ntypedef signed char int8_t;\n" + header + "\n" + read("kv_pair.cuh") + "\n"
                  + read("turbo_encode.cuh") + "\n#include <cuda_bf16.h>\n" + read("fp16_store.cuh") + "\n" + read("int8_encode.cuh")
                  + "\n" + read("decode_attention_mma.cuh") + "\n" + read("lowbit_decode.cuh"))
    for kf, vf in [(4, 4), (0, 4), (1, 1), (0, 1)]:
      for d, gqa in [(128, 4), (128, 8), (64, 7)]:
        for fold, trad in (("true", "false"), ("false", "false"), ("true", "true")):
            name = f"mma append k{kf} v{vf} d{d} g{gqa} fold={fold} trad={trad}"
            if sel and not any(x in name for x in sel):
                continue
            # The pair table serves V only alongside turbo4 K (mma_luts): fp16 K with turbo4 V
            # (turbo4-asym) runs without it, in 12-warp CTAs (4 with NVRTC_WIDE_PLAIN=0).
            table = kf == 4
            v = dict(DEFAULT_VARIANT, fold=fold == "true", trad=trad == "true", lutk=kf == 4, lutv=vf == 4, luti=table,
                     wide=table, qfirst1=not (kf == 0 and vf == 4))
            stages = mma_stages(kf, vf, d)
            warps = 12 if table or WIDE_PLAIN else 4
            consts = mma_consts(dict(v, rope=True, pair=v["pair"] and stages >= 5), kf, vf, d, gqa, stages, warps,
                                kf == 4, vf == 4, "__half")
            src = (app_header + SHAPE + "\n__global__ void " + ({"1": f"__launch_bounds__({warps * 32}, 1) ", "2": "__maxnreg__(168) "}.get(LB, "")) + "k(" + sig.replace("const float* q", "const __half* q").replace(", float* o_part", ", const __half* k_new, const __half* v_new, const float* k_mids, const float* v_mids, float* o_part")
                   + ", __half* out, int* done) {\n" + consts + mma_body + "\n}\n")
            ok &= compile_one(name, src)
    enc = read("turbo_encode.cu")
    enc_header = header + "\n" + read("kv_pair.cuh") + "\n" + read("turbo_encode.cuh")
    # BITS 4 (turbo4, the names as before), 3 and 2 (MLXCEL_LOWBIT_CUDA: " b3", " b2").
    for d, bits in itertools.product((64, 128), (4, 3, 2)):
        bn = "" if bits == 4 else f" b{bits}"
        for xt in ("float", "__half", "__nv_bfloat16"):
            src = (enc_header + "\n#include <cuda_bf16.h>\ntypedef unsigned char uint8_t;\n" + SHAPE +
                   f"__global__ void e(const {xt}* x, const Shape x_shape, const int x_ndim, const float* mids, const float* lut, const float* signs, uint8_t* packed, __half* norms) {{\n"
                   + f"constexpr int BITS = {bits}; constexpr int D = {d};\n" + enc + "\n}\n")
            ok &= compile_one(f"turbo_encode d{d} {xt}{bn}", src)
            # In place, without and with RoPE inside (the _rope variant adds inv_freq and TRAD).
            for rope, trad in ((False, "false"), (True, "false"), (True, "true")):
                src = (enc_header + "\n#define MLXCEL_ENCODE_INPLACE\n" + ("#define MLXCEL_ENCODE_ROPE\n" if rope else "")
                       + "#include <cuda_bf16.h>\ntypedef unsigned char uint8_t;\n" + SHAPE +
                       f"__global__ void e(const {xt}* x, const Shape x_shape, const int x_ndim, const float* mids, const float* lut, const float* signs, "
                       "const uint8_t* packed_buf, const Shape packed_buf_shape, const __half* norms_buf, const uint8_t* pos_marker, const Shape pos_marker_shape, const int* after, "
                       + ("const float* inv_freq, " if rope else "") + "int* done) {\n"
                       + f"constexpr int BITS = {bits}; constexpr int D = {d}; constexpr bool TRAD = {trad};\n" + enc + "\n}\n")
                ok &= compile_one(f"turbo_encode in place rope={rope} trad={trad} d{d} {xt}{bn}", src)
    kv = read("turbo_encode_kv.cu")
    for d, bits in itertools.product((64, 128), (4, 3, 2)):
        bn = "" if bits == 4 else f" b{bits}"
        for rope, trad in (("false", "false"), ("true", "false"), ("true", "true")):
            src = (enc_header + "\n#include <cuda_bf16.h>\ntypedef unsigned char uint8_t;\n" + SHAPE +
                   "__global__ void e(const __half* xk, const Shape xk_shape, const int xk_ndim, const __half* xv, "
                   "const float* k_mids, const float* k_lut, const float* k_signs, const float* v_mids, const float* v_lut, const float* v_signs, "
                   "const uint8_t* k_packed, const Shape k_packed_shape, const __half* k_norms, const uint8_t* v_packed, const __half* v_norms, "
                   "const uint8_t* pos_marker, const Shape pos_marker_shape, const int* k_after, const int* v_after, const float* inv_freq, int* done) {\n"
                   + f"constexpr int BITS = {bits}; constexpr int D = {d}; constexpr bool ROPE = {rope}; constexpr bool TRAD = {trad};\n" + kv + "\n}\n")
            ok &= compile_one(f"turbo_encode_kv d{d} rope={rope} trad={trad}{bn}", src)
    asym = read("turbo_encode_kv_asym.cu")
    for d, bits in itertools.product((64, 128), (4, 3, 2)):
        bn = "" if bits == 4 else f" b{bits}"
        for rope, trad in (("false", "false"), ("true", "false"), ("true", "true")):
            for xt in ("__half", "__nv_bfloat16"):
                src = (enc_header + "\n#include <cuda_bf16.h>\n" + read("fp16_store.cuh") + "\ntypedef unsigned char uint8_t;\n" + SHAPE +
                       f"__global__ void e(const {xt}* xk, const Shape xk_shape, const int xk_ndim, const {xt}* xv, "
                       "const float* v_mids, const float* v_lut, const float* v_signs, "
                       "const __half* k_buf, const Shape k_buf_shape, const uint8_t* v_packed, const Shape v_packed_shape, const __half* v_norms, "
                       "const uint8_t* pos_marker, const Shape pos_marker_shape, const int* k_after, const int* v_after, const float* inv_freq, int* done) {\n"
                       + f"constexpr int BITS = {bits}; constexpr int D = {d}; constexpr bool ROPE = {rope}; constexpr bool TRAD = {trad};\n" + asym + "\n}\n")
                ok &= compile_one(f"turbo_encode_kv_asym d{d} rope={rope} trad={trad} {xt}{bn}", src)
    # fp16-key appends: fp16 values, and with MLXCEL_V_INT8 int8 values (fp16_int8_kv).
    f16kv = read("fp16_append_kv.cu")
    f16_header = header + "\n" + read("kv_pair.cuh") + "\n#include <cuda_bf16.h>\n" + read("fp16_store.cuh")
    values = {"fp16_append_kv": ("", "", "const __half* v_buf, "),
              "fp16_int8_kv": ("#define MLXCEL_V_INT8\ntypedef signed char int8_t;\n", "\n" + read("int8_encode.cuh"),
                               "const int8_t* v_q, const __half* v_scale, ")}
    for name, (define, extra, vsig) in values.items():
        for d in (64, 128):
            for rope, trad in (("false", "false"), ("true", "false"), ("true", "true")):
                for xt in ("__half", "__nv_bfloat16", "float"):
                    src = (define + f16_header + extra + "\ntypedef unsigned char uint8_t;\n" + SHAPE +
                           f"__global__ void e(const {xt}* xk, const Shape xk_shape, const int xk_ndim, const {xt}* xv, "
                           "const __half* k_buf, const Shape k_buf_shape, " + vsig +
                           "const uint8_t* pos_marker, const Shape pos_marker_shape, const int* k_after, const int* v_after, const float* inv_freq, int* done) {\n"
                           + f"constexpr int D = {d}; constexpr bool ROPE = {rope}; constexpr bool TRAD = {trad};\n" + f16kv + "\n}\n")
                    ok &= compile_one(f"{name} d{d} rope={rope} trad={trad} {xt}", src)
    rq = read("rope_q_after.cu")
    for d in (64, 128):
        for trad in ("false", "true"):
            for xt in ("__half", "__nv_bfloat16", "float"):
                src = (f16_header + "\ntypedef unsigned char uint8_t;\n" + SHAPE +
                       f"__global__ void e(const {xt}* q, const Shape q_shape, const int q_ndim, const float* inv_freq, "
                       f"const uint8_t* pos_marker, const Shape pos_marker_shape, const int* k_after, const int* v_after, {xt}* out) {{\n"
                       + f"constexpr int D = {d}; constexpr bool TRAD = {trad};\n" + rq + "\n}\n")
                ok &= compile_one(f"rope_q_after d{d} trad={trad} {xt}", src)
    i8 = read("int8_encode.cu")
    i8_header = header + "\n" + read("kv_pair.cuh") + "\n" + read("int8_encode.cuh")
    for d in (64, 128):
        for xt in ("float", "__half", "__nv_bfloat16"):
            for rope, trad in ((False, "false"), (True, "false"), (True, "true")):
                src = (("#define MLXCEL_ENCODE_ROPE\n" if rope else "") + "typedef signed char int8_t;\n" + i8_header + "\n"
                       + "#include <cuda_bf16.h>\ntypedef unsigned char uint8_t;\ntypedef signed char int8_t;\n" + SHAPE +
                       f"__global__ void e(const {xt}* x, const Shape x_shape, const int x_ndim, const int8_t* q_buf, const Shape q_buf_shape, "
                       "const __half* scale_buf, const uint8_t* pos_marker, const Shape pos_marker_shape, const int* after, "
                       + ("const float* inv_freq, " if rope else "") + "int* done) {\n"
                       + f"constexpr int D = {d}; constexpr bool TRAD = {trad};\n" + i8 + "\n}\n")
                ok &= compile_one(f"int8_encode in place rope={rope} trad={trad} d{d} {xt}", src)
    i8kv = read("int8_encode_kv.cu")
    for d in (64, 128):
        for rope, trad in (("false", "false"), ("true", "false"), ("true", "true")):
            for rot in (False, True):  # int8r: MLXCEL_INT8_ROT rotates each vector first
                src = (("#define MLXCEL_INT8_ROT\n" if rot else "") + "typedef signed char int8_t;\n" + i8_header
                       + "\n#include <cuda_bf16.h>\ntypedef unsigned char uint8_t;\n" + SHAPE +
                       "__global__ void e(const __half* xk, const Shape xk_shape, const int xk_ndim, const __half* xv, "
                       "const int8_t* k_q, const Shape k_q_shape, const __half* k_scale, const int8_t* v_q, const __half* v_scale, "
                       "const float* k_signs, const float* v_signs, "
                       "const uint8_t* pos_marker, const Shape pos_marker_shape, const int* k_after, const int* v_after, const float* inv_freq, int* done) {\n"
                       + f"constexpr int D = {d}; constexpr bool ROPE = {rope}; constexpr bool TRAD = {trad};\n" + i8kv + "\n}\n")
                ok &= compile_one(f"int8_encode_kv d{d} rope={rope} trad={trad} rot={rot}", src)
    for d in (64, 128):
        for name, text in (("merge", merge), ("merge_warp", read("merge_splits_warp.cu"))):
            for group in sorted({min(d, 128), 32}):
                consts = f"constexpr int D = {d}; constexpr int GROUP_V = {group}; constexpr bool ROT_V = true; constexpr bool MSF = {MSF}; using T_out = __half;\n"
                src = (header + SHAPE +
                       "__global__ void m(const float* o_part, const Shape o_part_shape, const float* ml, const float* rot_v, __half* out) {\n"
                       + consts + text + "\n}\n")
                ok &= compile_one(f"{name} d{d} group{group}", src)
    qmv_header = read("decode_attention_mma.cuh") + "\ntypedef unsigned int uint32_t;\n" + read("qgemv4.cuh")
    # (NW, S, U): quantized_gemv.rs's schedules: S = 0 the batched one, S > 0 the ring.
    # The folded RMSNorm (NORM) on the schedules without a capped grid.
    # (NW, S, U, MB, NORM, EARLY): EARLY (MLXCEL_QMV_EARLY: x's and the scales' loads before
    # the ring's first copies) on the ring schedules without a capped grid, with and without the
    # norm. Session 21: ring:8:3 (the default since) and ring:8:2 with EARLY, with and without the norm.
    variants = [(8, 3, 4, False, False, True), (8, 3, 4, False, True, True), (8, 2, 4, False, True, True),
                (8, 0, 4, False, False, False), (8, 4, 4, False, False, False), (8, 8, 4, False, False, False),
                (4, 8, 4, False, False, False), (8, 4, 4, True, False, False), (4, 4, 4, True, False, False),
                (8, 0, 4, False, True, False), (8, 4, 4, False, True, False), (4, 8, 4, False, True, False),
                (8, 4, 4, False, False, True), (8, 4, 4, False, True, True), (4, 8, 4, False, True, True)]
    # POST (MLXCEL_QMV_POST: scales after the mma, ring_rows16_post) on the ring schedules
    # without a capped grid (8 and 4 warps: the GPU test runs ring:4:8); the other builds with it
    # off (their SASS as before).
    # TILED (MLXCEL_QMV_TILED: the weights' 16-row x 128-value tiles contiguous; the rings'
    # source addresses only) on the same ring schedules, POST off and (session 41) on.
    # BULK (the bulk:W:S schedules: each tiled tile by one cp.async.bulk on a per-slot mbarrier)
    # on the same.
    # LATE (MLXCEL_QMV_NORM_LATE: the folded norm's scale on the row sums) on every norm build,
    # POST off and on (POST on the ring only).
    post_variants = [(v, False, False, False, False) for v in variants] + [
        (v, True, False, False, False) for v in variants if v[1] > 0 and not v[3]] + [
        (v, False, True, bulk, False) for v in variants if v[1] > 0 and not v[3] for bulk in (False, True)] + [
        (v, True, True, False, False) for v in variants if v[1] > 0 and not v[3]] + [
        (v, post, False, False, True) for v in variants if v[4] for post in ((False, True) if v[1] > 0 else (False,))]
    # OWNC (MLXCEL_QMV_OWN_CHUNKS: POST's lanes read only their own copies, the mma's columns
    # split by group; session 43) on every POST build.
    # RT (MLXCEL_QMV_RING_TABLES: the scale tables in tile order ride the ring; session 44) on every
    # tiled OWNC build.
    # XSF (MLXCEL_QMV_XSUM_STAGE: POST's x sums formed while x is staged; session 44) on every
    # OWNC build with EARLY.
    own_variants = [(pv, own, rt, xsf) for pv in post_variants for own in ((False, True) if pv[1] else (False,))
                    for rt in ((False, True) if own and pv[2] else (False,))
                    for xsf in ((False, True) if own and pv[0][5] else (False,))]
    for ((nw, st, u, mb, norm, early), post, tiled, bulk, late), own, rt, xsf in own_variants:
        for g in (32, 64, 128):
            tag = (f"g{g} nw{nw} s{st} mb{int(mb)}" + (" norm" if norm else "") + (" early" if early else "")
                   + (" post" if post else "") + (" tiled" if tiled else "") + (" bulk" if bulk else "") + (" late" if late else "")
                   + (" own" if own else "") + (" rt" if rt else "") + (" xsf" if xsf else ""))
            consts = (f"constexpr int G = {g}; constexpr int NW = {nw}; constexpr int S = {st}; constexpr int U = {u}; "
                      f"constexpr bool MB = {'true' if mb else 'false'}; constexpr bool NORM = {'true' if norm else 'false'}; "
                      f"constexpr bool EARLY = {'true' if early else 'false'}; "
                      f"constexpr bool POST = {'true' if post else 'false'}; constexpr bool TILED = {'true' if tiled else 'false'}; "
                      f"constexpr bool OWNC = {'true' if own else 'false'}; constexpr bool RT = {'true' if rt else 'false'}; constexpr bool XSF = {'true' if xsf else 'false'}; constexpr int RB = 1; "
                      f"constexpr bool BULK = {'true' if bulk else 'false'}; constexpr bool LATE = {'true' if late else 'false'}; "
                      f"constexpr int EPS = 0x3727c5ac; "
                      f"constexpr bool RESID = {'true' if g == 64 else 'false'}; constexpr int SMEM = 49152;\n")
            src = (qmv_header + SHAPE + "__global__ void g(const __half* x, const uint32_t* w, const Shape w_shape, "
                   "const __half* scales, const __half* biases, const __half* r, const __half* nw, __half* y) {\n" + consts
                   + read("qgemv4_store.cu") + read("qgemv4.cu") + "\n}\n")
            bound = gemv_static_bound(nw, g, post)
            ok &= compile_one(f"qgemv4 {tag}", src, bound)
            # RB (MLXCEL_QMV_PAIR_BLOCKS: two 16-row blocks per CTA, plain launches only) on every
            # POST build (session 43).
            if post:
                ok &= compile_one(f"qgemv4 rb2 {tag}", src.replace("constexpr int RB = 1;", "constexpr int RB = 2;"), bound)
            # The stacked qkv projection's three outputs (MLXCEL_QKV_PARTS; never with RESID).
            if g != 64:
                src = (qmv_header + SHAPE + "__global__ void p(const __half* x, const uint32_t* w, const Shape w_shape, "
                       "const __half* scales, const __half* biases, const __half* r, const __half* nw, __half* y, __half* yk, "
                       "__half* yv) {\n" + consts + "constexpr int NQ = 4096; constexpr int NK = 1024;\n"
                       + read("qgemv4_store_qkv.cu") + read("qgemv4.cu") + "\n}\n")
                ok &= compile_one(f"qgemv4 qkv {tag}", src, bound)
            src = (qmv_header + SHAPE + "__global__ void s(const __half* x, const uint32_t* wg, const Shape wg_shape, "
                   "const __half* sg, const __half* bg, const uint32_t* wu, const __half* su, const __half* bu, const __half* nw, __half* y) {\n"
                   + consts + read("qgemv4_silu.cu") + "\n}\n")
            ok &= compile_one(f"qgemv4 silu {tag}", src, bound)
    # The arithmetic-free probe (MLXCEL_QMV_NOMATH_PROBE: the defines ahead of the headers, as
    # quantized_gemv.rs's run adds them for each MLXCEL_QMV_NOMATH_LEVEL): the shipped ring:8:3
    # POST builds, plain with the residual (o_proj, down), with the folded norm (head), the qkv
    # parts and gate/up + SiLU (with the norm).
    levels = (("nomath", "#define MLXCEL_QMV_PROBE_LEVEL 1\n"),
              ("notables", "#define MLXCEL_QMV_PROBE_LEVEL 2\n"),
              ("nwx", "#define MLXCEL_QMV_PROBE_LEVEL 3\n"),
              ("xplain", "#define MLXCEL_QMV_PROBE_LEVEL 4\n"),
              ("nopro", "#define MLXCEL_QMV_PROBE_LEVEL 5\n"),
              ("nosums", "#define MLXCEL_QMV_PROBE_LEVEL 6\n"),
              ("partials", "#define MLXCEL_QMV_PROBE_LEVEL 7\n"),
              ("xtwice", "#define MLXCEL_QMV_PROBE_LEVEL 8\n"),
              ("nosb", "#define MLXCEL_QMV_PROBE_LEVEL 9\n"),
              ("noxsum", "#define MLXCEL_QMV_PROBE_LEVEL 10\n"),
              ("noprep", "#define MLXCEL_QMV_PROBE_LEVEL 11\n"),
              # With the pad quantized_gemv.rs adds below 46592 bytes (here for SMEM = 37120):
              # ptxas's static count must grow by it (the pad is not optimized out).
              ("notables pad", "#define MLXCEL_QMV_PROBE_LEVEL 2\n#define MLXCEL_QMV_PROBE_PAD 9472\n"))
    for (level, defines), norm, own in itertools.product(levels, (False, True), (False, True)):
        consts = ("constexpr int G = 64; constexpr int NW = 8; constexpr int S = 3; constexpr int U = 4; "
                  f"constexpr bool MB = false; constexpr bool NORM = {'true' if norm else 'false'}; "
                  "constexpr bool EARLY = true; constexpr bool POST = true; "
                  f"constexpr bool OWNC = {'true' if own else 'false'}; constexpr bool RT = false; constexpr bool XSF = false; constexpr int RB = 1; "
                  f"constexpr bool TILED = false; constexpr bool BULK = false; constexpr bool LATE = {'true' if norm else 'false'}; "
                  f"constexpr int EPS = 0x3727c5ac; constexpr bool RESID = {'false' if norm else 'true'}; constexpr int SMEM = 49152;\n")
        pre = defines + qmv_header + SHAPE
        pbound = gemv_static_bound(8, 64, True) + (9472 if "pad" in level else 0)
        tag = f"{level} g64 nw8 s3 early post" + (" norm late" if norm else " resid") + (" own" if own else "")
        ok &= compile_one(f"qgemv4 {tag}", pre + "__global__ void g(const __half* x, const uint32_t* w, const Shape w_shape, "
                          "const __half* scales, const __half* biases, const __half* r, const __half* nw, __half* y) {\n" + consts
                          + read("qgemv4_store.cu") + read("qgemv4.cu") + "\n}\n", pbound)
        if norm:
            ok &= compile_one(f"qgemv4 qkv {tag}", pre + "__global__ void p(const __half* x, const uint32_t* w, const Shape w_shape, "
                              "const __half* scales, const __half* biases, const __half* r, const __half* nw, __half* y, __half* yk, "
                              "__half* yv) {\n" + consts + "constexpr int NQ = 4096; constexpr int NK = 1024;\n"
                              + read("qgemv4_store_qkv.cu") + read("qgemv4.cu") + "\n}\n", pbound)
            ok &= compile_one(f"qgemv4 silu {tag}", pre + "__global__ void s(const __half* x, const uint32_t* wg, const Shape wg_shape, "
                              "const __half* sg, const __half* bg, const uint32_t* wu, const __half* su, const __half* bu, const __half* nw, __half* y) {\n"
                              + consts + read("qgemv4_silu.cu") + "\n}\n", pbound)
    # The grid-barrier probe (MLXCEL_QMV_GBAR_PROBE): the shipped o_proj / down_proj build (ring:8:3,
    # EARLY, POST, RESID, group 64) and the non-POST and non-EARLY ones, the barrier after the
    # first copies and at the start.
    for early, post in ((True, True), (True, False), (False, True)):
        for start in (False, True):
            tag = f"gbar g64 nw8 s3" + (" early" if early else "") + (" post" if post else "") + (" start" if start else "")
            consts = ("constexpr int G = 64; constexpr int NW = 8; constexpr int S = 3; constexpr int U = 4; "
                      "constexpr bool MB = false; constexpr bool NORM = false; "
                      f"constexpr bool EARLY = {'true' if early else 'false'}; "
                      f"constexpr bool POST = {'true' if post else 'false'}; constexpr bool TILED = false; constexpr bool OWNC = false; constexpr bool RT = false; constexpr bool XSF = false; constexpr int RB = 1; "
                      "constexpr bool BULK = false; constexpr bool LATE = false; constexpr int EPS = 0x3727c5ac; "
                      "constexpr bool RESID = true; constexpr int SMEM = 49152; "
                      f"constexpr bool GBAR_START = {'true' if start else 'false'}; constexpr int GBAR_SLOT_WORDS = 1024;\n")
            src = (qmv_header + SHAPE + "__global__ void g(const __half* x, const uint32_t* w, const Shape w_shape, "
                   "const __half* scales, const __half* biases, const __half* r, const __half* nw, const unsigned int* gbar, "
                   "const Shape gbar_slot_shape, __half* y) {\n" + consts + "#define MLXCEL_QMV_GATE 1\n"
                   + read("qgemv4_store.cu") + read("qgemv4.cu") + "\n}\n")
            ok &= compile_one(f"qgemv4 {tag}", src, gemv_static_bound(8, 64, post))
    # The measuring probe of the ring (gemv_probe.rs): every PARTS value (arithmetic only with x
    # and the tables), one and several blocks per CTA, one and two matrices.
    for pro in (0, 1, 2, 3, 4, 7, 11, 15, 16, 17, 21, 25, 29, 35, 39, 47, 64, 65, 93):
        for bpc, mats, nw, st in ((1, 1, 8, 3), (4, 2, 8, 3), (1, 2, 4, 6)):
            consts = (f"constexpr int G = 64; constexpr int NW = {nw}; constexpr int S = {st}; constexpr int BPC = {bpc}; "
                      f"constexpr int MATS = {mats}; constexpr int PRO = {pro}; constexpr int SMEM = 49152;\n")
            src = (qmv_header + SHAPE + "__global__ void q(const uint32_t* w0, const Shape w0_shape, const __half* s0, "
                   "const __half* b0, const uint32_t* w1, const __half* s1, const __half* b1, const __half* x, uint32_t* out) {\n"
                   + consts + read("qgemv4_probe.cu") + "\n}\n")
            ok &= compile_one(f"qgemv4 probe pro{pro} bpc{bpc} mats{mats} nw{nw} s{st}", src, gemv_static_bound(nw, 64, False))
    # The qkv GEMV with the turbo4 K+V append folded in (MLXCEL_QKV_ENCODE): Llama-3-8B's parts
    # at D = 128, a GQA-7 head_dim-64 model's at D = 64.
    qkv_enc = read("qgemv4_store_qkv.cu") + read("qgemv4_qkv_encode_pre.cu") + read("qgemv4.cu") + read("qgemv4_qkv_encode.cu")
    # The default ring's stages: 4 until session 21, 3 since (the shipped build: EARLY, the norm and RoPE on).
    for d, nq, nk in ((128, 4096, 1024), (64, 1792, 256)):
        for norm, rope, trad, fmt, early, st in (("false", "false", "false", 0, "false", 4), ("true", "true", "false", 0, "false", 4),
                                                 ("true", "true", "true", 0, "false", 4), ("true", "true", "false", 1, "false", 4),
                                                 ("false", "false", "false", 1, "false", 4), ("true", "true", "false", 2, "false", 4),
                                                 ("false", "false", "false", 2, "false", 4), ("true", "true", "false", 0, "true", 4),
                                                 ("true", "true", "false", 1, "true", 4), ("true", "true", "false", 0, "true", 3),
                                                 ("true", "true", "false", 1, "true", 3), ("true", "true", "false", 2, "true", 3)):
          # ETAIL (MLXCEL_QKV_ENC_TAIL: the encoder's tables in shared memory, the ticket without
          # fences) on the shipped builds (3 stages, EARLY).
          # LATE on the shipped builds with the norm, POST off and on.
          for etail, post, tiled, bulk, late in ((("false", "false", "false", "false", "false"), ("true", "false", "false", "false", "false"),
                                                  ("true", "true", "false", "false", "false"), ("true", "false", "true", "false", "false"),
                                                  ("true", "false", "true", "true", "false"))
                                                 + ((("true", "false", "false", "false", "true"), ("true", "true", "false", "false", "true"))
                                                    if norm == "true" else ())
                                                 if st == 3 else (("false", "false", "false", "false", "false"),)):
            # CLUSTER (MLXCEL_QKV_CLUSTER: the head's CTAs in one cluster, __cluster_dims__ added to
            # the signature as quantized_gemv.rs does) on the shipped builds (ETAIL, and POST + LATE
            # with the norm), off everywhere.
            shipped = etail == "true" and post == "true" and tiled == "false" and (late == "true" or norm == "false")
            for cluster, own in ((("false", "false"), ("true", "false"), ("true", "true"), ("false", "true")) if shipped else (("false", "false"),)):
              consts = (f"constexpr int G = 64; constexpr int NW = 8; constexpr int S = {st}; constexpr int U = 4; constexpr bool MB = false; "
                        f"constexpr bool EARLY = {early}; constexpr bool POST = {post}; constexpr bool TILED = {tiled}; constexpr bool OWNC = {own}; constexpr bool RT = false; constexpr bool XSF = false; constexpr int RB = 1; constexpr bool BULK = {bulk}; constexpr bool LATE = {late}; "
                        f"constexpr bool NORM = {norm}; constexpr int EPS = 0x3727c5ac; constexpr bool RESID = false; constexpr int SMEM = 49152; "
                        f"constexpr int NQ = {nq}; constexpr int NK = {nk}; constexpr int D = {d}; constexpr bool ROPE = {rope}; constexpr bool TRAD = {trad}; "
                        f"constexpr int KVFMT = {fmt}; constexpr int TICKETS = 1024; constexpr bool ETAIL = {etail}; constexpr bool CLUSTER = {cluster};\n")
              # The buffers' types per format (turbo4, turbo4-asym, int8); unused codec inputs are f32 placeholders.
              kbuf, knorms, vbuf = (("const uint8_t* k_packed", "const __half* k_norms", "const uint8_t* v_packed"),
                                    ("const __half* k_packed", "const float* k_norms", "const uint8_t* v_packed"),
                                    ("const int8_t* k_packed", "const __half* k_norms", "const int8_t* v_packed"))[fmt]
              src = ("typedef signed char int8_t;\n" + enc_header + "\n" + "#include <cuda_bf16.h>\n" + read("fp16_store.cuh") + "\n" + read("int8_encode.cuh") + "\n"
                     + qmv_header + "\ntypedef unsigned char uint8_t;\n" + SHAPE
                     + (cluster_signature(d // 16) if cluster == "true" else "")
                     + "__global__ void q(const __half* x, const uint32_t* w, const Shape w_shape, const __half* scales, const __half* biases, "
                     "const __half* r, const __half* nw, const float* k_mids, const float* k_lut, const float* k_signs, const float* v_mids, "
                     f"const float* v_lut, const float* v_signs, {kbuf}, const Shape k_packed_shape, {knorms}, "
                     f"{vbuf}, const __half* v_norms, const uint8_t* pos_marker, const Shape pos_marker_shape, "
                     "const int* k_after, const int* v_after, const float* inv_freq, const uint32_t* tickets, const uint8_t* slot_marker, "
                     "const Shape slot_marker_shape, __half* y, __half* yk, __half* yv, int* done) {\n" + consts + qkv_enc + "\n}\n")
              ok &= compile_one(f"qgemv4 qkv encode d{d} norm={norm} rope={rope} trad={trad} kvfmt={fmt}" + (" early" if early == "true" else "")
                                + (f" s{st}" if st != 4 else "") + (" etail" if etail == "true" else "") + (" post" if post == "true" else "")
                                + (" tiled" if tiled == "true" else "") + (" bulk" if bulk == "true" else "") + (" late" if late == "true" else "")
                                + (" cluster" if cluster == "true" else "") + (" own" if own == "true" else ""), src,
                                gemv_static_bound(8, 64, post == "true", d))
              # RT (MLXCEL_QMV_RING_TABLES, session 44) on the OWNC builds, with the tiled words it needs.
              if own == "true":
                  rt_src = src.replace("constexpr bool TILED = false;", "constexpr bool TILED = true;").replace(
                      "constexpr bool RT = false;", "constexpr bool RT = true;")
                  ok &= compile_one(f"qgemv4 qkv encode d{d} norm={norm} rope={rope} trad={trad} kvfmt={fmt}"
                                    + (" cluster" if cluster == "true" else "") + " own tiled rt", rt_src,
                                    gemv_static_bound(8, 64, True, d))
                  # XSF (MLXCEL_QMV_XSUM_STAGE, session 44) on the same.
                  ok &= compile_one(f"qgemv4 qkv encode d{d} norm={norm} rope={rope} trad={trad} kvfmt={fmt}"
                                    + (" cluster" if cluster == "true" else "") + " own tiled rt xsf",
                                    rt_src.replace("constexpr bool XSF = false;", "constexpr bool XSF = true;"),
                                    gemv_static_bound(8, 64, True, d))
    # The greedy token's argmax (MLXCEL_FAST_ARGMAX), per logits dtype.
    for xt in ("__half", "__nv_bfloat16", "float"):
        src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\ntypedef unsigned int uint32_t;\n" + SHAPE
               + f"__global__ void a(const {xt}* x, const Shape x_shape, const int x_ndim, const uint32_t* tickets, const uint8_t* slot_marker, "
               "const Shape slot_marker_shape, uint32_t* out) {\n" + f"using T_x = {xt}; constexpr int SLOT_WORDS = 1024;\n" + read("argmax.cu") + "\n}\n")
        ok &= compile_one(f"argmax {xt}", "typedef unsigned char uint8_t;\n" + src)
    # A decode step's token embedding (MLXCEL_FAST_EMBED), per table dtype and id dtype, group 64 and 32.
    for st in ("__half", "__nv_bfloat16", "float"):
        for it in ("uint32_t", "int"):
            for g in (64, 32):
                src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\ntypedef unsigned int uint32_t;\n" + SHAPE
                       + f"__global__ void e(const {it}* ids, const uint32_t* w, const Shape w_shape, const {st}* scales, const {st}* biases, "
                       + f"{st}* out) {{\nusing T_scales = {st}; constexpr int G = {g};\n" + read("embedding_rows.cu") + "\n}\n")
                ok &= compile_one(f"embedding {st} ids {it} g{g}", src)
    src = ("typedef unsigned int uint32_t;\ntypedef unsigned long long uint64_t;\n"
           "__global__ void c(const uint32_t* tok, const uint32_t* after, uint32_t* tok_out, uint64_t* clock) {\n"
           + read("device_clock.cu") + "\n}\n")
    ok &= compile_one("device clock", src)
    # A decode step's RoPE table (MLXCEL_ROPE_TABLE).
    src = ("typedef unsigned char uint8_t;\n" + SHAPE
           + "__global__ void r(const float* inv_freq, const Shape inv_freq_shape, const uint8_t* len_marker, "
           "const Shape len_marker_shape, float* cs) {\n" + read("rope_table.cu") + "\n}\n")
    ok &= compile_one("rope table", src)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
