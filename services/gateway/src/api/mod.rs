//! The public gRPC API (`chess.gateway.v1`): what frontends call.
//!
//! - [`account`]: AccountService — registration, login, profiles,
//!   leaderboards (the rating service behind it).
//! - [`lobby`]: LobbyService — seeks, tables, challenges (matchmaking behind
//!   it) and games against the engine.
//! - [`play`]: PlayService — moves and the rest of play, reads, and the live
//!   streams (the game service behind it, and matchmaking for lobby events);
//!   its game chat, and who may read and write it, in [`chat`].
//! - [`nostr`]: NostrService — the Nostr bridge's key and relays, and
//!   linking a Nostr key to an account.
//!
//! Every call that acts for a player takes the player's id from the verified
//! session token, never from the request, so a token of A cannot act for B;
//! the internal services trust the ids the gateway passes them. Every call
//! passes [`edge`] first, which bounds its request and resolves its token
//! (through [`Sessions`], which also refuses those whose session has ended)
//! into the [`edge::Caller`] the handlers read.
//! - [`convert`]: wire values read into domain values and back.
//! - [`bounds`]: the limits of every request's fields and each method's
//!   access rule; [`limits`]: logins and registrations throttled per source
//!   address.

pub mod account;
mod bounds;
pub mod chat;
mod convert;
pub mod edge;
pub mod limits;
mod live;
pub mod lobby;
pub mod nostr;
pub mod play;

use std::sync::Arc;

use chess_proto::gateway::v1::{
    account_service_server::{self, AccountServiceServer},
    lobby_service_server::{self, LobbyServiceServer},
    nostr_service_server::{self, NostrServiceServer},
    play_service_server::{self, PlayServiceServer},
};
use chess_runtime::{Shutdown, reason::REASON_KEY};
use tonic::{Code, Status};

use crate::core::{clients::Backends, sessions::Sessions};
use edge::Admit;

use limits::AddressLimits;

/// The names of the public services, for health and reflection.
pub const SERVICE_NAMES: [&str; 4] = [
    account_service_server::SERVICE_NAME,
    lobby_service_server::SERVICE_NAME,
    play_service_server::SERVICE_NAME,
    nostr_service_server::SERVICE_NAME,
];

/// What every public handler needs.
#[derive(Debug)]
pub struct Shared {
    pub backends: Backends,
    /// The games in play, for the live list and the featured game.
    pub live: crate::core::live::LiveGames,
    pub sessions: Arc<Sessions>,
    pub limits: AddressLimits,
    pub shutdown: Shutdown,
    pub presence: Arc<crate::core::presence::Presence>,
    pub chat: Arc<crate::core::chat_policy::ChatPolicy>,
    pub chat_rules: chat::ChatRules,
}

/// The four public services behind the gate, ready to serve.
pub fn routes(
    shared: Arc<Shared>,
    bridge: Option<crate::fronts::nostr::Handle>,
) -> tonic::service::Routes {
    let sessions = &shared.sessions;
    let accounts = AccountServiceServer::new(account::Accounts::new(Arc::clone(&shared)));
    let lobby = LobbyServiceServer::new(lobby::Lobby::new(Arc::clone(&shared)));
    let nostr = NostrServiceServer::new(nostr::Nostr::new(Arc::clone(&shared), bridge));
    let play = PlayServiceServer::new(play::Play::new(Arc::clone(&shared)));
    tonic::service::Routes::new(Admit::new(accounts, Arc::clone(sessions)))
        .add_service(Admit::new(lobby, Arc::clone(sessions)))
        .add_service(Admit::new(nostr, Arc::clone(sessions)))
        .add_service(Admit::new(play, Arc::clone(sessions)))
}

/// What a handler answers with: the response message, or why not.
pub(super) type Answer<T> = Result<T, Status>;

/// A public service's trait implementation from the table of its methods,
/// so that the methods which forward a call the same way are written once.
///
/// A method is `name(Request -> Response)`, the request named alike in the
/// public `pb` and in the internal package. A group of methods, `kind(args)
/// [field]: methods`, is answered by the macro `kind!` given the service,
/// the request, the method, the request's and the response's names, and
/// `(args)`; each of its methods gets a span with the request's `field`
/// (none for `[]`). [`custom!`] answers by the service's inherent method of
/// the same name; the other kinds are written beside their service.
///
/// `pub struct Name: Trait;` declares the service too, as a struct holding
/// only the [`Shared`] state, made by `Name::new`; `impl Trait for Name;`
/// implements the trait for a service declared apart.
///
/// The whole `impl` is written here, the table's methods and all, because
/// `#[tonic::async_trait]` rewrites the methods it sees and would not see
/// ones a macro inside it writes later.
macro_rules! public_service {
    ($(#[$doc:meta])* pub struct $service:ident: $trait:ident; $($rest:tt)*) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $service {
            shared: std::sync::Arc<$crate::api::Shared>,
        }

        impl $service {
            pub fn new(shared: std::sync::Arc<$crate::api::Shared>) -> Self {
                Self { shared }
            }
        }

        public_service!(impl $trait for $service; $($rest)*);
    };
    (impl $trait:ident for $service:ident; $($rest:tt)*) => {
        public_service!(@methods $trait $service [] $($rest)*);
    };
    (@methods $trait:ident $service:ident [$($done:tt)*]) => {
        #[tonic::async_trait]
        impl $trait for $service {
            $($done)*
        }
    };
    (@methods $trait:ident $service:ident [$($done:tt)*]
        type $assoc:ident = $assoc_ty:ty; $($rest:tt)*) => {
        public_service!(@methods $trait $service [$($done)* type $assoc = $assoc_ty;] $($rest)*);
    };
    (@methods $trait:ident $service:ident [$($done:tt)*]
        $kind:ident $args:tt [$field:ident]: $($rest:tt)*) => {
        public_service!(@methods $trait $service [$($done)*] @group $kind $args request
            (level = "debug", skip_all, fields($field = %request.get_ref().$field)) $($rest)*);
    };
    (@methods $trait:ident $service:ident [$($done:tt)*] $kind:ident $args:tt []: $($rest:tt)*) => {
        public_service!(@methods $trait $service [$($done)*] @group $kind $args request
            (level = "debug", skip_all) $($rest)*);
    };
    (@methods $trait:ident $service:ident [$($done:tt)*]
        @group $kind:ident $args:tt $req:ident $span:tt
        $($method:ident($request:ident -> $($response:ident)::+)),+; $($rest:tt)*) => {
        public_service!(@methods $trait $service [$($done)* $(
            #[tracing::instrument $span]
            async fn $method(
                &self,
                $req: tonic::Request<pb::$request>,
            ) -> Result<tonic::Response<$($response)::+>, tonic::Status> {
                let answer = $kind!(self, $req, $method, $request, [$($response)::+], $args);
                Ok(tonic::Response::new(answer))
            }
        )+] $($rest)*);
    };
}
pub(crate) use public_service;

