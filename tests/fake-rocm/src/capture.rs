//! Streams, events and graph capture. Work runs synchronously when issued, except on a capturing
//! stream: there every asynchronous operation (copies, memsets, kernel launches, library calls
//! bound to the stream) is recorded as a closure over its argument values and runs when the
//! instantiated graph is launched. Synchronous calls during a capture fail with
//! hipErrorStreamCaptureUnsupported and invalidate it, as HIP 7's strict rules do.

use crate::Registry;
use crate::faults::{self, Action, Lib, V};
use crate::hip::{self, E};
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Instant;

/// One recorded operation; returns its library's status (0 = success).
pub type Op = Arc<dyn Fn() -> i32 + Send + Sync>;

struct Capture {
    /// hipStreamCaptureMode: Global 0, ThreadLocal 1, Relaxed 2.
    mode: i32,
    thread: std::thread::ThreadId,
    ops: Vec<Op>,
    invalidated: bool,
}

impl Capture {
    /// Whether a synchronous call from this thread is unsafe for this capture: any thread's in
    /// Global mode, the capturing thread's in ThreadLocal mode, none in Relaxed mode.
    fn forbids_sync(&self) -> bool {
        match self.mode {
            0 => true,
            1 => self.thread == std::thread::current().id(),
            _ => false,
        }
    }
}

#[derive(Default)]
struct Stream {
    capture: Option<Capture>,
}

struct Exec {
    ops: Vec<Op>,
    launches: i64,
}

static STREAMS: Registry<Stream> = Registry::new();
static EVENTS: Registry<Option<Instant>> = Registry::new();
static GRAPHS: Registry<Vec<Op>> = Registry::new();
static EXECS: Registry<Exec> = Registry::new();

/// Whether a stream handle is the null stream or one of ours.
pub fn stream_known(s: usize) -> bool {
    s == 0 || STREAMS.contains(s)
}

/// Runs `op` now, or records it when `stream` is capturing. Returns the op's status (0 when
/// recorded). Unknown streams run the op now (libraries validate streams when they are bound).
pub fn submit(stream: usize, op: Op) -> i32 {
    let recorded = STREAMS
        .with(stream, |s| match &mut s.capture {
            Some(c) => {
                c.ops.push(op.clone());
                true
            }
            None => false,
        })
        .unwrap_or(false);
    if recorded { 0 } else { op() }
}

/// `submit` for HIP's own stream operations: the stream must exist, and the null stream may not
/// be used while a strict capture is active.
pub fn submit_hip(stream: usize, op: Op) -> i32 {
    if !stream_known(stream) {
        return E::InvalidHandle as i32;
    }
    if stream == 0 && blocks_sync() {
        return E::StreamCaptureUnsupported as i32;
    }
    submit(stream, op)
}

/// True (and the captures concerned invalidated) when a synchronous call is not allowed now.
pub fn blocks_sync() -> bool {
    let mut hit = false;
    STREAMS.for_each(|s| {
        if let Some(c) = &mut s.capture
            && c.forbids_sync()
        {
            c.invalidated = true;
            hit = true;
        }
    });
    hit
}

