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
//! - [`live`]: the games in play anyone may watch, kept up to date from
//!   every game replica, for the live list and the featured game.
//! - [`public_url`]: the address players reach the server at, for links.
//! - [`presence`]: who is online and who is playing now, on this gateway.
//! - [`chat_policy`]: who may post in chat and whose lines each player
//!   sees (moderators, mutes, chat switched off), cached from the rating
//!   service.

pub mod auth;
pub mod chat_policy;
pub mod clients;
pub mod live;
pub mod mail;
pub mod notifier;
pub mod play;
pub mod presence;
pub mod public_url;
pub mod sessions;
