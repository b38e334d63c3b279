//! A game as a page (`/games/<id>`): players and their ratings, the time
//! control, whose turn it is or how the game ended, the board, the moves;
//! and its PGN (`/games/<id>.pgn`). Built from the game service's GetGame and
//! ExportPgn and the rating service's GetRatings, as the public API reads
//! them.

use std::{fmt::Write as _, time::Duration};

use chess_domain::{Color, GameId, PlayerId, color_title, ending_sentence};
use chess_runtime::server::Body;
use http::{HeaderValue, Response, StatusCode, header};
use shakmaty::{Square, fen::Fen, uci::UciMove};

use super::{html, not_found, page as html_page, respond};
use crate::core::play::{FailureKind, Game, Games, PlayError, Rating};

/// How long a page waits for a service.
const BACKEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The page of game `id` (a well-formed id).
pub async fn page(games: &Games, id: &GameId) -> Response<Body> {
    let state = match call(games.game(id)).await {
        Ok(Some(state)) => state,
        Ok(None) => return unavailable(id, "the game service sent no game"),
        Err(error) => return failure(id, &error),
    };
    let ratings = ratings(games, &state).await;
    html_page(StatusCode::OK, render(&state, &ratings))
}

/// The PGN of game `id` (a well-formed id), as a download.
pub async fn pgn(games: &Games, id: &GameId) -> Response<Body> {
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
fn failure(id: &GameId, error: &PlayError) -> Response<Body> {
    match error.kind() {
        FailureKind::NotFound => not_found(&format!(
            "There is no game {id}. Check the link you followed."
        )),
        _ => unavailable(id, error.message()),
    }
}

/// The 503 page: the game exists or may, but cannot be read now.
fn unavailable(id: &GameId, why: &str) -> Response<Body> {
    tracing::warn!(game_id = %id, error = why, "cannot show a game page");
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
async fn ratings(games: &Games, state: &Game) -> Vec<Rating> {
    let player_ids: Vec<PlayerId> = [Color::White, Color::Black]
        .into_iter()
        .filter_map(|color| state.account_of(color))
        .cloned()
        .collect();
    let Some(category) = state.speed() else {
        return Vec::new();
    };
    if player_ids.is_empty() {
        return Vec::new();
    }
    match call(games.ratings(player_ids, category)).await {
        Ok(ratings) => ratings,
        Err(error) => {
            tracing::debug!(game_id = %state.id, error = %error.message(), "game page without ratings");
            Vec::new()
        }
    }
}

/// The player of side `color` as the page names them: escaped, with the
/// rating if known (`?` marks a provisional one).
fn player_label(state: &Game, color: Color, ratings: &[Rating]) -> String {
    let mut label = format!("<b>{}</b>", html::escape(&state.name_of(color)));
    let known = state
        .account_of(color)
        .and_then(|id| ratings.iter().find(|rating| rating.player_id == *id));
    if let Some(rating) = known {
        let provisional = if rating.provisional { "?" } else { "" };
        // Ratings are a few thousand at most: the cast cannot overflow.
        let _ = write!(label, " ({}{provisional})", rating.rating.round() as i64);
    }
    label
}

/// Whose turn it is, or how the game ended.
fn status_line(state: &Game) -> String {
    let Some(ended) = state.ended else {
        let mut line = format!(
            "{} to move",
            color_title(state.turn().unwrap_or(Color::White))
        );
        if state.check {
            line.push_str(", in check");
        }
        if let Some(offering) = state.draw_offer {
            let _ = write!(line, ". {} offers a draw", color_title(offering));
        }
        line.push('.');
        return line;
    };
    ending_sentence(ended.result, ended.termination)
}

/// The moves in SAN as a numbered list, numbered from the starting
/// position's move number (a game from a position may start with black).
fn move_list(state: &Game) -> String {
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
fn last_move_squares(state: &Game) -> Vec<Square> {
    match state.moves.last().map(|m| m.uci.parse::<UciMove>()) {
        Some(Ok(UciMove::Normal { from, to, .. })) => vec![from, to],
        _ => Vec::new(),
    }
}

/// The page of `state`.
fn render(state: &Game, ratings: &[Rating]) -> String {
    let white = state.name_of(Color::White);
    let black = state.name_of(Color::Black);
    let mut meta = Vec::new();
    if let Some(speed) = state.speed() {
        let name = speed.to_string();
        let mut chars = name.chars();
        meta.push(
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default(),
        );
    }
    let time_control = state
        .time_control
        .map_or_else(|| "unknown time control".to_owned(), |tc| tc.to_string());
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
        player_label(state, Color::White, ratings),
        player_label(state, Color::Black, ratings),
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
    let id = html::escape(state.id.as_str());
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
    use chess_domain::{GameResult, Participant, PlayerId, Termination, TimeControl, Username};
    use shakmaty::ByColor;

    use super::*;
    use crate::core::play::{Ended, PlayedMove};

    fn played(uci: &str, san: &str) -> PlayedMove {
        PlayedMove {
            uci: uci.into(),
            san: san.into(),
        }
    }

    fn mated() -> Game {
        Game {
            id: GameId::trusted("g1"),
            players: ByColor {
                white: Some(Participant::Registered {
                    id: PlayerId::trusted("a"),
                    username: Username::trusted("alice"),
                }),
                black: Some(Participant::Guest {
                    id: PlayerId::trusted("guest-1"),
                    name: "<script>x</script>".into(),
                }),
            },
            time_control: Some(TimeControl::Incremental {
                initial_secs: 300,
                increment_secs: 2,
            }),
            rated: true,
            initial_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
            fen: "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3".into(),
            moves: vec![
                played("f2f3", "f3"),
                played("e7e5", "e5"),
                played("g2g4", "g4"),
                played("d8h4", "Qh4#"),
            ],
            check: false,
            draw_offer: None,
            ended: Some(Ended {
                result: Some(GameResult::BlackWins),
                termination: Some(Termination::Checkmate),
            }),
        }
    }

    #[test]
    fn a_finished_game_is_drawn_with_its_result_and_moves() {
        let ratings = [Rating {
            player_id: PlayerId::trusted("a"),
            rating: 1209.6,
            provisional: true,
        }];
        let page = render(&mated(), &ratings);
        assert!(!page.contains("<script>"), "{page}");
        for part in [
            "<h1>alice vs &lt;script&gt;x&lt;/script&gt;</h1>",
            "White: <b>alice</b> (1210?)",
            "Blitz · 5+2 · rated",
            "0-1 · Black wins by checkmate.",
            "<ol class=\"moves\" start=\"1\">\n<li>f3 e5</li>\n<li>g4 Qh4#</li>",
            "<a href=\"g1.pgn\" download>",
            // The queen on h4 is on the board, its square marked as the last move's.
            "title=\"h4: black queen\"",
            "class=\"dark last\" title=\"d8\"",
        ] {
            assert!(page.contains(part), "{part} in {page}");
        }
    }

    #[test]
    fn an_active_game_says_whose_turn_it_is() {
        let mut state = mated();
        state.ended = None;
        state.moves.truncate(3);
        state.fen = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2".into();
        state.draw_offer = Some(Color::White);
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
                Some(GameResult::WhiteWins),
                Termination::Resignation,
                "1-0 · White wins by resignation.",
            ),
            (
                Some(GameResult::BlackWins),
                Termination::Timeout,
                "0-1 · Black wins on time.",
            ),
            (
                Some(GameResult::Draw),
                Termination::FiftyMoveRule,
                "½-½ · Draw by the fifty-move rule.",
            ),
            (
                None,
                Termination::Aborted,
                "Aborted before both sides had moved: no result.",
            ),
        ];
        for (result, termination, sentence) in cases {
            state.ended = Some(Ended {
                result,
                termination: Some(termination),
            });
            assert_eq!(status_line(&state), sentence);
        }
    }

    #[test]
    fn an_unnamed_guest_against_the_engine_at_full_strength() {
        let mut state = mated();
        state.players = ByColor {
            white: Some(Participant::Guest {
                id: PlayerId::trusted("guest-2"),
                name: String::new(),
            }),
            black: Some(Participant::Engine { level: 0 }),
        };
        state.time_control = Some(TimeControl::Untimed);
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
        state.moves = vec![played("e8d8", "Kd8"), played("e2e4", "e4")];
        let list = move_list(&state);
        assert!(
            list.starts_with("<ol class=\"moves\" start=\"31\">\n<li>… Kd8</li>\n<li>e4</li>"),
            "{list}"
        );
    }
}
