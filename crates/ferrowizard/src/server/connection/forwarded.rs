//! Who sent a request when it came through a proxy: RFC 7239 `Forwarded`, or
//! `X-Forwarded-For`, `X-Forwarded-Proto` and `X-Forwarded-Host`, trusted per connector
//! (`useForwardedHeaders`, and optionally only from `trustedProxies`).
//!
//! A connector that trusts them replaces the request's `ConnectInfo<SocketAddr>` with the
//! client's address (as Jetty's `ForwardedRequestCustomizer` makes `getRemoteAddr` the
//! client's), so the request log and every handler see the client; the proxy's own address and
//! the forwarded scheme and host are in [`Client`]. A header that does not parse is ignored,
//! never an error: the request keeps its peer's address.
//!
//! The `Forwarded` parser is written here: no maintained crate parses RFC 7239, and its
//! grammar (comma-separated elements of `;`-separated `name=value` pairs, values plain or
//! quoted) is small.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use http::HeaderMap;
use http::request::Parts;
use ipnet::IpNet;

/// The client of a request as the server sees it: its address, and the scheme and host it
/// asked for, taken from a trusted proxy's headers when the connector has
/// `useForwardedHeaders`. An axum extractor.
///
/// ```
/// use ferrowizard::server::Client;
///
/// async fn whoami(client: Client) -> String {
///     format!("{} over {}", client.addr.ip(), client.scheme)
/// }
/// let _: axum::routing::MethodRouter = axum::routing::get(whoami);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    /// The client's address: the connection's peer, or the address a trusted proxy names
    /// (port 0 when the proxy gives none).
    pub addr: SocketAddr,
    /// `http` or `https`: the connector's, or the one a trusted proxy names.
    pub scheme: &'static str,
    /// The host the client asked for, when a trusted proxy names it.
    pub host: Option<String>,
    /// The proxy's address, when the client was taken from its headers.
    pub proxy: Option<SocketAddr>,
}

/// What a trusting connector found in a request's proxy headers: inserted into the request's
/// extensions next to the replaced `ConnectInfo`.
#[derive(Clone, Debug)]
pub(crate) struct Forwarded {
    proxy: SocketAddr,
    scheme: Option<&'static str>,
    host: Option<String>,
}

impl Forwarded {
    /// The scheme the proxy names, if any.
    pub(crate) fn scheme(&self) -> Option<&'static str> {
        self.scheme
    }
}

/// A connection over TLS: in the extensions of every request of an https connector.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tls;

impl<S: Send + Sync> FromRequestParts<S> for Client {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Client, Infallible> {
        let ext = &parts.extensions;
        let addr = ext
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0);
        let own = if ext.get::<Tls>().is_some() {
            "https"
        } else {
            "http"
        };
        Ok(match ext.get::<Forwarded>() {
            Some(f) => Client {
                addr,
                scheme: f.scheme.unwrap_or(own),
                host: f.host.clone(),
                proxy: Some(f.proxy),
            },
            None => Client {
                addr,
                scheme: own,
                host: None,
                proxy: None,
            },
        })
    }
}

/// A connector's trust in proxy headers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Trust {
    /// `None` (no `trustedProxies`): every peer's headers are trusted, and the first address
    /// they name is the client's (DropWizard's behaviour). Else only these peers' headers
    /// are, and the client is the last address named that is not one of these.
    proxies: Option<Vec<IpNet>>,
}

impl Trust {
    /// Trust in the proxies `networks` names (CIDR, or a single address); the configuration
    /// checks them.
    /// A network that does not parse trusts no one (it fails closed, not open).
    pub(crate) fn new(networks: &[String]) -> Trust {
        Trust {
            proxies: (!networks.is_empty()).then(|| {
                networks
                    .iter()
                    .filter_map(|n| parse_network(n).ok())
                    .collect()
            }),
        }
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.proxies.iter().flatten().any(|n| n.contains(&ip))
    }

