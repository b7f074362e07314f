//! The committed C header must be exactly what build.rs generates from src/ffi/.

#[test]
fn committed_header_matches_generated() {
    let generated =
        std::fs::read_to_string(env!("NANPROP_GENERATED_HEADER")).expect("generated header");
    let committed_path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/nanprop.h");
    let committed =
        std::fs::read_to_string(committed_path).expect("include/nanprop.h is committed");
    assert!(
        committed == generated,
        "include/nanprop.h differs from the header build.rs generates from src/ffi/; \
         run `cargo build` outside CI and commit include/nanprop.h"
    );
    for name in [
        "nanprop_trace",
        "nanprop_pattern_csr",
        "nanprop_last_error",
        "nanprop_options_init",
    ] {
        assert!(generated.contains(name), "{name} missing from the header");
    }
}
