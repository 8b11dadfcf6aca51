use super::*;
use crate::exec::book::Book;
use crate::exec::record::journal::{self, Journal};
use crate::exec::record::progress::Progress;
use crate::exec::record::recorder::Recorder;
use crate::exec::supervise::supervisor::tests::{phase, ready, supervisor};
use crate::exec::worker::protocol::{Event as Wire, PROTOCOL_VERSION, encode};
use crate::op::OpKind;
use crate::results::csv::ResultsWriter;
use crate::results::summary::Summary;
use std::collections::{BTreeMap, HashMap};

fn result(status: Status) -> String {
    encode(&Wire::Result {
        unit_id: String::new(),
        outcome: Box::new(Outcome::failed(status, "", "")),
    })
}

/// Three 32x32xK GEMM cases, K = 8, 16, 32.
fn cases() -> Vec<Case> {
    let text = "name = \"t\"\nop = \"gemm\"\n[axes]\nk = [8, 16, 32]\n";
    let sweep = crate::spec::load_str("t.toml", text, &[])
        .unwrap_or_else(|e| panic!("the test sweep loads: {e}"));
    sweep.cases().filter_map(Result::ok).collect()
}

/// Runs the three cases on one slot whose worker hangs on the second case's unit and
/// answers the health probe with `probe`.
fn run_with_a_hang(probe: Status) -> (Option<Stop>, HashMap<String, Status>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let cases = cases();
    let hang_id = unit_id(&cases[1].id, "default", "");
    let body = format!(
        "while read req; do\n case \"$req\" in\n  *'\"type\":\"probe\"'*) echo '{}' ;;\n  *'{hang_id}'*) echo '{}'; exec sleep 600 ;;\n  *) echo '{}'; echo '{}' ;;\n esac\ndone",
        result(probe),
        phase("run"),
        phase("run"),
        result(Status::Ok),
    );
    let sup = supervisor(dir.path(), &ready(PROTOCOL_VERSION), &body, 1.0);
    let mut slots = [Slot {
        sup,
        label: String::new(),
        device: "test device".into(),
    }];
    let io = |e: std::io::Error| -> std::convert::Infallible { panic!("{e}") };
    let recorder = Mutex::new(Shared {
        book: Book::default(),
        rec: Recorder {
            journal: Journal::open(dir.path()).unwrap_or_else(|e| match io(e) {}),
            csv: ResultsWriter::create(&dir.path().join("results.csv"), OpKind::Gemm)
                .unwrap_or_else(|e| match io(e) {}),
            summary: Summary::default(),
            progress: Progress::new(3, 1, 0, true),
            env_devices: BTreeMap::new(),
            contexts: HashMap::new(),
            trees: Default::default(),
        },
    });
    let combos = [EnvCombo::default()];
    let interrupts = AtomicUsize::new(0);
    let p = Params {
        combos: &combos,
        backend: "cpu",
        policies: &Policies::default(),
        retry_interrupted: false,
        interrupts: &interrupts,
        trials: 1,
        all_counted_up_front: true,
    };
    let plan = cases.into_iter().map(|c| (1, (0, String::new(), c)));
    let stop = execute(&mut slots, plan, &recorder, &p).unwrap_or_else(|e| match io(e) {});
    for s in &mut slots {
        s.sup.shutdown();
    }
    let rec = recorder.into_inner().unwrap_or_else(|e| e.into_inner());
    let statuses = rec
        .book
        .rows
        .iter()
        .map(|(id, m)| (id.clone(), m.status))
        .collect();
    let st = journal::read(dir.path()).unwrap_or_else(|e| match io(e) {});
    let mut order: Vec<String> = st.finished.keys().cloned().collect();
    order.sort();
    (stop, statuses, order)
}

#[test]
fn a_hang_is_recorded_and_a_healthy_device_goes_on() {
    let (stop, statuses, journaled) = run_with_a_hang(Status::Ok);
    assert_eq!(stop, None);
    let mut counts: Vec<Status> = statuses.values().copied().collect();
    counts.sort();
    assert_eq!(counts, [Status::Ok, Status::Ok, Status::Hang]);
    assert_eq!(journaled.len(), 3, "every row is journaled");
}

#[test]
fn a_device_that_fails_its_probe_leaves_the_rest_skipped() {
    let (stop, statuses, _) = run_with_a_hang(Status::Error);
    assert_eq!(stop, Some(Stop::DeviceUnhealthy));
    let mut counts: Vec<Status> = statuses.values().copied().collect();
    counts.sort();
    assert_eq!(counts, [Status::Ok, Status::Hang, Status::Skipped]);
}
