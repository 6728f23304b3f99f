//! A rekey batch's keys and their new keys, for the lookup its rewrite makes for every row it
//! changes (`objectid_internal.rekey_new_key`): one binary search in the keys sorted once, where a
//! lookup in the mapping table's index per row and column cost about a tenth of the batch on a
//! table with two rewritten columns (a self-reference).

use std::fmt;

/// A key of 16 bytes (a uuid), ordered as PostgreSQL's uuid btree orders them (byte by byte).
pub type Key = [u8; 16];

/// Why the keys and new keys of a batch do not make a mapping.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyMapError {
    /// The two lists are not of one length.
    Lengths { keys: usize, new_keys: usize },
    /// A key appears twice: it would have two new keys.
    Duplicate(Key),
    /// No memory for a mapping of this many keys (an error to report, where Rust's allocator
    /// would abort the process).
    OutOfMemory { keys: usize },
}

impl fmt::Display for KeyMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyMapError::Lengths { keys, new_keys } => {
                write!(f, "{keys} keys but {new_keys} new keys")
            }
            KeyMapError::Duplicate(key) => write!(f, "key {} appears twice", hyphenated(key)),
            KeyMapError::OutOfMemory { keys } => {
                write!(f, "no memory for a mapping of {keys} keys")
            }
        }
    }
}

/// A uuid written as PostgreSQL writes one.
pub fn hyphenated(key: &Key) -> String {
    let hex = hex::encode(key);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Each key with its new key, sorted by key.
#[derive(Debug)]
pub struct KeyMap {
    pairs: Vec<(Key, Key)>,
}

impl KeyMap {
    /// The mapping of `keys[i]` to `new_keys[i]`; the keys need not come sorted (a batch's do).
    pub fn new(keys: Vec<Key>, new_keys: Vec<Key>) -> Result<Self, KeyMapError> {
        if keys.len() != new_keys.len() {
            return Err(KeyMapError::Lengths {
                keys: keys.len(),
                new_keys: new_keys.len(),
            });
        }
        let mut pairs: Vec<(Key, Key)> = Vec::new();
        pairs
            .try_reserve_exact(keys.len())
            .map_err(|_| KeyMapError::OutOfMemory { keys: keys.len() })?;
        pairs.extend(keys.into_iter().zip(new_keys));
        // Sorted input, the batch's case, is one linear pass.
        pairs.sort_unstable_by_key(|p| p.0);
        if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(KeyMapError::Duplicate(w[0].0));
        }
        Ok(KeyMap { pairs })
    }

    /// The new key of `key`, or `key` itself when it is not one of the keys.
    pub fn new_key(&self, key: &Key) -> Key {
        match self.pairs.binary_search_by(|p| p.0.cmp(key)) {
            Ok(i) => self.pairs[i].1,
            Err(_) => *key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(b: u8) -> Key {
        let mut key = [0u8; 16];
        key[0] = b;
        key[15] = b.wrapping_mul(7);
        key
    }

    #[test]
    fn maps_each_key_and_passes_others_through() {
        let map = KeyMap::new(vec![k(9), k(1), k(5)], vec![k(90), k(10), k(50)]).unwrap();
        assert_eq!(map.new_key(&k(1)), k(10));
        assert_eq!(map.new_key(&k(5)), k(50));
        assert_eq!(map.new_key(&k(9)), k(90));
        for other in [0u8, 2, 6, 10, 255] {
            assert_eq!(map.new_key(&k(other)), k(other));
        }
    }

    #[test]
    fn orders_keys_bytewise_as_uuid_btree_does() {
        // 0x80 sorts after 0x7f: no sign in the comparison.
        let mut high = [0u8; 16];
        high[0] = 0x80;
        let mut low = [0xffu8; 16];
        low[0] = 0x7f;
        let map = KeyMap::new(vec![high, low], vec![k(1), k(2)]).unwrap();
        assert_eq!(map.new_key(&high), k(1));
        assert_eq!(map.new_key(&low), k(2));
    }

    #[test]
    fn empty_maps_nothing() {
        let map = KeyMap::new(vec![], vec![]).unwrap();
        assert_eq!(map.new_key(&k(3)), k(3));
    }

    #[test]
    fn refuses_lists_of_two_lengths() {
        assert_eq!(
            KeyMap::new(vec![k(1), k(2)], vec![k(3)]).unwrap_err(),
            KeyMapError::Lengths {
                keys: 2,
                new_keys: 1
            }
        );
    }

    #[test]
    fn refuses_a_key_twice() {
        let err = KeyMap::new(vec![k(4), k(2), k(4)], vec![k(1), k(2), k(3)]).unwrap_err();
        assert_eq!(err, KeyMapError::Duplicate(k(4)));
        assert_eq!(
            err.to_string(),
            "key 04000000-0000-0000-0000-00000000001c appears twice"
        );
    }

    #[test]
    fn reports_a_mapping_too_large_for_memory() {
        assert_eq!(
            KeyMapError::OutOfMemory { keys: 3 }.to_string(),
            "no memory for a mapping of 3 keys"
        );
    }

    #[test]
    fn agrees_with_a_linear_search() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut keys = Vec::new();
        while keys.len() < 500 {
            let mut key = [0u8; 16];
            key[..8].copy_from_slice(&next().to_be_bytes());
            key[8..].copy_from_slice(&(next() % 3).to_be_bytes());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let new_keys: Vec<Key> = keys
            .iter()
            .map(|key| {
                let mut n = *key;
                n[15] ^= 0x55;
                n
            })
            .collect();
        let map = KeyMap::new(keys.clone(), new_keys.clone()).unwrap();
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(map.new_key(key), new_keys[i]);
            let mut near = *key;
            near[15] ^= 1;
            let linear = keys
                .iter()
                .position(|x| *x == near)
                .map_or(near, |j| new_keys[j]);
            assert_eq!(map.new_key(&near), linear);
        }
    }
}
