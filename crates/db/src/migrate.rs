//! `db migrate`, `db status` and `db rollback`: the migrations folder a section names, applied
//! with sqlx's migrations (a table `_sqlx_migrations` with each file's checksum), each file in a
//! transaction of its own, one file at a time so that a failure names its file.

use std::path::Path;

use clap::{Arg, ArgAction, ArgMatches};
use ferrowizard::config::Configuration;
use ferrowizard::{Command, RunError};
use sqlx::migrate::{AppliedMigration, Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::{AnyConnection, Connection};

use crate::config::DataSourceFactory;
use crate::connect;

/// Where an application's configuration keeps its databases, by name (the first is the one
/// `db` works on unless `--database` names another): see [`command`]'s example.
pub type Databases<C> = fn(&C) -> Vec<(&'static str, &DataSourceFactory)>;

/// The `db` command of an application: `db migrate CONFIG`, `db status CONFIG` and
/// `db rollback CONFIG [--count N]`, each with `--database NAME` and `--set` overrides, as
/// dropwizard-migrations' `db` command. Add it to [`Application::commands`].
///
/// ```
/// use ferrowizard::config::FrameworkConfiguration;
/// use ferrowizard::{Command, Config};
/// use ferrowizard_db::DataSourceFactory;
///
/// /// The service's configuration.
/// #[derive(Clone, Debug, Config)]
/// pub struct OrdersConfig {
///     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
///     #[config(framework)]
///     pub framework: FrameworkConfiguration,
///     /// The orders.
///     pub database: DataSourceFactory,
/// }
///
/// let db: Command<OrdersConfig> = ferrowizard_db::command(|c| vec![("orders", &c.database)]);
/// assert_eq!(db.name(), "db");
/// ```
///
/// [`Application::commands`]: ferrowizard::Application::commands
pub fn command<C: Configuration + Send + Sync + 'static>(databases: Databases<C>) -> Command<C> {
    let config = || {
        [
            Arg::new("config")
                .value_name("CONFIG")
                .help("The YAML (or .json) configuration file")
                .required(true),
            Arg::new("set")
                .long("set")
                .value_name("PATH=VALUE")
                .help("Override a value (see `check --help`)")
                .action(ArgAction::Append),
            Arg::new("database")
                .long("database")
                .value_name("NAME")
                .help("The database (the first the application names, unless given)"),
        ]
    };
    let cli = clap::Command::new("db")
        .about("Apply, list or roll back the database's migrations")
        .subcommand_required(true)
        .subcommand(
            clap::Command::new("migrate")
                .about("Apply the pending migrations, in order")
                .args(config()),
        )
        .subcommand(
            clap::Command::new("status")
                .about("List the applied and the pending migrations")
                .args(config()),
        )
        .subcommand(
            clap::Command::new("rollback")
                .about("Revert the last applied migrations, with their .down.sql files")
                .args(config())
                .arg(
                    Arg::new("count")
                        .long("count")
                        .value_name("N")
                        .default_value("1")
                        .value_parser(clap::value_parser!(u32).range(1..)),
                ),
        );
    Command::new(
        cli,
        move |args| async move { run::<C>(databases, args).await },
    )
}

async fn run<C: Configuration>(databases: Databases<C>, args: ArgMatches) -> Result<(), RunError> {
    let Some((action, args)) = args.subcommand() else {
        return Err("a subcommand is required: migrate, status or rollback".into());
    };
    let path = args
        .get_one::<String>("config")
        .cloned()
        .unwrap_or_default();
    let overrides: Vec<String> = args
        .get_many::<String>("set")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    let config: C = ferrowizard::config::load(&path, &overrides).map_err(|r| r.to_string())?;
    let listed = databases(&config);
    let (name, section) = match args.get_one::<String>("database") {
        Some(wanted) => listed
            .iter()
            .find(|(n, _)| n == wanted)
            .copied()
            .ok_or_else(|| {
                let names: Vec<&str> = listed.iter().map(|(n, _)| *n).collect();
                format!(
                    "no database named {wanted:?} (the application has {})",
                    names.join(", ")
                )
            })?,
        None => *listed.first().ok_or("the application names no database")?,
    };
    let plan = connect::plan(section)?;
    let migrator = Migrator::new(Path::new(&section.migrations))
        .await
        .map_err(|e| format!("migrations folder {}: {e}", section.migrations))?;
    sqlx::any::install_default_drivers();
    let mut conn = AnyConnection::connect(&plan.url)
        .await
        .map_err(|e| format!("database {name}: cannot connect to {}: {e}", plan.target))?;
    if let Some(statement) = &section.initialization_query {
        // The schema the service reads (`SET search_path ...`) is the one migrated.
        <sqlx::Any as crate::driver::Driver>::execute(&mut conn, statement)
            .await
            .map_err(|e| format!("database {name}: initializationQuery: {e}"))?;
    }
    // Locked first, so that two runs do not both make the table.
    conn.lock().await?;
    let outcome = match conn.ensure_migrations_table().await {
        Err(e) => Err(e.into()),
        Ok(()) => match action {
            "migrate" => migrate(&mut conn, &migrator).await,
            "status" => status(&mut conn, &migrator).await,
            "rollback" => {
                let count = args.get_one::<u32>("count").copied().unwrap_or(1);
                rollback(&mut conn, &migrator, count).await
            }
            other => Err(format!("no such subcommand: {other}").into()),
        },
    };
    // The command's own error, if any, comes first; then the unlock's.
    let unlocked = conn.unlock().await;
    let _ = conn.close().await;
    outcome.map_err(|e| format!("database {name}: {e}"))?;
    unlocked.map_err(|e| format!("database {name}: cannot release the migration lock: {e}").into())
}

/// The file a migration was read from, as the folder names it.
fn file(m: &Migration) -> String {
    let suffix = match m.migration_type {
        MigrationType::Simple => ".sql",
        MigrationType::ReversibleUp => ".up.sql",
        MigrationType::ReversibleDown => ".down.sql",
    };
    format!("{}_{}{suffix}", m.version, m.description.replace(' ', "_"))
}

/// The migrations that apply (not the `.down.sql` ones), in order.
fn ups(migrator: &Migrator) -> impl Iterator<Item = &Migration> {
    migrator
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
}

/// The applied migrations, refusing a file changed or gone since it was applied.
async fn applied(
    conn: &mut AnyConnection,
    migrator: &Migrator,
) -> Result<Vec<AppliedMigration>, RunError> {
    if let Some(version) = conn.dirty_version().await? {
        return Err(format!(
            "migration {version} was left partly applied: repair the database by hand, then \
             delete its row from _sqlx_migrations"
        )
        .into());
    }
    let applied = conn.list_applied_migrations().await?;
    for a in &applied {
        match ups(migrator).find(|m| m.version == a.version) {
            Some(m) if m.checksum != a.checksum => {
                return Err(format!(
                    "{} was changed after it was applied (its checksum differs): restore it, \
                     and put the change in a new migration",
                    file(m)
                )
                .into());
            }
            Some(_) => {}
            None => {
                return Err(format!(
                    "migration {} was applied, but its file is no longer in the folder",
                    a.version
                )
                .into());
            }
        }
    }
    Ok(applied)
}

async fn migrate(conn: &mut AnyConnection, migrator: &Migrator) -> Result<(), RunError> {
    let applied = applied(conn, migrator).await?;
    let mut count = 0;
    for m in ups(migrator) {
        if applied.iter().any(|a| a.version == m.version) {
            continue;
        }
        conn.apply(m).await.map_err(|e| {
            // A file marked `-- no-transaction` runs statement by statement.
            let kept = if m.no_tx {
                "its statements before the failing one were applied"
            } else {
                "nothing of it was applied"
            };
            match e {
                MigrateError::ExecuteMigration(source, _) | MigrateError::Execute(source) => {
                    format!("{}: {source} ({kept})", file(m))
                }
                other => format!("{}: {other}", file(m)),
            }
        })?;
        println!("applied {}", file(m));
        count += 1;
    }
    println!("{count} migrations applied, {} before", applied.len());
    Ok(())
}

async fn status(conn: &mut AnyConnection, migrator: &Migrator) -> Result<(), RunError> {
    if let Some(version) = conn.dirty_version().await? {
        println!(
            "{:<8} {version} (left partly applied: repair it by hand)",
            "dirty"
        );
    }
    let applied = conn.list_applied_migrations().await?;
    let mut pending = 0;
    for m in ups(migrator) {
        let state = match applied.iter().find(|a| a.version == m.version) {
            Some(a) if a.checksum != m.checksum => "changed",
            Some(_) => "applied",
            None => {
                pending += 1;
                "pending"
            }
        };
        println!("{state:<8} {}", file(m));
    }
    for a in &applied {
        if !ups(migrator).any(|m| m.version == a.version) {
            println!("{:<8} {} (no file)", "missing", a.version);
        }
    }
    println!("{} applied, {pending} pending", applied.len());
    Ok(())
}

async fn rollback(
    conn: &mut AnyConnection,
    migrator: &Migrator,
    count: u32,
) -> Result<(), RunError> {
    let mut applied = applied(conn, migrator).await?;
    applied.sort_by_key(|a| std::cmp::Reverse(a.version));
    // Every .down.sql is found before any is run: a missing one reverts nothing.
    let mut downs = Vec::new();
    for a in applied.iter().take(count as usize) {
        let down = migrator
            .iter()
            .find(|m| m.version == a.version && m.migration_type.is_down_migration())
            .ok_or_else(|| {
                format!(
                    "migration {} has no .down.sql file, so it cannot be rolled back (nothing \
                     was rolled back)",
                    a.version
                )
            })?;
        downs.push(down);
    }
    for down in downs {
        conn.revert(down)
            .await
            .map_err(|e| format!("{}: {e}", file(down)))?;
        println!("rolled back {}", file(down));
    }
    Ok(())
}
