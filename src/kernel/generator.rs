//! The ObjectId generator: one random value, one counter and one backfill counter, shared by
//! every caller.
//!
//! # `next`: ids for the current time (`gen_objectid()`)
//!
//! The state is one 64-bit word, `seconds << 24 | counter` (56 bits used), the *floor*: the
//! smallest id (read as that number) the generator may hand out next. An id for the clock
//! reading `now` is
//!
//! ```text
//! word  = max(floor, now << 24 | (floor & 0xFFFFFF))
//! floor = word + 1                         (one compare-and-swap)
//! ```
//!
//! `word >= floor` and the new floor is `word + 1`, so every word handed out is strictly greater
//! than every word handed out before it: the words, in the order the compare-and-swap took
//! effect, strictly increase. An id is `seconds (4 bytes, big-endian) | random value (5) |
//! counter (3, big-endian)` with the random value fixed for the generator, so byte order of the
//! ids is the numeric order of their words. Hence, by construction and with no exception, the
//! ids of one generator are unique and strictly increase in generation order; no clock
//! behaviour and no number of ids changes that.
//!
//! What this means for the stamped second:
//!
//! - While the clock is ahead of the floor's second, the id takes the clock's second and the
//!   counter simply continues (it starts at a random value, as MongoDB's does).
//! - When the counter passes 0xFFFFFF, the carry moves the floor to the next second: the
//!   stamped second may run ahead of the clock. It runs ahead by at most one second per
//!   16,777,216 ids made since the stamped second was last the clock's; at any rate below
//!   16,777,216 ids per second that is at most one second, until the clock catches up.
//! - When the clock steps back, the floor keeps the last second used; ids stamp it (moving on
//!   only by such carries) until the clock is past it again.
//! - The last possible word is second u32::MAX (2106-02-07 06:28:15 UTC), counter 0xFFFFFF.
//!   After it the generator refuses ([`Exhausted`]): it never wraps.
//!
//! # `next_at`: ids for a given second (`gen_objectid_at()`)
//!
//! A separate 64-bit counter, the backfill counter, gives the 8 bytes after the seconds. It
//! starts at a random value below 2^63, only goes up, and skips the 2^24 values whose first five
//! bytes are the generator's random value, so a backfill id never equals an id of `next`
//! (those all carry the random value there), and the values whose last five bytes are, for
//! `next_subsecond` (below). The counter refuses rather than wrap: u64::MAX is never used, which
//! leaves at least 2^63 - 2^24 - 2^23 backfill ids per generator (u64::MAX - start values, less
//! the skipped block and one value in 2^40 of the at most 2^63 passed): unique whatever seconds
//! they carry, and ascending in call order within one second. The backfill counter and the
//! other words are independent: backfilling never moves the live ids' second or counter.
//!
//! # `next_subsecond`: ids for the current time, finer than a second (`gen_objectid_subsecond()`)
//!
//! For tables written by several servers at once (Citus nodes, several application servers):
//! there, `next` ids of different generators differ in their random value right after the
//! seconds, so within one second each server's ids land in a key range of their own and a btree
//! index takes several ascending streams, which fill its pages no better than random keys. A
//! sub-second id puts the time first instead:
//!
//! ```text
//! seconds (4 bytes) | tick (3 bytes: the fraction of the second in units of 2^-24 s, ~59.6 ns)
//!                   | random value (5 bytes, the generator's, as in `next`)
//! ```
//!
//! so the ids of every server, read as bytes, follow the clock to within its sync between the
//! servers, and inserts from all of them land at the right edge of the index.
//!
//! A third 64-bit word, `seconds << 24 | tick`, is kept exactly as `next` keeps its floor, with the
//! clock's tick where `next` keeps the counter: `word = max(floor, now)`, `floor = word + 1`. So
//! the sub-second ids of one generator are unique and strictly increase in generation order by
//! construction; a tick is used once, so ids made faster than one per tick (16.7 million per
//! second), or while the clock is behind the floor after a step back, run ahead of the clock by
//! one tick per id, and the stamped second carries as in `next`. The same end (second u32::MAX,
//! tick 0xFFFFFF) applies, with [`Exhausted::LastTick`].
//!
//! Across generators, two sub-second ids are equal only if their generators have the same
//! random value (2^-40 for a pair of generators) *and* the ids have the same second and tick.
//!
//! Within one generator, the three kinds never meet, by construction: a sub-second id whose
//! bytes 4–8 would equal the random value (bytes 4–8 of every `next` id) skips that tick, and the
//! backfill counter skips values whose last five bytes are the random value (bytes 7–11 of every
//! sub-second id), as it skips the block of `next`'s ids.
//!
//! All three words change by compare-and-swap only, which makes the generator lock-free and
//! usable from shared memory by every process of a server at once.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::kernel::fork;
use crate::kernel::objectid::ObjectId;

