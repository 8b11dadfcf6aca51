//! Writing to the terminal without panicking. `println!` and `eprintln!` panic when the stream
//! is closed (`| head -1`: EPIPE, as Rust ignores SIGPIPE) or full (`> /dev/full`: ENOSPC),
//! which stopped a run midway and left its manifest unfinished. Everything this program prints
//! goes through here instead:
//! - progress and notes ([`say`], [`note`]): a stream that fails is marked gone and is not
//!   written again; the caller goes on (a run's results never depend on its terminal);
//! - a command's product (`list-ops`, `repro`, `report`'s file list, ...) goes through [`say`]
//!   too, and `main` exits 1 with a message on stderr when stdout went away ([`stdout_gone`])
//!   instead of claiming a success nobody could read (`run` and `merge` keep their exit code).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

fn write_to(gone: &AtomicBool, text: &str, out: &mut dyn Write) -> std::io::Result<()> {
    if gone.load(Ordering::Relaxed) {
        return Ok(());
    }
    let r = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if r.is_err() {
        gone.store(true, Ordering::Relaxed);
    }
    r
}

/// Progress or a message on stdout; dropped (and stdout marked gone) when it cannot be written.
pub fn say(text: &str) {
    let _ = write_to(&STDOUT_GONE, text, &mut std::io::stdout().lock());
}

/// A note, warning or error on stderr; dropped when stderr cannot be written.
pub fn note(text: &str) {
    let _ = write_to(&STDERR_GONE, text, &mut std::io::stderr().lock());
}

/// Whether stdout failed once (progress after that is dropped).
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
}

/// `println!` that never panics (see [`say`]).
#[macro_export]
macro_rules! sayln {
    ($($arg:tt)*) => {
        $crate::console::say(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics (see [`note`]).
#[macro_export]
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::console::note(&format!("{}\n", format_args!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_stream_is_marked_gone_and_not_written_again() {
        let gone = AtomicBool::new(false);
        assert!(write_to(&gone, "a", &mut Broken).is_err());
        assert!(gone.load(Ordering::Relaxed));
        // Gone: the next write is dropped without touching the stream.
        assert!(write_to(&gone, "b", &mut Broken).is_ok());
        let mut buf = Vec::new();
        let fresh = AtomicBool::new(false);
        write_to(&fresh, "c", &mut buf).unwrap();
        assert_eq!(buf, b"c");
    }
}
