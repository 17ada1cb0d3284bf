//! `database:`: DropWizard's `DataSourceFactory`, the keys that mean something for a sqlx pool.

use std::collections::BTreeMap;

use ferrowizard::Config;
use ferrowizard::config::{Duration, Invalid, Password, positive_duration};

use crate::secret::DatabaseUrl;

/// A database section: where the database is, who connects, and the pool in front of it.
/// An application adds one field of this type per database (`database:`, `readReplica:`...)
/// and builds each with [`DataSourceFactory::build`](crate::DataSourceFactory::build).
///
/// ```
/// use ferrowizard::config::{Duration, FrameworkConfiguration, load_str};
/// use ferrowizard::Config;
/// use ferrowizard_db::DataSourceFactory;
///
/// /// The service's configuration: ferrowizard's sections and two databases.
/// #[derive(Clone, Debug, Config)]
/// pub struct OrdersConfig {
///     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
///     #[config(framework)]
///     pub framework: FrameworkConfiguration,
///     /// The primary.
///     pub database: DataSourceFactory,
///     /// A read replica.
///     pub read_replica: DataSourceFactory,
/// }
///
/// let yaml = "database:\n  url: postgres://db.internal/orders\n  user: orders\n  maxSize: 20\n\
///             readReplica:\n  url: postgres://replica.internal/orders\n  readOnlyByDefault: true\n";
/// let config: OrdersConfig = load_str("config.yaml", yaml, &[]).unwrap();
/// assert_eq!(config.database.max_size, 20);
/// assert_eq!(config.database.max_wait_for_connection, Duration::seconds(30));
/// assert_eq!(config.read_replica.read_only_by_default, Some(true));
///
/// let refused = load_str::<OrdersConfig>("config.yaml", "database:\n  driverClass: org.postgresql.Driver\n", &[]);
/// assert!(refused.unwrap_err().to_string().contains("the driver follows the url's scheme"));
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
#[config(
    check = DataSourceFactory::sizes_fit,
    refuse(
        driverClass = "the driver follows the url's scheme (postgres://, sqlite:), so there is no \
                       class to name",
        autoCommitByDefault = "a statement outside a transaction always commits on its own; \
                               group statements with Database::begin",
        defaultCatalog = "the catalog is the database the url names: name it there",
        rollbackOnReturn = "a transaction not committed is always rolled back when it is dropped, \
                            so there is nothing to switch",
        commitOnReturn = "a transaction commits only when the handler commits it; one dropped is \
                          rolled back",
        removeAbandoned = "a connection returns to the pool when its guard is dropped, so none is \
                           abandoned; bound a query's time with properties.statement_timeout",
        removeAbandonedTimeout = "a connection returns to the pool when its guard is dropped, so \
                                  none is abandoned; bound a query's time with \
                                  properties.statement_timeout",
        abandonWhenPercentageFull = "a connection returns to the pool when its guard is dropped, so \
                                     none is abandoned",
        logAbandonedConnections = "a connection returns to the pool when its guard is dropped, so \
                                   none is abandoned",
        alternateUsernamesAllowed = "every connection of a pool logs in as user; configure a second \
                                     database section for a second user",
        useFairQueue = "waiters are always served in the order they came",
        validationInterval = "a borrowed connection is validated on every borrow when \
                              checkConnectionOnBorrow is on; evictionInterval paces the idle checks",
        validatorClassName = "the validation is validationQuery; there is no Java class to load",
        jdbcInterceptors = "there are no JDBC interceptors; query timers and spans come from \
                            Database::timed",
        autoCommentsEnabled = "JDBI's comments have no meaning here: queries are named by \
                               Database::timed"
    )
)]
pub struct DataSourceFactory {
    /// `postgres://host:port/database`, `sqlite:path` or `sqlite::memory:` (a `jdbc:` prefix
    /// is accepted). Required.
    #[config(custom(known_scheme))]
    pub url: DatabaseUrl,
    /// The user to log in as (PostgreSQL), in place of the url's.
    pub user: Option<String>,
    /// The user's password (PostgreSQL): never printed, `check --dump` included. Take it from
    /// the environment (`${DB_PASSWORD}`).
    pub password: Option<Password>,
    /// Driver settings: PostgreSQL's connection parameters (`application_name`, `sslmode`...)
    /// and server settings (`statement_timeout`...), SQLite's pragmas (`journal_mode`...).
    pub properties: BTreeMap<String, String>,
    /// Connections kept open at least.
    #[config(default = 10)]
    pub min_size: u32,
    /// Connections open at most.
    #[config(default = 100, range(min = 1))]
    pub max_size: u32,
    /// Connections opened when the service starts.
    #[config(default = 10)]
    pub initial_size: u32,
    /// How long a request waits for a connection before it is answered 503.
    #[config(default = Duration::seconds(30), custom(positive_duration))]
    pub max_wait_for_connection: Duration,
    /// The query that validates a connection and that the health check runs.
    #[config(default = "/* Health Check */ SELECT 1".to_owned(), length(min = 1))]
    pub validation_query: String,
    /// How long the validation query may take (unset: maxWaitForConnection).
    #[config(inner(custom(positive_duration)))]
    pub validation_query_timeout: Option<Duration>,
    /// Run the validation query on every new connection before the pool takes it.
    #[config(default = true)]
    pub check_connection_on_connect: bool,
    /// Run the validation query before a connection is lent.
    pub check_connection_on_borrow: bool,
    /// Run the validation query when a connection is given back.
    pub check_connection_on_return: bool,
    /// Run the validation query on idle connections every `evictionInterval`.
    #[config(default = true)]
    pub check_connection_while_idle: bool,
    /// How often idle connections are validated, aged and trimmed.
    #[config(default = Duration::seconds(5), custom(positive_duration))]
    pub eviction_interval: Duration,
    /// How long connections beyond minSize stay unused before they are closed.
    #[config(default = Duration::minutes(1), custom(positive_duration))]
    pub min_idle_time: Duration,
    /// Connections older than this are closed (unset: never).
    #[config(inner(custom(positive_duration)))]
    pub max_connection_age: Option<Duration>,
    /// Whether transactions are read-only unless they say otherwise (unset: the database's
    /// default).
    pub read_only_by_default: Option<bool>,
    /// The isolation of transactions unless they say otherwise.
    pub default_transaction_isolation: TransactionIsolation,
    /// A statement run on every new connection (`SET search_path TO orders`...).
    pub initialization_query: Option<String>,
    /// Log each failed validation (at WARN) besides counting it.
    pub log_validation_errors: bool,
    /// Start even when the database cannot be reached, and report it unhealthy until it can.
    pub ignore_exception_on_pre_load: bool,
    /// The migrations folder `db migrate` applies, relative to the working directory.
    #[config(default = "migrations".to_owned(), length(min = 1))]
    pub migrations: String,
}

