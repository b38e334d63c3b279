//! Email for daily games: after each move of a correspondence game, the
//! opponent (if registered) gets an email naming the game and the move, with
//! a link to it.
//!
//! The notifier follows the game service's stream of every daily game's
//! events (`WatchDailyGames`), so moves are announced whether or not anyone is
//! connected to the gateway. Exactly one gateway replica should run it
//! (`--notify-daily-moves`), or each would send the same email. If the game
//! service is unreachable the notifier reconnects; moves made while it was
//! disconnected are not announced.

use std::{sync::Arc, time::Duration};

use chess_proto::{
    common::v1::{self as common, game_event::Kind},
    game::v1 as game,
    rating::v1::{self as rating, get_player_request::Key},
};
use tokio::sync::Semaphore;
use tokio_stream::StreamExt as _;

use crate::core::{
    clients::Backends,
    mail::{Mail, Mailer},
    players::{display_name, registered_id},
    public_url::PublicUrl,
};

/// Emails being sent at once.
const CONCURRENT_SENDS: usize = 4;
/// Longest wait between attempts to reach the game service.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Announces the moves of daily games by email.
#[derive(Debug)]
pub struct Notifier {
    backends: Backends,
    mailer: Mailer,
    /// Base of the links in the emails.
    public_url: PublicUrl,
}

impl Notifier {
    pub fn new(backends: Backends, mailer: Mailer, public_url: PublicUrl) -> Arc<Self> {
        Arc::new(Self {
            backends,
            mailer,
            public_url,
        })
    }

