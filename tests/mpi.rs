//! The MPI example (c_tests/mpi/trace_mpi.c): rank 0 drives nanprop's batch API, the other
//! ranks evaluate; run with `mpirun -np 2` (and 3). nanprop does not link MPI. Skipped without
//! OpenMPI, except under CI (CI set), where a missing mpicc fails the run.

mod common;

use common::{c_libraries, root, tool_available};
use std::process::Command;

#[test]
fn mpi_ranks_evaluate_the_batches() {
    if !tool_available("mpicc", "the MPI test") {
        return;
    }
    let (shared, _) = c_libraries();
    let libdir = shared.parent().unwrap();
    let dir = std::env::temp_dir().join(format!("nanprop-mpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("trace_mpi");
    let out = Command::new("mpicc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(root().join("include"))
        .arg(root().join("c_tests/mpi/trace_mpi.c"))
        .arg(format!("-L{}", libdir.display()))
        .arg("-lnanprop")
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run mpicc");
    assert!(
        out.status.success(),
        "mpicc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for ranks in ["2", "3"] {
        let out = Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-np", ranks])
            .arg(&exe)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .expect("run mpirun");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        print!("{text}");
        assert!(out.status.success(), "mpirun -np {ranks}: {text}");
        assert!(
            text.contains(", 0 failed") && text.contains(&format!("{ranks} ranks")),
            "{text}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
