//! JSON Web Tokens through `JwtAuthenticator`: each key of `jwt:` at work, and the tokens that
//! must be refused. Keys are made by the system's `openssl`; tokens are signed with
//! jsonwebtoken.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ferrowizard_auth::{Authenticator, BearerToken, JwtAuthenticator, JwtFactory, Principal};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

const SECRET: &str = "an-hmac-secret-of-32-bytes-or-more";

#[derive(Clone, Debug)]
struct User(String);

impl Principal for User {
    fn name(&self) -> &str {
        &self.0
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn factory(yaml: &str) -> JwtFactory {
    ferrowizard::config::loader(&[])
        .load_str("jwt.yaml", yaml)
        .unwrap_or_else(|r| panic!("{r}"))
}

/// Whether `token` is admitted by the authenticator of `yaml`.
async fn admits(yaml: &str, token: &str) -> bool {
    let jwt = JwtAuthenticator::new(&factory(yaml), |claims| {
        Some(User(claims.get("sub")?.as_str()?.to_owned()))
    })
    .unwrap();
    jwt.authenticate(BearerToken::new(token))
        .await
        .unwrap()
        .is_some()
}

fn hs256(claims: &Value) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap()
}

fn hs_yaml(extra: &str) -> String {
    format!("keys: [{{algorithm: HS256, secret: {SECRET}}}]\n{extra}")
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Catches: a good token refused, or a bad signature, an expired token, one not yet valid or
/// an `alg: none` one admitted.
#[tokio::test]
async fn an_hmac_token_is_verified_with_its_secret_and_its_times() {
    let t = now();
    let yaml = hs_yaml("");
    assert!(admits(&yaml, &hs256(&json!({"sub": "ada", "exp": t + 60}))).await);
    let forged = encode(
        &Header::new(Algorithm::HS256),
        &json!({"sub": "ada", "exp": t + 60}),
        &EncodingKey::from_secret(b"another-secret-of-32-bytes-or-more"),
    )
    .unwrap();
    assert!(!admits(&yaml, &forged).await);
    assert!(!admits(&yaml, &hs256(&json!({"sub": "ada", "exp": t - 120}))).await);
    assert!(
        !admits(&yaml, &hs256(&json!({"sub": "ada"}))).await,
        "no exp"
    );
    assert!(
        !admits(
            &yaml,
            &hs256(&json!({"sub": "ada", "exp": t + 600, "nbf": t + 300}))
        )
        .await
    );
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&json!({"sub": "ada", "exp": t + 60}))
    );
    assert!(!admits(&yaml, &none).await, "alg none");
    for garbage in ["", "a.b.c", "not a token", "ey.ey.ey", &"x".repeat(100)] {
        assert!(!admits(&yaml, garbage).await, "{garbage:?}");
    }
}

/// Catches: leeway not applied to exp.
#[tokio::test]
async fn leeway_admits_a_token_just_expired() {
    let token = hs256(&json!({"sub": "ada", "exp": now() - 10}));
    assert!(admits(&hs_yaml("leeway: 60s\n"), &token).await);
    assert!(!admits(&hs_yaml("leeway: 0s\n"), &token).await);
}

/// Catches: issuer not checked.
#[tokio::test]
async fn issuer_must_match() {
    let t = now();
    let yaml = hs_yaml("issuer: https://login.example.com\n");
    assert!(
        admits(
            &yaml,
            &hs256(&json!({"sub": "ada", "exp": t + 60, "iss": "https://login.example.com"}))
        )
        .await
    );
    assert!(
        !admits(
            &yaml,
            &hs256(&json!({"sub": "ada", "exp": t + 60, "iss": "https://evil.example.com"}))
        )
        .await
    );
    assert!(!admits(&yaml, &hs256(&json!({"sub": "ada", "exp": t + 60}))).await);
}

/// Catches: audience not checked, or a token meant for another service admitted where no
/// audience is configured.
#[tokio::test]
async fn audience_must_name_this_service() {
    let t = now();
    let yaml = hs_yaml("audience: [orders]\n");
    assert!(
        admits(
            &yaml,
            &hs256(&json!({"sub": "ada", "exp": t + 60, "aud": "orders"}))
        )
        .await
    );
    assert!(
        !admits(
            &yaml,
            &hs256(&json!({"sub": "ada", "exp": t + 60, "aud": "billing"}))
        )
        .await
    );
    assert!(
        !admits(
            &hs_yaml(""),
            &hs256(&json!({"sub": "ada", "exp": t + 60, "aud": "billing"}))
        )
        .await
    );
}

