//! Custom GPU kernels injected through `mlx::core::fast::cuda_kernel` (CUDA, JIT-compiled
//! by NVRTC inside MLX) and `mlx::core::fast::metal_kernel` (Metal).
//!
//! A kernel is described once ([`KernelSource`]) and built once per thread: [`cached`]
//! keeps the MLX kernel object keyed by backend, name and a hash of the source, so the
//! decode loop never rebuilds it. MLX itself caches the compiled module by name + source.
//!
//! [`CustomKernel::call`] appends a dtype template argument `T_<input name>` (the input's
//! element type) for inputs whose name the kernel text uses that way. On Metal it appends
//! one for every input, as it always has: MLX names the compiled function after `name` and
//! the template arguments only, and that path cannot be tested here. On CUDA, MLX (0.32.x,
//! `backend/cuda/custom_kernel.cpp`) keys the compiled module by a hash of the whole
//! generated source, whose signature spells every input's type, so unused dtype arguments
//! only cost host time: MLX formats each template argument twice per launch, and a decode
//! step makes ~7 custom-kernel calls per layer with 3-15 inputs each.
//!
//! On a build without the matching GPU backend (e.g. the CPU wheel), building works but
//! calling returns an error from MLX ("Only supports the GPU"); it never aborts.
//! The Metal path cannot be exercised on this project's Linux machines.

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use cxx::UniquePtr;

use super::array::{array_vec, from_array_vec, Array};
use super::device::{gpu_backend, GpuBackend};
use super::dtype::Dtype;
use super::ffi::bridge as ffi;
use crate::error::{Error, MlxContext, Result};

/// Which MLX custom-kernel API builds the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelBackend {
    Cuda,
    Metal,
}

impl KernelBackend {
    /// The backend of the loaded `libmlx`, if it has a GPU one.
    pub fn current() -> Option<KernelBackend> {
        match gpu_backend() {
            GpuBackend::Cuda => Some(KernelBackend::Cuda),
            GpuBackend::Metal => Some(KernelBackend::Metal),
            GpuBackend::None => None,
        }
    }
}

/// The text of a kernel: MLX generates the signature from the input and output names
/// (inputs as `const T* name`, outputs as `T* name`, plus `name_shape`, `name_strides`,
/// `name_ndim` when the body mentions them); `source` is the body.
#[derive(Clone, Debug, Hash)]
pub struct KernelSource {
    pub name: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub source: String,
    /// Code placed before the kernel (helpers, includes).
    pub header: String,
    /// Copy non-contiguous inputs to row-contiguous before the launch.
    pub ensure_row_contiguous: bool,
    /// CUDA only: dynamic shared memory bytes.
    pub shared_memory: i32,
    /// Metal only: outputs declared as atomics.
    pub atomic_outputs: bool,
}

