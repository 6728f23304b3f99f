//! Wire types: the raw bytes of objectid, text, timestamptz and interval values.

use std::error::Error;

use postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};

/// A text result as bytes: a SQL_ASCII database may send text that is not UTF-8.
pub(super) struct RawText(pub(super) Vec<u8>);

impl<'a> FromSql<'a> for RawText {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(RawText(raw.to_vec()))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TEXT
    }
}

/// A timestamptz as PostgreSQL keeps it: microseconds since 2000-01-01 00:00:00 UTC, with
/// i64::MIN and i64::MAX for -infinity and infinity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Ts(pub(super) i64);

impl<'a> FromSql<'a> for Ts {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(Ts(i64::from_be_bytes(raw.try_into()?)))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
}

impl ToSql for Ts {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.0.to_be_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
    to_sql_checked!();
}

/// An interval's three fields, as interval_send writes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Iv {
    pub(super) micros: i64,
    pub(super) days: i32,
    pub(super) months: i32,
}

pub(super) const IV_INFINITY: Iv = Iv {
    micros: i64::MAX,
    days: i32::MAX,
    months: i32::MAX,
};
pub(super) const IV_NEG_INFINITY: Iv = Iv {
    micros: i64::MIN,
    days: i32::MIN,
    months: i32::MIN,
};

impl ToSql for Iv {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.micros.to_be_bytes());
        out.extend_from_slice(&self.days.to_be_bytes());
        out.extend_from_slice(&self.months.to_be_bytes());
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
    to_sql_checked!();
}
