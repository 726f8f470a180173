//! KV-cache options shared by `generate` and `perplexity`.

use anyhow::{bail, Result};
use clap::Args;
use mlxcel_core::flags;
use mlxcel_core::kv::mode::{
    check_boundary_mode, default_boundary_layers, default_boundary_mode, BoundaryLayers,
};
use mlxcel_core::kv::KvMode;
use mlxcel_models::KvConfig;

#[derive(Args, Debug, Clone)]
pub struct KvArgs {
    /// KV cache mode: fp16 (default); int8 (int8 + fp16 per-vector scale); int8r (int8 of the rotated vector: for
    /// models with large key channels such as Qwen2.5; fused kernels on CUDA only); turbo4-asym
    /// (= fp16+turbo4: fp16 K, 4-bit turbo V); turbo4 (4-bit K and V); turbo4-delegated
    /// (fp16 K, fp16 recent-V window, older V in turbo4); turbo3-asym, turbo2-asym (fp16 K,
    /// 3/2-bit V); turbo3, turbo2 (3/2-bit K and V: large quality loss). Turbo = random
    /// Walsh–Hadamard rotation + Lloyd–Max codebook + corrected norm per 64/128 values.
    /// (`perplexity` and `niah` take a comma-separated list and compare the modes in one run.)
    #[arg(long, value_name = "MODE")]
    pub kv: Option<String>,
    /// Key storage (fp16, int8, int8r, turbo2, turbo3, turbo4); use with --cache-type-v instead of --kv.
    #[arg(long, value_name = "TYPE", requires = "cache_type_v")]
    pub cache_type_k: Option<String>,
    /// Value storage (fp16, int8, int8r, turbo2, turbo3, turbo4, turbo4-delegated).
    #[arg(long, value_name = "TYPE", requires = "cache_type_k")]
    pub cache_type_v: Option<String>,
    /// Layers that keep a near-lossless cache in turbo modes (fp16 keys, see
    /// --kv-boundary-type): N at each end, or FIRST,LAST (e.g. 2,0: the first two only).
    /// Default: 3,0 for turbo4 / turbo3 / turbo2 (on three models the third first layer
    /// protects turbo4 more than the last two, with one fp16-key layer fewer: ADR 0028), 2 for
    /// the -asym modes and turbo4-delegated [env: MLXCEL_KV_BOUNDARY_LAYERS]
    #[arg(long, value_name = "N|FIRST,LAST", value_parser = BoundaryLayers::parse)]
    pub kv_boundary_layers: Option<BoundaryLayers>,
    /// Cache of the boundary layers in turbo modes. The defaults keep their keys exact.
    /// fp16+turbo4 (the default for turbo4, turbo3 and turbo2): fp16 keys and turbo4 values,
    /// 322 of fp16+int8's 386 bytes per position and head at head_dim 128; turbo4 at 128K 1.98x
    /// fp16's decode speed against 1.92x with fp16+int8 ends (H200, device time, session 57) at
    /// +1.8% (Qwen2.5-Coder-0.5B) to +6.3% (SmolLM2) of turbo4's KLD. fp16+int8 (the default for
    /// turbo4-asym, turbo3-asym, turbo2-asym, whose own keys are fp16): fp16 keys and int8
    /// values, fp16's quality on three models with 3/4 of its bytes. fp16: whole fp16 ends, as
    /// the turbo peers keep them. int8r (rotated int8): 260 bytes, as fast as fp16+turbo4 ends
    /// (1.99x), at a model-dependent quality cost (turbo4's PPL penalty +6.7% -> +11.4% on
    /// Qwen2.5-Coder-0.5B). Also int8 and fp16+int8r [env: MLXCEL_KV_BOUNDARY_TYPE]
    #[arg(long, value_name = "TYPE")]
    pub kv_boundary_type: Option<String>,
}

/// The boundary layers the user chose: `arg`, else `MLXCEL_KV_BOUNDARY_LAYERS`, else `None`
/// (each mode's [`default_boundary_layers`]).
pub fn boundary_layers(arg: Option<BoundaryLayers>) -> Result<Option<BoundaryLayers>> {
    match arg {
        Some(n) => Ok(Some(n)),
        None => Ok(flags::kv_boundary_layers()?),
    }
}

