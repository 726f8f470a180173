//! Custom GPU kernels of mlxcel. Sources live beside this file (`cuda/*.cu`,
//! `metal/*.metal`) and are JIT-compiled by MLX through [`crate::mlx::kernel`].

pub mod argmax;
pub mod decode_attention;
pub mod device_clock;
pub mod embedding;
pub mod folded_append;
pub mod fp16_append;
pub mod gemv_probe;
mod in_place;
pub mod int8_encode;
pub mod quantized_gemv;
pub mod rope_table;
pub mod selftest;
pub mod turbo_encode;
