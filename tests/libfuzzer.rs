//! The coverage-guided fuzzer (`fuzz/run.sh`, libFuzzer through clang on stable Rust) runs each
//! target for a short while, from the corpus in `fuzz/corpus`: no crash, no timeout, no input
//! that takes more than 2 GB. Longer runs: `fuzz/run.sh TARGET SECONDS` (the README's
//! Robustness section).

mod common;

use std::process::Command;

/// Seconds per target here (about a minute in all).
const SECONDS: &str = "20";

#[test]
fn libfuzzer_finds_nothing_in_a_short_run_of_each_target() {
    if !common::tool_available(
        "clang-14",
        "the libFuzzer run (clang-14, libclang-rt-14-dev)",
    ) {
        return;
    }
    let run = common::root().join("fuzz/run.sh");
    for target in ["mtx", "csr", "options"] {
        // A fresh working corpus: the seeds alone, whatever earlier long runs left in
        // fuzz/target (coverage must grow from the seeds).
        let work =
            std::env::temp_dir().join(format!("nanprop-libfuzzer-{target}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let out = Command::new("bash")
            .arg(&run)
            .args([target, SECONDS])
            .env("FUZZ_WORK_CORPUS", &work)
            .output()
            .expect("run fuzz/run.sh");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        assert!(
            out.status.success(),
            "{target}: {:?}\n{}",
            out.status,
            tail.join("\n")
        );
        let runs = stderr
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        // Instrumented and running: thousands of inputs, and coverage that grew.
        assert!(
            runs >= 1000,
            "{target}: only {runs} inputs ran\n{}",
            tail.join("\n")
        );
        assert!(
            stderr.contains("NEW"),
            "{target}: no new coverage\n{}",
            tail.join("\n")
        );
        eprintln!("{target}: {runs} inputs in {SECONDS} s");
        let _ = std::fs::remove_dir_all(&work);
    }
}
