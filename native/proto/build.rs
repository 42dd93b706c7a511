//! Compiles `../../proto/**/*.proto` with protox (a pure-Rust protobuf compiler), so the build needs no
//! `protoc` on the machine. The JVM side compiles the same files with a protoc that Maven fetches.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not baked in when it is compiled: a build cache shared between clones (CI's)
    // may reuse a script compiled in another, since-deleted clone.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root.join("ember"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "proto") {
            println!("cargo:rerun-if-changed={}", path.display());
            files.push(path);
        }
    }
    files.sort();
    let descriptors = protox::compile(&files, [&root])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
