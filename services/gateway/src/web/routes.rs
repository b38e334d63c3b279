//! The paths the public port answers with pages, and what answers each.

use http::{Method, Response};
use tonic::body::Body;

use super::{game, method_not_allowed, not_found, readable};
use crate::backends::Backends;

/// Longest game id looked up; the game service makes 12-character ids.
const MAX_GAME_ID: usize = 64;

/// A page address.
#[derive(Debug, PartialEq, Eq)]
pub enum Route<'a> {
    /// `/games/<id>`: the game as a page.
    Game(&'a str),
    /// `/games/<id>.pgn`: the game's PGN, as a download.
    GamePgn(&'a str),
    /// `/games/<anything else>`: not a game id.
    BadGameId,
}

impl<'a> Route<'a> {
    /// The route of `path`, if any.
    pub fn of(path: &'a str) -> Option<Self> {
        let rest = path.strip_prefix("/games/")?;
        let (id, route): (_, fn(&'a str) -> Self) = match rest.strip_suffix(".pgn") {
            Some(id) => (id, Self::GamePgn),
            None => (rest, Self::Game),
        };
        Some(if is_game_id(id) {
            route(id)
        } else {
            Self::BadGameId
        })
    }
}

/// Whether `id` can be a game id: 1 to 64 letters, digits, `-` and `_`.
/// Anything else is refused before any service is asked.
fn is_game_id(id: &str) -> bool {
    (1..=MAX_GAME_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Answers the page requests.
#[derive(Debug)]
pub struct Pages {
    backends: Backends,
}

impl Pages {
    pub fn new(backends: Backends) -> Self {
        Self { backends }
    }

    /// The answer to `method` on `path`.
    pub async fn answer(&self, method: &Method, path: &str) -> Response<Body> {
        let Some(route) = Route::of(path) else {
            return not_found("There is no page at this address.");
        };
        if !readable(method) {
            return method_not_allowed();
        }
        match route {
            Route::Game(id) => game::page(&self.backends, id).await,
            Route::GamePgn(id) => game::pgn(&self.backends, id).await,
            Route::BadGameId => not_found("This address does not name a game."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_routed() {
        assert_eq!(Route::of("/games/abc123"), Some(Route::Game("abc123")));
        assert_eq!(
            Route::of("/games/abc123.pgn"),
            Some(Route::GamePgn("abc123"))
        );
        assert_eq!(Route::of("/games/a-b_c"), Some(Route::Game("a-b_c")));
        for bad in [
            "/games/",
            "/games/.pgn",
            "/games/a/b",
            "/games/abc/",
            "/games/<b>",
            "/games/%41",
            "/games/abc.pgn.pgn",
        ] {
            assert_eq!(Route::of(bad), Some(Route::BadGameId), "{bad}");
        }
        let long = format!("/games/{}", "a".repeat(65));
        assert_eq!(Route::of(&long), Some(Route::BadGameId));
        for other in ["/", "/games", "/game/abc", "/favicon.ico", "/GAMES/abc"] {
            assert_eq!(Route::of(other), None, "{other}");
        }
    }
}