const COUNTER_BITS: u32 = 24;
const COUNTER_MASK: u64 = (1 << COUNTER_BITS) - 1;
/// The low 40 bits: where a backfill value holds what a sub-second id has in bytes 7–11.
const RANDOM_MASK: u64 = (1 << 40) - 1;
const NANOS_PER_SECOND: u64 = 1_000_000_000;
/// One past the last word: second u32::MAX, counter 0xFFFFFF.
const WORD_END: u64 = 1 << (32 + COUNTER_BITS);

/// The generator has no id left to give: its stamped second would pass u32::MAX
/// (2106-02-07 06:28:15 UTC), or its backfill counter would pass u64::MAX. It stays so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// `next`: after the last counter value of second u32::MAX.
    LastSecond,
    /// `next_at`: after the last backfill value.
    Backfill,
    /// `next_subsecond`: after the last tick of second u32::MAX.
    LastTick,
}

/// The generator's state. `repr(C)` with plain bytes and atomics, so it may be placed in
/// PostgreSQL shared memory and used by many processes without a lock.
#[repr(C)]
pub struct Generator {
    random: [u8; 5],
    /// `seconds << 24 | counter` of the smallest id `next` may hand out; at most WORD_END.
    floor: AtomicU64,
    /// The smallest value `next_at` may use for bytes 4–11; u64::MAX when exhausted.
    backfill: AtomicU64,
    /// `seconds << 24 | tick` of the smallest id `next_subsecond` may hand out; at most WORD_END.
    subsecond: AtomicU64,
}

