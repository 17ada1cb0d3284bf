//! A service that keeps data: accounts and their orders, in SQLite by default and in
//! PostgreSQL by one line of its configuration (`database.url`), with migrations applied by
//! `orders db migrate`. It knows its users and calls another service: with `jwt:` configured,
//! `POST /login` (Basic credentials of `users:`) issues a token, and `GET /orders/{id}/price`
//! (that token as a Bearer) prices an order with a quote from `realtime`, called through the
//! `quotes:` HTTP client.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrowizard::axum::extract::{Path, State};
use ferrowizard::axum::http::StatusCode;
use ferrowizard::axum::response::{IntoResponse, Response};
use ferrowizard::axum::routing::{get, post};
use ferrowizard::axum::{Json, Router};
use ferrowizard::config::{Duration, FrameworkConfiguration, Password, positive_duration};
use ferrowizard::{Application, Command, Config, Environment, ErrorMessage, RunError};
use ferrowizard_auth::{
    Auth, Authentication, BasicCredentials, CachePolicy, CachingAuthenticator, JwtAuthenticator,
    JwtFactory, Principal, secrets_equal,
};
use ferrowizard_client::{ClientError, HttpClient, HttpClientConfiguration};
use ferrowizard_db::{DataSourceFactory, Database, DbError};
use serde::{Deserialize, Serialize};
use sqlx::Any;

/// ferrowizard's sections plus `database:`, the users and their tokens, and the client of
/// the quotes service.
#[derive(Clone, Debug, Config)]
pub struct OrdersConfig {
    /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    #[config(framework)]
    pub framework: FrameworkConfiguration,
    /// Where accounts and orders are kept.
    pub database: DataSourceFactory,
    /// Who may log in (`POST /login` with Basic credentials): user name and password.
    pub users: BTreeMap<String, Password>,
    /// The tokens `POST /login` issues (signed with the first key that has a `secret`) and the
    /// priced routes accept. Unset: no login and no priced routes.
    pub jwt: Option<JwtFactory>,
    /// How long a token from `POST /login` is good for.
    #[config(default = Duration::minutes(15), custom(positive_duration))]
    pub token_lifetime: Duration,
    /// The users' checks kept, so that a password is not compared on every login.
    pub authentication_cache_policy: CachePolicy,
    /// The client of the quotes service (realtime).
    pub quotes: HttpClientConfiguration,
    /// Where the quotes service listens.
    #[config(default = "http://127.0.0.1:8080".to_owned(), length(min = 1))]
    pub quotes_url: String,
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

/// A user who logged in, or whose token was accepted.
#[derive(Clone, Debug)]
pub struct User(String);

impl Principal for User {
    fn name(&self) -> &str {
        &self.0
    }
}

/// What `POST /login` needs to issue tokens.
struct Issuer {
    key: jsonwebtoken::EncodingKey,
    algorithm: jsonwebtoken::Algorithm,
    issuer: Option<String>,
    audience: Option<String>,
    lifetime: u64,
}

/// `POST /login`'s answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    /// A JSON Web Token for `Authorization: Bearer`.
    pub token: String,
    /// Seconds it is good for.
    pub expires_in: u64,
}

async fn login(State(issuer): State<Arc<Issuer>>, Auth(user): Auth<User>) -> Response {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut claims = serde_json::json!({"sub": user.0, "iat": now, "exp": now + issuer.lifetime});
    if let Some(iss) = &issuer.issuer {
        claims["iss"] = iss.clone().into();
    }
    if let Some(aud) = &issuer.audience {
        claims["aud"] = aud.clone().into();
    }
    let header = jsonwebtoken::Header::new(issuer.algorithm);
    match jsonwebtoken::encode(&header, &claims, &issuer.key) {
        Ok(token) => Json(Token {
            token,
            expires_in: issuer.lifetime,
        })
        .into_response(),
        Err(e) => {
            tracing::error!(target: "orders::login", error = %e, "cannot sign a token");
            ErrorMessage::of(StatusCode::INTERNAL_SERVER_ERROR).into_response()
        }
    }
}

/// An order with its price: the quote of its item times its quantity.
#[derive(Debug, Serialize)]
pub struct Priced {
    /// The order.
    pub order: Order,
    /// The item's last price, from the quotes service.
    pub price: f64,
    /// `price` times the quantity.
    pub total: f64,
}

/// The quote the quotes service answers (the fields read here).
#[derive(Debug, Deserialize)]
struct Quote {
    price: f64,
}

/// What the priced routes use: the orders and the quotes service.
#[derive(Clone)]
struct Pricing {
    db: Database<Any>,
    quotes: HttpClient,
    url: Arc<str>,
}

/// Why an order could not be priced.
enum PriceError {
    Db(DbError),
    Client(ClientError),
    /// The quotes service knows no such symbol, or answered something else than a quote.
    Quote(StatusCode, String),
}

