//! Synthetic weights (random, real shapes; dense and MLX-quantized) through generation,
//! and HF hub ids resolved from the local hub cache with HF_HUB_OFFLINE=1.

use std::path::PathBuf;

use mlxcel_core::kv::mode::BoundaryLayers;
use mlxcel_core::Dtype;
use mlxcel_models::generate::{generate, GenerateParams, StopReason};
use mlxcel_models::loader::resolve::{hub_model_dir, ModelSource};
use mlxcel_models::loader::synthetic;
use mlxcel_models::weights::{Tensor, WeightFormat};
use mlxcel_models::{LoadOptions, Model};

fn tiny_config_with_quantization() -> PathBuf {
    tiny_config(32)
}

/// The tiny Qwen3 fixture config with 4-bit MLX quantization and `head_dim`, written to a
/// temporary folder.
fn tiny_config(head_dim: usize) -> PathBuf {
    let src =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny/qwen3/config.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    v["quantization"] = serde_json::json!({"group_size": 32, "bits": 4});
    v["head_dim"] = serde_json::json!(head_dim);
    // One folder per call: tests run in parallel, and two writing one config.json let a
    // third read it half written.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "mlxcel-synth-{}-{head_dim}-{call}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("config.json");
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

/// The tiny config (head_dim 64: the smallest the turbo codecs take) as a synthetic model with
/// dense f32 weights from `seed`.
fn tiny_f32_model(seed: u64) -> Model {
    let spec = format!("synthetic:{}", tiny_config(64).display());
    let format = WeightFormat::Dense(Dtype::F32);
    Model::load(Some(&spec), &LoadOptions { format, seed }).unwrap()
}

#[test]
fn presets_have_the_real_shapes() {
    let c = synthetic::config("llama3-8b-4bit").unwrap();
    assert_eq!(
        (
            c.num_layers,
            c.num_heads,
            c.num_kv_heads,
            c.head_dim,
            c.hidden_size
        ),
        (32, 32, 8, 128, 4096)
    );
    assert_eq!(c.quantization.unwrap().bits, 4);
    let q = synthetic::config("qwen3-8b-4bit").unwrap();
    assert_eq!((q.num_layers, q.vocab_size), (36, 151936));
    assert!(synthetic::config("nope").is_err());
}

#[test]
fn synthetic_weights_generate_exactly_max_tokens() {
    let cfg_path = tiny_config_with_quantization();
    let spec = format!("synthetic:{}", cfg_path.display());
    for format in [
        WeightFormat::Native(Dtype::F32),
        WeightFormat::Dense(Dtype::F32),
    ] {
        let cfg = synthetic::config(cfg_path.to_str().unwrap()).unwrap();
        let w = synthetic::weights(&cfg, format, 3).unwrap();
        let quantized = w.names().filter(|n| n.ends_with("q_proj.weight")).count();
        assert_eq!(quantized, cfg.num_layers);
        let model = Model::load(Some(&spec), &LoadOptions { format, seed: 3 }).unwrap();
        assert!(model.synthetic && model.tokenizer.is_none());
        let prompt: Vec<u32> = (0..40).map(|i| (i * 7) % 256).collect();
        let params = GenerateParams {
            max_tokens: 12,
            prefill_chunk: 16,
            ..Default::default()
        };
        let out = generate(&model, &prompt, &params, |_| {}).unwrap();
        assert_eq!(out.tokens.len(), 12, "{format:?}");
        assert_eq!(out.stats.stop_reason, StopReason::MaxTokens);
        assert!(out.tokens.iter().all(|&t| (t as usize) < cfg.vocab_size));
        assert!(out.stats.kv_cache_bytes > 0);
        // Greedy decoding is deterministic for fixed weights.
        let again = generate(&model, &prompt, &params, |_| {}).unwrap();
        assert_eq!(out.tokens, again.tokens);
        if let WeightFormat::Native(_) = format {
            let mut w = synthetic::weights(&cfg, format, 3).unwrap();
            assert!(matches!(
                w.take("model.layers.0.mlp.up_proj.weight").unwrap(),
                Tensor::Quantized(_)
            ));
        }
    }
}

/// An in-process step A/B (`GenerateParams::step_ab`, `MLXCEL_STEP_AB`) of a bit-identical
/// flag gives the plain run's tokens, reports both arms over the steps it counts (each arm's
/// first block and every block's first step left out: 39 queued steps in blocks of 4 leave
/// 12 off and 11 on), leaves the flag as it found it, and refuses a name that is no flag and
/// a block of 0 steps. (`MLXCEL_FOLD_MERGE` switches a CUDA kernel; on the CPU this checks
/// the loop's bookkeeping.)
#[test]
fn a_step_ab_run_gives_the_plain_tokens_and_both_arms() {
    let model = tiny_f32_model(7);
    let prompt: Vec<u32> = (0..20).map(|i| (i * 13) % 256).collect();
    let flag = mlxcel_core::flags::FOLD_MERGE;
    let before = flag.enabled();
    let run = |step_ab: Option<(String, usize)>| {
        let params = GenerateParams {
            max_tokens: 40,
            prefill_chunk: 8,
            // An int8 cache: on CUDA its fused attention takes the fold (the A/B's flag) and
            // its tokens repeat from run to run, where an fp16 cache's SDPA may not (session
            // 24; session 37 ran this test twice on CUDA with an fp16 cache: equal once,
            // parted at token 18 once).
            kv: mlxcel_models::model::KvConfig {
                boundary_layers: BoundaryLayers::NONE,
                ..mlxcel_models::model::KvConfig::new(
                    mlxcel_core::kv::KvMode::parse("int8").unwrap(),
                )
            },
            pipelined: Some(true),
            // One thread: its host time per step includes the submit (checked below).
            submit_thread: Some(false),
            step_ab,
            ..Default::default()
        };
        generate(&model, &prompt, &params, |_| {})
    };
    let plain = run(None).unwrap();
    assert!(plain.stats.decode_step_ab.is_none());
    let ab = run(Some((flag.name.to_string(), 4))).unwrap();
    assert_eq!(ab.tokens, plain.tokens);
    let s = ab.stats.decode_step_ab.expect("the A/B's arms");
    assert_eq!((s.flag.as_str(), s.block), (flag.name, 4));
    let arms: Vec<(bool, usize)> = s.arms.iter().map(|a| (a.on, a.steps)).collect();
    assert_eq!(arms, [(false, 12), (true, 11)]);
    assert!(s.arms.iter().all(|a| a.host_seconds_per_step > 0.0
        && a.submit_seconds_per_step <= a.host_seconds_per_step
        && a.device_seconds_inside_step.is_none()));
    assert_eq!(flag.enabled(), before, "the flag is restored");
    let err = run(Some(("MLXCEL_NO_SUCH_FLAG".into(), 4)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"MLXCEL_NO_SUCH_FLAG\" is no flag"), "{err}");
    let err = run(Some((flag.name.to_string(), 0)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected a positive number of steps"), "{err}");
}

#[test]
fn pipelined_greedy_decoding_matches_the_synchronous_loop() {
    // Same tokens from the pipelined loop (argmax on the device, next step queued before the
    // token is read), with its submit thread (step t's async_eval on a second thread while
    // step t + 1 is built) and without, as from the reference loop (host logits, host
    // argmax), for an fp16 and quantized caches (whose appends run while the previous step
    // is still in flight). head_dim 64: the smallest the turbo codecs take.
    let model = tiny_f32_model(5);
    let prompt: Vec<u32> = (0..24).map(|i| (i * 11) % 256).collect();
    for kv in ["fp16", "int8", "turbo4", "turbo3-asym"] {
        let run_with = |pipelined: bool, build_profile: bool, submit_thread: bool| {
            let params = GenerateParams {
                max_tokens: 10,
                prefill_chunk: 8,
                kv: mlxcel_models::model::KvConfig {
                    boundary_layers: BoundaryLayers::NONE,
                    ..mlxcel_models::model::KvConfig::new(
                        mlxcel_core::kv::KvMode::parse(kv).unwrap(),
                    )
                },
                pipelined: Some(pipelined),
                submit_thread: Some(submit_thread),
                build_profile: Some(build_profile),
                ..Default::default()
            };
            generate(&model, &prompt, &params, |_| {}).unwrap()
        };
        let run = |pipelined, build_profile| run_with(pipelined, build_profile, false);
        let (sync, piped) = (run(false, false), run(true, false));
        assert!(!sync.stats.decode_pipelined && piped.stats.decode_pipelined);
        assert_eq!(sync.tokens.len(), 10, "{kv}");
        assert_eq!(sync.tokens, piped.tokens, "{kv}");
        let threaded = run_with(true, false, true);
        assert!(threaded.stats.decode_submit_thread && !piped.stats.decode_submit_thread);
        assert_eq!(threaded.tokens, piped.tokens, "{kv}: submit thread");
        assert!(
            threaded.stats.decode_submit_seconds_per_step_steady > 0.0,
            "{kv}"
        );
        // The build profile's op count keeps the submit on the loop's thread.
        assert!(
            !run_with(true, true, true).stats.decode_submit_thread,
            "{kv}"
        );
        // The host build profile changes nothing but adds the per-part times, which fit
        // inside the host time of a step.
        assert!(piped.stats.decode_build_parts_seconds_steady.is_none());
        assert!(piped.stats.decode_ops_per_step_steady.is_none());
        let profiled = run(true, true);
        assert_eq!(profiled.tokens, piped.tokens, "{kv}: build profile on");
        let parts = profiled.stats.decode_build_parts_seconds_steady.unwrap();
        let names: Vec<&str> = parts.iter().map(|(p, _)| p.as_str()).collect();
        // Calls into MLX's custom-kernel API are timed as an inner part where a GPU backend
        // runs mlxcel's kernels (this test also runs on the H200); never on the CPU.
        let custom = "inside: MLX custom-kernel calls";
        if mlxcel_core::mlx::kernel::KernelBackend::current().is_none() {
            assert!(!names.contains(&custom), "{kv}: {names:?}");
        }
        let names: Vec<&str> = names.into_iter().filter(|n| *n != custom).collect();
        let mut expected = vec![
            "embed + head",
            // The RMSNorms run inside the parts that need them (qkv, mlp, embed + head):
            // an inner part, left out of the sum below.
            "inside: norms",
            "qkv",
            "kv append",
            "attention",
            "o_proj",
            "mlp",
            "op count",
        ];
        // On CUDA the int8 and turbo4 caches append inside the attention launch
        // (`MLXCEL_ATTN_APPEND`, ADR 0014): no separate append part there. The CPU always
        // appends apart.
        if mlxcel_core::mlx::kernel::KernelBackend::current().is_some()
            && !names.contains(&"kv append")
        {
            expected.retain(|n| *n != "kv append");
        }
        assert_eq!(names, expected, "{kv}");
        // Two layers, each with several MLX ops: the count is well above the layer count.
        let ops = profiled.stats.decode_ops_per_step_steady.unwrap();
        assert!(ops >= 20.0, "{kv}: {ops} ops per step");
        assert!(parts.iter().all(|(_, t)| *t > 0.0), "{kv}: {parts:?}");
        let sum: f64 = parts
            .iter()
            .filter(|(p, _)| !mlxcel_core::build_profile::is_inner(p))
            .map(|(_, t)| t)
            .sum();
        assert!(
            sum <= profiled.stats.decode_host_seconds_per_step_steady,
            "{kv}: parts {sum} s > host per step"
        );
        assert_eq!(
            sync.stats.kv_cache_bytes, piped.stats.kv_cache_bytes,
            "{kv}"
        );
    }
}

#[test]
fn hub_ids_resolve_from_the_offline_cache() {
    assert_eq!(
        ModelSource::parse(Some("some-org/some-model")).unwrap(),
        ModelSource::Hub("some-org/some-model".into())
    );
    // A hub cache laid out as huggingface_hub writes it, holding the tiny Llama fixture.
    let home = std::env::temp_dir().join(format!("mlxcel-hf-{}", std::process::id()));
    let repo = home.join("hub/models--tiny-org--tiny-llama");
    let snap = repo.join("snapshots/abc123");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "abc123").unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny/llama3");
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(src.join(f), snap.join(f)).unwrap();
    }
    // SAFETY: this test binary's other tests do not read these variables.
    unsafe {
        std::env::set_var("HF_HOME", &home);
        std::env::set_var("HF_HUB_OFFLINE", "1");
    }
    let dir = hub_model_dir("tiny-org/tiny-llama").unwrap();
    assert_eq!(dir, snap);
    let model = Model::load(
        Some("tiny-org/tiny-llama"),
        &LoadOptions {
            format: WeightFormat::Dense(Dtype::F32),
            seed: 0,
        },
    )
    .unwrap();
    assert_eq!(model.config().num_layers, 2);
    let e = hub_model_dir("tiny-org/absent").unwrap_err().to_string();
    assert!(
        e.contains("HF_HUB_OFFLINE") && e.contains("tiny-org/absent"),
        "{e}"
    );
    std::fs::remove_dir_all(home).ok();
}

#[test]
fn random_kv_fill_gives_the_caches_a_prefill_would() {
    // `--prompt-fill random-kv` (decode-speed benchmarks) must leave caches of the length,
    // format and size a real prefill leaves, and must really write random keys and values:
    // attention over the filled cache depends on the seed.
    use mlxcel_core::kv::KvMode;
    use mlxcel_core::mlx::random;
    use mlxcel_models::generate::{fill_random, PromptFill};
    use mlxcel_models::model::KvConfig;
    let model = tiny_f32_model(7);
    let prompt: Vec<u32> = (0..41).map(|i| (i * 13) % 256).collect();
    for mode in ["fp16", "int8", "turbo4", "turbo3-asym"] {
        let kv = KvConfig {
            boundary_layers: BoundaryLayers::both(1),
            ..KvConfig::new(KvMode::parse(mode).unwrap())
        };
        let run = |fill: PromptFill| {
            let params = GenerateParams {
                max_tokens: 6,
                prefill_chunk: 16,
                kv,
                prompt_fill: fill,
                ..Default::default()
            };
            generate(&model, &prompt, &params, |_| {}).unwrap()
        };
        let (real, random_fill) = (run(PromptFill::Model), run(PromptFill::RandomKv));
        assert_eq!(random_fill.stats.prompt_fill, PromptFill::RandomKv);
        assert_eq!(real.stats.prompt_fill, PromptFill::Model);
        assert_eq!(random_fill.tokens.len(), 6, "{mode}");
        assert_eq!(random_fill.stats.prompt_tokens, prompt.len());
        assert_eq!(
            random_fill.stats.kv_cache_bytes, real.stats.kv_cache_bytes,
            "{mode}: the random fill must leave caches of a prefill's size"
        );

        // 40 positions in chunks of 16 (16 + 16 + 8): every cache holds all of them.
        let attend = |seed: u64| {
            let mut caches = model.new_caches(&kv).unwrap();
            fill_random(&model, &mut caches, 40, 16, seed, None).unwrap();
            assert!(caches.iter().all(|c| c.len() == 40), "{mode}");
            let cfg = model.config();
            let q = random::normal(
                &[1, cfg.num_heads as i32, 1, cfg.head_dim as i32],
                Dtype::F32,
                Some(&random::key(99).unwrap()),
            )
            .unwrap();
            caches[1]
                .attend(&q, 0.125)
                .unwrap()
                .to_vec::<f32>()
                .unwrap()
        };
        let (a, a2, b) = (attend(1), attend(1), attend(2));
        assert!(
            a.iter().all(|x| x.is_finite()) && a.iter().any(|&x| x != 0.0),
            "{mode}"
        );
        assert_eq!(a, a2, "{mode}: the fill is deterministic in its seed");
        assert_ne!(a, b, "{mode}: the fill must depend on its seed");
    }
}

#[test]
fn inspect_reads_config_and_weight_size_without_loading() {
    use mlxcel_models::model::inspect;
    // A synthetic model: the computed size is exactly what building its weights allocates.
    let cfg_path = tiny_config_with_quantization();
    let spec = format!("synthetic:{}", cfg_path.display());
    let facts = inspect(Some(&spec)).unwrap();
    let cfg = synthetic::config(cfg_path.to_str().unwrap()).unwrap();
    let built = synthetic::weights(&cfg, WeightFormat::Native(Dtype::F16), 0)
        .unwrap()
        .nbytes();
    assert_eq!(facts.weight_bytes, built as u64);
    assert_eq!(facts.config.num_layers, cfg.num_layers);
    // A safetensors directory: the files' size.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny/llama3");
    let facts = inspect(Some(dir.to_str().unwrap())).unwrap();
    let size = std::fs::metadata(dir.join("model.safetensors"))
        .unwrap()
        .len();
    assert_eq!(facts.weight_bytes, size);
    assert_eq!(facts.config.head_dim, 16);
    // Bad input: a clear error, not a panic.
    let err = inspect(Some("synthetic:no-such-preset"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a preset"), "{err}");
}
