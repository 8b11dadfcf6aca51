//! Reading a child's pipe while watching the child itself: a forked helper that inherited the
//! pipe can hold it open after the child died, so the end of the pipe is not the end of the
//! child. A pidfd (pidfd_open(2), Linux 5.3+) becomes readable when the child ends; one poll(2)
//! waits on both. Used by the supervisor for its workers and by the torch worker for its
//! Python child.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A pidfd for `pid` (our child, not yet reaped), or None where the kernel has none.
pub fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    // SAFETY: a non-negative return is a new fd that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// What a wait on the pipe and the pidfd saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readable {
    /// The pipe has data or reached its end: a read will not block.
    Data,
    /// The child ended and its pipe has nothing to read now.
    Exited,
    /// Neither within the wait (or a signal interrupted it).
    Nothing,
}

/// One poll(2) over `pipe` and `pidfd` for up to `ms` (-1: no limit); data on the pipe comes
/// first. Err: poll itself failed (not EINTR).
pub fn poll(pipe: RawFd, pidfd: Option<&OwnedFd>, ms: i32) -> std::io::Result<Readable> {
    let mut pfds = [
        libc::pollfd {
            fd: pipe,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: pidfd.map_or(-1, |f| f.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds for the duration of the call (fd -1 is ignored by poll).
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), 2, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(Readable::Nothing)
        } else {
            Err(e)
        };
    }
    Ok(if pfds[0].revents != 0 {
        Readable::Data
    } else if pfds[1].revents != 0 {
        Readable::Exited
    } else {
        Readable::Nothing
    })
}
