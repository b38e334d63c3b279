//! The external protocols besides the public gRPC API, one module each. A
//! front parses its protocol at the edge, calls the shared
//! [`core`](crate::core) (for play, its [`Games`](crate::core::play::Games)
//! handle, in domain terms: no front sees the internal services' messages
//! or statuses), and renders the answers back; no front reaches into
//! another.
//!
//! - [`web`]: plain HTTP on the public port, beside gRPC and gRPC-Web: the
//!   web page (its embedded script and assets) and a game at `/games/<id>`,
//!   the link in the emails.
//! - [`uqchess`]: the uqchess line protocol on its own TCP port.
//! - [`nostr`]: the Nostr bridge (`protocols/nostr.md`) on the relays given.
//!
//! The next protocol (a lichess-compatible HTTP API) goes beside them, in
//! `lichess/`.

pub mod nostr;
pub mod uqchess;
pub mod web;
