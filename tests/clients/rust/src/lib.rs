//! The adapter of docs/clients.md, compiled from the copy scripts/clients_test.sh extracts from the
//! page, so that the tests in tests/ use exactly the code users are told to copy.

pub mod objectid_postgres {
    include!(concat!(
        env!(
            "PG_OBJECTID_CLIENT_ADAPTERS",
            "set PG_OBJECTID_CLIENT_ADAPTERS to the folder tests/clients/extract.py wrote; scripts/clients_test.sh does"
        ),
        "/objectid_postgres.rs"
    ));
}
