//! `mlxcel bench attention`: decode-attention time per KV mode over contexts, beside MLX's
//! fp16 SDPA and a copy roofline measured in the same run; bytes moved and achieved TB/s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mlxcel_core::kernels::decode_attention::kernel_name;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mlxcel_core::attention::{attend_with, dense_attention, select_path, AttentionPath};
use mlxcel_core::kv::mode::new_side;
use mlxcel_core::kv::turbo::rotation::{K_SEED, V_SEED};
use mlxcel_core::kv::KvMode;
use mlxcel_core::mlx::array::{async_eval_all, eval_all};
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::mlx::{device, random};
use mlxcel_core::{Array, Dtype};

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Subcommand, Debug)]
pub enum BenchWhat {
    /// Time one decode step of attention (one layer) per KV mode and context.
    Attention(AttentionBench),
    /// Time the one-token 4-bit GEMVs of a decode step per kernel schedule, beside MLX.
    Gemv(crate::bench_gemv::GemvBench),
}

#[derive(Args, Debug)]
pub struct AttentionBench {
    /// Context lengths.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "4096,8192,16384,32768,65536,131072"
    )]
    pub contexts: Vec<usize>,
    /// KV modes (each through the path `generate` would take: fused on CUDA).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fp16,int8,turbo4-asym,turbo4,turbo3-asym,turbo3,turbo2-asym,turbo2"
    )]
    pub modes: Vec<String>,
    /// Layer shapes as Hq:Hkv:D (default: Llama-3-8B, and a head_dim-64 shape).
    #[arg(long, value_delimiter = ',', default_value = "32:8:128,32:8:64")]
    pub shapes: Vec<String>,
    /// Also time the split path (rotated-sdpa / dequant) for these modes.
    #[arg(long, value_delimiter = ',', default_value = "turbo4-asym,turbo4")]
    pub split_modes: Vec<String>,
    /// Timed calls per measurement (after warm-up).
    #[arg(long, default_value_t = 50)]
    pub iters: usize,
    /// Size of the fp16 array whose copy measures the roofline, in MiB (keep it well above
    /// the GPU's L2: 1 GiB against the H200's 60 MB).
    #[arg(long, default_value_t = 1024)]
    pub copy_mib: usize,
    /// Folder for results.csv and results.md.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// One attention layer's shape: query heads, KV heads, head_dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LayerShape {
    hq: usize,
    hkv: usize,
    d: usize,
}

/// Parses `Hq:Hkv:D`: three positive integers, Hq a multiple of Hkv (GQA). Why an error and not
/// a panic: a typo in `--shapes` should say which value and what was expected.
fn parse_shape(s: &str) -> Result<LayerShape> {
    let bad =
        |why: &str| anyhow::anyhow!("--shapes: {s:?} {why} (expected Hq:Hkv:D, e.g. 32:8:128)");
    let p = s
        .split(':')
        .map(|x| x.trim().parse::<usize>())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(&format!("is not three integers: {e}")))?;
    let [hq, hkv, d] = p[..] else {
        return Err(bad(&format!("has {} fields, not 3", p.len())));
    };
    if hq == 0 || hkv == 0 || d == 0 {
        return Err(bad("has a zero"));
    }
    if hq % hkv != 0 {
        return Err(bad(&format!(
            "has {hq} query heads, not a multiple of its {hkv} KV heads"
        )));
    }
    Ok(LayerShape { hq, hkv, d })
}

/// Per-call timing of [`time_calls`]: wall time per call and the host time spent building
/// each call's graph (MLX ops and kernel objects, before any evaluation).
#[derive(Clone, Copy)]
pub(crate) struct CallTime {
    pub(crate) wall: f64,
    pub(crate) build: f64,
}

/// Best of three means of `iters` calls evaluated together (launch gaps included), after a
/// warm-up; `f(i)` builds call i. The graph-building time is measured apart so that host
/// overhead shows next to the wall time. `wall` includes it: all calls are built before the
/// first is evaluated, so host and device work add up here, where a decode step overlaps them
/// ([`time_calls_pipelined`] times that way). Sessions 57-63: the fused kernels' build is
/// 5-12 us a call, MLX's SDPA's ~1 us.
pub(crate) fn time_calls(iters: usize, f: &dyn Fn(usize) -> Result<Array>) -> Result<CallTime> {
    for i in 0..3 {
        f(i)?.eval()?;
    }
    device::synchronize()?;
    let mut best = CallTime {
        wall: f64::MAX,
        build: f64::MAX,
    };
    for _ in 0..3 {
        let t0 = Instant::now();
        let outs = (0..iters).map(f).collect::<Result<Vec<_>>>()?;
        let built = t0.elapsed().as_secs_f64();
        eval_all(&outs.iter().collect::<Vec<_>>())?;
        device::synchronize()?;
        let this = CallTime {
            wall: t0.elapsed().as_secs_f64() / iters as f64,
            build: built / iters as f64,
        };
        if this.wall < best.wall {
            best = this;
        }
    }
    Ok(best)
}

