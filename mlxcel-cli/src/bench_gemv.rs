//! `mlxcel bench gemv`: time of the one-token 4-bit GEMVs of one decode step (a model's
//! stacked q/k/v, o_proj + residual, gate/up + SiLU, down_proj + residual, LM head) per
//! mlxcel kernel schedule, beside MLX's `quantized_matmul`, with the bytes each call reads,
//! the achieved TB/s and the fraction of a copy roofline measured in the same run.
//!
//! The time is wall time per call of a batch evaluated together, graph building included
//! (printed apart as "host"). A call that builds slower than the device runs it is
//! host-bound: its time says nothing about the kernel (on the H200 the ~9-14 MB GEMVs were,
//! session 9; ncu in situ, `benchmarks/gpu/ncu_gemv.sh`, gives their device time).
//!
//! Why: in a Llama-3-8B 4-bit decode step on the H200 these GEMVs were ~3.2 ms of device time
//! at ~1.4 TB/s (session 8), the largest cost every KV mode shares. Each call rotates over
//! enough weight copies (>= 256 MiB) that L2 cannot serve repeats.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use mlxcel_core::kernels::gemv_probe::{probe, Probe};
use mlxcel_core::kernels::quantized_gemv::{
    gemv_rms_with, gemv_silu_mul_rms_with, gemv_silu_mul_with, gemv_with, tile_rows16, FoldedNorm,
    Schedule,
};
use mlxcel_core::mlx::array::eval_all;
use mlxcel_core::mlx::fast::rms_norm;
use mlxcel_core::mlx::kernel::KernelBackend;
use mlxcel_core::mlx::ops::{quantize, Quantized};
use mlxcel_core::mlx::random;
use mlxcel_core::{Array, Dtype};
use mlxcel_models::loader::synthetic::quantized_matrix_bytes;

use crate::bench::{copy_roofline, time_calls, write_tables};

#[derive(Args, Debug)]
pub struct GemvBench {
    /// mlxcel kernel schedules to time: `batched`, `ring`, `ring:WARPS:STAGES`,
    /// `ring:WARPS:STAGES:GRID` or `bulk:WARPS:STAGES` (with --tiled; CUDA only; MLX's
    /// quantized_matmul is always timed).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "batched,ring:8:3,ring:8:4,ring:4:4,ring:8:4:264,ring:8:4:396"
    )]
    pub schedules: Vec<String>,
    /// Model shape as HIDDEN:INTERMEDIATE:VOCAB:Q_HEADS:KV_HEADS:HEAD_DIM (default Llama-3-8B).
    #[arg(long, default_value = "4096:14336:128256:32:8:128")]
    pub model: String,
    /// Decoder layers, for the per-token total.
    #[arg(long, default_value_t = 32)]
    pub layers: usize,
    /// Quantization group size (4-bit affine).
    #[arg(long, default_value_t = 64)]
    pub group: i32,
    /// Timed calls per measurement (after warm-up).
    #[arg(long, default_value_t = 50)]
    pub iters: usize,
    /// Also time each one-CTA-per-16-rows ring schedule on weights reordered into the tiled
    /// layout (`tile_rows16`: each 16-row x 128-value tile contiguous), as `SCHEDULE+tiled`;
    /// its outputs must be bit-identical to the same schedule's on MLX's layout (checked).
    /// Decode steps on CUDA read this layout by default (`MLXCEL_QMV_TILED`, since session 42):
    /// `ring:8:3+tiled` is the GEMV a decode step runs.
    #[arg(long)]
    pub tiled: bool,
    /// Measuring probes of the ring's grid (CUDA only): `probe:WARPS:STAGES:BLOCKS:PARTS`,
    /// the ring's copies of each GEMV's weights with BLOCKS 16-row blocks per CTA and the
    /// GEMV's parts added by the PARTS bits (1 x staged, 2 scale tables, 4 the per-block
    /// reduction, 8 the arithmetic, 16 scales in the ring, 32 the shipped prologue, 64 padded
    /// to 4 CTAs per SM; 0 = the bare ring; `gemv_probe.rs`). Timed like the schedules; their
    /// outputs are folds of the bytes read, not products.
    #[arg(long, value_delimiter = ',')]
    pub probes: Vec<String>,
    /// Fold an RMSNorm (random fp16 weight, eps 1e-5) into the GEMVs a decode step folds it
    /// into (qkv, gate/up, the head: `MLXCEL_FUSED_NORM`), as in situ; MLX's path runs
    /// `rms_norm` before its matmul. Probes ignore it.
    #[arg(long)]
    pub norm: bool,
    /// Folder for gemv.csv and gemv.md (default: the table on stdout).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// What a row times: MLX's quantized_matmul, an mlxcel schedule (on tiled weights or not),
