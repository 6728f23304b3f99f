//! Random values from the operating system.
//!
//! ObjectId's random field must not be guessable or shared between processes that do not also
//! share the counter, so it comes from the OS (getrandom), never from a seed a user chooses.

pub use getrandom::Error;

/// `N` bytes from the operating system's secure random source.
pub fn os_random<const N: usize>() -> Result<[u8; N], Error> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_differ() {
        let a: [u8; 16] = os_random().unwrap();
        let b: [u8; 16] = os_random().unwrap();
        assert_ne!(a, b);
    }
}

/// Bytes after which the fast generator takes a fresh seed from the OS, so that a state that
/// leaked somehow reveals at most this much output.
const RESEED_AFTER: usize = 1 << 20;

/// A fast userspace CSPRNG (ChaCha12, rand's StdRng) for one process, seeded from the OS. It is
/// seeded again whenever the process id or the fork generation ([`crate::kernel::fork`]) changes,
/// so a forked child never continues its parent's stream, whether PostgreSQL forked it or other
/// code did, and after every RESEED_AFTER bytes. Asking the OS for 8 bytes per UUID costs more
/// than making the rest of the UUID.
#[derive(Default)]
pub struct ProcessRng {
    owner: Option<Owner>,
    used: usize,
}

#[derive(Clone)]
struct Owner {
    process: crate::kernel::fork::Process,
    rng: rand::rngs::StdRng,
}

impl ProcessRng {
    /// Fills `buf` for process `pid`. Once seeded, checking for a fork costs one relaxed atomic
    /// load.
    #[inline]
    pub fn fill(&mut self, pid: u32, buf: &mut [u8]) -> Result<(), Error> {
        use rand::{RngCore, SeedableRng};
        let fresh = match &self.owner {
            Some(o) => !o.process.is_current(pid) || self.used >= RESEED_AFTER,
            None => true,
        };
        if fresh {
            self.owner = Some(Owner {
                process: crate::kernel::fork::Process::current(pid),
                rng: rand::rngs::StdRng::from_seed(os_random()?),
            });
            self.used = 0;
        }
        self.owner
            .as_mut()
            .expect("seeded above")
            .rng
            .fill_bytes(buf);
        self.used += buf.len();
        Ok(())
    }
}

#[cfg(test)]
mod process_rng_tests {
    use super::*;

    #[test]
    fn a_new_process_id_gets_a_new_stream() {
        let mut rng = ProcessRng::default();
        let mut a = [0u8; 32];
        rng.fill(10, &mut a).unwrap();
        // The same generator, cloned as a fork would, in the parent and in the child.
        let mut child = ProcessRng {
            owner: rng.owner.clone(),
            used: rng.used,
        };
        let (mut parent_next, mut child_next) = ([0u8; 32], [0u8; 32]);
        rng.fill(10, &mut parent_next).unwrap();
        child.fill(11, &mut child_next).unwrap();
        assert_ne!(parent_next, child_next, "the child reseeded");
        // Without the new pid it would have continued the parent's stream.
        let mut same = ProcessRng {
            owner: child.owner.clone().map(|mut o| {
                o.process.pid = 10;
                o
            }),
            used: 0,
        };
        let mut x = [0u8; 32];
        let mut y = [0u8; 32];
        same.fill(10, &mut x).unwrap();
        child.fill(11, &mut y).unwrap();
        assert_eq!(
            x, y,
            "a cloned state continues identically: hence the pid check"
        );
    }

    /// Issue 10, item 8: a real fork() whose child keeps the parent's process id as PostgreSQL
    /// sees it must not continue the parent's random stream (uuidv7()/uuidv4() draw from it).
    #[test]
    fn a_raw_fork_reseeds_the_process_rng() {
        const PID: u32 = 4242;
        let mut rng = ProcessRng::default();
        let mut first = [0u8; 32];
        rng.fill(PID, &mut first).unwrap();
        let child = crate::kernel::fork::testing::in_forked_child(|| {
            let mut buf = [0u8; 32];
            rng.fill(PID, &mut buf).unwrap();
            buf
        });
        // The parent draws what a child continuing its stream would have drawn.
        let mut parent = [0u8; 32];
        rng.fill(PID, &mut parent).unwrap();
        assert_ne!(child, parent, "the child reseeded");
    }

    #[test]
    fn reseeds_after_a_while() {
        let mut rng = ProcessRng::default();
        let mut buf = vec![0u8; RESEED_AFTER];
        rng.fill(1, &mut buf).unwrap();
        let before = rng.owner.clone();
        let mut b = [0u8; 8];
        rng.fill(1, &mut b).unwrap();
        assert_eq!(rng.used, 8);
        let mut old = before.unwrap().rng;
        let mut c = [0u8; 8];
        rand::RngCore::fill_bytes(&mut old, &mut c);
        assert_ne!(b, c);
    }
}