    /// The client a request's headers name, if `peer` is trusted and they parse.
    pub(crate) fn resolve(
        &self,
        peer: SocketAddr,
        headers: &HeaderMap,
    ) -> Option<(SocketAddr, Forwarded)> {
        if self.proxies.is_some() && !self.trusts(peer.ip()) {
            return None;
        }
        let hops = match headers.get_all("forwarded").iter().next() {
            Some(_) => forwarded_hops(headers)?,
            None => x_forwarded_hops(headers)?,
        };
        let chosen = if self.proxies.is_none() {
            hops.first()?
        } else {
            hops.iter()
                .rev()
                .find(|h| !self.trusts(h.addr.ip()))
                .or_else(|| hops.first())?
        };
        Some((
            chosen.addr,
            Forwarded {
                proxy: peer,
                scheme: chosen.scheme,
                host: chosen.host.clone(),
            },
        ))
    }
}

/// An IPv4 address carried in IPv6 (`::ffff:10.1.2.3`, what a dual-stack socket reports) as
/// IPv4, so that IPv4 networks match it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// One proxy's view: the address it received from, and the scheme and host it was asked for.
#[derive(Clone, Debug, PartialEq)]
struct Hop {
    addr: SocketAddr,
    scheme: Option<&'static str>,
    host: Option<String>,
}

fn scheme(text: &str) -> Option<&'static str> {
    if text.eq_ignore_ascii_case("https") {
        Some("https")
    } else if text.eq_ignore_ascii_case("http") {
        Some("http")
    } else {
        None
    }
}

/// A node of `for=` or an `X-Forwarded-For` item: `192.0.2.1`, `192.0.2.1:80`,
/// `[2001:db8::1]`, `[2001:db8::1]:80`, or a bare IPv6 address.
fn node(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr);
    }
    let bare = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    bare.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, 0))
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<Vec<&'h str>> {
    let mut parts = Vec::new();
    for value in headers.get_all(name) {
        parts.extend(value.to_str().ok()?.split(','));
    }
    Some(parts.into_iter().map(str::trim).collect())
}

/// `X-Forwarded-For` (required) with `X-Forwarded-Proto` and `X-Forwarded-Host`: the proto
/// and host are matched to an address by position when they list as many, else the last
/// (the nearest proxy's) applies to every address.
fn x_forwarded_hops(headers: &HeaderMap) -> Option<Vec<Hop>> {
    let fors = header_text(headers, "x-forwarded-for")?;
    if fors.is_empty() || fors == [""] {
        return None;
    }
    let addrs: Vec<SocketAddr> = fors.iter().map(|f| node(f)).collect::<Option<_>>()?;
    let protos = header_text(headers, "x-forwarded-proto").unwrap_or_default();
    let hosts = header_text(headers, "x-forwarded-host").unwrap_or_default();
    let at = |list: &[&str], i: usize| -> Option<String> {
        let v = if list.len() == addrs.len() {
            list.get(i)
        } else {
            list.last()
        };
        v.filter(|v| !v.is_empty()).map(|v| (*v).to_owned())
    };
    Some(
        addrs
            .iter()
            .enumerate()
            .map(|(i, addr)| Hop {
                addr: *addr,
                scheme: at(&protos, i).and_then(|p| scheme(&p)),
                host: at(&hosts, i).filter(|h| valid_host(h)),
            })
            .collect(),
    )
}

fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
}

