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
