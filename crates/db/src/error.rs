//! What can go wrong: a section that cannot be built, and a request's database call, answered
//! as DropWizard answers (`{"code":503,"message":...}`).

use std::sync::Arc;

use ferrowizard::ErrorMessage;
use ferrowizard::axum::http::StatusCode;
use ferrowizard::axum::response::{IntoResponse, Response};

/// Why a database section could not be built.
///
/// ```
/// use ferrowizard::Environment;
/// use ferrowizard_db::{BuildError, DataSourceFactory, DatabaseUrl, sqlx};
///
/// let section = DataSourceFactory {
///     url: DatabaseUrl::new("postgres://db.internal/orders"),
///     ..DataSourceFactory::default()
/// };
/// let built = section.build::<sqlx::Sqlite>("orders", &mut Environment::default());
/// assert!(matches!(built, Err(BuildError::Driver { .. })));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `url` (shown without its password).
    #[error("url: {0}")]
    Url(String),
    /// A `properties` entry.
    #[error("properties.{name}: {why}")]
    Property {
        /// The property.
        name: String,
        /// Why it cannot be used.
        why: String,
    },
    /// `defaultTransactionIsolation`.
    #[error("defaultTransactionIsolation: {0}")]
    Isolation(String),
    /// The url's engine is not the one the application's code uses.
    #[error(
        "url names {found}, but the application uses {expected}: change url, or the code's driver"
    )]
    Driver {
        /// The url's engine.
        found: crate::secret::Backend,
        /// The code's.
        expected: &'static str,
    },
    /// The metrics could not be registered (a name taken by another kind of metric).
    #[error("metrics: {0}")]
    Metrics(#[from] ferrowizard::metrics::RegistryError),
}

/// A database call that failed, as a handler returns it: `?` on [`Database::acquire`],
/// [`Database::begin`] and [`Database::timed`] gives it, and it answers the request.
///
/// ```
/// use ferrowizard::axum::http::StatusCode;
/// use ferrowizard::axum::response::IntoResponse;
/// use ferrowizard_db::DbError;
///
/// let down = DbError::from(ferrowizard_db::sqlx::Error::PoolTimedOut);
/// assert_eq!(down.into_response().status(), StatusCode::SERVICE_UNAVAILABLE);
/// let missing = DbError::from(ferrowizard_db::sqlx::Error::RowNotFound);
/// assert_eq!(missing.into_response().status(), StatusCode::NOT_FOUND);
/// ```
///
/// [`Database::acquire`]: crate::Database::acquire
/// [`Database::begin`]: crate::Database::begin
/// [`Database::timed`]: crate::Database::timed
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No connection could be had in time, or the one held broke: 503.
    #[error("database {database} is unavailable: {reason}")]
    Unavailable {
        /// The database's name.
        database: Arc<str>,
        /// Why.
        reason: String,
    },
    /// The query found no row where one was expected: 404.
    #[error("no such row")]
    NotFound,
    /// The statement broke a constraint (unique, foreign key, check): 409.
    #[error("database {database}: {source}")]
    Conflict {
        /// The database's name.
        database: Arc<str>,
        /// The database's error.
        source: sqlx::Error,
    },
    /// Any other failure: 500, logged with the database's message.
    #[error("database {database}: {source}")]
    Query {
        /// The database's name.
        database: Arc<str>,
        /// The database's error.
        source: sqlx::Error,
    },
}

/// PostgreSQL's codes for a connection lost or refused: class 08 and the shutdowns.
fn connection_lost(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
}

impl DbError {
    /// `source`, from a call on `database`, sorted by what the client should hear.
    pub(crate) fn classify(database: &Arc<str>, source: sqlx::Error) -> DbError {
        let unavailable = |reason: String| DbError::Unavailable {
            database: database.clone(),
            reason,
        };
        match source {
            sqlx::Error::RowNotFound => DbError::NotFound,
            sqlx::Error::PoolTimedOut => unavailable("no connection could be had in time".into()),
            sqlx::Error::PoolClosed => unavailable("the pool is closed".into()),
            e @ (sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed) => unavailable(e.to_string()),
            sqlx::Error::Database(e) if e.code().is_some_and(|c| connection_lost(&c)) => {
                unavailable(e.to_string())
            }
            sqlx::Error::Database(e)
                if e.is_unique_violation()
                    || e.is_foreign_key_violation()
                    || e.is_check_violation() =>
            {
                DbError::Conflict {
                    database: database.clone(),
                    source: sqlx::Error::Database(e),
                }
            }
            source => DbError::Query {
                database: database.clone(),
                source,
            },
        }
    }

    /// Whether the database could not be reached (the request is answered 503).
    ///
    /// ```
    /// use ferrowizard_db::{DbError, sqlx};
    ///
    /// assert!(DbError::from(sqlx::Error::PoolTimedOut).is_unavailable());
    /// assert!(!DbError::from(sqlx::Error::RowNotFound).is_unavailable());
    /// ```
    pub fn is_unavailable(&self) -> bool {
        matches!(self, DbError::Unavailable { .. })
    }
}

/// A sqlx error from a call made outside [`Database::timed`](crate::Database::timed) (a
/// transaction's `commit`, say): sorted the same way, with no database's name.
impl From<sqlx::Error> for DbError {
    fn from(source: sqlx::Error) -> DbError {
        DbError::classify(&Arc::from("?"), source)
    }
}

impl IntoResponse for DbError {
    fn into_response(self) -> Response {
        let (status, message) = match &self {
            DbError::Unavailable { database, .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("database {database} is unavailable"),
            ),
            DbError::NotFound => (StatusCode::NOT_FOUND, "HTTP 404 Not Found".to_owned()),
            DbError::Conflict { .. } => (
                StatusCode::CONFLICT,
                "the request conflicts with the data kept".to_owned(),
            ),
            DbError::Query { database, source } => {
                tracing::error!(target: "ferrowizard::db", database = &**database, error = %source, "query failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "There was an error processing your request.".to_owned(),
                )
            }
        };
        ErrorMessage::new(status, message).into_response()
    }
}