/// `defaultTransactionIsolation:`, spelled in kebab-case.
///
/// ```
/// use ferrowizard_db::{DataSourceFactory, TransactionIsolation};
///
/// let yaml = "url: sqlite:orders.db\ndefaultTransactionIsolation: read-uncommitted\n";
/// let section: DataSourceFactory = ferrowizard::config::loader(&[]).load_str("database.yaml", yaml).unwrap();
/// assert_eq!(section.default_transaction_isolation, TransactionIsolation::ReadUncommitted);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Config)]
#[config(rename_all = "kebab-case")]
pub enum TransactionIsolation {
    /// The database's own default.
    #[default]
    Default,
    /// Reads see uncommitted writes (SQLite's `read_uncommitted` pragma; PostgreSQL treats it
    /// as read committed).
    ReadUncommitted,
    /// Each statement sees what was committed before it began.
    ReadCommitted,
    /// A transaction sees what was committed before it began.
    RepeatableRead,
    /// Transactions behave as if run one after another.
    Serializable,
}

impl TransactionIsolation {
    /// The name SQL gives it, when it is not the default.
    pub(crate) fn sql(self) -> Option<&'static str> {
        match self {
            TransactionIsolation::Default => None,
            TransactionIsolation::ReadUncommitted => Some("READ UNCOMMITTED"),
            TransactionIsolation::ReadCommitted => Some("READ COMMITTED"),
            TransactionIsolation::RepeatableRead => Some("REPEATABLE READ"),
            TransactionIsolation::Serializable => Some("SERIALIZABLE"),
        }
    }
}

fn known_scheme(url: &DatabaseUrl, _: &()) -> garde::Result {
    match url.backend() {
        Ok(_) => Ok(()),
        Err(why) => Err(garde::Error::new(why)),
    }
}

impl DataSourceFactory {
    fn sizes_fit(&self) -> Result<(), Invalid> {
        if self.min_size > self.max_size {
            return Err(Invalid::at(
                "minSize",
                format!("is {}, above maxSize ({})", self.min_size, self.max_size),
            ));
        }
        if self.initial_size > self.max_size {
            return Err(Invalid::at(
                "initialSize",
                format!(
                    "is {}, above maxSize ({})",
                    self.initial_size, self.max_size
                ),
            ));
        }
        Ok(())
    }
}
