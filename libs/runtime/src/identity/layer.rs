//! Assertions on the wire: [`Signer`] and its [`Mint`] interceptor put a
//! fresh one on every outgoing call; [`VerifyLayer`] checks them on every
//! incoming call and hands the [`Claims`] to the handlers.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use chess_domain::Timestamp;
use tonic::{Status, metadata::MetadataValue, service::interceptor::InterceptedService};

use super::{AssertionError, Claims, HEADER, InternalKey, LIFETIME, MAX_FIELD_BYTES, assertion};
use crate::Channel;

/// Calls open to anyone: Kubernetes probes cannot sign, and reflection
/// reveals only the schema.
const OPEN_PREFIXES: [&str; 2] = ["/grpc.health.v1.Health/", "/grpc.reflection."];

/// Mints assertions for one calling service.
#[derive(Clone, Debug)]
pub struct Signer {
    key: InternalKey,
    caller: Arc<str>,
}

impl Signer {
    /// Signs as `caller` with `key`.
    pub fn new(key: InternalKey, caller: &str) -> Self {
        Self {
            key,
            caller: caller.into(),
        }
    }

    /// The calling service's name.
    pub fn caller(&self) -> &str {
        &self.caller
    }

    /// An assertion for a call acting for `player` in `game` (either may be
    /// none), valid for [`LIFETIME`] from now.
    pub fn mint(&self, player: Option<&str>, game: Option<&str>) -> Result<String, Status> {
        self.mint_expiring(player, game, Timestamp::now().after(LIFETIME))
    }

    /// An assertion as [`mint`](Self::mint) makes, expiring at `expires`.
    pub fn mint_expiring(
        &self,
        player: Option<&str>,
        game: Option<&str>,
        expires: Timestamp,
    ) -> Result<String, Status> {
        for (what, field) in [("player", player), ("game", game)] {
            if field.is_some_and(|f| f.len() > MAX_FIELD_BYTES) {
                return Err(Status::invalid_argument(format!(
                    "the {what} id is longer than {MAX_FIELD_BYTES} bytes"
                )));
            }
        }
        Ok(assertion::sign(
            &self.key,
            &self.caller,
            player,
            game,
            expires,
        ))
    }

    /// An interceptor that puts a fresh assertion for `player` in `game`
    /// on every call.
    pub fn bound(&self, player: Option<&str>, game: Option<&str>) -> Mint {
        Mint {
            signer: self.clone(),
            player: player.map(Into::into),
            game: game.map(Into::into),
        }
    }

    /// `channel` with every call signed for `player` in `game`.
    pub fn channel(&self, channel: Channel, player: Option<&str>, game: Option<&str>) -> Signed {
        InterceptedService::new(channel, self.bound(player, game))
    }
}

/// Puts a fresh assertion on each call.
#[derive(Clone, Debug)]
pub struct Mint {
    signer: Signer,
    player: Option<Arc<str>>,
    game: Option<Arc<str>>,
}

impl tonic::service::Interceptor for Mint {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        let assertion = self
            .signer
            .mint(self.player.as_deref(), self.game.as_deref())?;
        let value = MetadataValue::try_from(assertion)
            .map_err(|_| Status::internal("the caller assertion is not valid metadata"))?;
        request.metadata_mut().insert(HEADER, value);
        Ok(request)
    }
}

/// A channel whose every call carries an assertion.
pub type Signed = InterceptedService<Channel, Mint>;

/// Refuses every call without a valid assertion (the open health and
/// reflection services aside) and puts the [`Claims`] of a valid one in the
/// request's extensions.
#[derive(Clone, Debug)]
pub struct VerifyLayer {
    key: InternalKey,
}

impl VerifyLayer {
    pub fn new(key: InternalKey) -> Self {
        Self { key }
    }
}

impl<S> tower::Layer<S> for VerifyLayer {
    type Service = Verify<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Verify {
            inner,
            key: self.key.clone(),
        }
    }
}

/// The service [`VerifyLayer`] makes.
#[derive(Clone, Debug)]
pub struct Verify<S> {
    inner: S,
    key: InternalKey,
}

impl<S> Verify<S> {
    fn claims<B>(&self, request: &http::Request<B>) -> Result<Claims, AssertionError> {
        let value = request
            .headers()
            .get(HEADER)
            .ok_or(AssertionError::Missing)?
            .to_str()
            .map_err(|_| AssertionError::Malformed)?;
        assertion::verify(&self.key, value, Timestamp::now())
    }
}

impl<S, B, ResBody> tower::Service<http::Request<B>> for Verify<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let path = request.uri().path();
        if !OPEN_PREFIXES.iter().any(|open| path.starts_with(open)) {
            match self.claims(&request) {
                Ok(claims) => {
                    request.extensions_mut().insert(claims);
                }
                Err(e) => {
                    tracing::debug!(path, error = %e, "refused an unauthenticated call");
                    let response = Status::from(e).into_http();
                    return Box::pin(async move { Ok(response) });
                }
            }
        }
        Box::pin(self.inner.call(request))
    }
}