/// Calls handed to MLX together by [`time_calls_pipelined`]: a few per CUDA graph, so that
/// MLX's per-graph launch is shared, and enough batches (10 of the default 50 calls) for the
/// host to work ahead of the device.
const PIPELINE_BATCH: usize = 5;

/// Best of three wall times per call, the decode loop's way: each call's query is the previous
/// call's output (`f(i, q)` builds call i on `q`; the first gets `q0`), so the calls run one
/// after another on the device as a model's layers do, and they are handed to MLX's
/// `async_eval` in batches of [`PIPELINE_BATCH`] as they are built, so the host builds and
/// encodes batch j + 1 while the device runs batch j. The time per call is then about the
/// larger of the host's work and the device's, where [`time_calls`]' is their sum. Why: at
/// contexts up to ~32K a fused call's kernel is shorter than its host work (graph build plus
/// MLX's encoding of the launch), so the serial time measures the host (ADR 0030), while a
/// decode step builds the next step as the device runs this one. The chain matters: calls
/// without a dependency share MLX's CUDA graphs as unordered nodes, and short kernels then
/// overlap on the device (session 63 measured MLX's 8K SDPA at 18 us per call that way, against
/// a 33 us kernel). Call after [`time_calls`] (its warm-up).
pub(crate) fn time_calls_pipelined(
    iters: usize,
    q0: &Array,
    f: &dyn Fn(usize, &Array) -> Result<Array>,
) -> Result<f64> {
    let (shape, dtype) = (q0.shape(), q0.dtype());
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t0 = Instant::now();
        let mut q = q0.clone();
        let mut batch = Vec::with_capacity(PIPELINE_BATCH);
        for i in 0..iters {
            let out = f(i, &q)?;
            // The attention output has the query's shape and dtype on the fused path and MLX's
            // SDPA; the reshape (a view) and the cast are only there should a path differ, and
            // are skipped otherwise (each would be one more node of host work per call).
            let mut next = if out.shape() == shape {
                out
            } else {
                out.reshape(&shape)?
            };
            if next.dtype() != dtype {
                next = next.astype(dtype)?;
            }
            batch.push(next.clone());
            q = next;
            if batch.len() == PIPELINE_BATCH || i + 1 == iters {
                async_eval_all(&batch.iter().collect::<Vec<_>>())?;
                batch.clear();
            }
        }
        q.eval()?;
        device::synchronize()?;
        best = best.min(t0.elapsed().as_secs_f64() / iters as f64);
    }
    Ok(best)
}

struct Row {
    shape: String,
    ctx: usize,
    mode: String,
    path: String,
    bytes: usize,
    micros: f64,
    host_micros: f64,
    tbps: f64,
    frac_copy: f64,
    vs_sdpa: f64,
    /// Time per call with the host's work overlapping the device's ([`time_calls_pipelined`]),
    /// and the ratio of MLX's fp16 SDPA timed the same way to it.
    pipelined_micros: f64,
    vs_sdpa_pipelined: f64,
}

/// Copy bandwidth (read + write bytes per second) of an fp16 array of `mib` MiB.
pub(crate) fn copy_roofline(mib: usize) -> Result<f64> {
    let n = i32::try_from(mib.max(1) << 19).context("copy roofline: at most 4095 MiB")?;
    let a = random::normal(&[n], Dtype::F16, None)?;
    a.eval()?;
    // negative() reads and writes every element (a plain copy can alias the buffer).
    let t = time_calls(10, &|_| Ok(a.negative()?))?.wall;
    Ok(2.0 * a.nbytes() as f64 / t)
}

pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.what {
        BenchWhat::Attention(a) => run_attention(a),
        BenchWhat::Gemv(g) => crate::bench_gemv::run(g),
    }
}

