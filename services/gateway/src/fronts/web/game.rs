//! A game as a page (`/games/<id>`): players and their ratings, the time
//! control, whose turn it is or how the game ended, the board, the moves;
//! and its PGN (`/games/<id>.pgn`). Built from the game service's GetGame and
//! ExportPgn and the rating service's GetRatings, as the public API reads
//! them.

use std::{fmt::Write as _, time::Duration};

use chess_domain::{
    GameResult, SpeedCategory, Termination, TimeControl, color_from_pb, color_title,
    ending_sentence,
};
use chess_proto::common::v1::{self as common, GameStatus};
use http::{HeaderValue, Response, StatusCode, header};
use shakmaty::{Square, fen::Fen, uci::UciMove};
use tonic::body::Body;

use super::{html, not_found, page as html_page, respond};
use crate::core::{
    play::{FailureKind, Games, PlayError},
    players::{display_name, registered_id},
};

/// How long a page waits for a service.
const BACKEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The page of game `id` (a well-formed id).
pub async fn page(games: &Games, id: &str) -> Response<Body> {
    let state = match call(games.game(id)).await {
        Ok(Some(state)) => state,
        Ok(None) => return unavailable(id, "the game service sent no game"),
        Err(error) => return failure(id, &error),
    };
    let ratings = ratings(games, &state).await;
    html_page(StatusCode::OK, render(&state, &ratings))
}

/// The PGN of game `id` (a well-formed id), as a download.
pub async fn pgn(games: &Games, id: &str) -> Response<Body> {
    let pgn = match call(games.pgn(id)).await {
        Ok(pgn) => pgn,
        Err(error) => return failure(id, &error),
    };
    let mut response = respond(
        StatusCode::OK,
        "application/x-chess-pgn; charset=utf-8",
        pgn,
    );
    // The id is letters, digits, `-` and `_` (checked by the router): safe in
    // a quoted header value.
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"rookery-{id}.pgn\""))
    {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// `request`'s answer; a service that does not answer in time is
/// unavailable.
async fn call<T>(request: impl Future<Output = Result<T, PlayError>>) -> Result<T, PlayError> {
    tokio::time::timeout(BACKEND_TIMEOUT, request)
        .await
        .unwrap_or_else(|_| Err(PlayError::unavailable("no answer in time")))
}

/// The page for a failed read of game `id`.
fn failure(id: &str, error: &PlayError) -> Response<Body> {
    match error.kind() {
        FailureKind::NotFound => not_found(&format!(
            "There is no game {id}. Check the link you followed."
        )),
        _ => unavailable(id, error.message()),
    }
}

/// The 503 page: the game exists or may, but cannot be read now.
fn unavailable(id: &str, why: &str) -> Response<Body> {
    tracing::warn!(game_id = id, error = why, "cannot show a game page");
    html_page(
        StatusCode::SERVICE_UNAVAILABLE,
        html::frame(
            "Try again",
            "<h1>The game cannot be shown right now</h1>\n\
             <p>The server could not read it. Try again in a moment.</p>\n",
        ),
    )
}

/// The current ratings, in the game's category, of its registered players;
/// none if the rating service cannot say (the page shows the game without).
async fn ratings(games: &Games, state: &common::GameState) -> Vec<(String, common::Rating)> {
    let player_ids: Vec<String> = [state.white.as_ref(), state.black.as_ref()]
        .into_iter()
        .filter_map(registered_id)
        .map(str::to_owned)
        .collect();
    let Ok(category) = SpeedCategory::try_from(state.speed) else {
        return Vec::new();
    };
    if player_ids.is_empty() {
        return Vec::new();
    }
    match call(games.ratings(player_ids, category)).await {
        Ok(ratings) => ratings,
        Err(error) => {
            tracing::debug!(game_id = state.game_id, error = %error.message(), "game page without ratings");
            Vec::new()
        }
    }
}

/// `player` as the page names them: escaped, with the rating if known
/// (`?` marks a provisional one).
fn player_label(player: Option<&common::Player>, ratings: &[(String, common::Rating)]) -> String {
    let mut label = format!("<b>{}</b>", html::escape(&display_name(player)));
    let known =
        registered_id(player).and_then(|id| ratings.iter().find(|(player_id, _)| player_id == id));
    if let Some((_, rating)) = known {
        let provisional = if rating.provisional { "?" } else { "" };
        // Ratings are a few thousand at most: the cast cannot overflow.
        let _ = write!(label, " ({}{provisional})", rating.rating.round() as i64);
    }
    label
}

/// The side `color` names on the wire, as a sentence starts with it
/// (white when unset).
fn side_name(color: i32) -> &'static str {
    color_from_pb(color).map_or("White", color_title)
}