impl Generator {
    /// What every process that maps the state must agree on: its size, its alignment and each
    /// field's offset. `src/objectid/generate.rs` names the shared-memory segment after it.
    pub const LAYOUT: &'static [usize] = &[
        core::mem::size_of::<Self>(),
        core::mem::align_of::<Self>(),
        core::mem::offset_of!(Self, random),
        core::mem::offset_of!(Self, floor),
        core::mem::offset_of!(Self, backfill),
        core::mem::offset_of!(Self, subsecond),
    ];

    /// A generator whose first id has counter `counter_start` (its low 24 bits) and whose first
    /// backfill id has bytes 4–11 `backfill_start` (or the first value after it that does not
    /// begin with the random value).
    pub fn new(random: [u8; 5], counter_start: u32, backfill_start: u64) -> Self {
        Generator {
            random,
            // Seconds 0: the clock takes over at once.
            floor: AtomicU64::new(u64::from(counter_start) & COUNTER_MASK),
            backfill: AtomicU64::new(backfill_start),
            subsecond: AtomicU64::new(0),
        }
    }

    /// A generator from the OS's random source, as every real generator is made: random value,
    /// counter start, and a backfill start below 2^63 (so at least 2^63 backfill values remain).
    pub fn from_os_random() -> Result<Self, crate::kernel::random::Error> {
        let b: [u8; 16] = crate::kernel::random::os_random()?;
        let random = [b[0], b[1], b[2], b[3], b[4]];
        let counter = u32::from_be_bytes([0, b[5], b[6], b[7]]);
        let backfill = u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]);
        Ok(Generator::new(random, counter, backfill >> 1))
    }

    pub fn random_value(&self) -> [u8; 5] {
        self.random
    }

    /// The random value as the top 40 bits of a backfill value would hold it.
    fn random_prefix(&self) -> u64 {
        let r = self.random;
        u64::from_be_bytes([0, 0, 0, r[0], r[1], r[2], r[3], r[4]])
    }

    /// The next id for the clock reading `now` (Unix seconds): see the module documentation.
    /// Strictly greater than every id this generator handed out before.
    #[inline]
    pub fn next(&self, now: u32) -> Result<ObjectId, Exhausted> {
        // The word handed out for a floor; the floor moves to the word after it. Computed again
        // from the floor fetch_update saw, which gives the same word.
        let word_for =
            |floor: u64| floor.max((u64::from(now) << COUNTER_BITS) | (floor & COUNTER_MASK));
        let floor = self
            .floor
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |floor| {
                let word = word_for(floor);
                (word < WORD_END).then_some(word + 1)
            })
            .map_err(|_| Exhausted::LastSecond)?;
        let word = word_for(floor);
        let seconds = (word >> COUNTER_BITS) as u32;
        let counter = (word & COUNTER_MASK) as u32;
        Ok(ObjectId::from_parts(seconds, self.random, counter))
    }

    /// A fresh id carrying `seconds` instead of the clock, for keys of rows made in the past:
    /// `seconds` and the next backfill value. Unique among this generator's ids of either kind;
    /// leaves `next`'s state alone.
    pub fn next_at(&self, seconds: u32) -> Result<ObjectId, Exhausted> {
        let live = self.random_prefix();
        // u64::MAX itself is never handed out: the state could not move past it.
        let value_for =
            |current: u64| Self::backfill_value(current, live).filter(|&v| v != u64::MAX);
        let current = self
            .backfill
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |current| {
                value_for(current).map(|value| value + 1)
            })
            .map_err(|_| Exhausted::Backfill)?;
        let value = value_for(current).expect("the value fetch_update moved past");
        let mut b = [0u8; 12];
        b[0..4].copy_from_slice(&seconds.to_be_bytes());
        b[4..12].copy_from_slice(&value.to_be_bytes());
        Ok(ObjectId::from_bytes(b))
    }

    /// The first backfill value from `current` on that no id of `next` (random value, then any
    /// counter) or of `next_subsecond` (any tick, then the random value) can have as its bytes
    /// 4–11; None past u64::MAX.
    fn backfill_value(mut current: u64, live: u64) -> Option<u64> {
        loop {
            if current >> COUNTER_BITS == live {
                current = (current | COUNTER_MASK).checked_add(1)?;
            } else if current & RANDOM_MASK == live {
                current = current.checked_add(1)?;
            } else {
                return Some(current);
            }
        }
    }

    /// The next sub-second id for the clock reading `seconds` and `nanos` (0 ≤ nanos < 10^9)
    /// after them: see the module documentation. Strictly greater than every sub-second id this
    /// generator handed out before.
    #[inline]
    pub fn next_subsecond(&self, seconds: u32, nanos: u32) -> Result<ObjectId, Exhausted> {
        debug_assert!(u64::from(nanos) < NANOS_PER_SECOND);
        let tick = (u64::from(nanos) << COUNTER_BITS) / NANOS_PER_SECOND;
        self.next_subsecond_word((u64::from(seconds) << COUNTER_BITS) | tick)
    }

    fn next_subsecond_word(&self, now: u64) -> Result<ObjectId, Exhausted> {
        let r = self.random;
        // Bytes 4–8 of a sub-second id are its tick and the random value's first two bytes;
        // the one tick that would make them the random value, as every `next` id has, is skipped.
        let clash_possible = r[0..2] == r[3..5];
        let clash = self.random_prefix() >> 16;
        let word_for = |floor: u64| {
            let word = floor.max(now);
            if clash_possible && word & COUNTER_MASK == clash {
                word + 1
            } else {
                word
            }
        };
        let floor = self
            .subsecond
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |floor| {
                let word = word_for(floor);
                (word < WORD_END).then_some(word + 1)
            })
            .map_err(|_| Exhausted::LastTick)?;
        let word = word_for(floor);
        let mut b = [0u8; 12];
        b[0..4].copy_from_slice(&((word >> COUNTER_BITS) as u32).to_be_bytes());
        b[4..7].copy_from_slice(&word.to_be_bytes()[5..8]);
        b[7..12].copy_from_slice(&r);
        Ok(ObjectId::from_bytes(b))
    }
}

