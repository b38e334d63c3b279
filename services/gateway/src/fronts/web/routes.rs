//! The paths the public port answers with pages, and what answers each.

use chess_domain::GameId;
use chess_runtime::server::Body;
use http::{HeaderMap, Method, Response, StatusCode};

use super::{
    assets::{self, Asset},
    game, html, method_not_allowed, not_found, page, readable,
};
use crate::core::{clients::Backends, play::Games};

/// Longest game id looked up; the game service makes 12-character ids.
const MAX_GAME_ID: usize = 64;

/// The paths of the web page's views other than games: each is answered
/// with the page, whose script shows the view.
const APP_PATHS: &[&str] = &[
    "/",
    "/login",
    "/register",
    "/account",
    "/my-games",
    "/leaderboard",
    "/live",
    "/players",
];

/// Longest username in a profile address (usernames have at most 20).
const MAX_USERNAME: usize = 64;

/// A page address.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// A view of the web page (its script draws it).
    App,
    /// `/players/<username>`: a player's profile, a view of the web page.
    Player,
    /// An embedded file: the script, the style sheet, the licences.
    Asset(&'static Asset),
    /// `/games/<id>`: the game as a page.
    Game(GameId),
    /// `/games/<id>.pgn`: the game's PGN, as a download.
    GamePgn(GameId),
    /// `/games/<anything else>`: not a game id.
    BadGameId,
}

impl Route {
    /// The route of `path`, if any.
    pub fn of(path: &str) -> Option<Self> {
        if APP_PATHS.contains(&path) {
            return Some(Self::App);
        }
        if let Some(asset) = assets::find(path) {
            return Some(Self::Asset(asset));
        }
        if let Some(name) = path.strip_prefix("/players/") {
            return (is_name(name, MAX_USERNAME)).then_some(Self::Player);
        }
        let rest = path.strip_prefix("/games/")?;
        let (id, route): (_, fn(GameId) -> Self) = match rest.strip_suffix(".pgn") {
            Some(id) => (id, Self::GamePgn),
            None => (rest, Self::Game),
        };
        Some(
            if is_game_id(id)
                && let Ok(id) = GameId::parse(id)
            {
                route(id)
            } else {
                Self::BadGameId
            },
        )
    }
}

/// Whether `id` can be a game id: 1 to 64 letters, digits, `-` and `_`.
/// Anything else is refused before any service is asked.
fn is_game_id(id: &str) -> bool {
    is_name(id, MAX_GAME_ID)
}

/// Whether `s` is 1 to `max` letters, digits, `-` and `_`.
fn is_name(s: &str, max: usize) -> bool {
    (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Answers the page requests.
#[derive(Debug)]
pub struct Pages {
    games: Games,
}

impl Pages {
    pub fn new(backends: Backends) -> Self {
        Self {
            games: Games::new(backends),
        }
    }

    /// The answer to `method` on `path`, with the request's `headers`.
    pub async fn answer(&self, method: &Method, path: &str, headers: &HeaderMap) -> Response<Body> {
        let Some(route) = Route::of(path) else {
            return not_found("There is no page at this address.");
        };
        if !readable(method) {
            return method_not_allowed();
        }
        match route {
            Route::App | Route::Player => page(StatusCode::OK, html::app_shell()),
            Route::Asset(asset) => asset.respond(method, headers),
            Route::Game(id) => game::page(&self.games, &id).await,
            Route::GamePgn(id) => game::pgn(&self.games, &id).await,
            Route::BadGameId => not_found("This address does not name a game."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_routed() {
        let id = |id: &str| GameId::trusted(id);
        assert_eq!(Route::of("/games/abc123"), Some(Route::Game(id("abc123"))));
        assert_eq!(
            Route::of("/games/abc123.pgn"),
            Some(Route::GamePgn(id("abc123")))
        );
        assert_eq!(Route::of("/games/a-b_c"), Some(Route::Game(id("a-b_c"))));
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
        for other in [
            "/games",
            "/game/abc",
            "/favicon.ico",
            "/GAMES/abc",
            "/players/",
        ] {
            assert_eq!(Route::of(other), None, "{other}");
        }
    }

    #[test]
    fn views_and_assets_are_routed() {
        for view in APP_PATHS {
            assert_eq!(Route::of(view), Some(Route::App), "{view}");
        }
        assert_eq!(Route::of("/players"), Some(Route::App));
        assert_eq!(Route::of("/players/some_one-2"), Some(Route::Player));
        assert_eq!(Route::of("/players/a/b"), None);
        assert_eq!(Route::of("/players/<b>"), None);
        for url in [assets::APP_JS, assets::STYLE_CSS, assets::LICENCES] {
            assert!(
                matches!(Route::of(url), Some(Route::Asset(a)) if a.url == url),
                "{url}"
            );
        }
        assert_eq!(Route::of("/assets/app-0000.js"), None);
    }
}
