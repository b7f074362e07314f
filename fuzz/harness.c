/* libFuzzer entry point for one nanprop fuzz target (fuzz/run.sh builds one binary per
 * target with -DTARGET=nanprop_fuzz_<name>; the targets are Rust, in fuzz/src/lib.rs). */
#include <stddef.h>
#include <stdint.h>

int TARGET(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return TARGET(data, size); }
