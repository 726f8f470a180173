//! mlxcel-models: the model families and everything around them (configuration,
//! weights, tokenizer, chat template, generation).
//!
//! Not written yet: the model families arrive with the models issue (see the README's
//! roadmap). This crate exists now so the workspace has its final shape.
