//! Fork detection for per-process state.
//!
//! A forked child starts as a copy of its parent: a per-process generator or random stream it
//! inherits would hand out the parent's next values a second time. PostgreSQL's process id
//! (`MyProcPid`) only changes on PostgreSQL's own forks, not on a `fork()` made by other code
//! running in a backend (an untrusted procedural language, for instance), and asking the kernel
//! for the real process id is a system call on every use.
//!
//! So the first time a per-process state is made, [`watch`] registers a `pthread_atfork` child
//! handler (once per process; inherited by children). The C library runs it in the child of
//! every `fork()`, and it bumps a process-local counter, the fork generation. A state records
//! [`generation`] when it is made and is made again when the value has changed: one relaxed
//! atomic load per use. The counter only grows, and the child's copy is bumped after the fork,
//! so a child never sees the generation its parent's state recorded.
//!
//! What is not seen: a child made by a raw `clone`/`fork` system call that bypasses the C
//! library's `fork()` (which runs no atfork handlers). `vfork()` and `posix_spawn()` children
//! share or replace the parent's memory at once and never run our code with a copied state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTER: Once = Once::new();

extern "C" fn in_child() {
    // Runs in the child right after fork(), single-threaded: an atomic add is all it does.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Makes sure forks from now on change [`generation`]. Call it before recording the generation
/// for a new state (the slow path); it costs a `Once` check afterwards.
pub fn watch() {
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only touches an atomic. It cannot fail except for
        // lack of memory (ENOMEM), in which case forks would go unnoticed: we refuse to
        // continue rather than hand out values a child could repeat.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
        assert_eq!(rc, 0, "pthread_atfork failed: {rc}");
    });
}

/// The number of forks this process is removed from the process that first called [`watch`].
/// Changes in a child after every `fork()` once [`watch`] has been called.
#[inline]
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// The process a per-process state belongs to: PostgreSQL's process id (which changes on
/// PostgreSQL's own forks) and the fork generation (which changes on every other `fork()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process {
    pub(crate) pid: u32,
    generation: u64,
}

impl Process {
    /// The current process, with forks watched from now on: for a state being made (the slow
    /// path). The handler is registered before the generation it will change is recorded.
    pub fn current(pid: u32) -> Self {
        watch();
        Process {
            pid,
            generation: generation(),
        }
    }

    /// Whether this is still the process with id `pid`: one relaxed atomic load.
    #[inline]
    pub fn is_current(&self, pid: u32) -> bool {
        self.pid == pid && self.generation == generation()
    }
}

/// Test helpers: run a closure in a real forked child and read back the bytes it reports.
#[cfg(test)]
pub(crate) mod testing {
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// Forks; the child runs `child` and sends its `N` bytes back through a pipe, then leaves
    /// with `_exit` whatever happens (it never returns into the test harness). The parent gets
    /// the bytes after the child has exited successfully.
    pub fn in_forked_child<const N: usize>(child: impl FnOnce() -> [u8; N]) -> [u8; N] {
        let mut fds = [0; 2];
        // SAFETY: plain POSIX calls on fds we own; the child only computes, writes and _exits.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0, "pipe");
            let pid = libc::fork();
            assert!(pid >= 0, "fork");
            if pid == 0 {
                libc::close(fds[0]);
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child));
                let code = match result {
                    Ok(bytes) => {
                        let n = libc::write(fds[1], bytes.as_ptr().cast(), N);
                        if n == N as isize {
                            0
                        } else {
                            2
                        }
                    }
                    Err(_) => 1,
                };
                libc::_exit(code);
            }
            libc::close(fds[1]);
            let mut pipe = File::from_raw_fd(fds[0]);
            let mut buf = [0u8; N];
            let read = pipe.read_exact(&mut buf);
            let mut status = 0;
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid, "waitpid");
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "the child failed: status {status:#x}"
            );
            read.expect("the child's bytes");
            buf
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_changes_the_generation_in_the_child_only() {
        watch();
        let before = generation();
        let child = testing::in_forked_child(|| generation().to_be_bytes());
        assert_ne!(
            u64::from_be_bytes(child),
            before,
            "the child must see a fork"
        );
        assert!(u64::from_be_bytes(child) > before);
        assert_eq!(generation(), before, "the parent's generation stays");
    }
}
