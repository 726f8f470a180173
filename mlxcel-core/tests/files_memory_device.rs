//! Safetensors and GGUF round trips, bad files, random numbers,
//! devices, and the custom-kernel wrapper (its cache and its behaviour without a GPU).

mod common;

use common::{randn, rng};
use half::f16;
use mlxcel_core::kernels::selftest;
use mlxcel_core::mlx::device::{self, DeviceKind, GpuBackend};
use mlxcel_core::mlx::io::{save_gguf, save_safetensors, MetaValue, TensorFile};
use mlxcel_core::mlx::kernel::{
    cached, cached_by_name, cached_count, dtype_arg_names, CustomKernel, KernelBackend,
    KernelSource, Launch, TemplateArg,
};
use mlxcel_core::mlx::random;
use mlxcel_core::{Array, Dtype, Error};

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mlxcel-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn safetensors_round_trip_with_metadata() {
    let mut r = rng("safetensors_round_trip_with_metadata");
    let x = randn(&mut r, 12);
    let a = Array::from_slice(&x, &[3, 4]).unwrap();
    let h = a.astype(Dtype::F16).unwrap();
    let dir = tmpdir("st");
    let path = dir.join("t.safetensors");
    save_safetensors(&path, &[("a", &a), ("h", &h)], &[("format", "mlx")]).unwrap();
    let f = TensorFile::load_safetensors(&path).unwrap();
    assert_eq!(f.names(), vec!["a".to_string(), "h".to_string()]);
    assert_eq!(f.get("a").unwrap().to_vec::<f32>().unwrap(), x);
    let hv = f.get("h").unwrap().to_vec::<f16>().unwrap();
    assert_eq!(hv, x.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>());
    match f.metadata("format").unwrap() {
        Some(MetaValue::String(s)) => assert_eq!(s, "mlx"),
        other => panic!("unexpected metadata {other:?}"),
    }
    assert!(f.metadata("nope").unwrap().is_none());
    let missing = f.get("nope").unwrap_err().to_string();
    assert!(
        missing.contains("nope") && missing.contains("t.safetensors"),
        "{missing}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn gguf_round_trip_with_metadata() {
    let mut r = rng("gguf_round_trip_with_metadata");
    let x = randn(&mut r, 64);
    let a = Array::from_slice(&x, &[2, 32]).unwrap();
    let dir = tmpdir("gguf");
    let path = dir.join("t.gguf");
    let ctx = Array::from_slice(&[2048u32], &[1]).unwrap();
    save_gguf(
        &path,
        &[("blk.0.w", &a)],
        &[("general.architecture", "llama")],
        &[("llama.context_length", &ctx)],
    )
    .unwrap();
    let f = TensorFile::load_gguf(&path).unwrap();
    assert_eq!(f.names(), vec!["blk.0.w".to_string()]);
    assert_eq!(f.get("blk.0.w").unwrap().to_vec::<f32>().unwrap(), x);
    match f.metadata("general.architecture").unwrap() {
        Some(MetaValue::String(s)) => assert_eq!(s, "llama"),
        other => panic!("unexpected {other:?}"),
    }
    match f.metadata("llama.context_length").unwrap() {
        Some(MetaValue::Array(v)) => assert_eq!(
            v.astype(Dtype::I64).unwrap().to_vec::<i64>().unwrap(),
            vec![2048]
        ),
        other => panic!("unexpected {other:?}"),
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = tmpdir("bad");
    let missing = dir.join("missing.gguf");
    let e = TensorFile::load_gguf(&missing).unwrap_err();
    assert!(
        matches!(e, Error::File { .. }) && e.to_string().contains("missing.gguf"),
        "{e}"
    );
    let junk = dir.join("junk.safetensors");
    std::fs::write(&junk, b"this is not a safetensors file").unwrap();
    let e = TensorFile::load_safetensors(&junk).unwrap_err().to_string();
    assert!(e.contains("junk.safetensors"), "{e}");
    // A GGUF cut short: the header promises more than the file holds.
    let good = dir.join("good.gguf");
    let a = Array::from_slice(&[1.0f32; 256], &[256]).unwrap();
    save_gguf(&good, &[("w", &a)], &[], &[]).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.join("cut.gguf");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let loaded = TensorFile::load_gguf(&cut).and_then(|f| f.get("w")?.to_vec::<f32>());
    assert!(loaded.is_err(), "a truncated GGUF must not load");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn random_is_reproducible_and_standard_normal() {
    let k = random::key(1234).unwrap();
    let a = random::normal(&[100_000], Dtype::F32, Some(&k))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let b = random::normal(&[100_000], Dtype::F32, Some(&k))
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(a, b, "same key, same numbers");
    let mean = a.iter().sum::<f32>() / a.len() as f32;
    let var = a.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / a.len() as f32;
    assert!(
        mean.abs() < 0.02 && (var - 1.0).abs() < 0.03,
        "mean {mean} var {var}"
    );
    let u = random::uniform(&[10_000], Dtype::F32, None)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert!(u.iter().all(|&v| (0.0..1.0).contains(&v)));
    // Categorical over logits that put (almost) all mass on index 3.
    let logits = Array::from_slice(&[0.0f32, 0.0, 0.0, 50.0], &[1, 4]).unwrap();
    let s = random::categorical(&logits, -1, Some(&k))
        .unwrap()
        .to_vec::<u32>()
        .unwrap();
    assert_eq!(s, vec![3]);
}

#[test]
fn devices_report_consistently() {
    let backend = device::gpu_backend();
    let gpus = if backend == GpuBackend::None {
        0
    } else {
        device::device_count(DeviceKind::Gpu).unwrap()
    };
    assert_eq!(device::gpu_available(), gpus > 0);
    assert!(!device::mlx_version().is_empty());
    assert!(
        device::library_path().contains("libmlx"),
        "{}",
        device::library_path()
    );
    if gpus == 0 {
        assert_eq!(device::default_device().unwrap(), DeviceKind::Cpu);
        let e = device::set_default_device(DeviceKind::Gpu, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not available"), "{e}");
    } else {
        let info = device::device_info(DeviceKind::Gpu, 0).unwrap();
        assert!(info.iter().any(|(k, _)| k == "device_name"), "{info:?}");
    }
    device::synchronize().unwrap();
}

#[test]
fn named_kernel_lookup_builds_the_source_once_per_variant() {
    let backend = KernelBackend::current().unwrap_or(KernelBackend::Metal);
    let built = std::cell::Cell::new(0);
    let make = || {
        built.set(built.get() + 1);
        selftest::source(backend)
    };
    let k1 = cached_by_name(backend, "named_lookup_test", 7, make).unwrap();
    let k2 = cached_by_name(backend, "named_lookup_test", 7, make).unwrap();
    assert!(std::rc::Rc::ptr_eq(&k1, &k2));
    assert_eq!(
        built.get(),
        1,
        "the source is built only on the first lookup"
    );
    cached_by_name(backend, "named_lookup_test", 8, make).unwrap();
    assert_eq!(built.get(), 2, "another variant is another kernel");
}

#[test]
fn dtype_template_args_are_the_ones_the_text_uses_on_cuda() {
    let mut spec = KernelSource::new("k", &["q", "k", "qk"], &["out"], "T_q x; T_qk2 y;");
    spec.header = "using E = T_k;".to_string();
    assert_eq!(dtype_arg_names(KernelBackend::Cuda, &spec), ["T_q", "T_k"]);
    assert_eq!(
        dtype_arg_names(KernelBackend::Metal, &spec),
        ["T_q", "T_k", "T_qk"]
    );
    // Only whole identifiers count: T_qk2 and xT_q are not T_qk or T_q.
    spec.source = "T_qk2 a; xT_q b;".to_string();
    spec.header.clear();
    assert!(dtype_arg_names(KernelBackend::Cuda, &spec).is_empty());
}

#[test]
fn kernel_wrapper_caches_and_adds_dtype_template_args() {
    // The CPU wheel refuses to build CUDA kernel objects but builds Metal ones lazily
    // (they fail only when launched), so Metal exercises the backend-independent cache
    // there; on the GPU host the real backend is used.
    let backend = KernelBackend::current().unwrap_or(KernelBackend::Metal);
    let spec = selftest::source(backend);
    let n0 = cached_count();
    let k1 = cached(backend, &spec).unwrap();
    let k2 = cached(backend, &spec).unwrap();
    assert!(
        std::rc::Rc::ptr_eq(&k1, &k2),
        "second lookup must reuse the built kernel"
    );
    assert_eq!(cached_count(), n0 + 1);
    let a = Array::zeros(&[4], Dtype::F16).unwrap();
    let b = Array::zeros(&[4], Dtype::BF16).unwrap();
    let alpha = Array::zeros(&[1], Dtype::F32).unwrap();
    let launch = Launch::new(&[&a, &b, &alpha], [4, 1, 1], [4, 1, 1])
        .output(&[4], Dtype::F16)
        .template("N", TemplateArg::Int(4));
    let args = k1.template_args(&launch);
    assert_eq!(args[0], ("N", TemplateArg::Int(4)));
    assert!(args.contains(&("T_a", TemplateArg::Dtype(Dtype::F16))));
    // The self-test's text uses T_a only: CUDA gets just that one, Metal one per input.
    let all = backend == KernelBackend::Metal;
    let t_b = ("T_b", TemplateArg::Dtype(Dtype::BF16));
    let t_alpha = ("T_alpha", TemplateArg::Dtype(Dtype::F32));
    assert_eq!(args.contains(&t_b), all, "{args:?}");
    assert_eq!(args.contains(&t_alpha), all, "{args:?}");
    // A dtype argument the caller sets is not added twice.
    let set = launch
        .clone()
        .template("T_a", TemplateArg::Dtype(Dtype::F32));
    let args = k1.template_args(&set);
    assert_eq!(args.iter().filter(|(n, _)| *n == "T_a").count(), 1);
    // Wrong number of inputs and bad names are caught before MLX.
    assert!(k1
        .call(&Launch::new(&[&a], [4, 1, 1], [4, 1, 1]).output(&[4], Dtype::F16))
        .is_err());
    let bad = KernelSource::new("bad name", &["a"], &["out"], "");
    assert!(CustomKernel::new(backend, bad).is_err());
}

#[test]
fn custom_kernel_runs_on_gpu_or_fails_cleanly_without_one() {
    match KernelBackend::current() {
        Some(backend) => {
            // On the GPU host: JIT-compile, run for f32/f16/bf16, compare with the reference.
            let results = selftest::run(backend, 100_003).unwrap();
            for r in &results {
                assert!(r.passed, "{:?}: max error {}", r.dtype, r.max_abs_err);
            }
        }
        None => {
            // CPU-only libmlx: the call must return MLX's error, never abort the process.
            let a = Array::ones(&[8], Dtype::F32).unwrap();
            let err = selftest::axpy(KernelBackend::Cuda, &a, &a, 2.0)
                .and_then(|o| o.eval())
                .unwrap_err()
                .to_string();
            assert!(err.contains("No CUDA back-end"), "{err}");
            let err = selftest::axpy(KernelBackend::Metal, &a, &a, 2.0)
                .and_then(|o| o.eval())
                .unwrap_err()
                .to_string();
            assert!(err.contains("No Metal back-end"), "{err}");
        }
    }
}
