//! `make install`: the library as C and Fortran users install it (README "Install"), into a
//! temporary prefix, then the C example and the Fortran driver built against it with
//! pkg-config, as the README says. Needs make, a C compiler, pkg-config and gfortran (.ci/run
//! installs them); without them the test is skipped, except under CI, where it fails.

mod common;

use common::{root, tool_available};
use std::path::Path;
use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

fn make_install(vars: &[(&str, &Path)]) {
    let mut cmd = Command::new("make");
    cmd.current_dir(root()).arg("install");
    for (k, v) in vars {
        cmd.arg(format!("{k}={}", v.display()));
    }
    run(&mut cmd);
}

#[test]
fn make_install_gives_a_versioned_library_a_pc_file_and_a_fortran_module() {
    for (tool, why) in [
        ("make", "make install"),
        ("pkg-config", "the README's link commands"),
        ("gfortran", "the installed Fortran module"),
    ] {
        if !tool_available(tool, why) {
            return;
        }
    }
    let tmp = std::env::temp_dir().join(format!("nanprop-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let prefix = tmp.join("prefix");
    make_install(&[("PREFIX", &prefix)]);

    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    let real = lib.join(format!("libnanprop.so.{version}"));
    assert!(real.is_file(), "{} missing", real.display());
    let soname = run(Command::new("readelf").arg("-d").arg(&real));
    let abi = if version.starts_with("0.") {
        version.rsplit_once('.').unwrap().0.to_string()
    } else {
        version.split('.').next().unwrap().to_string()
    };
    assert!(
        soname.contains(&format!("[libnanprop.so.{abi}]")),
        "{soname}"
    );
    for link in [format!("libnanprop.so.{abi}"), "libnanprop.so".to_string()] {
        let target = std::fs::read_link(lib.join(&link)).unwrap();
        assert!(lib.join(target).exists(), "{link} dangles");
    }
    for f in [
        "lib/libnanprop.a",
        "lib/libnanprop_fortran.a",
        "include/nanprop.h",
        "include/nanprop.f90",
        "include/nanprop.mod",
        "lib/pkgconfig/nanprop.pc",
        "lib/pkgconfig/nanprop-fortran.pc",
        "bin/nanprop",
    ] {
        assert!(prefix.join(f).is_file(), "{f} not installed");
    }

    // The README's link commands, with the installed files only.
    let pc = |args: &[&str]| {
        let out = run(Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
            .args(args));
        out.split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    let work = tmp.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let c_exe = work.join("example");
    run(Command::new("cc")
        .arg(root().join("c_tests/example.c"))
        .args(pc(&["--cflags", "--libs", "nanprop"]))
        .arg(&rpath)
        .arg("-o")
        .arg(&c_exe));
    let out = run(&mut Command::new(&c_exe));
    assert!(out.contains("y0 depends on: x0 x1"), "{out}");
    let deps = run(Command::new("readelf").arg("-d").arg(&c_exe));
    assert!(deps.contains(&format!("[libnanprop.so.{abi}]")), "{deps}");

    let f_exe = work.join("driver");
    let ex = root().join("fortran_examples");
    run(Command::new("gfortran")
        .current_dir(&work)
        .arg(ex.join("beam.f"))
        .arg(ex.join("single.f"))
        .arg(ex.join("driver.f90"))
        .args(pc(&["--cflags", "--libs", "nanprop-fortran"]))
        .arg(&rpath)
        .arg("-o")
        .arg(&f_exe));
    let out = run(Command::new(&f_exe).current_dir(&work));
    assert!(out.contains(", 0 failed"), "{out}");

    let version_out = run(Command::new(prefix.join("bin/nanprop")).arg("--version"));
    assert!(version_out.contains(version), "{version_out}");

    // A staged install (packaging): the files under DESTDIR, the .pc naming the final prefix.
    let stage = tmp.join("stage");
    make_install(&[("PREFIX", Path::new("/opt/nanprop")), ("DESTDIR", &stage)]);
    let staged = stage.join("opt/nanprop");
    assert!(staged.join("lib/libnanprop.a").is_file());
    let pc_text = std::fs::read_to_string(staged.join("lib/pkgconfig/nanprop.pc")).unwrap();
    assert!(pc_text.contains("prefix=/opt/nanprop"), "{pc_text}");

    run(Command::new("make")
        .current_dir(root())
        .arg("uninstall")
        .arg(format!("PREFIX={}", prefix.display())));
    assert!(!lib.join("libnanprop.a").exists() && !prefix.join("bin/nanprop").exists());
    let _ = std::fs::remove_dir_all(&tmp);
}