/// RFC 7239: `Forwarded: for=192.0.2.60;proto=http;host=example.com, for="[2001:db8::1]:80"`.
/// Every element must name a `for` that is an address (obfuscated and `unknown` nodes make
/// the header unusable: the request keeps its peer).
fn forwarded_hops(headers: &HeaderMap) -> Option<Vec<Hop>> {
    let mut hops = Vec::new();
    for value in headers.get_all("forwarded") {
        let text = value.to_str().ok()?;
        for element in split_outside_quotes(text, ',') {
            let mut hop = (None, None, None);
            for pair in split_outside_quotes(element, ';') {
                let pair = pair.trim();
                if pair.is_empty() {
                    continue;
                }
                let (name, value) = pair.split_once('=')?;
                let value = unquote(value.trim())?;
                match name.trim().to_ascii_lowercase().as_str() {
                    "for" => hop.0 = Some(node(&value)?),
                    "proto" => hop.1 = Some(scheme(&value)?),
                    "host" if valid_host(&value) => hop.2 = Some(value),
                    "host" => return None,
                    _ => {}
                }
            }
            hops.push(Hop {
                addr: hop.0?,
                scheme: hop.1,
                host: hop.2,
            });
        }
    }
    (!hops.is_empty()).then_some(hops)
}

/// `text` split at `sep` where it is not inside a quoted string.
fn split_outside_quotes(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A token, or a quoted string with its escapes resolved; `None` for an unterminated quote.
fn unquote(value: &str) -> Option<String> {
    let Some(inner) = value.strip_prefix('"') else {
        return Some(value.to_owned());
    };
    let inner = inner.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' { chars.next()? } else { c });
    }
    Some(out)
}

