#!/usr/bin/env bash
# Coverage-guided fuzzing of nanprop with libFuzzer, on stable Rust.
#
#   fuzz/run.sh TARGET SECONDS [libFuzzer flags...]     TARGET: mtx, csr or options
#
# cargo-fuzz needs a nightly toolchain; what it does can be done on stable: the library is built
# with LLVM's SanitizerCoverage pass (-C passes=sancov-module and the llvm-args below: 8-bit
# edge counters, the PC table and comparison tracing, which is what libFuzzer reads), as a
# static library exporting the target, and clang links it with libFuzzer (-fsanitize=fuzzer)
# through a three-line C harness (fuzz/harness.c). Needs clang with libFuzzer (Debian: clang-14
# and libclang-rt-14-dev).
#
# The corpus in fuzz/corpus/TARGET is the seed and is only read; new inputs go to
# fuzz/target/corpus-TARGET (or $FUZZ_WORK_CORPUS: a fresh directory starts from the seeds alone). A crash, a timeout (10 s) or more than 2 GB of memory fails the
# run; the input is kept in fuzz/target/ (crash-*, timeout-*, oom-*).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?target: mtx, csr or options}"
seconds="${2:?seconds}"
shift 2
clang="${CLANG:-$(command -v clang-14 || command -v clang)}"
export CARGO_TARGET_DIR="$here/target"
export RUSTFLAGS="-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=4 \
 -C llvm-args=-sanitizer-coverage-inline-8bit-counters -C llvm-args=-sanitizer-coverage-pc-table \
 -C llvm-args=-sanitizer-coverage-trace-compares -C debug-assertions -C overflow-checks \
 -C force-frame-pointers=yes"
# An explicit --target keeps RUSTFLAGS off build scripts and proc macros (as cargo-fuzz does).
host="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --quiet --release --target "$host" --manifest-path "$here/Cargo.toml"
exe="$here/target/fuzz-$target"
"$clang" -g -fsanitize=fuzzer -DTARGET="nanprop_fuzz_$target" "$here/harness.c" \
  "$here/target/$host/release/libnanprop_fuzz.a" -lpthread -ldl -lm -o "$exe"
work="${FUZZ_WORK_CORPUS:-$here/target/corpus-$target}"
mkdir -p "$work"
exec "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$here/target/" "$@" "$work" "$here/corpus/$target"
