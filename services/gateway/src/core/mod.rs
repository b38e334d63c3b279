//! What every front shares: the signed-in sessions, the typed clients of
//! the internal services, and the delivery of events that reach players
//! outside any connection (the email notices of daily games).
//!
//! - [`auth`]: signed session tokens; [`sessions`]: whether a token's
//!   session has ended (sign-out, password change), cached from the rating
//!   service.
//! - [`clients`]: the calls to the internal services (matchmaking, game,
//!   rating); [`play`]: what the fronts ask of them, in domain terms, with
//!   one error type ([`play::PlayError`]) instead of their statuses.
//! - [`notifier`]: email to the opponent after each move of a daily game,
//!   sent through [`mail`].
//! - [`public_url`]: the address players reach the server at, for links.

pub mod auth;
pub mod clients;
pub mod mail;
pub mod notifier;
pub mod play;
pub mod public_url;
pub mod sessions;