/// Catches: maxTokenSize not bounding what is read.
#[tokio::test]
async fn max_token_size_refuses_longer_tokens_unread() {
    let token = hs256(&json!({"sub": "ada", "exp": now() + 60, "pad": "p".repeat(9_000)}));
    assert!(!admits(&hs_yaml(""), &token).await);
    assert!(admits(&hs_yaml("maxTokenSize: 16KiB\n"), &token).await);
}

/// Catches: an RSA public key file not read or not used, a kid not choosing its key, an HMAC
/// token admitted by an RSA key.
#[tokio::test]
async fn rsa_keys_from_files_chosen_by_kid() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        openssl(
            dir.path(),
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                &format!("{name}.pem"),
            ],
        );
        openssl(
            dir.path(),
            &[
                "pkey",
                "-in",
                &format!("{name}.pem"),
                "-pubout",
                "-out",
                &format!("{name}.pub.pem"),
            ],
        );
    }
    let yaml = format!(
        "keys:\n  - {{kid: a, algorithm: RS256, publicKeyFile: {}}}\n  - {{kid: b, algorithm: RS256, publicKeyFile: {}}}\n",
        dir.path().join("a.pub.pem").display(),
        dir.path().join("b.pub.pem").display()
    );
    let sign = |kid: &str, key: &str| {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_owned());
        let pem = std::fs::read(dir.path().join(format!("{key}.pem"))).unwrap();
        encode(
            &header,
            &json!({"sub": "ada", "exp": now() + 60}),
            &EncodingKey::from_rsa_pem(&pem).unwrap(),
        )
        .unwrap()
    };
    assert!(admits(&yaml, &sign("a", "a")).await);
    assert!(admits(&yaml, &sign("b", "b")).await);
    assert!(
        !admits(&yaml, &sign("a", "b")).await,
        "b's signature under a's kid"
    );
    assert!(!admits(&yaml, &hs256(&json!({"sub": "ada", "exp": now() + 60}))).await);
}

/// Catches: a JWKS file's EC key not read, or not chosen by kid.
#[tokio::test]
async fn an_ec_key_from_a_jwks_file() {
    let dir = tempfile::tempdir().unwrap();
    openssl(
        dir.path(),
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "ec.pem",
        ],
    );
    openssl(
        dir.path(),
        &[
            "pkey",
            "-in",
            "ec.pem",
            "-pubout",
            "-outform",
            "DER",
            "-out",
            "ec.pub.der",
        ],
    );
    // An uncompressed P-256 point ends the public key's DER: 0x04, x, y.
    let der = std::fs::read(dir.path().join("ec.pub.der")).unwrap();
    let point = &der[der.len() - 64..];
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "ec1", "use": "sig",
        "x": b64(&point[..32]), "y": b64(&point[32..])}]});
    std::fs::write(dir.path().join("jwks.json"), jwks.to_string()).unwrap();
    let yaml = format!("jwksFile: {}\n", dir.path().join("jwks.json").display());
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("ec1".into());
    let pem = std::fs::read(dir.path().join("ec.pem")).unwrap();
    let token = encode(
        &header,
        &json!({"sub": "ada", "exp": now() + 60}),
        &EncodingKey::from_ec_pem(&pem).unwrap(),
    )
    .unwrap();
    assert!(admits(&yaml, &token).await);
    header.kid = Some("other".into());
    let token = encode(
        &header,
        &json!({"sub": "ada", "exp": now() + 60}),
        &EncodingKey::from_ec_pem(&pem).unwrap(),
    )
    .unwrap();
    assert!(!admits(&yaml, &token).await);
}

/// Catches: a key without what verifies it, or a short HMAC secret, accepted.
#[test]
fn keys_that_cannot_verify_are_refused_where_they_are() {
    let load = |yaml: &str| {
        ferrowizard::config::loader(&[])
            .load_str::<JwtFactory>("jwt.yaml", yaml)
            .unwrap_err()
            .to_string()
    };
    assert!(load("{}\n").contains("name at least one key, or a jwksFile"));
    assert!(load("keys: [{algorithm: HS256, secret: short}]\n").contains("fewer than 32 bytes"));
    assert!(
        load("keys: [{algorithm: RS256, secret: an-hmac-secret-of-32-bytes-or-more}]\n")
            .contains("public key file")
    );
    let dump = serde_json::to_string(&factory(&hs_yaml(""))).unwrap();
    assert!(!dump.contains(SECRET), "{dump}");
}
