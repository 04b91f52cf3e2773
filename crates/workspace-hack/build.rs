// Present so that cargo applies the build-dependencies listed in Cargo.toml.
fn main() {}
