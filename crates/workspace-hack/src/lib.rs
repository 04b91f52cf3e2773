//! No code: this crate exists for its dependency list, which `cargo hakari generate`
//! writes (see `.config/hakari.toml`). Every workspace crate depends on it, so each
//! third-party crate is built with the features the whole workspace needs, whichever subset
//! of the workspace is being built. Without it, building one package (`cargo build -p`, or
//! maturin building the Python package) chose other feature sets and recompiled most of
//! the dependency tree.