/// or a measuring probe.
#[derive(Clone, Copy)]
enum Path {
    Mlx,
    Ours(Schedule, bool),
    Probe(Probe),
}

/// One GEMV of a decode step: `mats` matrices of N x K (2 for gate/up), with a residual add
/// (o_proj, down_proj) or not.
struct Gemv {
    name: &'static str,
    n: usize,
    k: usize,
    mats: usize,
    residual: bool,
    per_token: usize,
}

fn model_gemvs(spec: &str, layers: usize) -> Result<Vec<Gemv>> {
    let p: Vec<usize> = spec
        .split(':')
        .map(|v| v.parse())
        .collect::<std::result::Result<_, _>>()
        .ok()
        .filter(|p: &Vec<usize>| p.len() == 6 && p.iter().all(|&v| v > 0))
        .with_context(|| {
            format!(
                "--model {spec:?}: expected HIDDEN:INTERMEDIATE:VOCAB:Q_HEADS:KV_HEADS:HEAD_DIM"
            )
        })?;
    let (hidden, inter, vocab, hq, hkv, d) = (p[0], p[1], p[2], p[3], p[4], p[5]);
    let g = |name, n, k, mats, residual, per_token| Gemv {
        name,
        n,
        k,
        mats,
        residual,
        per_token,
    };
    Ok(vec![
        g("qkv", (hq + 2 * hkv) * d, hidden, 1, false, layers),
        g("o_proj+res", hidden, hq * d, 1, true, layers),
        g("gate/up+silu", inter, hidden, 2, false, layers),
        g("down+res", hidden, inter, 1, true, layers),
        g("lm_head", vocab, hidden, 1, false, 1),
    ])
}

/// Bytes one call reads from a 4-bit N x K weight: packed words plus fp16 scales and biases.
fn weight_bytes(n: usize, k: usize, group: usize) -> usize {
    quantized_matrix_bytes(n as u64, k as u64, 4, group as u64) as usize
}

fn random_weight(n: usize, k: usize, group: i32) -> Result<Quantized> {
    let w = random::normal(&[n as i32, k as i32], Dtype::F16, None)?
        .multiply(&Array::scalar(0.02f32)?.astype(Dtype::F16)?)?;
    Ok(quantize(&w, group, 4)?)
}

fn rel_rms(got: &Array, want: &Array) -> Result<f64> {
    let g = got.astype(Dtype::F32)?.to_vec::<f32>()?;
    let w = want.astype(Dtype::F32)?.to_vec::<f32>()?;
    let num: f64 = g
        .iter()
        .zip(&w)
        .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
        .sum();
    let den: f64 = w.iter().map(|b| (*b as f64).powi(2)).sum();
    Ok((num / den.max(1e-300)).sqrt())
}

struct Row {
    gemv: &'static str,
    n: usize,
    k: usize,
    path: String,
    bytes: usize,
    micros: f64,
    host_micros: f64,
    tbps: f64,
    frac_copy: f64,
    /// Calls per token (the layers, or 1 for the head).
    per_token: usize,
    rel_rms_vs_mlx: Option<f64>,
}

impl Row {
    fn per_token_ms(&self) -> f64 {
        self.micros / 1e3 * self.per_token as f64
    }
}