/// Whose turn it is, or how the game ended.
fn status_line(state: &common::GameState) -> String {
    if GameStatus::try_from(state.status) != Ok(GameStatus::Finished) {
        let mut line = format!("{} to move", side_name(state.turn));
        if state.check {
            line.push_str(", in check");
        }
        if color_from_pb(state.draw_offer).is_some() {
            let _ = write!(line, ". {} offers a draw", side_name(state.draw_offer));
        }
        line.push('.');
        return line;
    }
    ending_sentence(
        GameResult::try_from(state.result).ok(),
        Termination::try_from(state.termination).ok(),
    )
}

/// The moves in SAN as a numbered list, numbered from the starting
/// position's move number (a game from a position may start with black).
fn move_list(state: &common::GameState) -> String {
    if state.moves.is_empty() {
        return "<p>No moves yet.</p>\n".to_owned();
    }
    let (first_number, black_starts) = Fen::from_ascii(state.initial_fen.as_bytes())
        .map(|fen| {
            let setup = fen.as_setup();
            (setup.fullmoves.get(), setup.turn == shakmaty::Color::Black)
        })
        .unwrap_or((1, false));
    let mut out = format!("<ol class=\"moves\" start=\"{first_number}\">\n");
    let mut sans = state.moves.iter().map(|m| html::escape(&m.san));
    if black_starts {
        let _ = writeln!(out, "<li>… {}</li>", sans.next().unwrap_or_default());
    }
    loop {
        match (sans.next(), sans.next()) {
            (Some(white), Some(black)) => {
                let _ = writeln!(out, "<li>{white} {black}</li>");
            }
            (Some(white), None) => {
                let _ = writeln!(out, "<li>{white}</li>");
                break;
            }
            _ => break,
        }
    }
    out.push_str("</ol>\n");
    out
}

/// The squares the last move left and reached.
fn last_move_squares(state: &common::GameState) -> Vec<Square> {
    match state.moves.last().map(|m| m.uci.parse::<UciMove>()) {
        Some(Ok(UciMove::Normal { from, to, .. })) => vec![from, to],
        _ => Vec::new(),
    }
}

