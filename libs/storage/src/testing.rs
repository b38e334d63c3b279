//! Fresh PostgreSQL databases for tests.
//!
//! Tests that run on PostgreSQL read the server's URL from
//! `CHESS_TEST_POSTGRES_URL` (the test script starts a server and sets it) and
//! each gets a database of its own, so they can run in parallel.

use sea_orm::{ConnectionTrait as _, Database};

/// The variable naming the PostgreSQL server tests use.
pub const POSTGRES_URL_VAR: &str = "CHESS_TEST_POSTGRES_URL";

/// Creates an empty database on the test server and returns its URL.
///
/// # Panics
/// If `CHESS_TEST_POSTGRES_URL` is unset or the server cannot be reached: a
/// test that needs PostgreSQL must not pass without it.
pub async fn fresh_postgres_database() -> String {
    let server = std::env::var(POSTGRES_URL_VAR).unwrap_or_else(|_| {
        panic!("{POSTGRES_URL_VAR} is not set: run the tests with scripts/test, which starts PostgreSQL")
    });
    let admin = Database::connect(server.clone())
        .await
        .unwrap_or_else(|e| panic!("cannot reach PostgreSQL at {}: {e}", super::redact(&server)));
    let name = format!("chess_test_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute_unprepared(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap_or_else(|e| panic!("cannot create test database: {e}"));
    let base = server
        .rsplit_once('/')
        .map_or(server.as_str(), |(base, _)| base);
    format!("{base}/{name}")
}
