//! The raw `cxx` bridge onto the MLX C++ API (glue in `cpp/bridge.{h,cc}`).
//!
//! Every function that can reach MLX returns `Result`: `cxx` turns a C++ exception into
//! `Err(cxx::Exception)` carrying MLX's message, so no exception crosses into Rust and
//! nothing aborts the process. `cpp/bridge.h` also catches non-`std::exception` throws.
//! Enums cross as `u8` codes (see `dtype.rs` and `ops.rs`) so the bridge does not depend
//! on the order of MLX's own enums. Nothing here is meant to be used outside `mlx/`.

#[cxx::bridge(namespace = "mlxcel")]
pub(crate) mod bridge {
    /// What [`nvrtc_compile_check`] got from NVRTC.
    struct NvrtcOutcome {
        ok: bool,
        lowered: String,
        image_len: usize,
        log: String,
    }

    unsafe extern "C++" {
        include!("mlxcel-core/cpp/bridge.h");

        /// One `mlx::core::array` (a reference-counted handle: cloning is cheap).
        type Array;
        /// A `std::vector<mlx::core::array>` for calls that take or return several arrays.
        type ArrayVec;
        /// A built `mlx::core::fast::{cuda,metal}_kernel` function object.
        type KernelFn;
        /// Arrays and metadata read from a safetensors or GGUF file.
        type TensorFile;

        // ---- library, devices, memory -------------------------------------------------
        fn mlx_version() -> String;
        fn mlx_library_path() -> String;
        fn gpu_backend() -> String;
        fn device_count(gpu: bool) -> Result<i32>;
        fn default_device_is_gpu() -> Result<bool>;
        fn set_default_device(gpu: bool, index: i32) -> Result<()>;
        fn device_info(gpu: bool, index: i32) -> Result<Vec<String>>;
        fn synchronize() -> Result<()>;
        fn stream_new_shared() -> Result<i32>;
        fn stream_default_index() -> Result<i32>;
        fn stream_set_default(index: i32) -> Result<()>;
        fn cuda_profiler(start: bool) -> Result<bool>;
        fn active_memory() -> Result<usize>;
        fn peak_memory() -> Result<usize>;
        fn reset_peak_memory() -> Result<()>;
        fn cache_memory() -> Result<usize>;
        fn clear_cache() -> Result<()>;
        fn set_memory_limit(limit: usize) -> Result<usize>;
        fn set_cache_limit(limit: usize) -> Result<usize>;

        // ---- arrays -------------------------------------------------------------------
        fn array_from_bytes(data: &[u8], shape: &[i32], dtype: u8) -> Result<UniquePtr<Array>>;
        fn array_full(shape: &[i32], value: f64, dtype: u8) -> Result<UniquePtr<Array>>;
        fn array_arange(start: f64, stop: f64, step: f64, dtype: u8) -> Result<UniquePtr<Array>>;
        fn array_clone(a: &Array) -> UniquePtr<Array>;
        fn array_ndim(a: &Array) -> usize;
        fn array_shape(a: &Array) -> Vec<i32>;
        fn array_dim(a: &Array, axis: usize) -> i32;
        fn array_dtype(a: &Array) -> Result<u8>;
        fn array_size(a: &Array) -> usize;
        fn array_nbytes(a: &Array) -> usize;
        fn array_graph_nodes(a: &Array) -> Result<usize>;
        fn array_buffer_id(a: &Array) -> Result<usize>;
        fn array_is_scheduled(a: &Array) -> bool;
        fn array_eval(a: &Array) -> Result<()>;
        fn array_is_row_contiguous(a: &Array) -> Result<bool>;
        fn array_copy_to(a: &Array, dst: &mut [u8]) -> Result<()>;
        fn array_to_string(a: &Array) -> Result<String>;

        fn array_vec_with_capacity(n: usize) -> UniquePtr<ArrayVec>;
        fn array_vec_push(v: Pin<&mut ArrayVec>, a: &Array);
        fn array_vec_len(v: &ArrayVec) -> usize;
        fn array_vec_get(v: &ArrayVec, i: usize) -> Result<UniquePtr<Array>>;
        fn eval_all(v: &ArrayVec) -> Result<()>;
        fn async_eval_all(v: &ArrayVec) -> Result<()>;

        // ---- elementwise, reductions, shapes --------------------------------------------
        fn unary(op: u8, a: &Array) -> Result<UniquePtr<Array>>;
        fn binary(op: u8, a: &Array, b: &Array) -> Result<UniquePtr<Array>>;
        fn reduce(op: u8, a: &Array, axes: &[i32], keepdims: bool) -> Result<UniquePtr<Array>>;
        fn astype(a: &Array, dtype: u8) -> Result<UniquePtr<Array>>;
        fn where_(cond: &Array, x: &Array, y: &Array) -> Result<UniquePtr<Array>>;
        fn matmul(a: &Array, b: &Array) -> Result<UniquePtr<Array>>;
        fn softmax(a: &Array, axes: &[i32], precise: bool) -> Result<UniquePtr<Array>>;
        fn cumsum(a: &Array, axis: i32, reverse: bool, inclusive: bool)
            -> Result<UniquePtr<Array>>;
        fn argsort(a: &Array, axis: i32) -> Result<UniquePtr<Array>>;
        fn sort(a: &Array, axis: i32) -> Result<UniquePtr<Array>>;
        fn argpartition(a: &Array, kth: i32, axis: i32) -> Result<UniquePtr<Array>>;
        fn topk(a: &Array, k: i32, axis: i32) -> Result<UniquePtr<Array>>;
        fn clip(a: &Array, lo: &Array, hi: &Array) -> Result<UniquePtr<Array>>;

        fn reshape(a: &Array, shape: &[i32]) -> Result<UniquePtr<Array>>;
        fn transpose(a: &Array, axes: &[i32]) -> Result<UniquePtr<Array>>;
        fn expand_dims(a: &Array, axes: &[i32]) -> Result<UniquePtr<Array>>;
        fn squeeze(a: &Array, axes: &[i32]) -> Result<UniquePtr<Array>>;
        fn broadcast_to(a: &Array, shape: &[i32]) -> Result<UniquePtr<Array>>;
        fn contiguous(a: &Array) -> Result<UniquePtr<Array>>;
        fn slice(
            a: &Array,
            start: &[i32],
            stop: &[i32],
            strides: &[i32],
        ) -> Result<UniquePtr<Array>>;
        fn slice_update(
            src: &Array,
            update: &Array,
            start: &[i32],
            stop: &[i32],
            strides: &[i32],
        ) -> Result<UniquePtr<Array>>;
        fn slice_update_dynamic(
            src: &Array,
            update: &Array,
            start: &Array,
            axes: &[i32],
        ) -> Result<UniquePtr<Array>>;
        fn concatenate(v: &ArrayVec, axis: i32) -> Result<UniquePtr<Array>>;
        fn stack(v: &ArrayVec, axis: i32) -> Result<UniquePtr<Array>>;
        fn split_sections(a: &Array, indices: &[i32], axis: i32) -> Result<UniquePtr<ArrayVec>>;
        fn take(a: &Array, indices: &Array, axis: i32) -> Result<UniquePtr<Array>>;
        fn take_along_axis(a: &Array, indices: &Array, axis: i32) -> Result<UniquePtr<Array>>;
        fn put_along_axis(
            a: &Array,
            indices: &Array,
            values: &Array,
            axis: i32,
        ) -> Result<UniquePtr<Array>>;

        // ---- quantization, transforms ---------------------------------------------------
        fn quantize(w: &Array, group_size: i32, bits: i32) -> Result<UniquePtr<ArrayVec>>;
        fn dequantize(
            w: &Array,
            scales: &Array,
            biases: &Array,
            group_size: i32,
            bits: i32,
            dtype: u8,
        ) -> Result<UniquePtr<Array>>;
        fn quantized_matmul(
            x: &Array,
            w: &Array,
            scales: &Array,
            biases: &Array,
            transpose: bool,
            group_size: i32,
            bits: i32,
        ) -> Result<UniquePtr<Array>>;
        fn hadamard_transform(a: &Array, has_scale: bool, scale: f32) -> Result<UniquePtr<Array>>;

        // ---- fast ops -------------------------------------------------------------------
        fn rms_norm(
            x: &Array,
            weight: &Array,
            has_weight: bool,
            eps: f32,
        ) -> Result<UniquePtr<Array>>;
        fn rope(
            x: &Array,
            dims: i32,
            traditional: bool,
            base: f32,
            scale: f32,
            offset: i32,
        ) -> Result<UniquePtr<Array>>;
        fn rope_array_offset(
            x: &Array,
            dims: i32,
            traditional: bool,
            base: f32,
            scale: f32,
            offset: &Array,
        ) -> Result<UniquePtr<Array>>;
        fn rope_freqs(
            x: &Array,
            dims: i32,
            traditional: bool,
            scale: f32,
            offset: &Array,
            freqs: &Array,
        ) -> Result<UniquePtr<Array>>;
        fn sdpa(
            q: &Array,
            k: &Array,
            v: &Array,
            scale: f32,
            mask_mode: &str,
        ) -> Result<UniquePtr<Array>>;
        fn sdpa_masked(
            q: &Array,
            k: &Array,
            v: &Array,
            scale: f32,
            mask: &Array,
        ) -> Result<UniquePtr<Array>>;

        // ---- custom kernels -------------------------------------------------------------
        fn cuda_kernel_new(
            name: &str,
            input_names: Vec<String>,
            output_names: Vec<String>,
            source: &str,
            header: &str,
            ensure_row_contiguous: bool,
            shared_memory: i32,
        ) -> Result<UniquePtr<KernelFn>>;
        fn metal_kernel_new(
            name: &str,
            input_names: Vec<String>,
            output_names: Vec<String>,
            source: &str,
            header: &str,
            ensure_row_contiguous: bool,
            atomic_outputs: bool,
        ) -> Result<UniquePtr<KernelFn>>;
        #[allow(clippy::too_many_arguments)]
        fn kernel_call(
            k: &KernelFn,
            inputs: &ArrayVec,
            output_shapes: &[i32],
            output_ranks: &[i32],
            output_dtypes: &[u8],
            grid: &[i32],
            threadgroup: &[i32],
            template_names: &[&str],
            template_kinds: &[u8],
            template_values: &[i32],
            init_value: f32,
            has_init_value: bool,
            verbose: bool,
            cache_primitive: bool,
            disk_cache: bool,
        ) -> Result<UniquePtr<ArrayVec>>;
        /// Why the last `kernel_call` with `disk_cache` on this thread could not put its
        /// module in MLX's PTX cache ("" when it did, or had nothing to do); cleared by the call.
        fn take_kernel_cache_note() -> String;
        /// NVRTC on an MLX-style kernel text with mlxcel's stand-in for MLX's device header
        /// (`cpp/kernel_disk_cache.h`): the lowered name, the image's size, NVRTC's log.
        fn nvrtc_compile_check(
            source: &str,
            name_expr: &str,
            arch: &str,
            include_dirs: Vec<String>,
            nvrtc_lib: &str,
        ) -> NvrtcOutcome;
        /// Where MLX looks for a module's compiled image in cache directory `dir`.
        fn kernel_module_image_path(dir: &str, module: &str) -> String;
        /// The disk cache's worker pool: queue a compile of `mlx::core::cu::<name>` written
        /// as MLX's module files at `image`; wait for every queued one; take a failure ("").
        fn kernel_cache_queue(
            name: &str,
            source: &str,
            image: &str,
            arch: &str,
            include_dirs: Vec<String>,
            nvrtc_lib: &str,
        );
        fn kernel_cache_wait();
        /// Compiles done, their summed wall time (ns), time evaluations waited for them (ns).
        fn kernel_cache_stats() -> Vec<u64>;
        fn kernel_cache_take_failure() -> String;
        /// MLX's PTX cache folder: `$MLX_PTX_CACHE_DIR`, else `<temp>/mlx/<version>/ptx`.
        fn kernel_ptx_cache_dir() -> String;

        // ---- random ---------------------------------------------------------------------
        fn random_seed(seed: u64) -> Result<()>;
        fn random_key(seed: u64) -> Result<UniquePtr<Array>>;
        fn random_split(key: &Array, num: i32) -> Result<UniquePtr<Array>>;
        fn random_normal(
            shape: &[i32],
            dtype: u8,
            key: &Array,
            has_key: bool,
        ) -> Result<UniquePtr<Array>>;
        fn random_uniform(
            shape: &[i32],
            dtype: u8,
            key: &Array,
            has_key: bool,
        ) -> Result<UniquePtr<Array>>;
        fn random_categorical(
            logits: &Array,
            axis: i32,
            key: &Array,
            has_key: bool,
        ) -> Result<UniquePtr<Array>>;

        // ---- files ----------------------------------------------------------------------
        fn load_safetensors(path: &str) -> Result<UniquePtr<TensorFile>>;
        fn load_gguf(path: &str) -> Result<UniquePtr<TensorFile>>;
        fn tensor_file_names(f: &TensorFile) -> Vec<String>;
        fn tensor_file_get(f: &TensorFile, name: &str) -> Result<UniquePtr<Array>>;
        fn tensor_file_meta_keys(f: &TensorFile) -> Vec<String>;
        /// 0 absent/empty, 1 string, 2 list of strings, 3 array.
        fn tensor_file_meta_kind(f: &TensorFile, key: &str) -> u8;
        fn tensor_file_meta_string(f: &TensorFile, key: &str) -> Result<String>;
        fn tensor_file_meta_strings(f: &TensorFile, key: &str) -> Result<Vec<String>>;
        fn tensor_file_meta_array(f: &TensorFile, key: &str) -> Result<UniquePtr<Array>>;
        fn save_safetensors(
            path: &str,
            names: Vec<String>,
            arrays: &ArrayVec,
            meta_keys: Vec<String>,
            meta_values: Vec<String>,
        ) -> Result<()>;
        fn save_gguf(
            path: &str,
            names: Vec<String>,
            arrays: &ArrayVec,
            meta_string_keys: Vec<String>,
            meta_string_values: Vec<String>,
            meta_array_keys: Vec<String>,
            meta_arrays: &ArrayVec,
        ) -> Result<()>;
    }
}
