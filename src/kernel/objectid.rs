//! The 12-byte ObjectId value: layout, text and byte forms, ordering.
//!
//! Layout (BSON type 0x07 payload): bytes 0–3 Unix seconds big-endian unsigned, bytes 4–8 a
//! per-generator random value, bytes 9–11 a big-endian counter. Values compare byte by byte,
//! which makes their order the order of creation as far as the timestamp goes.

use std::fmt;
use std::str::FromStr;

/// Number of bytes in an ObjectId.
pub const LEN: usize = 12;
/// Number of characters in its text form.
pub const HEX_LEN: usize = 2 * LEN;

/// A 12-byte ObjectId. `repr(transparent)` over a byte array so that a pointer to 12 bytes stored
/// by PostgreSQL can be viewed as an `ObjectId` without copying (alignment 1, no padding).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectId([u8; LEN]);

/// Why a text or byte form was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not exactly 24 characters (the length found, in bytes).
    Length(usize),
    /// A character that is not a hexadecimal digit, at this byte offset.
    Digit(usize),
}

/// A byte form that is not 12 bytes long (the length found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthError(pub usize);

impl ObjectId {
    pub const MIN: ObjectId = ObjectId([0; LEN]);
    pub const MAX: ObjectId = ObjectId([0xff; LEN]);

    pub const fn from_bytes(bytes: [u8; LEN]) -> Self {
        ObjectId(bytes)
    }

    pub const fn as_bytes(&self) -> &[u8; LEN] {
        &self.0
    }

    /// Assembles an id from its three fields. Only the low 24 bits of `counter` are kept, which
    /// is how the counter wraps from 0xFFFFFF to 0.
    pub fn from_parts(seconds: u32, random: [u8; 5], counter: u32) -> Self {
        let mut b = [0u8; LEN];
        b[0..4].copy_from_slice(&seconds.to_be_bytes());
        b[4..9].copy_from_slice(&random);
        b[9..12].copy_from_slice(&counter.to_be_bytes()[1..4]);
        ObjectId(b)
    }

    /// Accepts exactly 12 bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, LengthError> {
        <[u8; LEN]>::try_from(bytes)
            .map(ObjectId)
            .map_err(|_| LengthError(bytes.len()))
    }

    /// Accepts exactly 24 hexadecimal digits, in either case, and nothing else (no spaces, signs
    /// or prefixes). Works on bytes, so a multi-byte character is simply a non-digit.
    pub fn parse_hex(text: &[u8]) -> Result<Self, ParseError> {
        if text.len() != HEX_LEN {
            return Err(ParseError::Length(text.len()));
        }
        let mut b = [0u8; LEN];
        hex::decode_to_slice(text, &mut b).map_err(|e| match e {
            hex::FromHexError::InvalidHexCharacter { index, .. } => ParseError::Digit(index),
            // The length was checked above; report it the same way should hex ever disagree.
            _ => ParseError::Length(text.len()),
        })?;
        Ok(ObjectId(b))
    }

    /// Writes the 24 lowercase hexadecimal digits into `out`.
    pub fn encode_hex(&self, out: &mut [u8; HEX_LEN]) {
        hex::encode_to_slice(self.0, out).expect("output buffer is exactly twice the input");
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Creation time in Unix seconds. Read as unsigned: the field runs to 2106-02-07.
    pub fn timestamp(&self) -> u32 {
        u32::from_be_bytes([self.0[0], self.0[1], self.0[2], self.0[3]])
    }

    /// The 5-byte random value of the process (or server) that made the id.
    pub fn random_value(&self) -> [u8; 5] {
        [self.0[4], self.0[5], self.0[6], self.0[7], self.0[8]]
    }

    /// The 24-bit counter.
    pub fn counter(&self) -> u32 {
        u32::from_be_bytes([0, self.0[9], self.0[10], self.0[11]])
    }

    /// How far apart two ids are, reading the 12 bytes as one unsigned big-endian number. BRIN's
    /// minmax-multi uses this to decide which ranges to merge; only the relative size matters, so
    /// a double (exact to 53 bits) is precise enough.
    pub fn distance(&self, other: &ObjectId) -> f64 {
        let (lo, hi) = if self <= other {
            (self, other)
        } else {
            (other, self)
        };
        lo.0.iter().zip(hi.0.iter()).fold(0.0, |acc, (&a, &b)| {
            acc * 256.0 + (f64::from(b) - f64::from(a))
        })
    }
}