/// The `custom()` group of [`public_service!`]: each method is answered by
/// the service's inherent method of the same name, which takes the request
/// and gives an [`Answer`] (inherent methods come before the trait's).
macro_rules! custom {
    ($this:ident, $request:ident, $method:ident, $name:ident, [$($response:ident)::+], ()) => {
        Self::$method($this, $request).await?
    };
}
pub(crate) use custom;

/// An internal service's error as the public API reports it: the same code,
/// message and `chess-reason`, nothing else of the internal call's metadata.
///
/// A call that never got the service's own answer (the service died or
/// restarted under it, so the connection broke: UNKNOWN or CANCELLED from
/// the transport, with no reason) is UNAVAILABLE, which tells clients to try
/// again.
pub fn relay(status: Status) -> Status {
    if lost_in_transport(&status) {
        return Status::unavailable("the service is restarting or unreachable; try again");
    }
    let mut public = Status::new(status.code(), status.message());
    if let Some(reason) = status.metadata().get(REASON_KEY) {
        public.metadata_mut().insert(REASON_KEY, reason.clone());
    }
    public
}

/// The answer of an internal call made once, its error as the public API
/// reports it.
pub async fn forward<T>(
    call: impl Future<Output = Result<tonic::Response<T>, Status>>,
) -> Result<T, Status> {
    call.await.map(tonic::Response::into_inner).map_err(relay)
}

/// How many times a call that is safe to repeat is tried while the service
/// is unavailable (restarting under it), with pauses of 50, 100, 200 … ms.
const ATTEMPTS: u32 = 4;

/// Sends `request` with `client` (a read, or a move sent with its ply:
/// calls that are safe to repeat) until it is answered, trying again, with
/// fresh copies of both, while the service is unavailable; the answer or
/// the last failure, as the public API reports it.
pub async fn with_retries<C, R, T, Fut>(
    client: C,
    request: R,
    call: impl Fn(C, R) -> Fut,
) -> Result<T, Status>
where
    C: Clone,
    R: Clone,
    Fut: Future<Output = Result<tonic::Response<T>, Status>>,
{
    let mut pause = std::time::Duration::from_millis(50);
    let mut attempt = 1;
    loop {
        match call(client.clone(), request.clone()).await {
            Ok(response) => return Ok(response.into_inner()),
            Err(status) => {
                let public = relay(status);
                if public.code() != Code::Unavailable || attempt == ATTEMPTS {
                    return Err(public);
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
        attempt += 1;
    }
}

/// Whether `status` is the client library's report of a broken connection
/// rather than an answer of the service: our services never answer UNKNOWN
/// or CANCELLED themselves, and their answers carry a reason.
fn lost_in_transport(status: &Status) -> bool {
    matches!(status.code(), Code::Unknown | Code::Cancelled)
        && status.metadata().get(REASON_KEY).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chess_runtime::Reason;

    #[test]
    fn relayed_errors_keep_their_reason_only() {
        let mut internal = Reason::NotAPlayer.status(Code::PermissionDenied, "not a player");
        internal
            .metadata_mut()
            .insert("x-internal", "secret".parse().unwrap());
        let public = relay(internal);
        assert_eq!(public.code(), Code::PermissionDenied);
        assert_eq!(public.message(), "not a player");
        assert_eq!(Reason::of(&public), Some(Reason::NotAPlayer));
        assert!(public.metadata().get("x-internal").is_none());
    }

    #[test]
    fn a_broken_connection_to_a_service_is_unavailable() {
        for lost in [
            Status::unknown("transport error"),
            Status::cancelled("operation was canceled"),
        ] {
            assert_eq!(relay(lost).code(), Code::Unavailable);
        }
        let refused = Reason::NotYourTurn.status(Code::FailedPrecondition, "not your turn");
        assert_eq!(relay(refused).code(), Code::FailedPrecondition);
    }
}
