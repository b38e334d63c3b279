//! The gate every public call passes before its handler: the one place that
//! bounds the request ([`bounds`](super::bounds)) and resolves its session
//! into a [`Caller`].
//!
//! [`Admit`] wraps each public service of [`routes`](super::routes). It
//! reads the call's one request message off the body (every public RPC takes
//! a single message), checks its fields against their limits and, as the
//! method's [`Access`] asks, the `authorization` metadata against
//! [`Sessions`], then hands the call on with the same bytes and the
//! [`Caller`] in its extensions. A refusal is answered here, in the order a
//! handler used to give it: an oversized field first, then the session.
//!
//! A body that does not hold one whole, uncompressed message is passed on
//! unread: tonic refuses it as it would have, and no handler runs. A call
//! of a method the tables do not know is passed on too (tonic answers
//! UNIMPLEMENTED).

use std::{
    convert::Infallible,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::{Buf as _, Bytes, BytesMut};
use futures::{StreamExt as _, stream};
use http::HeaderMap;
use http_body::Frame;
use http_body_util::{BodyExt as _, BodyStream, StreamBody};
use tonic::{Request, Status, body::Body, server::NamedService};
use tower::Service;

use super::bounds::{self, Access, Admission};
use crate::core::{
    auth::{Session, TokenError},
    sessions::{SessionError, Sessions},
};

/// Largest request message read here; a larger one is left to tonic, which
/// refuses anything over its own limit (4 MiB) before a handler runs.
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// The signed-in player a public call acts for, as its session token
/// vouches; in the request's extensions when the method takes a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller(pub Session);

/// What a handler reads of the [`Caller`] [`Admit`] left in its request.
pub(super) trait CallerOf {
    /// The request's message.
    type Message;
    /// The caller of a method that must be signed in.
    fn caller(&self) -> Result<Session, Status>;
    /// The caller of a method open to all, if signed in.
    fn viewer(&self) -> Option<Session>;
    /// The caller of a method that must be signed in, and the message.
    fn signed_in(self) -> Result<(Session, Self::Message), Status>;
}

impl<T> CallerOf for Request<T> {
    type Message = T;

    fn caller(&self) -> Result<Session, Status> {
        self.viewer()
            .ok_or_else(|| SessionError::from(TokenError::Missing).into())
    }

    fn signed_in(self) -> Result<(Session, T), Status> {
        let session = self.caller()?;
        Ok((session, self.into_inner()))
    }

    fn viewer(&self) -> Option<Session> {
        self.extensions().get::<Caller>().map(|c| c.0.clone())
    }
}

impl From<SessionError> for Status {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::Token(_) => Status::unauthenticated(error.to_string()),
            SessionError::Unavailable => Status::unavailable(error.to_string()),
        }
    }
}

/// A public service behind the gate.
#[derive(Clone, Debug)]
pub struct Admit<S> {
    inner: S,
    sessions: Arc<Sessions>,
}

impl<S> Admit<S> {
    pub fn new(inner: S, sessions: Arc<Sessions>) -> Self {
        Self { inner, sessions }
    }
}

impl<S: NamedService> NamedService for Admit<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for Admit<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // The clone that was made ready is the one that serves the call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let sessions = Arc::clone(&self.sessions);
        Box::pin(async move {
            match admit(request, &sessions).await {
                Ok(request) => inner.call(request).await,
                Err(status) => Ok(status.into_http()),
            }
        })
    }
}

/// The call, with its [`Caller`] if its method takes a session, or why it
/// is refused.
async fn admit(
    request: http::Request<Body>,
    sessions: &Sessions,
) -> Result<http::Request<Body>, Status> {
    let (mut parts, body) = request.into_parts();
    let method = parts.uri.path().rsplit('/').next().unwrap_or_default();
    let (read, rest) = first_message(body).await;
    let admission = match message(&read.data) {
        Some(message) => bounds::admit(method, message),
        None => Admission::Unread,
    };
    if let Admission::Checked(access) = admission {
        if let Some(session) = session(access, &parts.headers, sessions).await? {
            parts.extensions.insert(Caller(session));
        }
    } else if let Admission::Refused(status) = admission {
        return Err(status);
    }
    let replay = stream::iter(read.frames).chain(BodyStream::new(rest));
    Ok(http::Request::from_parts(
        parts,
        Body::new(StreamBody::new(replay)),
    ))
}

/// The session a method of `access` acts for.
async fn session(
    access: Access,
    headers: &HeaderMap,
    sessions: &Sessions,
) -> Result<Option<Session>, SessionError> {
    match access {
        Access::Anyone => Ok(None),
        Access::SignedIn => sessions.authenticate(headers).await.map(Some),
        Access::MaybeSignedIn => sessions.optional(headers).await,
    }
}

/// The frames read off a body, to be handed on as they came, and the bytes
/// of data among them.
struct Read {
    frames: Vec<Result<Frame<Bytes>, Status>>,
    data: BytesMut,
}

/// Reads `body` until it holds a whole gRPC message (or ends, fails, or
/// holds more than [`MAX_MESSAGE`]); the rest is left unread.
async fn first_message(mut body: Body) -> (Read, Body) {
    let mut read = Read {
        frames: Vec::new(),
        data: BytesMut::new(),
    };
    while needed(&read.data).is_some_and(|n| n > read.data.len()) {
        let Some(frame) = body.frame().await else {
            break;
        };
        let stop = match &frame {
            Ok(frame) => match frame.data_ref() {
                Some(data) => {
                    read.data.extend_from_slice(data);
                    false
                }
                None => true,
            },
            Err(_) => true,
        };
        read.frames.push(frame);
        if stop {
            break;
        }
    }
    (read, body)
}

/// How many bytes the first message takes with its 5-byte prefix, once the
/// prefix is in; `None` for one too large to read here.
fn needed(data: &[u8]) -> Option<usize> {
    let Some(mut prefix) = data.get(..5) else {
        return Some(5);
    };
    prefix.advance(1);
    let length = usize::try_from(prefix.get_u32()).ok()?;
    (length <= MAX_MESSAGE).then_some(5 + length)
}

/// The first message of a gRPC body, if it is whole and uncompressed.
fn message(data: &[u8]) -> Option<&[u8]> {
    let total = needed(data)?;
    match data.first() {
        Some(0) if data.len() >= total => data.get(5..total),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(message: &[u8]) -> Vec<u8> {
        let mut data = vec![0];
        data.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
        data.extend_from_slice(message);
        data
    }

    #[test]
    fn the_first_message_is_found_when_whole() {
        let data = framed(b"abc");
        assert_eq!(message(&data), Some(&b"abc"[..]));
        assert_eq!(message(&data[..6]), None);
        assert_eq!(message(&data[..3]), None);
        let mut compressed = data.clone();
        compressed[0] = 1;
        assert_eq!(message(&compressed), None);
        assert_eq!(needed(&[0, 0xff, 0xff, 0xff, 0xff]), None);
    }
}
