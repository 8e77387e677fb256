//! The workspace denies unsafe code (Cargo.toml's lints) and allows it in one block: the
//! SPIR-V taks compiles for Vulkan handed to the driver unchanged
//! (`core/src/gpu/spirv_module.rs`), which wgpu offers no safe way to do. A lint that is
//! denied can be allowed anywhere by an attribute; this holds the workspace to that one
//! (`python/`, outside the workspace's lints for PyO3's macros, has no unsafe code of its
//! own either). A test module only.

use std::path::Path;

/// Every `.rs` file under `dir`, recursively.
fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn unsafe_code_is_allowed_in_one_block() {
    let root = super::docs_check::root();
    let mut files = Vec::new();
    for crate_dir in ["core", "formats", "shaders", "native", "web", "python"] {
        sources(&root.join(crate_dir).join("src"), &mut files);
    }
    assert!(files.len() > 50, "read {} files", files.len());
    let this = Path::new(file!()).file_name().expect("a file name");
    let mut allowed = Vec::new();
    for file in files.iter().filter(|f| f.file_name() != Some(this)) {
        let text = std::fs::read_to_string(file).expect("a readable source");
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("allow(unsafe_code)") || code.contains("unsafe {") {
                let file = file.strip_prefix(&root).expect("under the root");
                allowed.push(format!("{}:{}", file.display(), i + 1));
            }
        }
    }
    let [allow, block] = allowed.as_slice() else {
        panic!("unsafe code in {allowed:?}: one allowed block, in core/src/gpu/spirv_module.rs");
    };
    for place in [allow, block] {
        assert!(
            place.starts_with("core/src/gpu/spirv_module.rs:"),
            "{allowed:?}"
        );
    }
}
