include!("../mlxcel-core/build_support/link_args.rs");

fn main() {
    emit_mlx_link_args_from_dep();
}
