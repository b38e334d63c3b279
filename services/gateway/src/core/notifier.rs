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

use chess_domain::{Color, TimeControl};
use tokio::sync::Semaphore;

use crate::core::{
    clients::Backends,
    mail::{Mail, Mailer},
    play::{DailyMove, Game, Games},
    public_url::PublicUrl,
};

/// Emails being sent at once.
const CONCURRENT_SENDS: usize = 4;
/// Longest wait between attempts to reach the game service.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Announces the moves of daily games by email.
#[derive(Debug)]
pub struct Notifier {
    games: Games,
    mailer: Mailer,
    /// Base of the links in the emails.
    public_url: PublicUrl,
}

impl Notifier {
    pub fn new(backends: Backends, mailer: Mailer, public_url: PublicUrl) -> Arc<Self> {
        Arc::new(Self {
            games: Games::new(backends),
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
                opened = self.games.daily_moves() => opened,
                () = shutdown.cancelled() => return,
            };
            match opened {
                Ok(mut moves) => {
                    tracing::info!("following daily games for email notices");
                    backoff = Duration::from_millis(200);
                    loop {
                        let next = tokio::select! {
                            next = moves.next() => next,
                            () = shutdown.cancelled() => return,
                        };
                        match next {
                            Some(Ok(made)) => self.dispatch(made, &sends),
                            None => break,
                            Some(Err(error)) => {
                                tracing::warn!(error = %error.message(), "daily game stream broke; reconnecting");
                                break;
                            }
                        }
                    }
                }
                Err(error) => {
                    tracing::debug!(error = %error.message(), "game service unreachable; retrying");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                () = shutdown.cancelled() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Sends the notice for `made` on its own task so a slow mail server
    /// never holds up the stream.
    fn dispatch(self: &Arc<Self>, made: DailyMove, sends: &Arc<Semaphore>) {
        let this = Arc::clone(self);
        let sends = Arc::clone(sends);
        tokio::spawn(async move {
            // The semaphore is never closed.
            let Ok(_permit) = sends.acquire().await else {
                return;
            };
            if let Err(e) = this.announce(&made).await {
                tracing::warn!(game_id = %made.game_id, error = %e, "could not send a move notice");
            }
        });
    }

    async fn announce(&self, made: &DailyMove) -> Result<(), String> {
        let game_id = &made.game_id;
        let state = self
            .games
            .game(game_id)
            .await
            .map_err(|e| format!("cannot read the game: {}", e.message()))?
            .ok_or("the game service sent no game")?;
        let mover = made.color.unwrap_or(Color::Black);
        let Some(opponent_id) = state.account_of(mover.other()) else {
            // Guests and the engine have no email.
            return Ok(());
        };
        let email = self
            .games
            .email_of(opponent_id)
            .await
            .map_err(|e| format!("cannot read the opponent's account: {}", e.message()))?;
        if email.is_empty() {
            return Ok(());
        }
        let mail = compose(
            &email,
            &state,
            &state.name_of(mover),
            made,
            &self.public_url,
        );
        self.mailer.send(&mail).await.map_err(|e| e.to_string())?;
        tracing::debug!(%game_id, ply = made.ply, "move notice sent");
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
fn compose(to: &str, state: &Game, mover: &str, made: &DailyMove, public_url: &PublicUrl) -> Mail {
    let white = state.name_of(Color::White);
    let black = state.name_of(Color::Black);
    let game_id = &state.id;
    let played = numbered(made.ply, &made.san);
    let turn_hours = match state.time_control {
        Some(TimeControl::Daily { turn_hours }) => turn_hours,
        _ => 0,
    };
    let link = public_url.game(game_id);
    let subject = format!("{mover} played {played} in {white} vs {black}");
    let mut body = format!(
        "{mover} played {played} in your daily game {white} (white) vs {black} (black), game {game_id}.\n\n"
    );
    if state.ended.is_none() {
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
    use chess_domain::{GameId, Participant, PlayerId};
    use shakmaty::ByColor;

    use super::*;

    fn registered(id: &str, name: &str) -> Option<Participant> {
        Some(Participant::Registered {
            id: PlayerId::trusted(id),
            username: chess_domain::Username::trusted(name),
        })
    }

    /// A daily game between alice and bob, not begun.
    fn daily(id: &str) -> Game {
        Game {
            id: GameId::trusted(id),
            players: ByColor {
                white: registered("a", "alice"),
                black: registered("b", "bob"),
            },
            time_control: Some(TimeControl::Daily { turn_hours: 48 }),
            rated: false,
            initial_fen: String::new(),
            moves: Vec::new(),
            fen: String::new(),
            check: false,
            draw_offer: None,
            ended: None,
        }
    }

    #[test]
    fn moves_are_numbered() {
        assert_eq!(numbered(1, "e4"), "1. e4");
        assert_eq!(numbered(2, "e5"), "1... e5");
        assert_eq!(numbered(23, "Nf3"), "12. Nf3");
    }

    #[test]
    fn notices_name_the_game_the_move_and_the_link() {
        let state = daily("g123");
        let made = DailyMove {
            game_id: GameId::trusted("g123"),
            ply: 1,
            san: "e4".into(),
            color: Some(Color::White),
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
        assert_eq!(state.account_of(Color::Black).unwrap(), "b");
        let unnamed = Game {
            players: ByColor::new_with(|_| None),
            ..state
        };
        assert_eq!(unnamed.account_of(Color::White), None);
    }
}