pub fn run(a: &GemvBench) -> Result<()> {
    let gemvs = model_gemvs(&a.model, a.layers)?;
    if a.group <= 0 || gemvs.iter().any(|g| g.k % a.group as usize != 0) {
        bail!("--group {}: must divide every K of the model", a.group);
    }
    if a.iters == 0 {
        bail!("--iters: at least 1");
    }
    let schedules = a
        .schedules
        .iter()
        .map(|s| Schedule::parse(s))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let probes = a
        .probes
        .iter()
        .map(|s| Probe::parse(s))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if a.norm && schedules.iter().any(|s| s.stages > 0 && s.grid > 0) {
        bail!("--norm: capped-grid schedules (ring:WARPS:STAGES:GRID) have no folded norm; leave them out");
    }
    if schedules.iter().any(|s| s.bulk) && !a.tiled {
        bail!("bulk:WARPS:STAGES schedules read tiled weights: add --tiled");
    }
    let on_cuda = KernelBackend::current() == Some(KernelBackend::Cuda);
    if !on_cuda {
        eprintln!(
            "not on CUDA: mlxcel's GEMV kernels are CUDA-only, timing MLX's quantized_matmul alone"
        );
    }
    let copy_bw = copy_roofline(1024)?;
    eprintln!(
        "copy roofline: {:.3} TB/s (read + write, 1 GiB fp16 copy)",
        copy_bw / 1e12
    );
    let l2_rotation_bytes = 256usize << 20;
    let mut rows = Vec::new();
    for gv in &gemvs {
        let bytes = gv.mats * weight_bytes(gv.n, gv.k, a.group as usize);
        let copies = l2_rotation_bytes.div_ceil(bytes).clamp(1, 32);
        eprintln!(
            "{} N={} K={}: {:.1} MB per call, {copies} weight copies",
            gv.name,
            gv.n,
            gv.k,
            bytes as f64 / 1e6
        );
        let ws: Vec<Vec<Quantized>> = (0..copies)
            .map(|_| {
                (0..gv.mats)
                    .map(|_| random_weight(gv.n, gv.k, a.group))
                    .collect()
            })
            .collect::<Result<_>>()?;
        eval_all(
            &ws.iter()
                .flatten()
                .flat_map(|q| [&q.w, &q.scales, &q.biases])
                .collect::<Vec<_>>(),
        )?;
        let x = random::normal(&[1, 1, gv.k as i32], Dtype::F16, None)?;
        let res = random::normal(&[1, 1, gv.n as i32], Dtype::F16, None)?;
        x.eval()?;
        res.eval()?;
        // The folded norm's weight (around 1, as trained norms are), on the GEMVs a decode
        // step folds it into: those without a residual.
        let nw = if a.norm && !gv.residual {
            let w = random::normal(&[gv.k as i32], Dtype::F16, None)?
                .multiply(&Array::scalar(0.1f32)?.astype(Dtype::F16)?)?
                .add(&Array::scalar(1.0f32)?.astype(Dtype::F16)?)?;
            w.eval()?;
            Some(w)
        } else {
            None
        };
        let norm = nw.as_ref().map(|w| FoldedNorm {
            weight: w,
            eps: 1e-5,
        });
        // MLX's path: (rms_norm, then) quantized_matmul per matrix, then the same SiLU
        // product / residual add.
        let mlx_call = |w: &[Quantized]| -> Result<Array> {
            let xn = match norm {
                Some(m) => rms_norm(&x, Some(m.weight), m.eps)?,
                None => x.clone(),
            };
            let x = &xn;
            let y = w[0].matmul(x, true)?;
            Ok(if gv.mats == 2 {
                let u = w[1].matmul(x, true)?;
                y.multiply(&y.sigmoid()?)?.multiply(&u)?
            } else if gv.residual {
                y.add(&res)?
            } else {
                y
            })
        };
        // The weights carry their layout (`tile_rows16`'s reorder or MLX's).
        let ours = |w: &[Quantized], s: Schedule| -> Result<Array> {
            Ok(match (gv.mats, norm) {
                (2, Some(m)) => gemv_silu_mul_rms_with(&x, m, &w[0], &w[1], s)?,
                (2, None) => gemv_silu_mul_with(&x, &w[0], &w[1], s)?,
                (_, Some(m)) => gemv_rms_with(&x, m, &w[0], s)?,
                (_, None) => gemv_with(&x, &w[0], gv.residual.then_some(&res), s)?,
            })
        };
        let want = mlx_call(&ws[0])?;
        want.eval()?;
        let tiled_ws: Vec<Vec<Quantized>> = if on_cuda && a.tiled {
            let t: Vec<Vec<Quantized>> = ws
                .iter()
                .map(|m| m.iter().map(tile_rows16).collect::<Result<_, _>>())
                .collect::<Result<_, _>>()?;
            eval_all(&t.iter().flatten().map(|q| &q.w).collect::<Vec<_>>())?;
            t
        } else {
            Vec::new()
        };
        let mut paths: Vec<(String, Path)> = vec![("mlx-qmm".into(), Path::Mlx)];
        if on_cuda {
            for s in &schedules {
                if s.bulk {
                    // Bulk copies read the tiled layout only.
                    paths.push((s.to_string(), Path::Ours(*s, true)));
                    continue;
                }
                paths.push((s.to_string(), Path::Ours(*s, false)));
                if a.tiled && s.stages > 0 && s.grid == 0 {
                    paths.push((format!("{s}+tiled"), Path::Ours(*s, true)));
                }
            }
            paths.extend(probes.iter().map(|p| (p.to_string(), Path::Probe(*p))));
        }
        for (path, sched) in paths {
            let weights = |i: usize, tiled: bool| {
                if tiled {
                    &tiled_ws[i % copies]
                } else {
                    &ws[i % copies]
                }
            };
            let ct = time_calls(a.iters, &|i| match sched {
                Path::Mlx => mlx_call(&ws[i % copies]),
                Path::Ours(s, t) => ours(weights(i, t), s),
                Path::Probe(p) => Ok(probe(&x, &ws[i % copies].iter().collect::<Vec<_>>(), p)?),
            })?;
            let t = ct.wall;
            let err = match sched {
                Path::Ours(s, tiled) => {
                    let got = ours(weights(0, tiled), s)?;
                    if tiled {
                        // The same ring with per-lane copies on MLX's layout.
                        let s = s.per_lane();
                        let plain = ours(&ws[0], s)?;
                        // fp16 -> f32 is exact, so f32 bits compare the fp16 bits.
                        let bits = |a: &Array| -> Result<Vec<u32>> {
                            Ok(a.astype(Dtype::F32)?
                                .to_vec::<f32>()?
                                .iter()
                                .map(|v| v.to_bits())
                                .collect())
                        };
                        let (g, p) = (bits(&got)?, bits(&plain)?);
                        let differ = g.iter().zip(&p).filter(|(a, b)| a != b).count();
                        if differ > 0 {
                            bail!("{} {path}: {differ} of {} outputs differ from {s} on MLX's layout (must be bit-identical)", gv.name, g.len());
                        }
                        eprintln!(
                            "{} {path}: {} outputs bit-identical to {s}",
                            gv.name,
                            g.len()
                        );
                    }
                    Some(rel_rms(&got, &want)?)
                }
                Path::Mlx | Path::Probe(_) => None,
            };
            let row = Row {
                gemv: gv.name,
                n: gv.n,
                k: gv.k,
                path,
                bytes,
                micros: t * 1e6,
                host_micros: ct.build * 1e6,
                tbps: bytes as f64 / t / 1e12,
                frac_copy: bytes as f64 / t / copy_bw,
                per_token: gv.per_token,
                rel_rms_vs_mlx: err,
            };
            eprintln!(
                "{:<13} {:<12} {:>8.2} us (host {:>5.1})  {:>5.2} TB/s  {:>5.1}% of copy  x{:<3} = {:>6.3} ms/token{}",
                row.gemv,
                row.path,
                row.micros,
                row.host_micros,
                row.tbps,
                100.0 * row.frac_copy,
                row.per_token,
                row.per_token_ms(),
                err.map(|e| format!("  rel. RMS vs MLX {e:.1e}")).unwrap_or_default()
            );
            rows.push(row);
        }
    }
    let (csv, md) = tables(&rows, copy_bw, &a.model, a.group);
    if let Some(dir) = &a.out {
        write_tables(dir, "gemv", &csv, &md)?;
    }
    std::io::stdout().write_all(md.as_bytes())?;
    Ok(())
}

