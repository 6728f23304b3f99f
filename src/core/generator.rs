//! The ObjectId generator: one random value and one counter, shared by every caller.
//!
//! All state sits in a single 64-bit word, `seconds << 24 | counter` of the last id handed out,
//! changed by compare-and-swap. That makes the generator lock-free and usable from shared memory
//! by every process of a server at once, and it makes "generation order" well defined: the order
//! in which the word was swapped. Within one second the counter then rises with generation order,
//! so ids sort in the order they were made; across seconds the timestamp rises. The one exception
//! is the counter's wrap from 0xFFFFFF to 0, which only happens after 16,777,216 ids and puts the
//! ids after it below those before it if both fall in the same second.
//!
//! When the wall clock steps back, the generator keeps the last second it used: ids never go
//! backwards because of the clock.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::objectid::ObjectId;

const COUNTER_BITS: u32 = 24;
const COUNTER_MASK: u64 = (1 << COUNTER_BITS) - 1;

/// The generator's state. `repr(C)` with plain bytes and one atomic, so it may be placed in
/// PostgreSQL shared memory and used by many processes without a lock.
#[repr(C)]
pub struct Generator {
    random: [u8; 5],
    last: AtomicU64,
}

impl Generator {
    /// A generator whose first id has counter `counter_start` (its low 24 bits).
    pub fn new(random: [u8; 5], counter_start: u32) -> Self {
        Generator {
            random,
            // The word holds the last counter used; seconds 0 lets the clock take over at once.
            last: AtomicU64::new(u64::from(counter_start).wrapping_sub(1) & COUNTER_MASK),
        }
    }

    /// A generator from the OS's random source, as every real generator is made.
    pub fn from_os_random() -> Result<Self, crate::core::random::Error> {
        let bytes: [u8; 8] = crate::core::random::os_random()?;
        let random = [bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]];
        let counter = u32::from_be_bytes([0, bytes[5], bytes[6], bytes[7]]);
        Ok(Generator::new(random, counter))
    }

    pub fn random_value(&self) -> [u8; 5] {
        self.random
    }

    /// The next id, stamped with `now` (Unix seconds) or with the last second used if the clock
    /// has gone back since.
    pub fn next(&self, now: u32) -> ObjectId {
        let mut current = self.last.load(Ordering::Relaxed);
        loop {
            let seconds = now.max((current >> COUNTER_BITS) as u32);
            let counter = current.wrapping_add(1) & COUNTER_MASK;
            let next = (u64::from(seconds) << COUNTER_BITS) | counter;
            match self.last.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return ObjectId::from_parts(seconds, self.random, counter as u32),
                Err(actual) => current = actual,
            }
        }
    }

    /// A fresh id carrying `seconds` instead of the clock, for keys of rows made in the past.
    /// It takes the next counter value, so it is unique among this generator's ids, but it does
    /// not move the generator's last second: backfilling old rows leaves new ids unaffected.
    pub fn next_at(&self, seconds: u32) -> ObjectId {
        let previous = self
            .last
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |current| {
                Some((current & !COUNTER_MASK) | (current.wrapping_add(1) & COUNTER_MASK))
            })
            .expect("the update always succeeds");
        let counter = previous.wrapping_add(1) & COUNTER_MASK;
        ObjectId::from_parts(seconds, self.random, counter as u32)
    }
}

/// A generator owned by one process: made on first use and made again whenever the process id
/// changes, so that a forked child never continues its parent's random value and counter.
#[derive(Default)]
pub struct PerProcess {
    owner: Option<(u32, Generator)>,
}