fn run_attention(a: &AttentionBench) -> Result<()> {
    // Every value is checked before the first (long) measurement.
    let shapes = a
        .shapes
        .iter()
        .map(|s| parse_shape(s))
        .collect::<Result<Vec<_>>>()?;
    let modes = a
        .modes
        .iter()
        .map(|m| match KvMode::parse(m) {
            Ok(k) => Ok((m, k)),
            // The parser names `--kv`, generate's flag; here the value came from --modes.
            Err(mlxcel_core::Error::InvalidArgument { message, .. }) => {
                Err(anyhow::anyhow!("invalid argument to --modes: {message}"))
            }
            Err(e) => Err(e.into()),
        })
        .collect::<Result<Vec<_>>>()?;
    anyhow::ensure!(
        a.contexts.iter().all(|&c| c > 0),
        "--contexts: every context must be at least 1 token"
    );
    anyhow::ensure!(a.iters > 0, "--iters: at least 1");
    anyhow::ensure!(
        (1..=4095).contains(&a.copy_mib),
        "--copy-mib: 1 to 4095 MiB, got {}",
        a.copy_mib
    );
    if KernelBackend::current() != Some(KernelBackend::Cuda) {
        // Said up front: the defaults are sized for a GPU, and nothing else would tell a CPU
        // user why the first rows take minutes or why no row says "fused".
        eprintln!(
            "not on CUDA: the fused decode kernels are CUDA-only, so every mode runs its split \
             path here; the default sweep (contexts up to 128K, 50 calls each) is sized for a GPU \
             and takes hours on a CPU (try --contexts 1024,4096 --iters 5 --copy-mib 64)"
        );
    }
    let copy_bw = copy_roofline(a.copy_mib)?;
    eprintln!(
        "copy roofline: {:.3} TB/s (read + write, {} MiB fp16 copy)",
        copy_bw / 1e12,
        a.copy_mib
    );
    // Calls rotate over enough copies of the cache that the bytes they read add up to at
    // least 256 MiB (over 4x the H200's 60 MB L2), per mode: a compressed cache is smaller,
    // so it needs more copies than fp16 to keep repeated calls from being served by L2.
    let l2_rotation_bytes = 256usize << 20;
    let max_copies = 64;
    let mut rows = Vec::new();
    for (shape, &LayerShape { hq, hkv, d }) in a.shapes.iter().zip(&shapes) {
        let scale = 1.0 / (d as f32).sqrt();
        for &ctx in &a.contexts {
            let fp16_bytes = 2 * hkv * ctx * d * 2;
            let copies = l2_rotation_bytes.div_ceil(fp16_bytes).clamp(1, 16);
            let q = random::normal(&[1, hq as i32, 1, d as i32], Dtype::F16, None)?;
            let kv: Vec<(Array, Array)> = (0..copies)
                .map(|_| -> Result<(Array, Array)> {
                    let shp = [1, hkv as i32, ctx as i32, d as i32];
                    Ok((
                        random::normal(&shp, Dtype::F16, None)?,
                        random::normal(&shp, Dtype::F16, None)?,
                    ))
                })
                .collect::<Result<_>>()?;
            eval_all(&kv.iter().flat_map(|(k, v)| [k, v]).collect::<Vec<_>>())?;
            // One call of the baseline, on query `q`: timed serially and pipelined, as each
            // mode's calls are below.
            let sdpa_call = |i: usize, q: &Array| -> Result<Array> {
                let (k, v) = &kv[i % copies];
                Ok(dense_attention(q, k, v, scale)?)
            };
            let sdpa_t = time_calls(a.iters, &|i| sdpa_call(i, &q))?;
            let sdpa = sdpa_t.wall;
            let sdpa_piped = time_calls_pipelined(a.iters, &q, &sdpa_call)?;
            rows.push(Row {
                shape: shape.clone(),
                ctx,
                mode: "fp16".into(),
                path: "mlx-sdpa".into(),
                bytes: fp16_bytes,
                micros: sdpa * 1e6,
                host_micros: sdpa_t.build * 1e6,
                tbps: fp16_bytes as f64 / sdpa / 1e12,
                frac_copy: fp16_bytes as f64 / sdpa / copy_bw,
                vs_sdpa: 1.0,
                pipelined_micros: sdpa_piped * 1e6,
                vs_sdpa_pipelined: 1.0,
            });
            for &(mode, m) in &modes {
                let side_pair = |i: usize| -> Result<_> {
                    let (k, v) = &kv[i % copies];
                    let mut ks = new_side(m.k, d, K_SEED)?;
                    let mut vs = new_side(m.v, d, V_SEED)?;
                    ks.append(k)?;
                    vs.append(v)?;
                    Ok((ks, vs))
                };
                let mut sides = vec![side_pair(0)?];
                let bytes = sides[0].0.bytes() + sides[0].1.bytes();
                let mode_copies = l2_rotation_bytes.div_ceil(bytes).clamp(1, max_copies);
                for i in 1..mode_copies {
                    sides.push(side_pair(i)?);
                }
                let mut paths = vec![select_path(&q, sides[0].0.as_ref(), sides[0].1.as_ref())];
                if a.split_modes.contains(mode) && paths[0] == AttentionPath::FusedDecode {
                    paths.push(AttentionPath::RotatedSdpa);
                }
                for path in paths {
                    let call = |i: usize, q: &Array| -> Result<Array> {
                        let (k, v) = &sides[i % sides.len()];
                        Ok(attend_with(path, q, k.as_ref(), v.as_ref(), scale)?)
                    };
                    let ct = time_calls(a.iters, &|i| call(i, &q))?;
                    let piped = time_calls_pipelined(a.iters, &q, &call)?;
                    let t = ct.wall;
                    let row = Row {
                        shape: shape.clone(),
                        ctx,
                        mode: mode.clone(),
                        path: match (path, sides[0].0.raw(), sides[0].1.raw()) {
                            (AttentionPath::FusedDecode, Some(kr), Some(vr)) => {
                                format!("fused/{}", kernel_name(&kr, &vr, d, hq / hkv))
                            }
                            _ => path.name().into(),
                        },
                        bytes,
                        micros: t * 1e6,
                        host_micros: ct.build * 1e6,
                        tbps: bytes as f64 / t / 1e12,
                        frac_copy: bytes as f64 / t / copy_bw,
                        vs_sdpa: sdpa / t,
                        pipelined_micros: piped * 1e6,
                        vs_sdpa_pipelined: sdpa_piped / piped,
                    };
                    eprintln!(
                        "{:<10} ctx {:>6} {:<12} {:<13} {:>9.1} us (host {:>5.1})  {:>6.2} TB/s  {:>5.1}% of copy  {:>5.2}x fp16 SDPA (pipelined {:.1} us, {:.2}x)",
                        row.shape, row.ctx, row.mode, row.path, row.micros, row.host_micros, row.tbps, 100.0 * row.frac_copy, row.vs_sdpa, row.pipelined_micros, row.vs_sdpa_pipelined
                    );
                    rows.push(row);
                }
            }
        }
    }
    let mut csv = String::from(
        "shape,ctx,mode,path,bytes,time_us,host_build_us,tb_per_s,fraction_of_copy,speedup_vs_mlx_fp16_sdpa,pipelined_us,speedup_pipelined\n",
    );
    let mut md = format!(
        "Copy roofline ({} MiB fp16 copy, read + write): {:.3} TB/s. Time per call: all calls \
         built, then evaluated (it includes the calls' graph build, shown apart). Pipelined: \
         calls handed to MLX in batches of {PIPELINE_BATCH} as they are built, the host \
         working ahead of the device as in a decode step; its ratio compares MLX's SDPA timed \
         the same way. Kernel times under ncu: benchmarks/gpu/attention_kernel_times.sh.\n\n\
         | shape Hq:Hkv:D | ctx | mode | path | KV bytes | time (us) | host build (us) | TB/s | of copy | vs MLX fp16 SDPA | pipelined (us) | pipelined vs SDPA |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        a.copy_mib,
        copy_bw / 1e12
    );
    for r in &rows {
        let key = [
            r.shape.clone(),
            r.ctx.to_string(),
            r.mode.clone(),
            r.path.clone(),
            r.bytes.to_string(),
        ];
        csv += &format!(
            "{},{:.2},{:.2},{:.4},{:.4},{:.3},{:.2},{:.3}\n",
            key.join(","),
            r.micros,
            r.host_micros,
            r.tbps,
            r.frac_copy,
            r.vs_sdpa,
            r.pipelined_micros,
            r.vs_sdpa_pipelined
        );
        md += &format!(
            "| {} | {:.1} | {:.1} | {:.2} | {:.0}% | {:.2}x | {:.1} | {:.2}x |\n",
            key.join(" | "),
            r.micros,
            r.host_micros,
            r.tbps,
            100.0 * r.frac_copy,
            r.vs_sdpa,
            r.pipelined_micros,
            r.vs_sdpa_pipelined
        );
    }
    match &a.out {
        Some(dir) => write_tables(dir, "results", &csv, &md)?,
        None => std::io::stdout().write_all(md.as_bytes())?,
    }
    Ok(())
}

/// Writes a benchmark's tables as `STEM.csv` and `STEM.md` into `dir` (created if missing).
pub(crate) fn write_tables(dir: &Path, stem: &str, csv: &str, md: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (ext, text) in [("csv", csv), ("md", md)] {
        let path = dir.join(format!("{stem}.{ext}"));
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_or_say_what_is_wrong() {
        assert_eq!(
            parse_shape("32:8:128").unwrap(),
            LayerShape {
                hq: 32,
                hkv: 8,
                d: 128
            }
        );
        for (bad, says) in [
            ("32:8", "2 fields"),
            ("32:8:128:1", "4 fields"),
            ("32:x:128", "not three integers"),
            ("32:0:128", "zero"),
            ("28:8:128", "not a multiple"),
        ] {
            let e = parse_shape(bad).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
    }
}
