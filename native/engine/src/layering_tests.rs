//! The engine's layering, checked on its sources: the planner is the only reader of the proto. Operators and
//! expressions take typed configs and know neither `ember_proto` nor the planner (their tests may build plans
//! through the planner, so code from a file's first `#[cfg(test)]` on is not checked).
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file:line, line)` of every non-test line under `src/<layer>` that names a forbidden module.
fn violations(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(layer);
    let mut files = vec![];
    rust_files(&root, &mut files);
    assert!(!files.is_empty(), "no sources under {}", root.display());
    let mut found = vec![];
    for file in files {
        if file.file_name().is_some_and(|n| n == "tests.rs" || n == "test_util.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate().take_while(|(_, l)| l.trim() != "#[cfg(test)]") {
            let code = line.split("//").next().unwrap_or("");
            if forbidden.iter().any(|f| code.contains(f)) {
                found.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

const PROTO_OR_PLANNER: &[&str] = &["ember_proto", "pb::", "crate::planner", "crate::proto"];

#[test]
fn operators_read_neither_the_proto_nor_the_planner() {
    let found = violations("operators", PROTO_OR_PLANNER);
    assert!(found.is_empty(), "operators must take typed configs from the planner:\n{}", found.join("\n"));
}

#[test]
fn expressions_read_neither_the_proto_nor_the_planner() {
    let found = violations("expressions", PROTO_OR_PLANNER);
    assert!(found.is_empty(), "expressions must take typed arguments from the planner:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_a_violation() {
    // The scan itself works: the planner does read the proto.
    assert!(!violations("planner", PROTO_OR_PLANNER).is_empty());
}