    /// Follows the daily games until shutdown.
    pub async fn run(self: Arc<Self>, shutdown: chess_runtime::Shutdown) {
        let sends = Arc::new(Semaphore::new(CONCURRENT_SENDS));
        let mut backoff = Duration::from_millis(200);
        while !shutdown.is_cancelled() {
            let opened = tokio::select! {
                opened = self.backends.game.watch_daily_games() => opened,
                () = shutdown.cancelled() => return,
            };
            match opened {
                Ok(mut stream) => {
                    tracing::info!("following daily games for email notices");
                    backoff = Duration::from_millis(200);
                    loop {
                        let next = tokio::select! {
                            next = stream.next() => next,
                            () = shutdown.cancelled() => return,
                        };
                        match next {
                            Some(Ok(response)) => {
                                if let Some(event) = response.event {
                                    self.dispatch(event, &sends);
                                }
                            }
                            None => break,
                            Some(Err(status)) => {
                                tracing::warn!(error = %status.message(), "daily game stream broke; reconnecting");
                                break;
                            }
                        }
                    }
                }
                Err(status) => {
                    tracing::debug!(error = %status.message(), "game service unreachable; retrying");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = shutdown.cancelled() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Sends the notice for `event`, if it is a move, on its own task so a
    /// slow mail server never holds up the stream.
    fn dispatch(self: &Arc<Self>, event: common::GameEvent, sends: &Arc<Semaphore>) {
        let Some(Kind::MoveMade(made)) = event.kind else {
            return;
        };
        let this = Arc::clone(self);
        let sends = Arc::clone(sends);
        tokio::spawn(async move {
            // The semaphore is never closed.
            let Ok(_permit) = sends.acquire().await else {
                return;
            };
            if let Err(e) = this.announce(&event.game_id, &made).await {
                tracing::warn!(game_id = event.game_id, error = %e, "could not send a move notice");
            }
        });
    }

    async fn announce(&self, game_id: &str, made: &common::MoveMade) -> Result<(), String> {
        let state = self
            .backends
            .game
            .for_game(game_id)
            .get_game(game::GetGameRequest {
                game_id: game_id.to_owned(),
            })
            .await
            .map_err(|s| format!("cannot read the game: {}", s.message()))?
            .into_inner()
            .game
            .ok_or("the game service sent no game")?;
        let mover_is_white = made.color == common::Color::White as i32;
        let (mover, opponent) = if mover_is_white {
            (&state.white, &state.black)
        } else {
            (&state.black, &state.white)
        };
        let Some(opponent_id) = registered_id(opponent.as_ref()) else {
            // Guests and the engine have no email.
            return Ok(());
        };
        let email = self
            .backends
            .rating
            .rpc()
            .get_player(rating::GetPlayerRequest {
                key: Some(Key::PlayerId(opponent_id.to_owned())),
            })
            .await
            .map_err(|s| format!("cannot read the opponent's account: {}", s.message()))?
            .into_inner()
            .email;
        if email.is_empty() {
            return Ok(());
        }
        let mail = compose(
            &email,
            &state,
            &display_name(mover.as_ref()),
            made,
            &self.public_url,
        );
        self.mailer.send(&mail).await.map_err(|e| e.to_string())?;
        tracing::debug!(
            game_id,
            ply = made.r#move.as_ref().map_or(0, |m| m.ply),
            "move notice sent"
        );
        Ok(())
    }
}

/// The move as a reader writes it: `12. Nf3` for white, `12... Nf6` for black.
fn numbered(ply: u32, san: &str) -> String {
    let number = ply.div_ceil(2);
    if ply % 2 == 1 {
        format!("{number}. {san}")
    } else {
        format!("{number}... {san}")
    }
}

/// The notice of `made` in `state`, for `to`.
fn compose(
    to: &str,
    state: &common::GameState,
    mover: &str,
    made: &common::MoveMade,
    public_url: &PublicUrl,
) -> Mail {
    let (ply, san) = made
        .r#move
        .as_ref()
        .map_or((0, ""), |m| (m.ply, m.san.as_str()));
    let white = display_name(state.white.as_ref());
    let black = display_name(state.black.as_ref());
    let game_id = &state.game_id;
    let played = numbered(ply, san);
    let turn_hours = match state.time_control.as_ref().and_then(|t| t.kind.as_ref()) {
        Some(common::time_control::Kind::Daily(d)) => d.turn_hours,
        _ => 0,
    };
    let link = public_url.game(game_id);
    let subject = format!("{mover} played {played} in {white} vs {black}");
    let mut body = format!(
        "{mover} played {played} in your daily game {white} (white) vs {black} (black), game {game_id}.\n\n"
    );
    if state.status == common::GameStatus::Active as i32 {
        if turn_hours > 0 {
            body.push_str(&format!(
                "It is your move. You have {turn_hours} hours to reply.\n\n"
            ));
        } else {
            body.push_str("It is your move.\n\n");
        }
    } else {
        body.push_str("The game is over.\n\n");
    }
    body.push_str(&format!("Open the game: {link}\n"));
    Mail {
        to: to.to_owned(),
        subject,
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(id: &str, name: &str) -> Option<common::Player> {
        Some(chess_domain::registered_player(id, name))
    }

    #[test]
    fn moves_are_numbered() {
        assert_eq!(numbered(1, "e4"), "1. e4");
        assert_eq!(numbered(2, "e5"), "1... e5");
        assert_eq!(numbered(23, "Nf3"), "12. Nf3");
    }

    #[test]
    fn notices_name_the_game_the_move_and_the_link() {
        let state = common::GameState {
            game_id: "g123".into(),
            white: registered("a", "alice"),
            black: registered("b", "bob"),
            time_control: Some(common::TimeControl {
                kind: Some(common::time_control::Kind::Daily(common::Daily {
                    turn_hours: 48,
                })),
            }),
            status: common::GameStatus::Active as i32,
            ..Default::default()
        };
        let made = common::MoveMade {
            r#move: Some(common::PlayedMove {
                ply: 1,
                uci: "e2e4".into(),
                san: "e4".into(),
                ..Default::default()
            }),
            color: common::Color::White as i32,
            ..Default::default()
        };
        let mail = compose(
            "bob@example.org",
            &state,
            "alice",
            &made,
            &"https://chess.example.org/".parse().unwrap(),
        );
        assert_eq!(mail.to, "bob@example.org");
        assert_eq!(mail.subject, "alice played 1. e4 in alice vs bob");
        assert!(mail.body.contains("game g123"), "{}", mail.body);
        assert!(mail.body.contains("48 hours"), "{}", mail.body);
        assert!(
            mail.body.contains("https://chess.example.org/games/g123"),
            "{}",
            mail.body
        );
        assert_eq!(registered_id(state.black.as_ref()), Some("b"));
        assert_eq!(registered_id(None), None);
    }
}
