//! Bounded error statuses: no answer of a server carries more than
//! [`MAX_MESSAGE_BYTES`] of `grpc-message` or [`MAX_DETAILS_BYTES`] of
//! `grpc-status-details-bin`.
//!
//! An error message may quote what the caller sent (an unknown id, a name);
//! an oversized one would make the status trailer huge, and an HTTP/2
//! client that refuses a header list that large drops the whole connection
//! it shares with every other call (the gateway's connection to a service
//! carries all users' calls). The layer caps both fields of every response,
//! in the headers of a trailers-only answer and in the trailers of a
//! streamed one, whatever code made the status. It also reports a request
//! body that is not the RPC's message as INVALID_ARGUMENT: tonic calls it
//! INTERNAL, but the fault is the caller's.

use std::{
    borrow::Cow,
    task::{Context, Poll},
};

use http::{HeaderMap, HeaderValue};
use http_body_util::BodyExt as _;
use percent_encoding::{AsciiSet, CONTROLS, percent_decode, utf8_percent_encode};

/// The most bytes of a status message a server sends, as encoded on the
/// wire.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// The most bytes of status details a server sends; larger details are
/// dropped.
pub const MAX_DETAILS_BYTES: usize = 4096;

const STATUS: &str = "grpc-status";
const MESSAGE: &str = "grpc-message";
const DETAILS: &str = "grpc-status-details-bin";
/// What marks a cut message.
const ELLIPSIS: &str = "…";

/// The characters gRPC percent-encodes in a status message: everything
/// outside printable ASCII, and `%` itself.
const ENCODED: &AsciiSet = &CONTROLS.add(b'%');

/// `message` (decoded) shortened to fit [`MAX_MESSAGE_BYTES`] once encoded,
/// cut at a character boundary and marked with an ellipsis.
fn shorten(message: &str) -> String {
    let encoded_len = |s: &str| utf8_percent_encode(s, ENCODED).map(str::len).sum::<usize>();
    let budget = MAX_MESSAGE_BYTES - encoded_len(ELLIPSIS);
    let mut used = 0;
    let mut end = 0;
    for (at, c) in message.char_indices() {
        let mut buf = [0u8; 4];
        let cost = encoded_len(c.encode_utf8(&mut buf));
        if used + cost > budget {
            break;
        }
        used += cost;
        end = at + c.len_utf8();
    }
    format!("{}{ELLIPSIS}", &message[..end])
}

/// The start of the message tonic gives a request body it cannot decode.
const UNDECODABLE: &str = "failed to decode Protobuf message";

/// Caps the status fields of `headers` (response headers or trailers), and
/// reports a request that is not the RPC's message as the caller's error
/// (INVALID_ARGUMENT) rather than the server's (INTERNAL, as tonic does).
fn cap(headers: &mut HeaderMap) {
    if headers.get(STATUS).is_some_and(|s| s.as_bytes() == b"13")
        && headers.get(MESSAGE).is_some_and(|m| {
            percent_decode(m.as_bytes())
                .decode_utf8_lossy()
                .starts_with(UNDECODABLE)
        })
    {
        headers.insert(STATUS, HeaderValue::from_static("3"));
    }
    if let Some(value) = headers.get(MESSAGE)
        && value.len() > MAX_MESSAGE_BYTES
    {
        let decoded: Cow<'_, str> = percent_decode(value.as_bytes()).decode_utf8_lossy();
        let short = shorten(&decoded);
        let encoded = utf8_percent_encode(&short, ENCODED).to_string();
        match HeaderValue::from_str(&encoded) {
            Ok(value) => {
                headers.insert(MESSAGE, value);
            }
            Err(_) => {
                headers.remove(MESSAGE);
            }
        }
    }
    if headers
        .get(DETAILS)
        .is_some_and(|value| value.len() > MAX_DETAILS_BYTES)
    {
        headers.remove(DETAILS);
    }
}

chess_telemetry::wrapping_layer!(
    /// The layer that caps every response's status (see the module).
    StatusCapLayer,
    /// See [`StatusCapLayer`].
    StatusCap,
);

impl<S, B> tower::Service<http::Request<B>> for StatusCap<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            let (mut parts, body) = response.into_parts();
            cap(&mut parts.headers);
            let body = body.map_frame(|mut frame| {
                if let Some(trailers) = frame.trailers_mut() {
                    cap(trailers);
                }
                frame
            });
            Ok(http::Response::from_parts(
                parts,
                tonic::body::Body::new(body),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(headers: &HeaderMap) -> String {
        let value = headers.get(MESSAGE).unwrap();
        percent_decode(value.as_bytes())
            .decode_utf8()
            .unwrap()
            .into_owned()
    }

    #[test]
    fn an_undecodable_request_is_the_callers_error() {
        let mut headers = HeaderMap::new();
        headers.insert(STATUS, HeaderValue::from_static("13"));
        headers.insert(
            MESSAGE,
            HeaderValue::from_static(
                "failed%20to%20decode%20Protobuf%20message:%20invalid%20wire%20type",
            ),
        );
        cap(&mut headers);
        assert_eq!(headers.get(STATUS).unwrap(), "3");
        // Other internal errors stay what they are.
        let mut headers = HeaderMap::new();
        headers.insert(STATUS, HeaderValue::from_static("13"));
        headers.insert(MESSAGE, HeaderValue::from_static("database%20error"));
        cap(&mut headers);
        assert_eq!(headers.get(STATUS).unwrap(), "13");
    }

    #[test]
    fn short_statuses_are_untouched() {
        let mut headers = HeaderMap::new();
        headers.insert(MESSAGE, HeaderValue::from_static("no%20game%20x"));
        headers.insert(DETAILS, HeaderValue::from_static("AAAA"));
        let before = headers.clone();
        cap(&mut headers);
        assert_eq!(headers, before);
    }

    #[test]
    fn a_long_message_is_cut_to_the_cap_and_still_decodes() {
        // Multi-byte characters, encoded three escapes each, so a cut in
        // the middle of one would not decode.
        let long = format!("no player named {}", "é".repeat(100_000));
        let encoded = utf8_percent_encode(&long, ENCODED).to_string();
        let mut headers = HeaderMap::new();
        headers.insert(MESSAGE, HeaderValue::from_str(&encoded).unwrap());
        headers.insert(
            DETAILS,
            HeaderValue::from_str(&"A".repeat(MAX_DETAILS_BYTES + 1)).unwrap(),
        );
        cap(&mut headers);
        assert!(headers.get(MESSAGE).unwrap().len() <= MAX_MESSAGE_BYTES);
        let shown = message(&headers);
        assert!(shown.starts_with("no player named éé"), "{shown}");
        assert!(shown.ends_with(ELLIPSIS));
        assert!(headers.get(DETAILS).is_none());
    }
}
