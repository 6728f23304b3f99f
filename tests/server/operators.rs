use crate::common::*;

/// Values chosen around the places where a wrong comparison would show: the sign bit of the
/// timestamp, each field boundary, and the extremes.
const VALUES: [&str; 9] = [
    "000000000000000000000000",
    "000000000000000000000001",
    "00000000000000000000ff00",
    "000000000000000100000000",
    "507f1f77bcf86cd799439011",
    "7fffffffffffffffffffffff",
    "800000000000000000000000",
    "80000000ffffffffff000000",
    "ffffffffffffffffffffffff",
];

#[test]
fn every_operator_agrees_with_byte_order() {
    let mut c = database_with_extension("").client;
    let rows = c
        .query(
            "SELECT a::text, b::text, a = b, a <> b, a < b, a <= b, a > b, a >= b, \
                    objectid_cmp(a, b) \
             FROM unnest($1::text[]::objectid[]) AS a, unnest($1::text[]::objectid[]) AS b",
            &[&VALUES.to_vec()],
        )
        .unwrap();
    assert_eq!(rows.len(), VALUES.len() * VALUES.len());
    for r in rows {
        let (a, b): (String, String) = (r.get(0), r.get(1));
        // Lowercase hex strings of equal length order exactly as their bytes do.
        let want = a.cmp(&b);
        let got: [bool; 6] = [r.get(2), r.get(3), r.get(4), r.get(5), r.get(6), r.get(7)];
        assert_eq!(
            got,
            [
                want.is_eq(),
                want.is_ne(),
                want.is_lt(),
                want.is_le(),
                want.is_gt(),
                want.is_ge()
            ],
            "{a} vs {b}"
        );
        assert_eq!(r.get::<_, i32>(8), want as i32, "objectid_cmp({a}, {b})");
    }
}

#[test]
fn operators_are_strict() {
    let mut c = database_with_extension("").client;
    let row = c
        .query_one(
            "SELECT (NULL::objectid = '507f1f77bcf86cd799439011') IS NULL, \
                    ('507f1f77bcf86cd799439011' <> NULL::objectid) IS NULL, \
                    (NULL::objectid < NULL::objectid) IS NULL, \
                    (NULL::objectid <= 'ffffffffffffffffffffffff') IS NULL, \
                    (NULL::objectid > '000000000000000000000000') IS NULL, \
                    (NULL::objectid >= NULL) IS NULL, \
                    objectid_cmp(NULL, '000000000000000000000000') IS NULL",
            &[],
        )
        .unwrap();
    for i in 0..7 {
        assert!(row.get::<_, bool>(i), "expression {i} is not NULL");
    }
}

#[test]
fn order_by_sorts_by_bytes() {
    let mut c = database_with_extension("").client;
    c.batch_execute(&format!("CREATE TABLE t AS {}", sample_ids_sql(20000)))
        .unwrap();
    // In memory (quicksort) and spilled to disk (external merge) alike.
    for work_mem in ["64MB", "64kB"] {
        c.batch_execute(&format!("SET work_mem = '{work_mem}'"))
            .unwrap();
        let by_id: Vec<String> = c
            .query("SELECT id::text FROM t ORDER BY id", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let by_bytes: Vec<String> = c
            .query("SELECT id::text FROM t ORDER BY id::bytea", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(by_id.len(), 20000);
        assert_eq!(by_id, by_bytes, "work_mem {work_mem}");
        let desc: Vec<String> = c
            .query("SELECT id::text FROM t ORDER BY id DESC", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(desc.iter().rev().eq(by_id.iter()));
    }
}

/// An operator as pg_operator has it: name, commutator, negator, restriction and join
/// estimators, and whether it hashes and merges.
type OperatorEntry = (
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    bool,
    bool,
);

#[test]
fn operator_catalog_entries_are_complete() {
    let mut c = database_with_extension("").client;
    let rows = c
        .query(
            "SELECT o.oprname::text, com.oprname::text, neg.oprname::text, \
                    o.oprrest::text, o.oprjoin::text, o.oprcanhash, o.oprcanmerge \
             FROM pg_operator o \
             LEFT JOIN pg_operator com ON com.oid = o.oprcom \
             LEFT JOIN pg_operator neg ON neg.oid = o.oprnegate \
             WHERE o.oprleft = 'objectid'::regtype AND o.oprright = 'objectid'::regtype \
             ORDER BY o.oprname",
            &[],
        )
        .unwrap();
    let got: Vec<OperatorEntry> = rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                r.get(4),
                r.get(5),
                r.get(6),
            )
        })
        .collect();
    let s = |x: &str| Some(x.to_string());
    let want = vec![
        (
            "<".into(),
            s(">"),
            s(">="),
            "scalarltsel".into(),
            "scalarltjoinsel".into(),
            false,
            false,
        ),
        (
            "<=".into(),
            s(">="),
            s(">"),
            "scalarlesel".into(),
            "scalarlejoinsel".into(),
            false,
            false,
        ),
        (
            "<>".into(),
            s("<>"),
            s("="),
            "neqsel".into(),
            "neqjoinsel".into(),
            false,
            false,
        ),
        (
            "=".into(),
            s("="),
            s("<>"),
            "eqsel".into(),
            "eqjoinsel".into(),
            true,
            true,
        ),
        (
            ">".into(),
            s("<"),
            s("<="),
            "scalargtsel".into(),
            "scalargtjoinsel".into(),
            false,
            false,
        ),
        (
            ">=".into(),
            s("<="),
            s("<"),
            "scalargesel".into(),
            "scalargejoinsel".into(),
            false,
            false,
        ),
    ];
    assert_eq!(got, want);
}