impl KernelSource {
    /// A kernel with the given interface and body, defaults elsewhere.
    pub fn new(name: &str, inputs: &[&str], outputs: &[&str], source: &str) -> KernelSource {
        KernelSource {
            name: name.to_string(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
            source: source.to_string(),
            header: String::new(),
            ensure_row_contiguous: true,
            shared_memory: 0,
            atomic_outputs: false,
        }
    }

    /// This kernel with `attribute` (e.g. `__cluster_dims__(8, 1, 1)`, `__launch_bounds__(512,
    /// 1)`) on MLX's generated signature, under the name + `suffix`. MLX's custom kernels take
    /// no launch attributes and write `__global__ void name(...)` right after the header, so
    /// the header ends by redefining `__global__` to carry the attribute. The new name keeps
    /// MLX's and mlxcel's kernel caches from mixing the two texts. `nvrtc_check.py`'s
    /// `signature_attribute` builds the same text.
    pub fn with_signature_attribute(mut self, suffix: &str, attribute: &str) -> KernelSource {
        self.name.push_str(suffix);
        self.header.push_str(&format!(
            "\n#undef __global__\n#define __global__ __location__(global) {attribute}\n"
        ));
        self
    }

    fn validate(&self) -> Result<()> {
        let ident = |s: &str| {
            !s.is_empty()
                && !s.starts_with(|c: char| c.is_ascii_digit())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        for n in std::iter::once(&self.name)
            .chain(&self.inputs)
            .chain(&self.outputs)
        {
            if !ident(n) {
                return Err(Error::invalid(
                    "custom kernel",
                    format!("'{n}' is not a C identifier (kernel '{}')", self.name),
                ));
            }
        }
        if self.outputs.is_empty() {
            return Err(Error::invalid(
                "custom kernel",
                format!("kernel '{}' has no outputs", self.name),
            ));
        }
        Ok(())
    }
}

/// A compile-time constant of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateArg {
    Int(i32),
    Bool(bool),
    Dtype(Dtype),
}

/// Template arguments a [`Launch`] has room for before it grows.
const LAUNCH_TEMPLATE_ARGS: usize = 40;
/// Outputs a [`Launch`] has room for before it grows.
const LAUNCH_OUTPUTS: usize = 4;

/// One launch: inputs, output shapes/dtypes, grid (total threads per axis, as in MLX)
/// and block size.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub inputs: Vec<&'a Array>,
    pub outputs: Vec<(Vec<i32>, Dtype)>,
    pub grid: [i32; 3],
    pub threadgroup: [i32; 3],
    /// Template arguments by name. Names are borrowed, not owned: a decode step makes ~7
    /// launches per layer with up to ~15 arguments each, and owned names cost an allocation
    /// each (twice, with the dtype arguments added per call).
    pub template: Vec<(&'a str, TemplateArg)>,
    /// Fill outputs with this value before the launch (otherwise uninitialized).
    pub init_value: Option<f32>,
    /// Print the generated source (MLX's verbose flag).
    pub verbose: bool,
}

impl<'a> Launch<'a> {
    pub fn new(inputs: &[&'a Array], grid: [i32; 3], threadgroup: [i32; 3]) -> Launch<'a> {
        Launch {
            inputs: inputs.to_vec(),
            outputs: Vec::with_capacity(LAUNCH_OUTPUTS),
            grid,
            threadgroup,
            // Sized for the largest launch (the tensor-core attention kernel's ~30 arguments)
            // so that a decode step's ~180 launches do not grow it push by push (the host
            // sampler found reallocations in the attention call's build, session 35).
            template: Vec::with_capacity(LAUNCH_TEMPLATE_ARGS),
            init_value: None,
            verbose: false,
        }
    }

    pub fn output(mut self, shape: &[i32], dtype: Dtype) -> Self {
        self.outputs.push((shape.to_vec(), dtype));
        self
    }

    pub fn template(mut self, name: &'a str, arg: TemplateArg) -> Self {
        self.template.push((name, arg));
        self
    }

    pub fn init_value(mut self, v: f32) -> Self {
        self.init_value = Some(v);
        self
    }
}

/// The source as handed to MLX's CUDA backend: full-line `//` comments, indentation and
/// blank lines dropped. MLX rebuilds the kernel text and hashes all of it on every launch
/// (the module cache key), a per-call CPU cost proportional to its length that a decode
/// step pays once per layer; the comments are a third of our kernel files. Compiler error
/// line numbers refer to this compacted text (`Launch::verbose` prints it).
pub fn compact_source(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let t = line.trim_start();
        if t.is_empty() || (t.starts_with("//") && !line.trim_end().ends_with('\\')) {
            continue;
        }
        out.push_str(t);
        out.push('\n');
    }
    out
}

/// The directory the CUDA kernel files go to: `MLXCEL_KERNEL_DIR`, else the system's
/// temporary directory.
fn kernel_file_root() -> PathBuf {
    std::env::var_os("MLXCEL_KERNEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// Writes `text` to `path` unless it already holds exactly that (write to a temporary name,
/// then rename, so concurrent processes never read a half-written file).
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// The short text handed to MLX in place of a CUDA kernel's (compacted) header and body:
/// `#include`s of files holding them, in a directory named after a hash of their content
/// (so a changed kernel never meets a stale compiled module in MLX's caches, which key on
/// the text MLX sees). MLX rebuilds the kernel text and hashes it on every launch, a
/// per-call CPU cost proportional to its length (5-8 us for the decode-attention kernel,
/// `benchmarks/kernel-notes/NOTES.md`); the stubs are ~100 bytes. The body stub lists the
/// `<input>_shape/_strides/_ndim` names the body uses, because MLX decides from the text it
/// is given which of them to pass. NVRTC reads the files at the first launch.
pub fn include_stubs(spec: &KernelSource, header: &str, body: &str) -> Result<(String, String)> {
    let mut h = DefaultHasher::new();
    (&spec.name, header, body).hash(&mut h);
    let dir = kernel_file_root().join(format!("mlxcel-cuda-{:016x}", h.finish()));
    let io = |what: &str, e: std::io::Error| {
        Error::invalid(
            "custom kernel",
            format!("{what} {} for kernel '{}': {e}", dir.display(), spec.name),
        )
    };
    std::fs::create_dir_all(&dir).map_err(|e| io("cannot create", e))?;
    let (hp, bp) = (dir.join("header.cuh"), dir.join("body.cu"));
    write_if_changed(&hp, header).map_err(|e| io("cannot write to", e))?;
    write_if_changed(&bp, body).map_err(|e| io("cannot write to", e))?;
    let quoted = |p: &Path| -> Result<String> {
        match p.to_str() {
            Some(s) if !s.contains(['"', '\n', '\\']) => Ok(format!("#include \"{s}\"\n")),
            _ => Err(Error::invalid(
                "custom kernel",
                format!("kernel file path {} cannot be #included", p.display()),
            )),
        }
    };
    let uses: Vec<String> = spec
        .inputs
        .iter()
        .flat_map(|n| ["_shape", "_strides", "_ndim"].map(|suffix| format!("{n}{suffix}")))
        .filter(|t| body.contains(t.as_str()))
        .collect();
    let header_stub = if header.is_empty() {
        String::new()
    } else {
        quoted(&hp)?
    };
    let body_stub = format!("// uses: {}\n{}", uses.join(" "), quoted(&bp)?);
    Ok((header_stub, body_stub))
}

/// The header and body MLX gets for a CUDA kernel: include stubs ([`include_stubs`]) when
/// `MLXCEL_KERNEL_FILES` is on and the files can be written, else the compacted text.
fn cuda_text(spec: &KernelSource) -> (String, String) {
    let (header, body) = (compact_source(&spec.header), compact_source(&spec.source));
    if !crate::flags::KERNEL_FILES.enabled() {
        return (header, body);
    }
    match include_stubs(spec, &header, &body) {
        Ok(stubs) => stubs,
        Err(e) => {
            tracing::warn!("{e}; passing the kernel text inline (slower launches)");
            (header, body)
        }
    }
}

/// The `T_<input>` dtype template arguments a kernel gets (module docs): on CUDA only those
/// the header or body mentions, on Metal one per input.
pub fn dtype_arg_names(backend: KernelBackend, spec: &KernelSource) -> Vec<String> {
    spec.inputs
        .iter()
        .map(|n| format!("T_{n}"))
        .filter(|t| {
            backend == KernelBackend::Metal
                || mentions(&spec.source, t)
                || mentions(&spec.header, t)
        })
        .collect()
}

/// Whether `text` contains `ident` as a whole identifier (not as part of a longer one).
fn mentions(text: &str, ident: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(ident)
        .any(|(i, _)| !text[..i].ends_with(word) && !text[i + ident.len()..].starts_with(word))
}

/// A built MLX custom kernel.
pub struct CustomKernel {
    func: UniquePtr<ffi::KernelFn>,
    spec: KernelSource,
    backend: KernelBackend,
    /// `T_<input>` dtype template arguments, with the input each belongs to (built once;
    /// [`dtype_arg_names`]).
    dtype_args: Vec<(String, usize)>,
}

impl CustomKernel {
    /// Builds the MLX kernel object (compilation itself happens at the first launch).
    pub fn new(backend: KernelBackend, spec: KernelSource) -> Result<CustomKernel> {
        spec.validate()?;
        let func = match backend {
            KernelBackend::Cuda => {
                let (header, body) = cuda_text(&spec);
                ffi::cuda_kernel_new(
                    &spec.name,
                    spec.inputs.clone(),
                    spec.outputs.clone(),
                    &body,
                    &header,
                    spec.ensure_row_contiguous,
                    spec.shared_memory,
                )
            }
            KernelBackend::Metal => ffi::metal_kernel_new(
                &spec.name,
                spec.inputs.clone(),
                spec.outputs.clone(),
                &spec.source,
                &spec.header,
                spec.ensure_row_contiguous,
                spec.atomic_outputs,
            ),
        }
        .op("custom kernel")?;
        let dtype_args = dtype_arg_names(backend, &spec)
            .into_iter()
            .map(|t| {
                let i = spec.inputs.iter().position(|n| t[2..] == **n);
                (t, i.expect("named after an input"))
            })
            .collect();
        Ok(CustomKernel {
            func,
            spec,
            backend,
            dtype_args,
        })
    }

    pub fn backend(&self) -> KernelBackend {
        self.backend
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The template arguments of a launch with the kernel's `T_<input>` dtype arguments
    /// appended (unless the caller already set that name).
    pub fn template_args<'s>(&'s self, launch: &'s Launch<'_>) -> Vec<(&'s str, TemplateArg)> {
        let mut args = Vec::with_capacity(launch.template.len() + self.dtype_args.len());
        args.extend_from_slice(&launch.template);
        for (key, i) in &self.dtype_args {
            match launch.inputs.get(*i) {
                Some(input) if !launch.template.iter().any(|(n, _)| n == key) => {
                    args.push((key.as_str(), TemplateArg::Dtype(input.dtype())));
                }
                _ => {}
            }
        }
        args
    }

    /// Queues the kernel; returns its outputs (lazy, like every MLX op).
    pub fn call(&self, launch: &Launch<'_>) -> Result<Vec<Array>> {
        if launch.inputs.len() != self.spec.inputs.len() {
            return Err(Error::invalid(
                "custom kernel",
                format!(
                    "kernel '{}' takes {} inputs, got {}",
                    self.spec.name,
                    self.spec.inputs.len(),
                    launch.inputs.len()
                ),
            ));
        }
        if launch.outputs.len() != self.spec.outputs.len() {
            return Err(Error::invalid(
                "custom kernel",
                format!(
                    "kernel '{}' has {} outputs, launch describes {}",
                    self.spec.name,
                    self.spec.outputs.len(),
                    launch.outputs.len()
                ),
            ));
        }
        if launch
            .grid
            .iter()
            .chain(&launch.threadgroup)
            .any(|&d| d < 1)
        {
            return Err(Error::invalid(
                "custom kernel",
                format!(
                    "grid {:?} and threadgroup {:?} must be positive",
                    launch.grid, launch.threadgroup
                ),
            ));
        }
        // Borrowed names: the bridge reads them (and copies them only when MLX builds the
        // primitive).
        let targs = self.template_args(launch);
        let mut names = Vec::with_capacity(targs.len());
        let mut kinds = Vec::with_capacity(targs.len());
        let mut values = Vec::with_capacity(targs.len());
        for (n, a) in targs {
            names.push(n);
            let (k, v) = match a {
                TemplateArg::Int(i) => (0u8, i),
                TemplateArg::Bool(b) => (1u8, b as i32),
                TemplateArg::Dtype(d) => (2u8, d.code() as i32),
            };
            kinds.push(k);
            values.push(v);
        }
        let shapes: Vec<i32> = launch
            .outputs
            .iter()
            .flat_map(|(s, _)| s.iter().copied())
            .collect();
        let ranks: Vec<i32> = launch.outputs.iter().map(|(s, _)| s.len() as i32).collect();
        let dtypes: Vec<u8> = launch.outputs.iter().map(|(_, d)| d.code()).collect();
        let inputs = array_vec(&launch.inputs);
        // MLX's side of a launch (its custom-kernel primitive: the generated signature,
        // the template-argument name, the output arrays) against mlxcel's preparation.
        let _s = crate::build_profile::inner_span("inside: MLX custom-kernel calls");
        let out = ffi::kernel_call(
            self.func.as_ref().expect("kernel object is never null"),
            &inputs,
            &shapes,
            &ranks,
            &dtypes,
            &launch.grid,
            &launch.threadgroup,
            &names,
            &kinds,
            &values,
            launch.init_value.unwrap_or(0.0),
            launch.init_value.is_some(),
            launch.verbose,
            crate::flags::KERNEL_PRIMITIVE_CACHE.enabled(),
            crate::flags::KERNEL_DISK_CACHE.enabled(),
        )
        .op("custom kernel launch")?;
        let note = ffi::take_kernel_cache_note();
        if !note.is_empty() {
            report_cache_note(&self.spec.name, &note);
        }
        from_array_vec(&out, "custom kernel launch")
    }
}

/// A kernel the disk cache could not write (`MLXCEL_KERNEL_DISK_CACHE`): MLX compiles it in
/// memory as before (slower, same results). The first such note is a warning; later ones are
/// debug lines, since one cause (e.g. an unwritable cache folder) repeats for every kernel.
fn report_cache_note(kernel: &str, note: &str) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            kernel,
            "kernel disk cache: {note} (MLX compiles it in this process)"
        );
    } else {
        tracing::debug!(kernel, "kernel disk cache: {note}");
    }
}

thread_local! {
    static CACHE: RefCell<HashMap<(KernelBackend, String, u64), Rc<CustomKernel>>> =
        RefCell::new(HashMap::new());
}

/// The kernel for `spec` on `backend`, built on first use and reused afterwards.
pub fn cached(backend: KernelBackend, spec: &KernelSource) -> Result<Rc<CustomKernel>> {
    let mut h = DefaultHasher::new();
    spec.hash(&mut h);
    let key = (backend, spec.name.clone(), h.finish());
    if let Some(k) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(k);
    }
    let k = Rc::new(CustomKernel::new(backend, spec.clone())?);
    CACHE.with(|c| c.borrow_mut().insert(key, k.clone()));
    Ok(k)
}

