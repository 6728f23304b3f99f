//! MongoDB Extended JSON for ObjectIds: `{"$oid": "<24 hex digits>"}`, the form `mongoexport`
//! and every driver's JSON codec write, in canonical and relaxed mode alike.
//!
//! The SQL layer walks a jsonb value without converting it to text and describes what it found
//! as a [`Json`]; the decision of what converts, and why not, is made here, so that it can be
//! tested without a server.

use crate::kernel::objectid::{ObjectId, ParseError};

/// The key of Extended JSON's ObjectId wrapper.
pub const OID_KEY: &str = "$oid";

/// The JSON kinds, named as PostgreSQL's jsonb cast errors name them ("cannot cast jsonb
/// numeric to type …").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    String,
    Numeric,
    Boolean,
    Array,
    Object,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::String => "string",
            Kind::Numeric => "numeric",
            Kind::Boolean => "boolean",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }
}

/// What the SQL layer found at the top of a jsonb value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Json<'a> {
    /// A string, as its UTF-8 bytes.
    String(&'a [u8]),
    /// An object: how many keys it has, and the value of its `$oid` key if it has one (strings
    /// are given as bytes, any other value by its kind only).
    Object {
        keys: usize,
        oid: Option<Scalar<'a>>,
    },
    /// Anything else: null, a number, a boolean, an array.
    Other(Kind),
}

/// The value of an object's `$oid` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar<'a> {
    String(&'a [u8]),
    Other(Kind),
}

/// Why a jsonb value is not an ObjectId.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromJsonError {
    /// A string (bare, or the `$oid` of a wrapper) that is not 24 hexadecimal digits.
    Hex(ParseError),
    /// A kind that never holds an ObjectId.
    Kind(Kind),
    /// An object other than `{"$oid": …}`: no `$oid` key, or more keys than that one.
    NotWrapper { keys: usize, has_oid: bool },
    /// `{"$oid": x}` where x is not a string.
    OidNotString(Kind),
}

/// An ObjectId from a bare JSON string (`"507f…"`, how `to_jsonb` writes one) or from Extended
/// JSON (`{"$oid": "507f…"}`). JSON null gives `None`, as PostgreSQL 18's own jsonb casts turn
/// JSON null into SQL NULL.
pub fn from_json(value: Json<'_>) -> Result<Option<ObjectId>, FromJsonError> {
    let hex = match value {
        Json::String(hex) => hex,
        Json::Other(Kind::Null) => return Ok(None),
        Json::Other(kind) => return Err(FromJsonError::Kind(kind)),
        // Extended JSON allows no other keys beside "$oid": a document such as
        // {"$oid": …, "x": 1} is an ordinary document whose first key happens to be "$oid",
        // and taking it for an ObjectId would silently drop "x".
        Json::Object {
            keys: 1,
            oid: Some(Scalar::String(hex)),
        } => hex,
        Json::Object {
            keys: 1,
            oid: Some(Scalar::Other(kind)),
        } => return Err(FromJsonError::OidNotString(kind)),
        Json::Object { keys, oid } => {
            return Err(FromJsonError::NotWrapper {
                keys,
                has_oid: oid.is_some(),
            })
        }
    };
    ObjectId::parse_hex(hex)
        .map(Some)
        .map_err(FromJsonError::Hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &[u8] = b"507f1f77bcf86cd799439011";

    fn id() -> ObjectId {
        ObjectId::parse_hex(HEX).unwrap()
    }

    #[test]
    fn bare_strings_and_wrappers_convert() {
        assert_eq!(from_json(Json::String(HEX)), Ok(Some(id())));
        let wrapper = Json::Object {
            keys: 1,
            oid: Some(Scalar::String(HEX)),
        };
        assert_eq!(from_json(wrapper), Ok(Some(id())));
        // Upper-case digits are accepted, as the text input accepts them.
        let upper = HEX.to_ascii_uppercase();
        assert_eq!(from_json(Json::String(&upper)), Ok(Some(id())));
    }

    #[test]
    fn json_null_is_sql_null() {
        assert_eq!(from_json(Json::Other(Kind::Null)), Ok(None));
    }

    #[test]
    fn every_other_shape_is_refused_with_its_reason() {
        for kind in [Kind::Numeric, Kind::Boolean, Kind::Array] {
            assert_eq!(from_json(Json::Other(kind)), Err(FromJsonError::Kind(kind)));
        }
        assert_eq!(
            from_json(Json::String(b"507f")),
            Err(FromJsonError::Hex(ParseError::Length(4)))
        );
        assert_eq!(
            from_json(Json::String(b"507f1f77bcf86cd79943901g")),
            Err(FromJsonError::Hex(ParseError::Digit(23)))
        );
        let bad_oid = Json::Object {
            keys: 1,
            oid: Some(Scalar::String(b"zz")),
        };
        assert_eq!(
            from_json(bad_oid),
            Err(FromJsonError::Hex(ParseError::Length(2)))
        );
        let numeric_oid = Json::Object {
            keys: 1,
            oid: Some(Scalar::Other(Kind::Numeric)),
        };
        assert_eq!(
            from_json(numeric_oid),
            Err(FromJsonError::OidNotString(Kind::Numeric))
        );
        let null_oid = Json::Object {
            keys: 1,
            oid: Some(Scalar::Other(Kind::Null)),
        };
        assert_eq!(
            from_json(null_oid),
            Err(FromJsonError::OidNotString(Kind::Null))
        );
        assert_eq!(
            from_json(Json::Object { keys: 0, oid: None }),
            Err(FromJsonError::NotWrapper {
                keys: 0,
                has_oid: false
            })
        );
        assert_eq!(
            from_json(Json::Object { keys: 1, oid: None }),
            Err(FromJsonError::NotWrapper {
                keys: 1,
                has_oid: false
            })
        );
        let extra = Json::Object {
            keys: 2,
            oid: Some(Scalar::String(HEX)),
        };
        assert_eq!(
            from_json(extra),
            Err(FromJsonError::NotWrapper {
                keys: 2,
                has_oid: true
            })
        );
    }
}