/// The boundary layers' mode for the cache mode `mode`: [`boundary_override`], else
/// [`default_boundary_mode`] (fp16+turbo4 for quantized keys, fp16+int8 for fp16 keys).
pub fn boundary_mode(arg: Option<&str>, mode: KvMode) -> Result<KvMode> {
    Ok(boundary_override(arg)?.unwrap_or_else(|| default_boundary_mode(mode)))
}

/// The boundary layers' mode the user chose: `arg`, else `MLXCEL_KV_BOUNDARY_TYPE`, else `None`
/// (each mode's default); the modes [`check_boundary_mode`] takes, and an error says where a
/// bad value came from.
pub fn boundary_override(arg: Option<&str>) -> Result<Option<KvMode>> {
    let (given, from) = match arg {
        Some(a) => (a.to_string(), "--kv-boundary-type"),
        None => match std::env::var(flags::KV_BOUNDARY_TYPE) {
            Ok(v) if !v.trim().is_empty() => (v, flags::KV_BOUNDARY_TYPE),
            _ => return Ok(None),
        },
    };
    let mode = KvMode::parse(given.trim())
        .and_then(|m| check_boundary_mode(m).map(|_| m))
        .map_err(|e| anyhow::anyhow!("{from}: {e}"))?;
    Ok(Some(mode))
}

