//! The sqlx databases a section can build a pool of: PostgreSQL, SQLite, and `Any` (either,
//! chosen by the url at run time).

use std::future::Future;
use std::pin::Pin;

use sqlx::Executor;

use crate::secret::Backend;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

mod sealed {
    pub trait Sealed {}
    impl Sealed for sqlx::Postgres {}
    impl Sealed for sqlx::Sqlite {}
    impl Sealed for sqlx::Any {}
}

/// A sqlx database a [`Database`](crate::Database) can pool: [`sqlx::Postgres`],
/// [`sqlx::Sqlite`], or [`sqlx::Any`] when the url chooses at run time (as `examples/orders`
/// does, on SQLite by default and on PostgreSQL by one line of its configuration).
///
/// ```
/// use ferrowizard_db::Driver;
///
/// assert_eq!(<ferrowizard_db::sqlx::Postgres as Driver>::NAME, "PostgreSQL");
/// assert_eq!(<ferrowizard_db::sqlx::Sqlite as Driver>::NAME, "SQLite");
/// ```
pub trait Driver: sqlx::Database + sealed::Sealed {
    /// The engine's name in messages.
    const NAME: &'static str;

    /// Whether a url naming `backend` can be used.
    #[doc(hidden)]
    fn serves(backend: Backend) -> bool;

    /// Runs `sql` (one or more statements, no parameters), discarding what it returns.
    #[doc(hidden)]
    fn execute<'c>(
        conn: &'c mut Self::Connection,
        sql: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>>;

    /// Readies sqlx for this database (the `Any` drivers installed).
    #[doc(hidden)]
    fn prepare() {}
}

/// Runs `sql` on `conn` by the simple protocol (no statement prepared, several allowed).
fn raw<'c, DB: sqlx::Database>(
    conn: &'c mut DB::Connection,
    sql: &'c str,
) -> BoxFuture<'c, Result<(), sqlx::Error>>
where
    for<'e> &'e mut DB::Connection: Executor<'e, Database = DB>,
{
    Box::pin(async move { conn.execute(sqlx::raw_sql(sql)).await.map(drop) })
}

impl Driver for sqlx::Postgres {
    const NAME: &'static str = "PostgreSQL";

    fn serves(backend: Backend) -> bool {
        backend == Backend::Postgres
    }

    fn execute<'c>(
        conn: &'c mut Self::Connection,
        sql: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>> {
        raw::<Self>(conn, sql)
    }
}

impl Driver for sqlx::Sqlite {
    const NAME: &'static str = "SQLite";

    fn serves(backend: Backend) -> bool {
        backend == Backend::Sqlite
    }

    fn execute<'c>(
        conn: &'c mut Self::Connection,
        sql: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>> {
        raw::<Self>(conn, sql)
    }
}

impl Driver for sqlx::Any {
    const NAME: &'static str = "PostgreSQL or SQLite";

    fn serves(_: Backend) -> bool {
        true
    }

    fn execute<'c>(
        conn: &'c mut Self::Connection,
        sql: &'c str,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>> {
        raw::<Self>(conn, sql)
    }

    fn prepare() {
        sqlx::any::install_default_drivers();
    }
}