impl PerProcess {
    /// The generator of process `pid`, made with `make` if this process has none yet.
    pub fn get<E>(
        &mut self,
        pid: u32,
        make: impl FnOnce() -> Result<Generator, E>,
    ) -> Result<&Generator, E> {
        match &self.owner {
            Some((owner, _)) if *owner == pid => {}
            _ => self.owner = Some((pid, make()?)),
        }
        Ok(&self.owner.as_ref().expect("set above").1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const RANDOM: [u8; 5] = [1, 2, 3, 4, 5];

    #[test]
    fn lays_out_fields_and_counts_from_the_start_value() {
        let g = Generator::new(RANDOM, 0x00ab_cdef);
        let a = g.next(0x6500_0000);
        assert_eq!(
            a.as_bytes(),
            &[0x65, 0, 0, 0, 1, 2, 3, 4, 5, 0xab, 0xcd, 0xef]
        );
        let b = g.next(0x6500_0000);
        assert_eq!(b.counter(), 0x00ab_cdf0);
        assert!(a < b);
    }

    #[test]
    fn counter_wraps_to_zero() {
        let g = Generator::new(RANDOM, 0x00ff_fffe);
        let counters: Vec<u32> = (0..4).map(|_| g.next(100).counter()).collect();
        assert_eq!(counters, vec![0xff_fffe, 0xff_ffff, 0, 1]);
        // Within one second the wrap is the one place where order breaks.
        let ids: Vec<ObjectId> = (0..2).map(|_| g.next(100)).collect();
        assert!(ids[0] < ids[1]);
    }

    #[test]
    fn wrap_across_a_second_keeps_order() {
        let g = Generator::new(RANDOM, 0x00ff_ffff);
        let a = g.next(100);
        let b = g.next(101);
        assert_eq!((a.counter(), b.counter()), (0xff_ffff, 0));
        assert!(a < b, "the later second sorts first, whatever the counter");
    }

    #[test]
    fn clock_stepping_back_keeps_the_last_second() {
        let g = Generator::new(RANDOM, 7);
        let a = g.next(1_000);
        let b = g.next(990);
        let c = g.next(995);
        let d = g.next(1_001);
        assert_eq!(
            [a, b, c, d].map(|x| x.timestamp()),
            [1_000, 1_000, 1_000, 1_001]
        );
        assert!(a < b && b < c && c < d);
    }

    #[test]
    fn extreme_seconds() {
        let g = Generator::new(RANDOM, 0);
        assert_eq!(g.next(0).timestamp(), 0);
        assert_eq!(g.next(u32::MAX).timestamp(), u32::MAX);
        assert_eq!(g.next(5).timestamp(), u32::MAX, "never goes back");
    }

    #[test]
    fn next_at_uses_the_given_time_and_shares_the_counter() {
        let g = Generator::new(RANDOM, 10);
        let a = g.next(2_000);
        let old = g.next_at(1_000);
        let b = g.next(1_500);
        assert_eq!(old.timestamp(), 1_000);
        assert_eq!([a.counter(), old.counter(), b.counter()], [10, 11, 12]);
        // The backfill did not move the generator's last second, and did not go forward either.
        assert_eq!(b.timestamp(), 2_000);
        assert_eq!(g.next_at(3_000).timestamp(), 3_000);
        assert_eq!(g.next(1_500).timestamp(), 2_000);
    }

    #[test]
    fn threads_get_unique_ids_in_generation_order() {
        // Far from the wrap, which is the one documented exception to ordering.
        let g = Arc::new(Generator::new(RANDOM, 0x0010_0000));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = Arc::clone(&g);
                std::thread::spawn(move || (0..20_000).map(|_| g.next(42)).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<ObjectId> = Vec::new();
        for h in handles {
            let ids = h.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "per thread ascending");
            all.extend(ids);
        }
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "no duplicates");
    }

    #[test]
    fn a_forked_child_gets_its_own_generator() {
        let mut slot = PerProcess::default();
        let parent = slot
            .get(100, Generator::from_os_random)
            .unwrap()
            .random_value();
        let again = slot
            .get(100, || -> Result<Generator, ()> {
                panic!("must not remake")
            })
            .unwrap()
            .random_value();
        assert_eq!(parent, again);
        let child = slot
            .get(101, Generator::from_os_random)
            .unwrap()
            .random_value();
        assert_ne!(parent, child, "a new process id gets a new random value");
    }

    #[test]
    fn os_random_generators_differ() {
        let a = Generator::from_os_random().unwrap();
        let b = Generator::from_os_random().unwrap();
        assert_ne!(a.random_value(), b.random_value());
    }
}