fn out_handle<T>(reg: &Registry<T>, out: *mut *mut c_void, v: T) -> i32 {
    // SAFETY: null is checked by create.
    match unsafe { crate::create(reg, out, v) } {
        true => 0,
        false => E::InvalidValue as i32,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreate(stream: *mut *mut c_void) -> i32 {
    hip::call(|| out_handle(&STREAMS, stream, Stream::default()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamCreateWithFlags(stream: *mut *mut c_void, _flags: u32) -> i32 {
    hip::call(|| out_handle(&STREAMS, stream, Stream::default()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamDestroy(stream: *mut c_void) -> i32 {
    hip::call(|| match STREAMS.remove(stream as usize) {
        Some(_) => 0,
        None => E::InvalidHandle as i32,
    })
}

fn synchronize(stream: usize) -> i32 {
    if !stream_known(stream) {
        return E::InvalidHandle as i32;
    }
    if stream == 0 {
        return if blocks_sync() {
            E::StreamCaptureUnsupported as i32
        } else {
            0
        };
    }
    let capturing = STREAMS
        .with(stream, |s| match &mut s.capture {
            Some(c) => {
                c.invalidated = true;
                true
            }
            None => false,
        })
        .unwrap_or(false);
    if capturing {
        E::StreamCaptureUnsupported as i32
    } else {
        0
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamSynchronize(stream: *mut c_void) -> i32 {
    hip::call(|| synchronize(stream as usize))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamQuery(stream: *mut c_void) -> i32 {
    // Work is done when issued, so a stream is always idle (querying a capturing one is illegal).
    hip::call(|| synchronize(stream as usize))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamBeginCapture(stream: *mut c_void, mode: i32) -> i32 {
    hip::call(|| {
        if stream.is_null() {
            return E::StreamCaptureUnsupported as i32;
        }
        if !(0..=2).contains(&mode) {
            return E::InvalidValue as i32;
        }
        STREAMS
            .with(stream as usize, |s| {
                if s.capture.is_some() {
                    return E::IllegalState as i32;
                }
                s.capture = Some(Capture {
                    mode,
                    thread: std::thread::current().id(),
                    ops: Vec::new(),
                    invalidated: false,
                });
                0
            })
            .unwrap_or(E::InvalidHandle as i32)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamEndCapture(stream: *mut c_void, graph: *mut *mut c_void) -> i32 {
    hip::call(|| {
        if graph.is_null() {
            return E::InvalidValue as i32;
        }
        let Some(ended) = STREAMS.with(stream as usize, |s| s.capture.take()) else {
            return E::InvalidHandle as i32;
        };
        let Some(c) = ended else {
            return E::IllegalState as i32;
        };
        if c.invalidated {
            // SAFETY: checked non-null.
            unsafe { crate::put(graph, std::ptr::null_mut()) };
            return E::StreamCaptureInvalidated as i32;
        }
        out_handle(&GRAPHS, graph, c.ops)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipStreamIsCapturing(stream: *mut c_void, status: *mut i32) -> i32 {
    hip::call(|| {
        let s = stream as usize;
        if !stream_known(s) {
            return E::InvalidHandle as i32;
        }
        let st = STREAMS
            .with(s, |st| match &st.capture {
                None => 0,
                Some(c) if c.invalidated => 2,
                Some(_) => 1,
            })
            .unwrap_or(0);
        // SAFETY: null is checked by put.
        match unsafe { crate::put(status, st) } {
            true => 0,
            false => E::InvalidValue as i32,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphInstantiate(
    exec: *mut *mut c_void,
    graph: *mut c_void,
    err_node: *mut *mut c_void,
    log: *mut c_char,
    log_size: usize,
) -> i32 {
    hip::call(|| {
        // SAFETY: null is checked by put.
        unsafe { crate::put(err_node, std::ptr::null_mut()) };
        let Some(ops) = GRAPHS.get(graph as usize) else {
            return E::InvalidValue as i32;
        };
        // Graph rules without a `replay` key are about instantiation.
        let fail = match faults::check(Lib::Graph, None, &[], |r| !r.has_key("replay")) {
            Some(a) if a.is_trap() => {
                faults::trap(a);
                None
            }
            Some(Action::NotSupported) => Some(E::NotSupported),
            Some(Action::Error) => Some(E::InvalidValue),
            _ => None,
        };
        if let Some(e) = fail {
            // SAFETY: the caller's log buffer holds log_size bytes.
            unsafe { crate::write_text(log, log_size, "fake-rocm: graph instantiation fault") };
            return e as i32;
        }
        // SAFETY: as above.
        unsafe { crate::write_text(log, log_size, "") };
        out_handle(&EXECS, exec, Exec { ops, launches: 0 })
    })
}

/// One replay: graph rules with a `replay` key decide whether it hangs, crashes or is skipped.
fn launch(exec: usize) -> i32 {
    let Some((ops, replay)) = EXECS.with(exec, |e| {
        e.launches += 1;
        (e.ops.clone(), e.launches)
    }) else {
        return E::InvalidHandle as i32;
    };
    let keys = [("replay", V::N(replay))];
    match faults::check(Lib::Graph, None, &keys, |r| r.has_key("replay")) {
        Some(Action::Stale) => return 0,
        Some(Action::Error) => return E::LaunchFailure as i32,
        Some(Action::NotSupported) => return E::NotSupported as i32,
        Some(a) => faults::trap(a),
        None => {}
    }
    for (i, op) in ops.iter().enumerate() {
        let st = op();
        if st != 0 {
            eprintln!("fake-rocm: graph replay {replay}: node {i} failed with status {st}");
            return E::LaunchFailure as i32;
        }
    }
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphLaunch(exec: *mut c_void, stream: *mut c_void) -> i32 {
    hip::call(|| {
        let e = exec as usize;
        if !EXECS.contains(e) {
            return E::InvalidHandle as i32;
        }
        submit_hip(stream as usize, Arc::new(move || launch(e)))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphExecDestroy(exec: *mut c_void) -> i32 {
    hip::call(|| match EXECS.remove(exec as usize) {
        Some(_) => 0,
        None => E::InvalidValue as i32,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipGraphDestroy(graph: *mut c_void) -> i32 {
    hip::call(|| match GRAPHS.remove(graph as usize) {
        Some(_) => 0,
        None => E::InvalidValue as i32,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreate(event: *mut *mut c_void) -> i32 {
    hip::call(|| out_handle(&EVENTS, event, None))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventCreateWithFlags(event: *mut *mut c_void, _flags: u32) -> i32 {
    hip::call(|| out_handle(&EVENTS, event, None))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventDestroy(event: *mut c_void) -> i32 {
    hip::call(|| match EVENTS.remove(event as usize) {
        Some(_) => 0,
        None => E::InvalidHandle as i32,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventRecord(event: *mut c_void, stream: *mut c_void) -> i32 {
    hip::call(|| {
        let e = event as usize;
        if !EVENTS.contains(e) {
            return E::InvalidHandle as i32;
        }
        let op: Op = Arc::new(move || {
            EVENTS.with(e, |t| *t = Some(Instant::now()));
            0
        });
        submit_hip(stream as usize, op)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventSynchronize(event: *mut c_void) -> i32 {
    hip::call(|| match EVENTS.contains(event as usize) {
        true => 0,
        false => E::InvalidHandle as i32,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventQuery(event: *mut c_void) -> i32 {
    // SAFETY: forwards the same handle.
    unsafe { hipEventSynchronize(event) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipEventElapsedTime(
    ms: *mut f32,
    start: *mut c_void,
    stop: *mut c_void,
) -> i32 {
    hip::call(|| {
        let (Some(a), Some(b)) = (EVENTS.get(start as usize), EVENTS.get(stop as usize)) else {
            return E::InvalidHandle as i32;
        };
        let (Some(a), Some(b)) = (a, b) else {
            return E::InvalidHandle as i32;
        };
        let v = match b.checked_duration_since(a) {
            // Two records with nothing between them still read as a (tiny) positive time.
            Some(d) => (d.as_secs_f64() * 1e3).max(1e-6),
            None => -(a.duration_since(b).as_secs_f64() * 1e3),
        };
        // SAFETY: null is checked by put.
        match unsafe { crate::put(ms, v as f32) } {
            true => 0,
            false => E::InvalidValue as i32,
        }
    })
}
