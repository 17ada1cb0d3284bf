//! What a section asks of each connection: the url sqlx connects to (credentials and driver
//! parameters in it), and the statements run on each new connection (session settings,
//! SQLite's pragmas, `initializationQuery`).

use crate::config::{DataSourceFactory, TransactionIsolation};
use crate::error::BuildError;
use crate::secret::Backend;

/// How to open a connection, and what to show of it.
pub(crate) struct Plan {
    /// The url with its credentials: given to sqlx only.
    pub(crate) url: String,
    /// Where the database is, without a password: `postgres://orders@host:5432/orders`.
    pub(crate) target: String,
    pub(crate) backend: Backend,
    /// Run on every new connection, in order.
    pub(crate) on_connect: Vec<String>,
}

/// PostgreSQL's connection parameters, as sqlx reads them from a url; any other property is
/// a server setting, sent at connect (`options[name]=value`).
const PG_PARAMETERS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "statement-cache-capacity",
    "application_name",
];

pub(crate) fn plan(section: &DataSourceFactory) -> Result<Plan, BuildError> {
    let backend = section.url.backend().map_err(BuildError::Url)?;
    let mut url = url::Url::parse(&section.url.expose())
        .map_err(|e| BuildError::Url(format!("{} cannot be read as a url: {e}", section.url)))?;
    let mut on_connect = Vec::new();
    match backend {
        Backend::Postgres => {
            if let Some(user) = &section.user {
                url.set_username(user)
                    .map_err(|()| BuildError::Url(format!("user {user:?} cannot be used")))?;
            }
            if let Some(password) = &section.password {
                url.set_password(Some(password.expose()))
                    .map_err(|()| BuildError::Url("the password cannot be used".to_owned()))?;
            }
            {
                let mut query = url.query_pairs_mut();
                for (name, value) in &section.properties {
                    if PG_PARAMETERS.contains(&name.as_str()) {
                        query.append_pair(name, value);
                    } else if matches!(
                        name.as_str(),
                        "user" | "password" | "host" | "port" | "dbname"
                    ) {
                        return Err(BuildError::Property {
                            name: name.clone(),
                            why: "write it in url (or user, password) instead".to_owned(),
                        });
                    } else {
                        query.append_pair(&format!("options[{name}]"), value);
                    }
                }
            }
            if url.query() == Some("") {
                url.set_query(None);
            }
            if let Some(read_only) = section.read_only_by_default {
                on_connect.push(format!(
                    "SET SESSION CHARACTERISTICS AS TRANSACTION {}",
                    if read_only { "READ ONLY" } else { "READ WRITE" }
                ));
            }
            if let Some(level) = section.default_transaction_isolation.sql() {
                on_connect.push(format!(
                    "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL {level}"
                ));
            }
        }
        Backend::Sqlite => {
            if section.user.is_some() || section.password.is_some() {
                return Err(BuildError::Url(
                    "SQLite has no users: take user and password out of the section".to_owned(),
                ));
            }
            // A file database is made when missing, unless the url says how to open it.
            let memory = url.path() == ":memory:";
            if !memory && !url.query_pairs().any(|(k, _)| k == "mode") {
                url.query_pairs_mut().append_pair("mode", "rwc");
            }
            for (name, value) in &section.properties {
                let word = |s: &str| {
                    !s.is_empty()
                        && s.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                };
                if !word(name) || !word(value) {
                    return Err(BuildError::Property {
                        name: name.clone(),
                        why:
                            "a SQLite pragma's name and value are words (letters, digits, _ and -)"
                                .to_owned(),
                    });
                }
                on_connect.push(format!("PRAGMA {name} = {value}"));
            }
            if let Some(read_only) = section.read_only_by_default {
                on_connect.push(format!("PRAGMA query_only = {}", u8::from(read_only)));
            }
            match section.default_transaction_isolation {
                TransactionIsolation::Default | TransactionIsolation::Serializable => {}
                TransactionIsolation::ReadUncommitted => {
                    on_connect.push("PRAGMA read_uncommitted = 1".to_owned());
                }
                other => {
                    return Err(BuildError::Isolation(format!(
                        "SQLite's transactions are serializable, so {other:?} cannot be had: \
                         write serializable, read-uncommitted or default"
                    )));
                }
            }
        }
    }
    if let Some(statement) = &section.initialization_query {
        on_connect.push(statement.clone());
    }
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    shown.set_query(None);
    Ok(Plan {
        url: url.to_string(),
        target: shown.to_string(),
        backend,
        on_connect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::DatabaseUrl;
    use ferrowizard::config::Password;

    fn section(url: &str) -> DataSourceFactory {
        DataSourceFactory {
            url: DatabaseUrl::new(url),
            ..DataSourceFactory::default()
        }
    }

    /// Catches: credentials or properties dropped, a password in what is shown, a setting
    /// sent as a parameter sqlx ignores.
    #[test]
    fn postgres_credentials_and_properties_go_into_the_url_and_never_into_the_target() {
        let mut s = section("jdbc:postgresql://db.internal:5433/orders");
        s.user = Some("orders".into());
        s.password = Some(Password::new("p@ss word"));
        s.properties
            .insert("application_name".into(), "orders-api".into());
        s.properties
            .insert("statement_timeout".into(), "250ms".into());
        s.read_only_by_default = Some(true);
        s.default_transaction_isolation = TransactionIsolation::Serializable;
        let plan = plan(&s).unwrap();
        assert_eq!(
            plan.url,
            "postgres://orders:p%40ss%20word@db.internal:5433/orders?application_name=orders-api&options%5Bstatement_timeout%5D=250ms"
        );
        assert_eq!(plan.target, "postgres://orders@db.internal:5433/orders");
        assert_eq!(
            plan.on_connect,
            [
                "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
                "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE"
            ]
        );
    }

    /// Catches: a missing file not made, pragmas not run, an isolation SQLite lacks accepted.
    #[test]
    fn sqlite_makes_the_file_runs_pragmas_and_refuses_what_it_cannot_do() {
        let mut s = section("sqlite:orders.db");
        s.properties.insert("journal_mode".into(), "WAL".into());
        s.read_only_by_default = Some(false);
        let p = plan(&s).unwrap();
        assert_eq!(p.url, "sqlite:orders.db?mode=rwc");
        assert_eq!(
            p.on_connect,
            ["PRAGMA journal_mode = WAL", "PRAGMA query_only = 0"]
        );
        assert_eq!(
            plan(&section("sqlite::memory:")).unwrap().url,
            "sqlite::memory:"
        );

        s.properties.insert("x; DROP TABLE t".into(), "1".into());
        assert!(matches!(plan(&s), Err(BuildError::Property { .. })));
        let mut s = section("sqlite:orders.db");
        s.default_transaction_isolation = TransactionIsolation::ReadCommitted;
        assert!(matches!(plan(&s), Err(BuildError::Isolation(_))));
        s.default_transaction_isolation = TransactionIsolation::Default;
        s.password = Some(Password::new("x"));
        assert!(matches!(plan(&s), Err(BuildError::Url(_))));
    }
}
