//! A service that keeps data: accounts and their orders, in SQLite by default and in
//! PostgreSQL by one line of its configuration (`database.url`), with migrations applied by
//! `orders db migrate`.

use ferrowizard::axum::extract::{Path, State};
use ferrowizard::axum::http::StatusCode;
use ferrowizard::axum::routing::{get, post};
use ferrowizard::axum::{Json, Router};
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::{Application, Command, Config, Environment, RunError};
use ferrowizard_db::{DataSourceFactory, Database, DbError};
use serde::{Deserialize, Serialize};
use sqlx::Any;

/// ferrowizard's sections plus `database:`.
#[derive(Clone, Debug, Config)]
pub struct OrdersConfig {
    /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    #[config(framework)]
    pub framework: FrameworkConfiguration,
    /// Where accounts and orders are kept.
    pub database: DataSourceFactory,
}

/// An account, as the API shows it.
#[derive(Debug, Serialize, sqlx::FromRow)]
pub struct Account {
    /// Its id, made by the service.
    pub id: String,
    /// Its holder's name.
    pub name: String,
}

/// `POST /accounts`'s body.
#[derive(Debug, Deserialize)]
pub struct NewAccount {
    /// The holder's name.
    pub name: String,
}

/// An order, as the API shows it.
#[derive(Debug, Serialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    /// Its id, made by the service.
    pub id: String,
    /// The account that placed it.
    pub account_id: String,
    /// What was ordered.
    pub item: String,
    /// How many.
    pub quantity: i64,
}

/// `POST /accounts/{id}/orders`'s body.
#[derive(Debug, Deserialize)]
pub struct NewOrder {
    /// What is ordered.
    pub item: String,
    /// How many (at least one: the table refuses less, answered 409).
    pub quantity: i64,
}

type Db = State<Database<Any>>;

/// A new id: 64 random bits in hex, the same on either engine.
fn new_id() -> String {
    format!("{:016x}", fastrand::u64(..))
}

async fn create_account(
    State(db): Db,
    Json(new): Json<NewAccount>,
) -> Result<(StatusCode, Json<Account>), DbError> {
    let mut conn = db.acquire().await?;
    let insert =
        sqlx::query_as("INSERT INTO accounts (id, name) VALUES ($1, $2) RETURNING id, name")
            .bind(new_id())
            .bind(new.name)
            .fetch_one(&mut *conn);
    let account = db.timed("accounts.insert", insert).await?;
    Ok((StatusCode::CREATED, Json(account)))
}

async fn account(State(db): Db, Path(id): Path<String>) -> Result<Json<Account>, DbError> {
    let mut conn = db.acquire().await?;
    let select = sqlx::query_as("SELECT id, name FROM accounts WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *conn);
    Ok(Json(db.timed("accounts.by_id", select).await?))
}

async fn place_order(
    State(db): Db,
    Path(account): Path<String>,
    Json(new): Json<NewOrder>,
) -> Result<(StatusCode, Json<Order>), DbError> {
    let mut conn = db.acquire().await?;
    let insert = sqlx::query_as(
        "INSERT INTO orders (id, account_id, item, quantity) VALUES ($1, $2, $3, $4) \
         RETURNING id, account_id, item, quantity",
    )
    .bind(new_id())
    .bind(account)
    .bind(new.item)
    .bind(new.quantity)
    .fetch_one(&mut *conn);
    let order = db.timed("orders.insert", insert).await?;
    Ok((StatusCode::CREATED, Json(order)))
}

async fn order(State(db): Db, Path(id): Path<String>) -> Result<Json<Order>, DbError> {
    let mut conn = db.acquire().await?;
    let select = sqlx::query_as("SELECT id, account_id, item, quantity FROM orders WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *conn);
    Ok(Json(db.timed("orders.by_id", select).await?))
}

async fn orders_of(
    State(db): Db,
    Path(account): Path<String>,
) -> Result<Json<Vec<Order>>, DbError> {
    let mut conn = db.acquire().await?;
    let select = sqlx::query_as(
        "SELECT id, account_id, item, quantity FROM orders WHERE account_id = $1 ORDER BY id",
    )
    .bind(account)
    .fetch_all(&mut *conn);
    Ok(Json(db.timed("orders.by_account", select).await?))
}

/// The service.
pub struct Orders;

impl Application for Orders {
    type Config = OrdersConfig;

    fn name(&self) -> &str {
        "orders"
    }

    async fn run(&self, config: &OrdersConfig, env: &mut Environment) -> Result<(), RunError> {
        let db: Database<Any> = config.database.build("orders", env)?;
        let routes = Router::new()
            .route("/accounts", post(create_account))
            .route("/accounts/{id}", get(account))
            .route("/accounts/{id}/orders", post(place_order).get(orders_of))
            .route("/orders/{id}", get(order));
        env.routes(routes.with_state(db));
        Ok(())
    }

    fn commands(&self) -> Vec<Command<OrdersConfig>> {
        vec![ferrowizard_db::command(|c: &OrdersConfig| {
            vec![("orders", &c.database)]
        })]
    }
}