/// The CSV (one row per GEMV and path) and the markdown table, with each path's total per
/// token (the layer GEMVs times the layers, plus the head).
fn tables(rows: &[Row], copy_bw: f64, model: &str, group: i32) -> (String, String) {
    let mut csv = String::from(
        "gemv,n,k,path,bytes,time_us,host_build_us,tb_per_s,fraction_of_copy,ms_per_token,rel_rms_vs_mlx\n",
    );
    let mut md = format!(
        "Model {model}, 4-bit group {group}; copy roofline (1 GiB fp16 copy, read + write): {:.3} TB/s\n\n\
         | GEMV | N | K | path | MB | time (us) | host build (us) | TB/s | of copy | ms per token | rel. RMS vs MLX |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
        copy_bw / 1e12
    );
    for r in rows {
        let err = r
            .rel_rms_vs_mlx
            .map(|e| format!("{e:.2e}"))
            .unwrap_or_default();
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{:.3},{:.3},{:.4},{:.4},{:.4},{err}",
            r.gemv,
            r.n,
            r.k,
            r.path,
            r.bytes,
            r.micros,
            r.host_micros,
            r.tbps,
            r.frac_copy,
            r.per_token_ms()
        );
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} | {:.2} | {:.1} | {:.2} | {:.0}% | {:.3} | {err} |",
            r.gemv,
            r.n,
            r.k,
            r.path,
            r.bytes as f64 / 1e6,
            r.micros,
            r.host_micros,
            r.tbps,
            100.0 * r.frac_copy,
            r.per_token_ms()
        );
    }
    let mut paths: Vec<&str> = Vec::new();
    for r in rows {
        if !paths.contains(&r.path.as_str()) {
            paths.push(&r.path);
        }
    }
    md +=
        "\n| path | GEMV ms per token | GB per token | TB/s over the token |\n|---|---|---|---|\n";
    for p in paths {
        let of: Vec<&Row> = rows.iter().filter(|r| r.path == p).collect();
        let ms: f64 = of.iter().map(|r| r.per_token_ms()).sum();
        let gb: f64 = of
            .iter()
            .map(|r| (r.bytes * r.per_token) as f64)
            .sum::<f64>()
            / 1e9;
        let _ = writeln!(md, "| {p} | {ms:.3} | {gb:.2} | {:.2} |", gb / ms);
    }
    (csv, md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_8b_gemvs_have_its_shapes_and_bytes() {
        let g = model_gemvs("4096:14336:128256:32:8:128", 32).unwrap();
        let shapes: Vec<_> = g
            .iter()
            .map(|g| (g.name, g.n, g.k, g.mats, g.residual))
            .collect();
        assert_eq!(
            shapes,
            [
                ("qkv", 6144, 4096, 1, false),
                ("o_proj+res", 4096, 4096, 1, true),
                ("gate/up+silu", 14336, 4096, 2, false),
                ("down+res", 4096, 14336, 1, true),
                ("lm_head", 128256, 4096, 1, false),
            ]
        );
        // 4-bit words plus fp16 scale and bias per 64 values: 0.5625 bytes per weight.
        assert_eq!(weight_bytes(4096, 4096, 64), 4096 * 4096 * 9 / 16);
        // One decode step reads ~4.2 GB of GEMV weights (the head once, the rest per layer).
        let per_token: usize = g
            .iter()
            .map(|g| g.mats * weight_bytes(g.n, g.k, 64) * g.per_token)
            .sum();
        assert!((4.1e9..4.3e9).contains(&(per_token as f64)), "{per_token}");
    }

    #[test]
    fn bad_model_specs_are_refused_with_the_expected_form() {
        for bad in ["4096:14336", "a:b:c:d:e:f", "4096:0:1:1:1:1", ""] {
            let e = model_gemvs(bad, 32).err().unwrap().to_string();
            assert!(e.contains("HIDDEN:INTERMEDIATE:VOCAB"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn the_per_token_table_sums_each_path() {
        let row = |gemv, path: &str, micros, per_token| Row {
            gemv,
            n: 16,
            k: 128,
            path: path.into(),
            bytes: 1_000_000,
            micros,
            host_micros: 1.0,
            tbps: 1.0,
            frac_copy: 0.5,
            per_token,
            rel_rms_vs_mlx: None,
        };
        let rows = [
            row("qkv", "a", 10.0, 32),
            row("lm_head", "a", 20.0, 1),
            row("qkv", "b", 5.0, 32),
        ];
        let (csv, md) = tables(&rows, 3.7e12, "m", 64);
        assert_eq!(csv.lines().count(), 4);
        // Path a: 0.34 ms per token, 32 + 1 calls of 1 MB = 0.033 GB.
        assert!(md.contains("| a | 0.340 | 0.03 |"), "{md}");
        assert!(md.contains("| b | 0.160 | 0.03 |"), "{md}");
    }
}
