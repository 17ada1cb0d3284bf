//! Which responses `gzip:` compresses: at least `minimumEntitySize` bytes (or of unknown
//! length), and of a type in `compressedMimeTypes`, or, when that list is empty, of any type
//! but those compression does not help (images other than SVG, gRPC, server-sent events,
//! as tower-http's default predicate decides).

use std::sync::Arc;

use http::{Response, header};
use http_body::Body;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};

/// A tower-http compression predicate built from `gzip:`.
#[derive(Clone, Debug)]
pub struct Compressible {
    size: SizeAbove,
    /// Media types (`text/plain`), lower case, without parameters; empty: every type but
    /// the excluded ones.
    types: Arc<[String]>,
}

impl Compressible {
    pub(crate) fn new(minimum_entity_size: u64, types: &[String]) -> Compressible {
        Compressible {
            size: SizeAbove::new(minimum_entity_size),
            types: types.iter().map(|t| essence(t)).collect(),
        }
    }
}

/// A media type without its parameters, lower case: `Text/Plain; charset=utf-8` is
/// `text/plain`.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

impl Predicate for Compressible {
    fn should_compress<B: Body>(&self, response: &Response<B>) -> bool {
        if !self.size.should_compress(response) {
            return false;
        }
        if self.types.is_empty() {
            return NotForContentType::GRPC.should_compress(response)
                && NotForContentType::IMAGES.should_compress(response)
                && NotForContentType::SSE.should_compress(response);
        }
        response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| {
                let t = t.split(';').next().unwrap_or_default().trim();
                self.types
                    .iter()
                    .any(|listed| listed.eq_ignore_ascii_case(t))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(content_type: Option<&str>, len: usize) -> Response<String> {
        let mut r = Response::new("x".repeat(len));
        if let Some(t) = content_type {
            r.headers_mut()
                .insert(header::CONTENT_TYPE, t.parse().unwrap());
        }
        r
    }

    #[test]
    fn size_and_listed_types_decide() {
        let listed = Compressible::new(10, &["text/plain".into(), "Application/JSON".into()]);
        let every = Compressible::new(10, &[]);
        for (content_type, len, by_list, by_default) in [
            (Some("text/plain"), 10, true, true),
            (Some("text/plain; charset=utf-8"), 10, true, true),
            (Some("application/json"), 10, true, true),
            (Some("text/plain"), 9, false, false),
            (Some("text/html"), 100, false, true),
            (Some("image/png"), 100, false, false),
            (Some("image/svg+xml"), 100, false, true),
            (Some("text/event-stream"), 100, false, false),
            (None, 100, false, true),
        ] {
            let r = response(content_type, len);
            assert_eq!(
                listed.should_compress(&r),
                by_list,
                "{content_type:?} {len}"
            );
            assert_eq!(
                every.should_compress(&r),
                by_default,
                "{content_type:?} {len}"
            );
        }
    }
}
