//! Plain HTTP on the public port: the pages a browser opens, beside gRPC and
//! gRPC-Web on the same socket.
//!
//! [`front`] wraps the gRPC service and sorts every request once:
//!
//! - a gRPC or gRPC-Web call (content type `application/grpc…`) goes on to
//!   tonic, untouched;
//! - `GET` (or `HEAD`) of a known path gets a page: [`routes`];
//! - any other path is 404, another method on a known path 405.
//!
//! Pages are built from the same backend calls the public API makes and keep
//! no state of their own.
//!
//! - [`routes`]: the paths and what answers them.
//! - [`assets`]: the web page's script, style sheet and licences, embedded.
//! - [`game`]: `/games/<id>` (the game as HTML) and `/games/<id>.pgn`.
//! - [`html`]: escaping and the frame every page shares.
//! - [`PublicUrl`]: the address players reach the server at, for links.

pub mod assets;
pub mod game;
pub mod html;
pub mod routes;

use std::{
    convert::Infallible,
    fmt,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    pin::Pin,
    str::FromStr,
    sync::Arc,
    task::{Context, Poll},
};

use chess_runtime::server::HttpService;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use tonic::body::Body;

use crate::clients::Backends;

/// Wraps the gRPC service of the public port in the page router (see
/// [`chess_runtime::Server::with_front`]).
pub fn front(backends: Backends) -> impl Fn(HttpService) -> HttpService + Send + Sync + 'static {
    let pages = Arc::new(routes::Pages::new(backends));
    move |grpc| {
        HttpService::new(Front {
            grpc,
            pages: Arc::clone(&pages),
        })
    }
}

/// The dispatcher: gRPC to tonic, everything else to the pages.
#[derive(Clone)]
struct Front {
    grpc: HttpService,
    pages: Arc<routes::Pages>,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl tower::Service<Request<Body>> for Front {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.grpc.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Answer {
        if is_grpc(&request) {
            return self.grpc.call(request);
        }
        let pages = Arc::clone(&self.pages);
        Box::pin(async move {
            Ok(pages
                .answer(request.method(), request.uri().path(), request.headers())
                .await)
        })
    }
}

/// Whether `request` is a gRPC or gRPC-Web call: `application/grpc`,
/// `application/grpc+proto`, `application/grpc-web`, `application/grpc-web-text`
/// and their variants all start the same way.
fn is_grpc<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.get(..16)
                .is_some_and(|start| start.eq_ignore_ascii_case("application/grpc"))
        })
}

/// Whether a page answers `method`.
fn readable(method: &Method) -> bool {
    method == Method::GET || method == Method::HEAD
}

/// A response with `body` of `content_type`, not to be cached (games change
/// with every move) nor sniffed as anything else.
fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut response = Response::new(Body::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// An HTML page. Every page loads the web page's script (which shows the
/// view of its address in place of the server's content) and nothing else:
/// scripts only from this origin, calls only to it, images only from it or
/// inline in the style sheet (the pieces), so that nothing injected could
/// run or send data elsewhere.
fn page(status: StatusCode, html: String) -> Response<Body> {
    let mut response = respond(status, "text/html; charset=utf-8", html);
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    response
}

/// The 404 page with `message` (plain text; it is escaped).
fn not_found(message: &str) -> Response<Body> {
    page(
        StatusCode::NOT_FOUND,
        html::frame(
            "Not found",
            &format!("<h1>Not found</h1>\n<p>{}</p>\n", html::escape(message)),
        ),
    )
}

/// The 405 answer for a known path asked with another method.
fn method_not_allowed() -> Response<Body> {
    let mut response = page(
        StatusCode::METHOD_NOT_ALLOWED,
        html::frame(
            "Method not allowed",
            "<h1>Method not allowed</h1>\n<p>This address only answers GET.</p>\n",
        ),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    response
}

/// The address players reach the server at (`https://chess.example.org`,
/// `http://127.0.0.1:50051`), without a trailing slash: links in emails are
/// built on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl(String);

impl PublicUrl {
    /// The default for a gateway listening on `addr`: `http://<addr>`, with
    /// 127.0.0.1 for an unspecified host (0.0.0.0 or [::]). Only the operator
    /// knows the name others reach the machine by (the host name is often
    /// not resolvable by whoever reads the email), so an unspecified host
    /// gets the address that at least works on this machine, as the address
    /// `chess-stack` prints does.
    pub fn for_listener(addr: SocketAddr) -> Self {
        let addr = if addr.ip().is_unspecified() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        } else {
            addr
        };
        Self(format!("http://{addr}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The link to game `id`.
    pub fn game(&self, id: &str) -> String {
        format!("{}/games/{id}", self.0)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PublicUrl {
    type Err = String;

    /// An `http` or `https` URL with a host and optionally a path prefix (a
    /// reverse proxy's), no query or fragment.
    fn from_str(s: &str) -> Result<Self, String> {
        let trimmed = s.trim_end_matches('/');
        let uri: http::Uri = trimmed
            .parse()
            .map_err(|_| "not a URL (e.g. https://chess.example.org)".to_owned())?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err("must start with http:// or https://".to_owned());
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err("must name a host".to_owned());
        }
        if trimmed.contains(['?', '#']) {
            return Err("must not have a query or fragment".to_owned());
        }
        Ok(Self(trimmed.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_checked_and_lose_their_trailing_slash() {
        let url: PublicUrl = "https://chess.example.org/".parse().unwrap();
        assert_eq!(url.game("abc"), "https://chess.example.org/games/abc");
        let prefixed: PublicUrl = "https://example.org/chess".parse().unwrap();
        assert_eq!(prefixed.game("x"), "https://example.org/chess/games/x");
        let port: PublicUrl = "http://[::1]:8080".parse().unwrap();
        assert_eq!(port.as_str(), "http://[::1]:8080");
        for bad in [
            "",
            "chess.example.org",
            "ftp://example.org",
            "http://",
            "https://example.org/?a=b",
            "https://exa mple.org",
        ] {
            assert!(bad.parse::<PublicUrl>().is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn the_default_comes_from_the_listen_address() {
        let at = |s: &str| PublicUrl::for_listener(s.parse().unwrap()).0;
        assert_eq!(at("127.0.0.1:50051"), "http://127.0.0.1:50051");
        assert_eq!(at("0.0.0.0:8080"), "http://127.0.0.1:8080");
        assert_eq!(at("[::]:8080"), "http://127.0.0.1:8080");
        assert_eq!(at("[::1]:9"), "http://[::1]:9");
        assert_eq!(at("192.0.2.7:443"), "http://192.0.2.7:443");
    }

    #[test]
    fn grpc_and_grpc_web_are_told_from_pages() {
        let with = |content_type: Option<&str>| {
            let mut request = Request::new(());
            if let Some(value) = content_type {
                request
                    .headers_mut()
                    .insert(header::CONTENT_TYPE, value.parse().unwrap());
            }
            is_grpc(&request)
        };
        for grpc in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc-web",
            "application/grpc-web+proto",
            "application/grpc-web-text",
            "Application/GRPC",
        ] {
            assert!(with(Some(grpc)), "{grpc}");
        }
        assert!(!with(None));
        assert!(!with(Some("text/html")));
        assert!(!with(Some("application/json")));
        assert!(!with(Some("application/gr")));
    }
}