/// A generator owned by one process: made on first use and made again whenever the process id
/// or the fork generation ([`fork`]) changes, so that a forked child never continues its
/// parent's random value and counters, whether PostgreSQL forked it or other code did.
#[derive(Default)]
pub struct PerProcess {
    owner: Option<(fork::Process, Generator)>,
}

impl PerProcess {
    /// The generator of process `pid`, made with `make` if this process has none yet. Costs a
    /// relaxed atomic load and two comparisons once the generator exists.
    #[inline]
    pub fn get<E>(
        &mut self,
        pid: u32,
        make: impl FnOnce() -> Result<Generator, E>,
    ) -> Result<&Generator, E> {
        match &self.owner {
            Some((process, _)) if process.is_current(pid) => {}
            _ => self.owner = Some((fork::Process::current(pid), make()?)),
        }
        Ok(&self.owner.as_ref().expect("set above").1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const RANDOM: [u8; 5] = [1, 2, 3, 4, 5];
    /// A plausible clock reading (2023-11-14).
    const T: u32 = 1_700_000_000;

    fn word(id: &ObjectId) -> u64 {
        (u64::from(id.timestamp()) << COUNTER_BITS) | u64::from(id.counter())
    }

    #[test]
    fn lays_out_fields_and_counts_from_the_start_value() {
        let g = Generator::new(RANDOM, 0x00ab_cdef, 0);
        let a = g.next(0x6500_0000).unwrap();
        assert_eq!(
            a.as_bytes(),
            &[0x65, 0, 0, 0, 1, 2, 3, 4, 5, 0xab, 0xcd, 0xef]
        );
        let b = g.next(0x6500_0000).unwrap();
        assert_eq!(b.counter(), 0x00ab_cdf0);
        assert!(a < b);
    }

    #[test]
    fn counter_wrap_carries_into_the_next_second() {
        let g = Generator::new(RANDOM, 0x00ff_fffe, 0);
        let ids: Vec<ObjectId> = (0..4).map(|_| g.next(100).unwrap()).collect();
        let fields: Vec<(u32, u32)> = ids.iter().map(|x| (x.timestamp(), x.counter())).collect();
        assert_eq!(
            fields,
            [(100, 0xff_fffe), (100, 0xff_ffff), (101, 0), (101, 1)],
            "the wrap moves the stamped second on, ahead of the frozen clock"
        );
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        // The clock catching up changes nothing; passing the stamp takes over again.
        assert_eq!(
            (
                g.next(101).unwrap().timestamp(),
                g.next(103).unwrap().timestamp()
            ),
            (101, 103)
        );
    }

    #[test]
    fn wrap_across_a_second_keeps_order() {
        let g = Generator::new(RANDOM, 0x00ff_ffff, 0);
        let a = g.next(100).unwrap();
        let b = g.next(101).unwrap();
        assert_eq!((a.counter(), b.counter()), (0xff_ffff, 0));
        assert_eq!(b.timestamp(), 101);
        assert!(a < b);
    }

    #[test]
    fn clock_stepping_back_keeps_the_last_second() {
        let g = Generator::new(RANDOM, 7, 0);
        let ids = [1_000, 990, 995, 1_001].map(|now| g.next(now).unwrap());
        assert_eq!(ids.map(|x| x.timestamp()), [1_000, 1_000, 1_000, 1_001]);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn extreme_seconds() {
        let g = Generator::new(RANDOM, 0, 0);
        assert_eq!(g.next(0).unwrap().timestamp(), 0);
        assert_eq!(g.next(u32::MAX).unwrap().timestamp(), u32::MAX);
        assert_eq!(g.next(5).unwrap().timestamp(), u32::MAX, "never goes back");
    }

    /// Issue 10, item 5: the clock frozen on one second for 50 million ids, starting just below
    /// the counter's wrap. Ids must be exactly consecutive words, so unique and ascending.
    #[test]
    fn frozen_clock_never_repeats_an_id_in_50_million() {
        const N: u64 = 50_000_000;
        const START: u32 = 0x00ff_fff0;
        let g = Generator::new(RANDOM, START, 0);
        let first = (u64::from(T) << COUNTER_BITS) | u64::from(START);
        let mut previous = g.next(T).unwrap();
        assert_eq!(word(&previous), first);
        for i in 1..N {
            let id = g.next(T).unwrap();
            // Strictly greater than the one before: all unique, with no exception at the wraps.
            assert!(previous < id, "id {i}: {previous} then {id}");
            previous = id;
        }
        assert_eq!(
            word(&previous),
            first + N - 1,
            "no word skipped or repeated"
        );
        assert_eq!(
            previous.timestamp(),
            T + 3,
            "three carries: the stamp ran three seconds ahead of the frozen clock"
        );
        assert_eq!(previous.random_value(), RANDOM);
    }

    /// Issue 10, item 5: an NTP step back of one hour while ids are made at 4,700 per second
    /// (16.9 million in the hour, more than a counter cycle). No id may repeat or descend; the
    /// stamp stays at the last second used, moves on only by a carry, and follows the clock
    /// again once the clock has passed it.
    #[test]
    fn clock_stepping_back_an_hour_never_repeats_an_id() {
        const PER_SECOND: u32 = 4_700;
        let g = Generator::new(RANDOM, 0x0000_1000, 0);
        let mut previous = g.next(T).unwrap();
        let mut carries = 0;
        for now in (T - 3_600)..=(T + 2) {
            for _ in 0..PER_SECOND {
                let id = g.next(now).unwrap();
                assert!(previous < id, "clock {now}: {previous} then {id}");
                let stamp = id.timestamp();
                assert!(stamp >= T, "the stamp never goes back");
                assert!(
                    stamp <= now.max(T) + 1,
                    "clock {now}: stamp {stamp} ahead by more than the one carry"
                );
                if stamp > now.max(T) {
                    carries = 1;
                }
                previous = id;
            }
        }
        assert_eq!(
            carries, 1,
            "a counter cycle passed while the clock was behind"
        );
        assert_eq!(previous.timestamp(), T + 2, "back on the clock");
    }

    #[test]
    fn refuses_after_the_last_second_instead_of_wrapping() {
        let g = Generator::new(RANDOM, 0x00ff_fffe, 0);
        assert_eq!(g.next(u32::MAX).unwrap().counter(), 0xff_fffe);
        let last = g.next(u32::MAX).unwrap();
        assert_eq!((last.timestamp(), last.counter()), (u32::MAX, 0xff_ffff));
        assert_eq!(g.next(u32::MAX), Err(Exhausted::LastSecond));
        assert_eq!(
            g.next(5),
            Err(Exhausted::LastSecond),
            "and stays so, whatever the clock"
        );
        assert!(g.next_at(5).is_ok(), "backfilling has its own counter");
    }

    #[test]
    fn threads_get_unique_ids_in_generation_order() {
        // Just below the wrap, with a frozen clock: the wrap is no exception any more.
        const START: u32 = 0x00ff_ff00;
        let g = Arc::new(Generator::new(RANDOM, START, 0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = Arc::clone(&g);
                std::thread::spawn(move || {
                    (0..20_000).map(|_| g.next(42).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<ObjectId> = Vec::new();
        for h in handles {
            let ids = h.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "per thread ascending");
            all.extend(ids);
        }
        all.sort();
        let first = (42u64 << COUNTER_BITS) | u64::from(START);
        assert!(
            all.iter()
                .enumerate()
                .all(|(i, id)| word(id) == first + i as u64),
            "exactly the consecutive words: no duplicates, none skipped"
        );
    }

    /// Issue 10, item 6: more than a counter cycle of backfill ids for one second.
    #[test]
    fn next_at_for_one_second_never_repeats_past_2_pow_24_calls() {
        let g = Generator::new(RANDOM, 0x00ff_fff0, 0x0123_4567_89ab_cdef);
        let mut previous = g.next_at(T).unwrap();
        for i in 1..(1u32 << 24) + 16 {
            let id = g.next_at(T).unwrap();
            assert_eq!(id.timestamp(), T);
            assert!(previous < id, "call {i}: {previous} then {id}");
            previous = id;
        }
    }

    /// Issue 10, item 6: backfill ids never take the 8 bytes a live id of the same generator
    /// could have (the random value then any counter), so they cannot collide with live ids of
    /// a busy second, wrapped counter or not.
    #[test]
    fn next_at_never_equals_a_live_id() {
        let prefix = u64::from_be_bytes([0, 0, 0, 1, 2, 3, 4, 5]);
        let block = prefix << COUNTER_BITS;
        let g = Generator::new(RANDOM, 0, block - 2);
        let tail = |id: ObjectId| u64::from_be_bytes(id.as_bytes()[4..12].try_into().unwrap());
        let values: Vec<u64> = (0..4).map(|_| tail(g.next_at(T).unwrap())).collect();
        assert_eq!(
            values,
            [
                block - 2,
                block - 1,
                block + (1 << 24),
                block + (1 << 24) + 1
            ],
            "the block of the live random value is skipped"
        );
        // Starting inside the block skips the rest of it.
        let g = Generator::new(RANDOM, 0, block + 77);
        assert_eq!(tail(g.next_at(T).unwrap()), block + (1 << 24));
        assert_ne!(g.next_at(T).unwrap().random_value(), RANDOM);
    }

    #[test]
    fn next_at_leaves_the_live_state_alone() {
        let g = Generator::new(RANDOM, 10, 0);
        let a = g.next(2_000).unwrap();
        let old = g.next_at(1_000).unwrap();
        let b = g.next(1_500).unwrap();
        assert_eq!(old.timestamp(), 1_000);
        assert_eq!(
            [a.counter(), b.counter()],
            [10, 11],
            "the live counter moved on by one"
        );
        assert_eq!(b.timestamp(), 2_000, "the live second did not move back");
        assert_eq!(g.next_at(3_000).unwrap().timestamp(), 3_000);
        assert_eq!(g.next(1_500).unwrap().timestamp(), 2_000, "nor forward");
    }

    #[test]
    fn next_at_refuses_at_the_end_of_its_counter() {
        let g = Generator::new(RANDOM, 0, u64::MAX - 2);
        assert!(g.next_at(1).is_ok() && g.next_at(1).is_ok());
        assert_eq!(g.next_at(1), Err(Exhausted::Backfill));
        assert_eq!(g.next_at(1), Err(Exhausted::Backfill), "and stays so");
        // The live random value's block at the very top: skipping it is the end too.
        let g = Generator::new([0xff; 5], 0, u64::MAX - (1 << 24));
        assert!(g.next_at(1).is_ok());
        assert_eq!(g.next_at(1), Err(Exhausted::Backfill));
        assert!(g.next(1).is_ok(), "the live ids go on");
    }

    #[test]
    fn next_at_is_unique_across_threads() {
        let g = Arc::new(Generator::new(RANDOM, 0, 1 << 40));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = Arc::clone(&g);
                std::thread::spawn(move || {
                    (0..20_000)
                        .map(|_| g.next_at(7).unwrap())
                        .collect::<Vec<_>>()
                })
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
    fn os_random_backfill_starts_below_2_pow_63() {
        for _ in 0..64 {
            let id = Generator::from_os_random().unwrap().next_at(0).unwrap();
            assert!(id.as_bytes()[4] < 0x80, "{id}");
        }
    }

    #[test]
    fn a_new_process_id_gets_its_own_generator() {
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

    /// Issue 10, item 8: a real fork() whose child keeps the parent's process id as PostgreSQL
    /// sees it (MyProcPid, which only PostgreSQL's own forks update) must not continue the
    /// parent's generator.
    #[test]
    fn a_raw_fork_gets_its_own_generator() {
        const PID: u32 = 4242;
        let mut slot = PerProcess::default();
        let g = slot.get(PID, Generator::from_os_random).unwrap();
        let parent = g.random_value();
        g.next(T).unwrap();
        let child = crate::kernel::fork::testing::in_forked_child(|| {
            let g = slot.get(PID, Generator::from_os_random).unwrap();
            *g.next(T).unwrap().as_bytes()
        });
        assert_ne!(
            ObjectId::from_bytes(child).random_value(),
            parent,
            "the child made its own generator"
        );
        let again = slot
            .get(PID, || -> Result<Generator, ()> {
                panic!("the parent must keep its generator")
            })
            .unwrap();
        assert_eq!(again.random_value(), parent);
    }

    fn tick(id: &ObjectId) -> u32 {
        let b = id.as_bytes();
        u32::from_be_bytes([0, b[4], b[5], b[6]])
    }

    #[test]
    fn subsecond_lays_out_seconds_tick_and_random_value() {
        let g = Generator::new(RANDOM, 0, 0);
        let a = g.next_subsecond(0x6500_0000, 500_000_000).unwrap();
        assert_eq!(
            a.as_bytes(),
            &[0x65, 0, 0, 0, 0x80, 0, 0, 1, 2, 3, 4, 5],
            "half a second is tick 0x800000"
        );
        assert_eq!(
            a.timestamp(),
            0x6500_0000,
            "drivers read the seconds as usual"
        );
        // The last nanosecond of a second is its last tick.
        let b = g.next_subsecond(0x6500_0000, 999_999_999).unwrap();
        assert_eq!(tick(&b), 0xff_ffff);
        assert!(a < b);
    }

    #[test]
    fn subsecond_ids_of_different_generators_follow_the_clock() {
        // The point of the mode: across generators, byte order is time order to within a tick,
        // whatever the random values.
        let high = Generator::new([0xff; 5], 0, 0);
        let low = Generator::new([0; 5], 0, 0);
        let mut ids = Vec::new();
        for (i, nanos) in (0..1_000u32).map(|i| (i, i * 997_001)) {
            let g = if i % 2 == 0 { &high } else { &low };
            ids.push(g.next_subsecond(T, nanos).unwrap());
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn subsecond_same_tick_takes_the_next_and_carries_into_the_next_second() {
        let g = Generator::new(RANDOM, 0, 0);
        let ids: Vec<ObjectId> = (0..3)
            .map(|_| g.next_subsecond(100, 999_999_990).unwrap())
            .collect();
        let fields: Vec<(u32, u32)> = ids.iter().map(|x| (x.timestamp(), tick(x))).collect();
        assert_eq!(
            fields,
            [(100, 0xff_ffff), (101, 0), (101, 1)],
            "one tick per id, the stamp runs ahead of the frozen clock"
        );
        // The clock passing the stamp takes over again.
        assert_eq!(g.next_subsecond(101, 500_000_000).unwrap().timestamp(), 101);
        assert_eq!(tick(&g.next_subsecond(102, 0).unwrap()), 0);
    }

    #[test]
    fn subsecond_clock_stepping_back_keeps_ascending() {
        let g = Generator::new(RANDOM, 0, 0);
        let readings = [
            (1_000, 5),
            (990, 7),
            (999, 999_999_999),
            (1_000, 4),
            (1_001, 0),
        ];
        let ids = readings.map(|(s, ns)| g.next_subsecond(s, ns).unwrap());
        assert_eq!(
            ids.map(|x| x.timestamp()),
            [1_000, 1_000, 1_000, 1_000, 1_001]
        );
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
    }

    /// A frozen clock for more than a second's worth of ticks: exactly consecutive words.
    #[test]
    fn subsecond_frozen_clock_never_repeats_an_id_in_20_million() {
        const N: u64 = 20_000_000;
        let g = Generator::new(RANDOM, 0, 0);
        let word =
            |id: &ObjectId| (u64::from(id.timestamp()) << COUNTER_BITS) | u64::from(tick(id));
        let mut previous = g.next_subsecond(T, 0).unwrap();
        let first = word(&previous);
        for i in 1..N {
            let id = g.next_subsecond(T, 0).unwrap();
            assert!(previous < id, "id {i}: {previous} then {id}");
            previous = id;
        }
        assert_eq!(
            word(&previous),
            first + N - 1,
            "no tick skipped or repeated"
        );
        assert_eq!(previous.timestamp(), T + 1);
    }

    #[test]
    fn subsecond_refuses_after_the_last_tick() {
        let g = Generator::new(RANDOM, 0, 0);
        let last = g.next_subsecond(u32::MAX, 999_999_999).unwrap();
        assert_eq!((last.timestamp(), tick(&last)), (u32::MAX, 0xff_ffff));
        assert_eq!(g.next_subsecond(u32::MAX, 0), Err(Exhausted::LastTick));
        assert_eq!(
            g.next_subsecond(5, 0),
            Err(Exhausted::LastTick),
            "and stays so"
        );
        assert!(
            g.next(5).is_ok() && g.next_at(5).is_ok(),
            "the other kinds go on"
        );
    }

    /// A random value whose first two bytes repeat as its last two makes one tick of every
    /// second able to equal a `next` id; that tick is skipped.
    #[test]
    fn subsecond_never_equals_a_live_id() {
        let random = [0xaa, 0xbb, 0xcc, 0xaa, 0xbb];
        let g = Generator::new(random, 0x00cc_0000, 0);
        let clash = 0x00aa_bbcc_u64;
        let before = g
            .next_subsecond_word((u64::from(T) << COUNTER_BITS) | (clash - 1))
            .unwrap();
        let after = g
            .next_subsecond_word((u64::from(T) << COUNTER_BITS) | clash)
            .unwrap();
        assert_eq!(
            (tick(&before), tick(&after)),
            (0xaa_bbcb, 0xaa_bbcd),
            "tick 0xaabbcc skipped"
        );
        // What the skipped tick would have been: the bytes of the live id with counter 0xccaabb.
        let live = ObjectId::from_parts(T, random, 0x00cc_aabb);
        let mut skipped = *after.as_bytes();
        skipped[4..7].copy_from_slice(&[0xaa, 0xbb, 0xcc]);
        assert_eq!(&skipped, live.as_bytes(), "the skipped tick is the clash");
        // Any other random value cannot clash at all: no tick is skipped.
        let g = Generator::new(RANDOM, 0, 0);
        let a = g.next_subsecond_word(clash).unwrap();
        let b = g.next_subsecond_word(clash).unwrap();
        assert_eq!((tick(&a), tick(&b)), (0xaa_bbcc, 0xaa_bbcd));
    }

    /// Backfill values whose last five bytes are the random value (bytes 7–11 of every
    /// sub-second id) are skipped, so a backfill id never equals a sub-second id.
    #[test]
    fn next_at_never_equals_a_subsecond_id() {
        let live = u64::from_be_bytes([0, 0, 0, 1, 2, 3, 4, 5]);
        let start = (7 << 40) | live;
        let g = Generator::new(RANDOM, 0, start - 1);
        let tail = |id: ObjectId| u64::from_be_bytes(id.as_bytes()[4..12].try_into().unwrap());
        let values: Vec<u64> = (0..3).map(|_| tail(g.next_at(T).unwrap())).collect();
        assert_eq!(values, [start - 1, start + 1, start + 2]);
        // Both skips in a row: the live block ends where a sub-second tail begins.
        let block_end = (live << COUNTER_BITS) | COUNTER_MASK;
        let after_block = block_end + 1;
        assert_ne!(after_block & RANDOM_MASK, live);
        assert_eq!(
            Generator::backfill_value(live << COUNTER_BITS, live),
            Some(after_block)
        );
        let both = 0x0102_0304_0500_0000_u64; // top 40 bits are the random value
        assert_eq!(
            Generator::backfill_value(both, live),
            Some(both + (1 << 24))
        );
        assert_eq!(
            Generator::backfill_value(u64::MAX - (1 << 24) + 1, 0xff_ffff_ffff),
            None
        );
    }

    #[test]
    fn subsecond_is_unique_and_ordered_across_threads() {
        let g = Arc::new(Generator::new(RANDOM, 0, 0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = Arc::clone(&g);
                std::thread::spawn(move || {
                    (0..20_000u32)
                        .map(|i| g.next_subsecond(T, i % 1_000).unwrap())
                        .collect::<Vec<_>>()
                })
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
    fn os_random_generators_differ() {
        let a = Generator::from_os_random().unwrap();
        let b = Generator::from_os_random().unwrap();
        assert_ne!(a.random_value(), b.random_value());
    }
}