impl KvArgs {
    pub fn config(&self) -> Result<KvConfig> {
        let mode = match (&self.kv, &self.cache_type_k, &self.cache_type_v) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                bail!("give either --kv or --cache-type-k/--cache-type-v, not both")
            }
            (Some(m), None, None) => KvMode::parse(m)?,
            (None, Some(k), Some(v)) => KvMode::from_side_names(k, v)?,
            _ => KvMode::FP16,
        };
        Ok(KvConfig {
            mode,
            boundary_layers: boundary_layers(self.kv_boundary_layers)?
                .unwrap_or_else(|| default_boundary_layers(mode)),
            boundary_mode: boundary_mode(self.kv_boundary_type.as_deref(), mode)?,
        })
    }

    /// The config, with the mode's warnings logged and its head_dim check done.
    pub fn config_for(&self, head_dim: usize) -> Result<KvConfig> {
        if self.kv.as_deref().is_some_and(|k| k.contains(',')) {
            bail!("this command takes one --kv mode");
        }
        let c = self.config()?;
        let mut warnings = c.mode.validate(head_dim)?;
        if c.mode.has_turbo() && !c.boundary_layers.is_none() {
            warnings.extend(c.boundary_mode.validate(head_dim)?);
        }
        for w in warnings {
            tracing::warn!("{w}");
        }
        if c.mode.has_turbo() && !c.boundary_layers.is_none() {
            // Logged at info (shown by default): the boundary storage changes both speed and
            // quality, so a run should say which it used.
            tracing::info!(
                "{}: boundary layers ({}) store {} (--kv-boundary-type, --kv-boundary-layers)",
                c.mode.name(),
                c.boundary_layers,
                c.boundary_mode.sides_name()
            );
        }
        Ok(c)
    }

    /// Several modes from a comma-separated --kv (commands that compare modes).
    pub fn configs_for(&self, head_dim: usize) -> Result<Vec<KvConfig>> {
        let Some(list) = self.kv.as_deref().filter(|k| k.contains(',')) else {
            return Ok(vec![self.config_for(head_dim)?]);
        };
        let one = |m: &str| KvArgs {
            kv: Some(m.trim().to_string()),
            ..self.clone()
        };
        list.split(',')
            .filter(|m| !m.trim().is_empty())
            .map(|m| one(m).config_for(head_dim))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::boundary_mode as boundary_for;
    use mlxcel_core::kv::KvMode;

    #[test]
    fn boundary_layers_take_fp16_or_int8_and_errors_name_the_option() {
        // A value given overrides every mode's default.
        let boundary_mode = |a: Option<&str>| boundary_for(a, KvMode::parse("turbo4").unwrap());
        assert_eq!(
            boundary_mode(Some("int8")).unwrap(),
            KvMode::parse("int8").unwrap()
        );
        assert_eq!(
            boundary_mode(Some("int8r")).unwrap(),
            KvMode::parse("int8-rotated").unwrap()
        );
        assert_ne!(
            boundary_mode(Some("int8r")).unwrap(),
            KvMode::parse("int8").unwrap()
        );
        assert_eq!(boundary_mode(Some("fp16")).unwrap(), KvMode::FP16);
        for asym_ends in ["fp16+int8", "fp16+int8r"] {
            assert_eq!(
                boundary_mode(Some(asym_ends)).unwrap(),
                KvMode::parse(asym_ends).unwrap()
            );
        }
        assert_eq!(
            boundary_mode(Some("fp16+turbo4")).unwrap(),
            KvMode::parse("turbo4-asym").unwrap()
        );
        for bad in ["int8+fp16", "fp16+turbo3"] {
            assert!(boundary_mode(Some(bad)).is_err(), "{bad}");
        }
        for bad in ["turbo4", "turbo3-asym", "q4"] {
            let e = boundary_mode(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("--kv-boundary-type: "), "{bad}: {e}");
        }
        let e = boundary_mode(Some("turbo4")).unwrap_err().to_string();
        assert!(e.contains("fp16, int8 or int8r"), "{e}");
        assert_eq!(
            boundary_for(Some("fp16+int8"), KvMode::parse("turbo3").unwrap()).unwrap(),
            KvMode::parse("fp16+int8").unwrap()
        );
    }

    /// Without --kv-boundary-layers (and MLXCEL_KV_BOUNDARY_LAYERS), quantized keys keep their
    /// first three layers and fp16 keys their first and last two (ADR 0028); the option, in
    /// either spelling, wins for every mode.
    #[test]
    fn boundary_layer_counts_default_by_key_format() {
        if std::env::var_os(mlxcel_core::flags::KV_BOUNDARY_LAYERS).is_some() {
            return; // the variable overrides the defaults this test is about
        }
        let args = |kv: &str, layers: Option<&str>| {
            use clap::Parser;
            #[derive(Parser)]
            struct Cli {
                #[command(flatten)]
                kv: super::KvArgs,
            }
            let mut argv = vec!["t", "--kv", kv];
            if let Some(l) = layers {
                argv.extend(["--kv-boundary-layers", l]);
            }
            Cli::try_parse_from(argv).unwrap().kv.config().unwrap()
        };
        let both = |a, b| super::BoundaryLayers { first: a, last: b };
        for (mode, want) in [
            ("turbo4", both(3, 0)),
            ("turbo3", both(3, 0)),
            ("turbo2", both(3, 0)),
            ("turbo4-asym", both(2, 2)),
            ("turbo3-asym", both(2, 2)),
            ("turbo4-delegated", both(2, 2)),
        ] {
            assert_eq!(args(mode, None).boundary_layers, want, "{mode}");
            assert_eq!(args(mode, Some("1")).boundary_layers, both(1, 1), "{mode}");
            assert_eq!(
                args(mode, Some("0,4")).boundary_layers,
                both(0, 4),
                "{mode}"
            );
        }
    }

    /// Without --kv-boundary-type (and MLXCEL_KV_BOUNDARY_TYPE), quantized keys get fp16+turbo4
    /// ends and fp16 keys fp16+int8 ends (ADR 0027).
    #[test]
    fn boundary_layers_default_by_key_format() {
        if std::env::var_os(mlxcel_core::flags::KV_BOUNDARY_TYPE).is_some() {
            return; // the variable overrides the defaults this test is about
        }
        for (mode, ends) in [
            ("turbo4", "fp16+turbo4"),
            ("turbo3", "fp16+turbo4"),
            ("turbo2", "fp16+turbo4"),
            ("turbo4-asym", "fp16+int8"),
            ("turbo2-asym", "fp16+int8"),
            ("turbo4-delegated", "fp16+int8"),
        ] {
            assert_eq!(
                boundary_for(None, KvMode::parse(mode).unwrap()).unwrap(),
                KvMode::parse(ends).unwrap(),
                "{mode}"
            );
        }
    }
}