/// (backend, static kernel name, variant) -> kernel, for [`cached_by_name`].
type NamedKernels = HashMap<(KernelBackend, &'static str, u64), Rc<CustomKernel>>;

thread_local! {
    static BY_NAME: RefCell<NamedKernels> = RefCell::new(HashMap::new());
}

/// Like [`cached`], for kernels looked up on a hot path (every decode step and layer): the
/// key is a static name plus a `variant` number (e.g. the shared-memory size) and `make`
/// builds the source only on the first call. [`cached`] hashes the whole source on every
/// lookup, ~15 us of CPU per call for the ~25 KB decode-attention kernel.
pub fn cached_by_name(
    backend: KernelBackend,
    name: &'static str,
    variant: u64,
    make: impl FnOnce() -> KernelSource,
) -> Result<Rc<CustomKernel>> {
    let key = (backend, name, variant);
    if let Some(k) = BY_NAME.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(k);
    }
    let k = cached(backend, &make())?;
    BY_NAME.with(|c| c.borrow_mut().insert(key, k.clone()));
    Ok(k)
}

/// Number of kernels built in this thread (lets tests check that the cache is used).
pub fn cached_count() -> usize {
    CACHE.with(|c| c.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::{compact_source, include_stubs, KernelSource};

    #[test]
    fn include_stubs_point_at_files_holding_the_text_and_name_the_shapes_used() {
        let mut spec = KernelSource::new("stub_test", &["a", "b"], &["out"], "");
        spec.header = "#define TWO 2\n".into();
        let body = "out[0] = a[0] * TWO + a_shape[0] + b_ndim;\n";
        let (h, b) = include_stubs(&spec, &spec.header, body).unwrap();
        let path = |stub: &str| {
            let line = stub.lines().find(|l| l.starts_with("#include")).unwrap();
            line.trim_start_matches("#include \"")
                .trim_end_matches('"')
                .to_string()
        };
        assert_eq!(std::fs::read_to_string(path(&h)).unwrap(), spec.header);
        assert_eq!(std::fs::read_to_string(path(&b)).unwrap(), body);
        // MLX passes a_shape and b_ndim only if the text it sees mentions them.
        assert!(b.contains("a_shape") && b.contains("b_ndim"));
        assert!(!b.contains("a_strides") && !b.contains("b_shape"));
        // Another text gets another directory; the same text the same files.
        let (_, b2) = include_stubs(&spec, &spec.header, "out[0] = 1;\n").unwrap();
        assert_ne!(path(&b), path(&b2));
        assert_eq!(include_stubs(&spec, &spec.header, body).unwrap().1, b);
        // No header, no header stub.
        assert!(include_stubs(&spec, "", body).unwrap().0.is_empty());
    }

    #[test]
    fn compaction_drops_comment_lines_and_indentation_only() {
        let src = "// header comment\n  int a = 1;  // trailing stays\n\n    // indented comment\n#define X(v) \\\n  (v + 1)\n// spliced comment \\\nstill comment\nreturn a;\n";
        let out = compact_source(src);
        assert_eq!(
            out,
            "int a = 1;  // trailing stays\n#define X(v) \\\n(v + 1)\n// spliced comment \\\nstill comment\nreturn a;\n"
        );
        // The decode kernel shrinks by at least a fifth and keeps every statement line.
        let body = include_str!("../kernels/cuda/decode_attention_mma.cu");
        let compact = compact_source(body);
        assert!(
            compact.len() * 5 < body.len() * 4,
            "{} vs {}",
            compact.len(),
            body.len()
        );
        for line in body
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
        {
            assert!(compact.contains(line), "lost line {line:?}");
        }
    }
}
