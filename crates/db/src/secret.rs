//! The values that may hold a secret, and what is shown of them: a url without its password,
//! a password not at all.

use std::fmt;

/// The database engine a url names.
///
/// ```
/// use ferrowizard_db::{Backend, DatabaseUrl};
///
/// assert_eq!(DatabaseUrl::new("postgresql://db/orders").backend(), Ok(Backend::Postgres));
/// assert_eq!(DatabaseUrl::new("sqlite::memory:").backend(), Ok(Backend::Sqlite));
/// assert!(DatabaseUrl::new("mysql://db/orders").backend().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `postgres://` or `postgresql://`.
    Postgres,
    /// `sqlite:`.
    Sqlite,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Postgres => "PostgreSQL",
            Backend::Sqlite => "SQLite",
        })
    }
}

/// `url:`: read as written; shown (in `check --dump`, errors, logs) without the password a
/// `postgres://user:password@host` url carries.
///
/// ```
/// use ferrowizard_db::DatabaseUrl;
///
/// let url = DatabaseUrl::new("jdbc:postgresql://orders:s3cret@db.internal:5433/orders");
/// assert_eq!(url.to_string(), "postgres://orders:***@db.internal:5433/orders");
/// assert_eq!(format!("{url:?}"), "DatabaseUrl(postgres://orders:***@db.internal:5433/orders)");
/// let url = DatabaseUrl::new("postgres://db.internal/orders?password=s3cret&sslmode=require");
/// assert_eq!(url.to_string(), "postgres://db.internal/orders?password=***&sslmode=require");
/// ```
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The url `text`, as the configuration file would hold it.
    ///
    /// ```
    /// # use ferrowizard_db::DatabaseUrl;
    /// assert_eq!(DatabaseUrl::new("sqlite:orders.db").to_string(), "sqlite:orders.db");
    /// ```
    pub fn new(text: impl Into<String>) -> DatabaseUrl {
        DatabaseUrl(text.into())
    }

    /// The url as sqlx reads it: without a `jdbc:` prefix, `postgresql:` spelled `postgres:`.
    pub(crate) fn expose(&self) -> String {
        let text = self.0.trim();
        let text = text.strip_prefix("jdbc:").unwrap_or(text);
        match text.strip_prefix("postgresql:") {
            Some(rest) => format!("postgres:{rest}"),
            None => text.to_owned(),
        }
    }

    /// The engine the url names, or why none (see [`Backend`]'s example).
    pub fn backend(&self) -> Result<Backend, String> {
        let url = self.expose();
        if url.starts_with("postgres://") {
            Ok(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.is_empty() {
            Err("is required: postgres://host:port/database or sqlite:path".to_owned())
        } else {
            Err(format!(
                "{self} names no database this service can use: write postgres://host:port/database \
                 or sqlite:path"
            ))
        }
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.expose();
        match url::Url::parse(&url) {
            Ok(mut parsed) => {
                if parsed.password().is_some() {
                    let _ = parsed.set_password(Some("***"));
                }
                let secret = |k: &str| matches!(k, "password" | "sslpassword");
                if parsed.query_pairs().any(|(k, _)| secret(&k)) {
                    let pairs: Vec<(String, String)> = parsed
                        .query_pairs()
                        .map(|(k, v)| {
                            let v = if secret(&k) {
                                "***".into()
                            } else {
                                v.into_owned()
                            };
                            (k.into_owned(), v)
                        })
                        .collect();
                    parsed.query_pairs_mut().clear().extend_pairs(pairs);
                }
                f.write_str(parsed.as_str())
            }
            // Unparsed text may hold anything: show its scheme only.
            Err(_) => write!(f, "{}:...", url.split(':').next().unwrap_or_default()),
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

impl serde::Serialize for DatabaseUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