/// The page of `state`.
fn render(state: &common::GameState, ratings: &[(String, common::Rating)]) -> String {
    let white = display_name(state.white.as_ref());
    let black = display_name(state.black.as_ref());
    let mut meta = Vec::new();
    if let Ok(speed) = SpeedCategory::try_from(state.speed) {
        let name = speed.to_string();
        let mut chars = name.chars();
        meta.push(
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default(),
        );
    }
    let time_control = match TimeControl::try_from(state.time_control.as_ref()) {
        Ok(tc) => tc.to_string(),
        Err(_) => "unknown time control".to_owned(),
    };
    // An untimed game's category already says all there is.
    if meta
        .first()
        .is_none_or(|speed: &String| !speed.eq_ignore_ascii_case(&time_control))
    {
        meta.push(time_control);
    }
    meta.push(if state.rated { "rated" } else { "casual" }.to_owned());

    let mut body = format!(
        "<h1>{} vs {}</h1>\n<p class=\"meta\">{}</p>\n<ul class=\"players\">\n<li>White: {}</li>\n<li>Black: {}</li>\n</ul>\n<p class=\"status\">{}</p>\n",
        html::escape(&white),
        html::escape(&black),
        html::escape(&meta.join(" · ")),
        player_label(state.white.as_ref(), ratings),
        player_label(state.black.as_ref(), ratings),
        html::escape(&status_line(state)),
    );
    match Fen::from_ascii(state.fen.as_bytes()) {
        Ok(fen) => body.push_str(&html::board(
            &fen.as_setup().board,
            &last_move_squares(state),
        )),
        Err(_) => body.push_str("<p>The position cannot be drawn.</p>\n"),
    }
    body.push_str("<h2>Moves</h2>\n");
    body.push_str(&move_list(state));
    let id = html::escape(&state.game_id);
    // Relative, so that it also works under a path prefix.
    let _ = write!(
        body,
        "<p><a href=\"{id}.pgn\" download>Download the PGN</a></p>\n\
         <p class=\"meta\">Game <code>{id}</code> · FEN <code>{}</code></p>\n",
        html::escape(&state.fen)
    );
    html::frame(&format!("{white} vs {black}"), &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use common::{GameResult, Termination};

    fn registered(id: &str, name: &str) -> Option<common::Player> {
        Some(chess_domain::registered_player(id, name))
    }

    fn played(ply: u32, uci: &str, san: &str) -> common::PlayedMove {
        common::PlayedMove {
            ply,
            uci: uci.into(),
            san: san.into(),
            ..Default::default()
        }
    }

    fn mated() -> common::GameState {
        common::GameState {
            game_id: "g1".into(),
            white: registered("a", "alice"),
            black: Some(chess_domain::guest_player("guest-1", "<script>x</script>")),
            time_control: Some(common::TimeControl {
                kind: Some(common::time_control::Kind::Incremental(
                    common::Incremental {
                        initial_seconds: 300,
                        increment_seconds: 2,
                    },
                )),
            }),
            speed: common::SpeedCategory::Blitz as i32,
            rated: true,
            initial_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
            fen: "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3".into(),
            moves: vec![
                played(1, "f2f3", "f3"),
                played(2, "e7e5", "e5"),
                played(3, "g2g4", "g4"),
                played(4, "d8h4", "Qh4#"),
            ],
            turn: common::Color::White as i32,
            status: GameStatus::Finished as i32,
            result: GameResult::BlackWins as i32,
            termination: Termination::Checkmate as i32,
            ..Default::default()
        }
    }

    #[test]
    fn a_finished_game_is_drawn_with_its_result_and_moves() {
        let ratings = vec![(
            "a".to_owned(),
            common::Rating {
                rating: 1209.6,
                provisional: true,
                ..Default::default()
            },
        )];
        let page = render(&mated(), &ratings);
        assert!(
            page.contains("<h1>alice vs &lt;script&gt;x&lt;/script&gt;</h1>"),
            "{page}"
        );
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("White: <b>alice</b> (1210?)"), "{page}");
        assert!(page.contains("Blitz · 5+2 · rated"), "{page}");
        assert!(page.contains("0-1 · Black wins by checkmate."), "{page}");
        assert!(page.contains("<li>f3 e5</li>\n<li>g4 Qh4#</li>"), "{page}");
        assert!(page.contains("<ol class=\"moves\" start=\"1\">"), "{page}");
        assert!(page.contains("<a href=\"g1.pgn\" download>"), "{page}");
        // The queen on h4 is on the board, its square marked as the last move's.
        assert!(page.contains("title=\"h4: black queen\""), "{page}");
        assert!(page.contains("class=\"dark last\" title=\"d8\""), "{page}");
    }

    #[test]
    fn an_active_game_says_whose_turn_it_is() {
        let mut state = mated();
        state.status = GameStatus::Active as i32;
        state.result = GameResult::Unspecified as i32;
        state.termination = Termination::Unspecified as i32;
        state.moves.truncate(3);
        state.turn = common::Color::Black as i32;
        state.draw_offer = common::Color::White as i32;
        assert_eq!(status_line(&state), "Black to move. White offers a draw.");
        let list = move_list(&state);
        assert!(
            list.contains("<li>f3 e5</li>\n<li>g4</li>\n</ol>"),
            "{list}"
        );
        state.moves.clear();
        assert_eq!(move_list(&state), "<p>No moves yet.</p>\n");
    }

    #[test]
    fn endings_are_worded() {
        let mut state = mated();
        let cases = [
            (
                GameResult::WhiteWins,
                Termination::Resignation,
                "1-0 · White wins by resignation.",
            ),
            (
                GameResult::BlackWins,
                Termination::Timeout,
                "0-1 · Black wins on time.",
            ),
            (
                GameResult::Draw,
                Termination::FiftyMoveRule,
                "½-½ · Draw by the fifty-move rule.",
            ),
            (
                GameResult::Unspecified,
                Termination::Aborted,
                "Aborted before both sides had moved: no result.",
            ),
        ];
        for (result, termination, sentence) in cases {
            state.result = result as i32;
            state.termination = termination as i32;
            assert_eq!(status_line(&state), sentence);
        }
    }

    #[test]
    fn an_unnamed_guest_against_the_engine_at_full_strength() {
        let mut state = mated();
        state.white = Some(chess_domain::guest_player("guest-2", ""));
        state.black = Some(chess_domain::engine_player(chess_domain::FULL_STRENGTH));
        state.time_control = Some(common::TimeControl {
            kind: Some(common::time_control::Kind::Untimed(common::Untimed {})),
        });
        state.speed = common::SpeedCategory::Untimed as i32;
        state.rated = false;
        let page = render(&state, &[]);
        assert!(page.contains("<h1>Guest vs Stockfish</h1>"), "{page}");
        assert!(page.contains("White: <b>Guest</b>"), "{page}");
        assert!(
            page.contains("<p class=\"meta\">Untimed · casual</p>"),
            "{page}"
        );
    }

    #[test]
    fn a_game_from_a_position_with_black_to_move_is_numbered_from_it() {
        let mut state = mated();
        state.initial_fen = "4k3/8/8/8/8/8/4P3/4K3 b - - 0 31".into();
        state.moves = vec![played(1, "e8d8", "Kd8"), played(2, "e2e4", "e4")];
        let list = move_list(&state);
        assert!(
            list.starts_with("<ol class=\"moves\" start=\"31\">\n<li>… Kd8</li>\n<li>e4</li>"),
            "{list}"
        );
    }
}