/// A network of `trustedProxies`: `10.0.0.0/8`, `2001:db8::/32`, or one address.
pub(crate) fn parse_network(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("{text:?} is not a network (10.0.0.0/8) or an address (10.1.2.3)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in list {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    fn peer(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), 40000)
    }

    fn resolve(
        trust: &Trust,
        from: &str,
        list: &[(&str, &str)],
    ) -> Option<(String, Option<&'static str>, Option<String>)> {
        trust
            .resolve(peer(from), &headers(list))
            .map(|(addr, f)| (addr.to_string(), f.scheme, f.host))
    }

    #[test]
    fn any_peer_is_trusted_and_the_first_address_is_the_client_without_a_list() {
        let trust = Trust::default();
        type Want<'a> = Option<(&'a str, Option<&'a str>, Option<&'a str>)>;
        let cases: &[(&[(&str, &str)], Want<'_>)] = &[
            (
                &[("x-forwarded-for", "203.0.113.7")],
                Some(("203.0.113.7:0", None, None)),
            ),
            (
                &[
                    ("x-forwarded-for", "203.0.113.7, 10.0.0.2"),
                    ("x-forwarded-proto", "https"),
                    ("x-forwarded-host", "shop.example"),
                ],
                Some(("203.0.113.7:0", Some("https"), Some("shop.example"))),
            ),
            (
                &[("x-forwarded-for", "2001:db8::7")],
                Some(("[2001:db8::7]:0", None, None)),
            ),
            (
                &[("x-forwarded-for", "[2001:db8::7]:4711")],
                Some(("[2001:db8::7]:4711", None, None)),
            ),
            (
                &[(
                    "forwarded",
                    r#"for=192.0.2.60;proto=https;by=203.0.113.43, for="[2001:db8:cafe::17]:4711""#,
                )],
                Some(("192.0.2.60:0", Some("https"), None)),
            ),
            (
                &[("Forwarded", r#"For="192.0.2.43:47011";Host="a.example""#)],
                Some(("192.0.2.43:47011", None, Some("a.example"))),
            ),
            // `Forwarded` wins over the X- headers.
            (
                &[
                    ("x-forwarded-for", "198.51.100.1"),
                    ("forwarded", "for=192.0.2.1"),
                ],
                Some(("192.0.2.1:0", None, None)),
            ),
            // Malformed: ignored, the request keeps its peer.
            (&[("x-forwarded-for", "not-an-address")], None),
            (&[("x-forwarded-for", "203.0.113.7, junk")], None),
            (&[("x-forwarded-for", "")], None),
            (&[("forwarded", "for=_hidden")], None),
            (&[("forwarded", "for=unknown")], None),
            (&[("forwarded", r#"for="192.0.2.1"#)], None),
            (&[("forwarded", "proto=https")], None),
            (&[("forwarded", "for=192.0.2.1;proto=gopher")], None),
            (&[("forwarded", "for")], None),
            (&[("x-forwarded-proto", "https")], None),
            (&[], None),
            // An unknown proto in the X- form is left out, the address still counts.
            (
                &[
                    ("x-forwarded-for", "203.0.113.7"),
                    ("x-forwarded-proto", "gopher"),
                ],
                Some(("203.0.113.7:0", None, None)),
            ),
        ];
        for (list, want) in cases {
            let want = want.map(|(a, s, h)| (a.to_owned(), s, h.map(str::to_owned)));
            assert_eq!(resolve(&trust, "10.0.0.1", list), want, "{list:?}");
        }
    }

    #[test]
    fn with_a_list_only_trusted_peers_count_and_the_client_is_the_last_untrusted_address() {
        let trust = Trust::new(&["10.0.0.0/8".into(), "192.168.1.1".into()]);
        // A spoofed header from a peer outside the list changes nothing.
        assert_eq!(
            resolve(&trust, "198.51.100.9", &[("x-forwarded-for", "1.2.3.4")]),
            None
        );
        // A dual-stack socket's mapped IPv4 peer is matched as IPv4.
        assert!(resolve(&trust, "::ffff:10.1.1.1", &[("x-forwarded-for", "1.2.3.4")]).is_some());
        // The client prepended a spoofed address; the trusted proxy appended the real one.
        assert_eq!(
            resolve(
                &trust,
                "10.0.0.5",
                &[("x-forwarded-for", "6.6.6.6, 203.0.113.7, 10.0.0.9")]
            ),
            Some(("203.0.113.7:0".into(), None, None))
        );
        assert_eq!(
            resolve(
                &trust,
                "192.168.1.1",
                &[(
                    "forwarded",
                    "for=6.6.6.6;proto=http, for=203.0.113.7;proto=https"
                )]
            ),
            Some(("203.0.113.7:0".into(), Some("https"), None))
        );
        // Every address a trusted proxy: the first is the client.
        assert_eq!(
            resolve(
                &trust,
                "10.0.0.5",
                &[("x-forwarded-for", "10.0.0.7, 10.0.0.9")]
            ),
            Some(("10.0.0.7:0".into(), None, None))
        );
        // Proto and host by position when they list as many as the addresses.
        assert_eq!(
            resolve(
                &trust,
                "10.0.0.5",
                &[
                    ("x-forwarded-for", "6.6.6.6, 203.0.113.7"),
                    ("x-forwarded-proto", "http, https")
                ]
            ),
            Some(("203.0.113.7:0".into(), Some("https"), None))
        );
    }

    #[test]
    fn a_list_with_no_usable_network_trusts_no_one() {
        let trust = Trust::new(&["not a network".into()]);
        assert_eq!(
            resolve(&trust, "10.0.0.1", &[("x-forwarded-for", "1.2.3.4")]),
            None
        );
    }

    #[test]
    fn networks_are_cidr_or_single_addresses() {
        assert!(parse_network("10.0.0.0/8").is_ok());
        assert!(parse_network("2001:db8::/32").is_ok());
        assert!(parse_network(" 127.0.0.1 ").is_ok());
        assert!(parse_network("10.0.0.0/33").is_err());
        assert!(parse_network("localhost").is_err());
    }

    #[test]
    fn quoted_strings_split_and_unquote() {
        assert_eq!(
            split_outside_quotes(r#"a="x,y",b"#, ','),
            vec![r#"a="x,y""#, "b"]
        );
        assert_eq!(unquote(r#""a\"b""#).as_deref(), Some("a\"b"));
        assert_eq!(unquote("\"open"), None);
    }
}