impl IntoResponse for PriceError {
    fn into_response(self) -> Response {
        match self {
            PriceError::Db(e) => e.into_response(),
            PriceError::Client(e) => e.into_response(),
            PriceError::Quote(status, message) => {
                ErrorMessage::new(status, message).into_response()
            }
        }
    }
}

async fn price(
    State(pricing): State<Pricing>,
    Auth(_user): Auth<User>,
    Path(id): Path<String>,
) -> Result<Json<Priced>, PriceError> {
    let db = &pricing.db;
    let mut conn = db.acquire().await.map_err(PriceError::Db)?;
    let select = sqlx::query_as("SELECT id, account_id, item, quantity FROM orders WHERE id = $1")
        .bind(id)
        .fetch_one(&mut *conn);
    let order: Order = db
        .timed("orders.by_id", select)
        .await
        .map_err(PriceError::Db)?;
    drop(conn);
    let url = format!("{}/realtime/quotes/{}", pricing.url, order.item);
    let response = pricing.quotes.get(&url).await.map_err(PriceError::Client)?;
    let status = response.status();
    let body = response
        .into_body()
        .bytes()
        .await
        .map_err(PriceError::Client)?;
    if status == StatusCode::NOT_FOUND {
        return Err(PriceError::Quote(
            StatusCode::NOT_FOUND,
            format!("no quote for {}", order.item),
        ));
    }
    let quote: Quote = serde_json::from_slice(&body).map_err(|_| {
        PriceError::Quote(
            StatusCode::BAD_GATEWAY,
            format!("the quotes service answered {status}"),
        )
    })?;
    let total = quote.price * order.quantity as f64;
    Ok(Json(Priced {
        order,
        price: quote.price,
        total,
    }))
}

/// The routes that need a user: `POST /login` behind Basic, the priced ones behind a token.
fn authenticated(
    config: &OrdersConfig,
    jwt: &JwtFactory,
    pricing: Pricing,
    env: &Environment,
) -> Result<Router, RunError> {
    let signing = jwt
        .keys
        .iter()
        .find_map(|k| Some((k.secret.as_ref()?, k.algorithm)))
        .ok_or("jwt.keys: orders signs its tokens with an HMAC key: give one a secret")?;
    let algorithm = match signing.1 {
        ferrowizard_auth::JwtAlgorithm::Hs384 => jsonwebtoken::Algorithm::HS384,
        ferrowizard_auth::JwtAlgorithm::Hs512 => jsonwebtoken::Algorithm::HS512,
        _ => jsonwebtoken::Algorithm::HS256,
    };
    let issuer = Arc::new(Issuer {
        key: jsonwebtoken::EncodingKey::from_secret(signing.0.expose().as_bytes()),
        algorithm,
        issuer: jwt.issuer.clone(),
        audience: jwt.audience.first().cloned(),
        lifetime: config.token_lifetime.get().as_secs().max(1),
    });
    let users = Arc::new(config.users.clone());
    let check = move |c: BasicCredentials| {
        let users = users.clone();
        async move {
            Ok(users
                .get(&c.username)
                .is_some_and(|p| secrets_equal(&c.password, p.expose()))
                .then_some(User(c.username)))
        }
    };
    let basic = CachingAuthenticator::new(
        check,
        &config.authentication_cache_policy,
        "users",
        env.metrics(),
    )?;
    let bearer = JwtAuthenticator::new(jwt, |claims: ferrowizard_auth::Claims| {
        Some(User(claims.get("sub")?.as_str()?.to_owned()))
    })?;
    let login = Router::new()
        .route("/login", post(login))
        .with_state(issuer)
        .layer(Authentication::new().basic("orders", basic));
    let priced = Router::new()
        .route("/orders/{id}/price", get(price))
        .with_state(pricing)
        .layer(Authentication::new().bearer("orders", bearer));
    Ok(login.merge(priced))
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
        let quotes = config.quotes.build("quotes", env)?;
        let routes = Router::new()
            .route("/accounts", post(create_account))
            .route("/accounts/{id}", get(account))
            .route("/accounts/{id}/orders", post(place_order).get(orders_of))
            .route("/orders/{id}", get(order));
        let mut routes = routes.with_state(db.clone());
        if let Some(jwt) = &config.jwt {
            let pricing = Pricing {
                db,
                quotes,
                url: Arc::from(config.quotes_url.trim_end_matches('/')),
            };
            routes = routes.merge(authenticated(config, jwt, pricing, env)?);
        }
        env.routes(routes);
        Ok(())
    }

    fn commands(&self) -> Vec<Command<OrdersConfig>> {
        vec![ferrowizard_db::command(|c: &OrdersConfig| {
            vec![("orders", &c.database)]
        })]
    }
}
