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

pub mod assets;
pub mod game;
pub mod html;
pub mod routes;

use std::{
    convert::Infallible,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use chess_runtime::server::{Body, HttpService};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};

use crate::core::clients::Backends;

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

#[cfg(test)]
mod tests {
    use super::*;

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
