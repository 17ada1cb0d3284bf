//! The orders service's read-by-key on plain axum, its pool chosen by `--pool`, for
//! `bench/db.sh`: the same handler on a bare sqlx pool with sqlx's defaults, which ping a
//! connection before lending it (`bare`), on a bare sqlx pool that does not, as ferrowizard's
//! does not unless `checkConnectionOnBorrow` says so (`bare-unchecked`), on ferrowizard's pool
//! with its metrics, timers and spans (`ferrowizard`), and on ferrowizard's pool taken
//! directly, with none of them (`untimed`): the metrics' cost on their own is `ferrowizard`
//! against `untimed`.
//!
//!   orders-pool-bench --pool bare|bare-unchecked|ferrowizard|untimed --url postgres://... \
//!     --port 8090 --size 8

use std::net::SocketAddr;

use ferrowizard::Environment;
use ferrowizard::axum::extract::{Path, State};
use ferrowizard::axum::routing::get;
use ferrowizard::axum::{Json, Router};
use ferrowizard_db::{DataSourceFactory, Database, DatabaseUrl, DbError};
use orders::Order;
use sqlx::{PgPool, Postgres};

const BY_ID: &str = "SELECT id, account_id, item, quantity FROM orders WHERE id = $1";

async fn bare(State(pool): State<PgPool>, Path(id): Path<String>) -> Result<Json<Order>, DbError> {
    let mut conn = pool.acquire().await?;
    let order = sqlx::query_as(BY_ID).bind(id).fetch_one(&mut *conn).await?;
    Ok(Json(order))
}

async fn timed(
    State(db): State<Database<Postgres>>,
    Path(id): Path<String>,
) -> Result<Json<Order>, DbError> {
    let mut conn = db.acquire().await?;
    let select = sqlx::query_as(BY_ID).bind(id).fetch_one(&mut *conn);
    Ok(Json(db.timed("orders.by_id", select).await?))
}

async fn untimed(
    State(db): State<Database<Postgres>>,
    Path(id): Path<String>,
) -> Result<Json<Order>, DbError> {
    let mut conn = db.pool().acquire().await?;
    let order = sqlx::query_as(BY_ID).bind(id).fetch_one(&mut *conn).await?;
    Ok(Json(order))
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[tokio::main]
async fn main() -> Result<(), ferrowizard::RunError> {
    let args: Vec<String> = std::env::args().collect();
    let pool = arg(&args, "--pool").ok_or("--pool bare|bare-unchecked|ferrowizard|untimed")?;
    let url = arg(&args, "--url").ok_or("--url postgres://...")?;
    let port: u16 = arg(&args, "--port")
        .unwrap_or_else(|| "8090".into())
        .parse()?;
    let size: u32 = arg(&args, "--size").unwrap_or_else(|| "8".into()).parse()?;
    let routes = match pool.as_str() {
        "bare" | "bare-unchecked" => {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .test_before_acquire(pool == "bare")
                .max_connections(size)
                .min_connections(size)
                .connect(&url)
                .await?;
            Router::new()
                .route("/orders/{id}", get(bare))
                .with_state(pool)
        }
        "ferrowizard" | "untimed" => {
            let section = DataSourceFactory {
                url: DatabaseUrl::new(url),
                min_size: size,
                max_size: size,
                initial_size: size,
                ..DataSourceFactory::default()
            };
            let mut env = Environment::default();
            let db: Database<Postgres> = section.build("orders", &mut env)?;
            ferrowizard::Managed::start(&db).await?;
            let handler = if pool == "ferrowizard" {
                get(timed)
            } else {
                get(untimed)
            };
            Router::new().route("/orders/{id}", handler).with_state(db)
        }
        other => {
            return Err(
                format!("--pool {other}: bare, bare-unchecked, ferrowizard or untimed").into(),
            );
        }
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("listening on {}", listener.local_addr()?);
    ferrowizard::axum::serve(listener, routes).await?;
    Ok(())
}