impl FromStr for ObjectId {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ObjectId::parse_hex(s.as_bytes())
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; HEX_LEN];
        self.encode_hex(&mut buf);
        // encode_hex writes only ASCII digits and letters.
        f.write_str(std::str::from_utf8(&buf).expect("hex digits are ASCII"))
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "507f1f77bcf86cd799439011";

    #[test]
    fn parses_and_formats_lowercase() {
        let id: ObjectId = SAMPLE.parse().unwrap();
        assert_eq!(id.to_string(), SAMPLE);
        let upper: ObjectId = SAMPLE.to_uppercase().parse().unwrap();
        assert_eq!(upper, id);
        assert_eq!(upper.to_string(), SAMPLE);
        assert_eq!(id.to_hex(), SAMPLE);
    }

    #[test]
    fn fields_of_known_value() {
        let id: ObjectId = SAMPLE.parse().unwrap();
        assert_eq!(id.timestamp(), 1_350_508_407);
        assert_eq!(id.random_value(), [0xbc, 0xf8, 0x6c, 0xd7, 0x99]);
        assert_eq!(id.counter(), 0x43_9011);
    }

    #[test]
    fn timestamp_is_unsigned() {
        for (hex, secs) in [
            ("000000000000000000000000", 0u32),
            ("7fffffff0000000000000000", 0x7fff_ffff),
            ("800000000000000000000000", 0x8000_0000),
            ("ffffffff0000000000000000", 0xffff_ffff),
        ] {
            assert_eq!(hex.parse::<ObjectId>().unwrap().timestamp(), secs);
        }
    }

    #[test]
    fn from_parts_lays_out_bytes() {
        let id = ObjectId::from_parts(0x0102_0304, [5, 6, 7, 8, 9], 0x0a0b0c);
        assert_eq!(id.as_bytes(), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        // The counter keeps its low 24 bits only.
        let wrapped = ObjectId::from_parts(0, [0; 5], 0x0100_0000);
        assert_eq!(wrapped.counter(), 0);
        assert_eq!(
            ObjectId::from_parts(0, [0; 5], 0x00ff_ffff).counter(),
            0xff_ffff
        );
    }

    #[test]
    fn rejects_wrong_length() {
        for bad in [
            "",
            "507f1f77bcf86cd79943901",
            "507f1f77bcf86cd7994390111",
            " 507f1f77bcf86cd799439011",
        ] {
            assert_eq!(
                bad.parse::<ObjectId>(),
                Err(ParseError::Length(bad.len())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn rejects_non_hex() {
        assert_eq!(
            "507f1f77bcf86cd79943901g".parse::<ObjectId>(),
            Err(ParseError::Digit(23))
        );
        assert_eq!(
            "507f1f77 cf86cd799439011".parse::<ObjectId>(),
            Err(ParseError::Digit(8))
        );
        assert_eq!(
            "+07f1f77bcf86cd799439011".parse::<ObjectId>(),
            Err(ParseError::Digit(0))
        );
        // 22 ASCII digits plus one two-byte character: 24 bytes, but not hex.
        let s = "507f1f77bcf86cd7994390é";
        assert_eq!(s.len(), 24);
        assert!(matches!(s.parse::<ObjectId>(), Err(ParseError::Digit(_))));
        // An embedded NUL is just another non-digit.
        assert_eq!(
            ObjectId::parse_hex(b"507f1f77bcf86cd7\0943901a"),
            Err(ParseError::Digit(16))
        );
    }

    #[test]
    fn slices_must_be_twelve_bytes() {
        assert_eq!(ObjectId::from_slice(&[0; 11]), Err(LengthError(11)));
        assert_eq!(ObjectId::from_slice(&[0; 13]), Err(LengthError(13)));
        assert_eq!(ObjectId::from_slice(&[7; 12]).unwrap().as_bytes(), &[7; 12]);
    }

    #[test]
    fn order_is_byte_order() {
        let a: ObjectId = "7fffffffffffffffffffffff".parse().unwrap();
        let b: ObjectId = "800000000000000000000000".parse().unwrap();
        assert!(a < b, "the timestamp sorts unsigned");
        assert!(ObjectId::MIN < a && b < ObjectId::MAX);
        let mut ids: Vec<ObjectId> = (0..=255u8)
            .rev()
            .map(|i| ObjectId::from_bytes([i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255 - i]))
            .collect();
        ids.sort();
        assert!(ids.windows(2).all(|w| w[0].as_bytes() < w[1].as_bytes()));
    }

    #[test]
    fn distance_reads_bytes_as_one_number() {
        let a = ObjectId::from_parts(0, [0; 5], 1);
        let b = ObjectId::from_parts(0, [0; 5], 11);
        assert_eq!(a.distance(&b), 10.0);
        assert_eq!(b.distance(&a), 10.0);
        assert_eq!(a.distance(&a), 0.0);
        let c = ObjectId::from_parts(1, [0; 5], 0);
        assert_eq!(ObjectId::MIN.distance(&c), 2f64.powi(64));
        // Borrows across bytes: 0x0100 - 0x00ff = 1.
        let d = ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]);
        let e = ObjectId::from_bytes([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff]);
        assert_eq!(d.distance(&e), 1.0);
        assert!(ObjectId::MIN.distance(&ObjectId::MAX) > 7.9e28);
    }
}
