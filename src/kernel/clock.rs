//! The wall clock, as ObjectId's 32-bit unsigned seconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current Unix time in whole seconds, held to the range an ObjectId can carry: a clock
/// before 1970 reads as 0, one past 2106-02-07 06:28:15 UTC as u32::MAX.
pub fn unix_seconds() -> u32 {
    unix_seconds_and_nanos().0
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_plausible_time() {
        // Later than 2024-01-01, and within the 32-bit range for decades to come.
        assert!(super::unix_seconds() > 1_704_067_200);
    }
}

/// The current Unix time in nanoseconds (0 for a clock before 1970).
pub fn unix_nanos() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod nanos_tests {
    #[test]
    fn nanos_agree_with_seconds() {
        let s = i64::from(super::unix_seconds());
        let ns = super::unix_nanos();
        assert!((ns / 1_000_000_000 - s).abs() <= 1);
    }
}

/// The current Unix time as whole seconds and the nanoseconds after them, held to the range an
/// ObjectId can carry as `unix_seconds` does: before 1970 reads as (0, 0), past 2106-02-07
/// 06:28:15 UTC as its last nanosecond.
pub fn unix_seconds_and_nanos() -> (u32, u32) {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => match u32::try_from(d.as_secs()) {
            Ok(s) => (s, d.subsec_nanos()),
            Err(_) => (u32::MAX, 999_999_999),
        },
        Err(_) => (0, 0),
    }
}

#[cfg(test)]
mod seconds_and_nanos_tests {
    #[test]
    fn agrees_with_seconds() {
        let (s, ns) = super::unix_seconds_and_nanos();
        assert!(ns < 1_000_000_000);
        assert!(super::unix_seconds().abs_diff(s) <= 1);
    }
}
