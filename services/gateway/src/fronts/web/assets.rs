//! The web page's files, embedded at build time from `web/dist/` (see the
//! crate's build script), and how they are sent: the content type, an ETag
//! per encoding with `304 Not Modified` on a match, brotli or gzip when the
//! browser accepts them, and caching — content-hashed `/assets/…` for a year
//! (`immutable`), anything else revalidated on every use.

use bytes::Bytes;
use chess_runtime::server::Body;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::Full;

/// One embedded file, in its three encodings.
#[derive(Debug, PartialEq, Eq)]
pub struct Asset {
    pub url: &'static str,
    pub content_type: &'static str,
    /// A hash of the identity encoding (without quotes).
    pub etag: &'static str,
    /// Whether the URL names this content forever (it has the hash in it).
    pub immutable: bool,
    pub identity: &'static [u8],
    pub gzip: &'static [u8],
    pub brotli: &'static [u8],
}

mod generated {
    use super::Asset;
    include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));
}

pub use generated::{APP_JS, FILES, LICENCES, STYLE_CSS};

/// The embedded file at `path`, if any.
pub fn find(path: &str) -> Option<&'static Asset> {
    FILES.iter().find(|a| a.url == path)
}

/// A content coding of a response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Brotli,
    Gzip,
    Identity,
}

impl Coding {
    /// The best coding `accept_encoding` allows: brotli, then gzip, then none.
    /// A coding is accepted when listed (or `*` is) with a q-value above 0.
    pub fn choose(accept_encoding: Option<&str>) -> Self {
        let Some(accepted) = accept_encoding else {
            return Self::Identity;
        };
        let q = |name: &str| -> Option<f32> {
            let mut wildcard = None;
            for item in accepted.split(',') {
                let mut parts = item.split(';');
                let coding = parts.next().unwrap_or("").trim();
                let weight = parts
                    .find_map(|p| p.trim().strip_prefix("q="))
                    .map_or(Some(1.0), |v| v.trim().parse::<f32>().ok())
                    .unwrap_or(0.0);
                if coding.eq_ignore_ascii_case(name) {
                    return Some(weight);
                }
                if coding == "*" {
                    wildcard = Some(weight);
                }
            }
            wildcard
        };
        if q("br").is_some_and(|w| w > 0.0) {
            Self::Brotli
        } else if q("gzip").is_some_and(|w| w > 0.0) {
            Self::Gzip
        } else {
            Self::Identity
        }
    }

    fn header(self) -> Option<&'static str> {
        match self {
            Self::Brotli => Some("br"),
            Self::Gzip => Some("gzip"),
            Self::Identity => None,
        }
    }
}

impl Asset {
    /// The body and the strong ETag of the representation in `coding`.
    fn representation(&self, coding: Coding) -> (&'static [u8], String) {
        match coding {
            Coding::Brotli => (self.brotli, format!("\"{}-br\"", self.etag)),
            Coding::Gzip => (self.gzip, format!("\"{}-gz\"", self.etag)),
            Coding::Identity => (self.identity, format!("\"{}\"", self.etag)),
        }
    }

    /// The answer to `method` (GET or HEAD) with the request's `headers`.
    pub fn respond(&self, method: &Method, headers: &HeaderMap) -> Response<Body> {
        let accept = headers
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok());
        let coding = Coding::choose(accept);
        let (bytes, etag) = self.representation(coding);
        let not_modified = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|tags| matches_any(tags, self.etag));
        let (status, body) = if not_modified {
            (StatusCode::NOT_MODIFIED, Body::empty())
        } else if method == Method::HEAD {
            (StatusCode::OK, Body::empty())
        } else {
            (
                StatusCode::OK,
                Body::new(Full::new(Bytes::from_static(bytes))),
            )
        };
        let mut response = Response::new(body);
        *response.status_mut() = status;
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        if status == StatusCode::OK {
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
        }
        if let Some(name) = coding.header() {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(name));
        }
        h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        if let Ok(value) = HeaderValue::from_str(&etag) {
            h.insert(header::ETAG, value);
        }
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(if self.immutable {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            }),
        );
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        if self.content_type.starts_with("text/html") {
            // The licences page: static HTML with its own inline style.
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
                ),
            );
        }
        response
    }
}

/// Whether an `If-None-Match` list names this content in any encoding
/// (`W/` prefixes ignored: the weak comparison the header calls for).
fn matches_any(tags: &str, etag: &str) -> bool {
    tags.split(',').map(str::trim).any(|tag| {
        if tag == "*" {
            return true;
        }
        let tag = tag.strip_prefix("W/").unwrap_or(tag);
        let Some(inner) = tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
            return false;
        };
        inner == etag
            || inner.strip_suffix("-br") == Some(etag)
            || inner.strip_suffix("-gz") == Some(etag)
    })
}
