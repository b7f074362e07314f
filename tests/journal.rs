//! Journals: a trace that dies resumes without evaluating again what it had; a torn last record
//! is dropped; a journal of another trace, or a damaged one, is refused.

mod common;

use nanprop::testing as synthetic;
use nanprop::{trace, ErrorKind, Pattern, TraceOptions};
use std::cell::Cell;
use std::path::PathBuf;

fn journal_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("nanprop-journal-{name}-{}.bin", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// The model of `truth`; fails (returns 9) on the first evaluation at a finite point from call
/// number `fail_at` (1-based) on, if any: a failure the trace cannot work around (a failure on
/// a NaN probe would be split and retried).
fn model<'a>(
    truth: &'a Pattern,
    calls: &'a Cell<usize>,
    fail_at: Option<usize>,
) -> impl FnMut(&[f64], &mut [f64]) -> Result<(), i32> + 'a {
    move |x: &[f64], y: &mut [f64]| {
        calls.set(calls.get() + 1);
        if fail_at.is_some_and(|c| calls.get() >= c) && x.iter().all(|v| v.is_finite()) {
            return Err(9);
        }
        common::row_sums(truth, x, y);
        Ok(())
    }
}

#[test]
fn an_interrupted_trace_resumes_where_it_stopped() {
    let truth = synthetic::stencil_2d(10);
    let x0 = vec![0.7; 100];
    let clean = trace(
        &mut model(&truth, &Cell::new(0), None),
        100,
        &x0,
        &TraceOptions::default(),
    )
    .unwrap();
    let total = clean.report.evaluations;
    let path = journal_path("resume");
    let options = TraceOptions {
        journal: Some(path.clone()),
        ..Default::default()
    };
    // The first run dies at the first evaluation at a finite point from the 23rd on.
    let calls = Cell::new(0);
    let e = trace(&mut model(&truth, &calls, Some(23)), 100, &x0, &options).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BlackBox);
    let died = calls.get();
    assert!(died >= 23);
    // The second evaluates only what the first did not finish.
    let calls = Cell::new(0);
    let p = trace(&mut model(&truth, &calls, None), 100, &x0, &options).unwrap();
    assert_eq!(
        (p.row_ptr(), p.col_idx()),
        (clean.row_ptr(), clean.col_idx())
    );
    assert_eq!(p.report.evaluations, total);
    assert_eq!(p.report.replayed, died - 1);
    assert_eq!(calls.get(), total - (died - 1));
    // A third run evaluates nothing.
    let calls = Cell::new(0);
    let p = trace(&mut model(&truth, &calls, None), 100, &x0, &options).unwrap();
    assert_eq!(calls.get(), 0);
    assert_eq!(p.report.replayed, total);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_torn_last_record_is_dropped_and_redone() {
    let truth = synthetic::banded(40, 1);
    let x0 = vec![1.5; 40];
    let path = journal_path("torn");
    let options = TraceOptions {
        journal: Some(path.clone()),
        ..Default::default()
    };
    let calls = Cell::new(0);
    let clean = trace(&mut model(&truth, &calls, None), 40, &x0, &options).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    // The process died in the middle of writing its last record.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 13)
        .unwrap();
    let calls = Cell::new(0);
    let p = trace(&mut model(&truth, &calls, None), 40, &x0, &options).unwrap();
    assert_eq!(calls.get(), 1, "only the torn record is evaluated again");
    assert_eq!(p.col_idx(), clean.col_idx());
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        len,
        "the journal is whole again"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn foreign_and_damaged_journals_are_refused() {
    let truth = synthetic::banded(30, 1);
    let path = journal_path("foreign");
    let options = TraceOptions {
        journal: Some(path.clone()),
        ..Default::default()
    };
    trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &[1.0; 30],
        &options,
    )
    .unwrap();
    let e = trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &[2.0; 30],
        &options,
    )
    .unwrap_err();
    assert!(
        e.message.contains("belongs to another trace") && e.message.contains("another x0"),
        "{}",
        e.message
    );
    let other = TraceOptions {
        verify: false,
        ..options.clone()
    };
    let e = trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &[1.0; 30],
        &other,
    )
    .unwrap_err();
    assert!(
        e.message.contains("belongs to another trace"),
        "{}",
        e.message
    );
    let small = synthetic::banded(20, 1);
    let e = trace(
        &mut model(&small, &Cell::new(0), None),
        20,
        &[1.0; 20],
        &options,
    )
    .unwrap_err();
    assert!(e.message.contains("n = 30"), "{}", e.message);
    // A byte flipped inside the first record (not the last): damage, not a torn write.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[nanprop::trace::journal::HEADER + 30] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let e = trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &[1.0; 30],
        &options,
    )
    .unwrap_err();
    assert!(e.message.contains("damaged at record 0"), "{}", e.message);
    std::fs::write(
        &path,
        b"not a journal at all, but long enough to have a header",
    )
    .unwrap();
    let e = trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &[1.0; 30],
        &options,
    )
    .unwrap_err();
    assert!(
        e.message.contains("is not a nanprop journal"),
        "{}",
        e.message
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn parallel_drivers_resume_from_the_journal_too() {
    let truth = synthetic::random_sparse(60, 60, 3, 5);
    let x0 = vec![0.3; 60];
    let path = journal_path("processes");
    let options = TraceOptions {
        journal: Some(path.clone()),
        ..Default::default()
    };
    // The worker processes crash when input 7 moves up (a verification, at a finite point);
    // the journal keeps the rest.
    let mut crashing = |x: &[f64], y: &mut [f64]| {
        if x[7] > 0.3 {
            std::process::abort();
        }
        model(&truth, &Cell::new(0), None)(x, y)
    };
    let forked = TraceOptions {
        processes: 3,
        ..options.clone()
    };
    let e = trace(&mut crashing, 60, &x0, &forked).unwrap_err();
    assert!(e.message.contains("SIGABRT"), "{}", e.message);
    let done_before = std::fs::metadata(&path).unwrap().len();
    assert!(
        done_before > nanprop::trace::journal::HEADER as u64,
        "evaluations before the crash are in the journal"
    );
    let calls = Cell::new(0);
    let p = trace(&mut model(&truth, &calls, None), 60, &x0, &options).unwrap();
    assert!(p.report.replayed > 0 && calls.get() < p.report.evaluations);
    assert_eq!(p.col_idx(), truth.col_idx());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn one_journal_serves_every_sampled_point_and_resumes_mid_way() {
    let truth = synthetic::banded(30, 1);
    let x0 = vec![1.0; 30];
    let path = journal_path("sampled");
    let options = TraceOptions {
        journal: Some(path.clone()),
        sample_points: 2,
        ..Default::default()
    };
    let clean = trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &x0,
        &TraceOptions {
            journal: None,
            ..options.clone()
        },
    )
    .unwrap();
    let total = clean.report.evaluations;
    // Dies in the second sampled point (each point takes total / 3 evaluations).
    let calls = Cell::new(0);
    let e = trace(
        &mut model(&truth, &calls, Some(total - 5)),
        30,
        &x0,
        &options,
    )
    .unwrap_err();
    assert!(e.message.contains("at point 2"), "{}", e.message);
    let fail_at = calls.get();
    let calls = Cell::new(0);
    let p = trace(&mut model(&truth, &calls, None), 30, &x0, &options).unwrap();
    assert_eq!(p.col_idx(), clean.col_idx());
    assert_eq!(p.report.evaluations, total);
    assert_eq!(p.report.replayed, fail_at - 1);
    assert_eq!(calls.get(), total - (fail_at - 1));
    // A journal written at another x0 is refused at its first point.
    let e = trace(
        &mut model(&truth, &Cell::new(0), None),
        30,
        &[2.0; 30],
        &options,
    )
    .unwrap_err();
    assert!(e.message.contains("another x0"), "{}", e.message);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn trace_points_and_the_flag_tracer_resume_from_their_journal() {
    use nanprop::driver::flags::FlagTracer;
    let truth = synthetic::random_sparse(20, 20, 3, 1);
    let points = vec![vec![0.5; 20], vec![1.5; 20], vec![-2.0; 20]];
    let path = journal_path("points");
    let options = TraceOptions {
        journal: Some(path.clone()),
        ..Default::default()
    };
    let calls = Cell::new(0);
    let first =
        nanprop::trace_points(&mut model(&truth, &calls, None), 20, &points, &options).unwrap();
    assert_eq!(calls.get(), first.report.evaluations);
    let calls = Cell::new(0);
    let again =
        nanprop::trace_points(&mut model(&truth, &calls, None), 20, &points, &options).unwrap();
    assert_eq!(calls.get(), 0, "every point is replayed");
    assert_eq!(again.report.replayed, first.report.evaluations);
    assert_eq!(again.col_idx(), first.col_idx());
    let _ = std::fs::remove_file(&path);

    // The flag tracer: two flag combinations traced, then the same observations replayed.
    let path = journal_path("flags");
    let options = TraceOptions {
        journal: Some(path.clone()),
        ..Default::default()
    };
    let visits = [points[0].clone(), points[0].clone(), points[1].clone()];
    let run = |calls: &Cell<usize>| {
        let mut t = FlagTracer::new(20, 20, &[0], &options).unwrap();
        let mut f = model(&truth, calls, None);
        let traced: Vec<bool> = visits
            .iter()
            .map(|x| t.observe(&mut f, x).unwrap())
            .collect();
        assert_eq!(traced, [true, false, true]);
        t.pattern().unwrap().clone()
    };
    let calls = Cell::new(0);
    let p = run(&calls);
    assert!(calls.get() > 0);
    let calls = Cell::new(0);
    let q = run(&calls);
    assert_eq!(calls.get(), 0, "both traces are replayed");
    assert_eq!(q.col_idx(), p.col_idx());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_journal_of_another_function_id_is_refused() {
    let truth = synthetic::banded(10, 1);
    let path = journal_path("id");
    let with_id = |id: &str| TraceOptions {
        journal: Some(path.clone()),
        function_id: Some(id.to_string()),
        ..Default::default()
    };
    trace(
        &mut model(&truth, &Cell::new(0), None),
        10,
        &[1.0; 10],
        &with_id("wing v1"),
    )
    .unwrap();
    let e = trace(
        &mut model(&truth, &Cell::new(0), None),
        10,
        &[1.0; 10],
        &with_id("wing v2"),
    )
    .unwrap_err();
    assert!(
        e.message.contains("belongs to another function") && e.message.contains("wing v2"),
        "{}",
        e.message
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn journal_paths_that_are_not_journals_are_refused_and_left_alone() {
    use nanprop::trace::journal::Journal;
    let truth = synthetic::banded(10, 1);
    let run = |path: &std::path::Path| {
        let options = TraceOptions {
            journal: Some(path.to_path_buf()),
            ..Default::default()
        };
        trace(
            &mut model(&truth, &Cell::new(0), None),
            10,
            &[1.0; 10],
            &options,
        )
    };
    // A notes file shorter than a journal's header is not overwritten.
    let notes = journal_path("notes");
    std::fs::write(&notes, "my notes").unwrap();
    let e = run(&notes).unwrap_err();
    assert!(
        e.message.contains("is not a nanprop journal"),
        "{}",
        e.message
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
    let _ = std::fs::remove_file(&notes);
    // A FIFO (which would block a reader) and a device are refused at once.
    let fifo = journal_path("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for path in [fifo.as_path(), std::path::Path::new("/dev/zero")] {
        let e = run(path).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{}", e.message);
    }
    let _ = std::fs::remove_file(&fifo);
    // One journal, one trace at a time: a second opener is refused while the first holds it.
    let path = journal_path("locked");
    let first = Journal::open(&path, 10, 10, 1, (0, None)).unwrap();
    let e = run(&path).unwrap_err();
    assert!(
        e.message.contains("in use by another trace"),
        "{}",
        e.message
    );
    drop(first);
    let _ = std::fs::remove_file(&path);
}
