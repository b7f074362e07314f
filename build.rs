//! Generates the C header `include/nanprop.h` from `src/ffi.rs` with cbindgen.
//!
//! The header is always written to `$OUT_DIR/nanprop.h`; `tests/header.rs` compares that copy
//! with the committed `include/nanprop.h`. Outside CI (`CI` unset) the committed copy is also
//! refreshed when it differs, so a developer only has to commit it. Under CI the committed
//! header is left untouched, and a stale one fails the test suite.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/ffi.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=CI");

    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable and valid");

    // cbindgen parses only the FFI module: it is the whole C surface, and keeping the parse
    // small keeps the build fast.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/ffi.rs"))
        .generate()
        .expect("cbindgen generates the header from src/ffi.rs");

    let generated = out_dir.join("nanprop.h");
    bindings.write_to_file(&generated);
    println!(
        "cargo:rustc-env=NANPROP_GENERATED_HEADER={}",
        generated.display()
    );

    // The C tests compile with the cc crate outside a build script, so they need the target.
    println!(
        "cargo:rustc-env=NANPROP_TARGET={}",
        std::env::var("TARGET").expect("TARGET")
    );

    let in_ci = std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false")
        .unwrap_or(false);
    if !in_ci {
        let committed = crate_dir.join("include/nanprop.h");
        let new = std::fs::read(&generated).expect("generated header is readable");
        if std::fs::read(&committed).ok().as_deref() != Some(&new[..]) {
            std::fs::create_dir_all(crate_dir.join("include")).expect("include/ can be created");
            std::fs::write(&committed, &new).expect("include/nanprop.h is writable");
        }
    }
}
