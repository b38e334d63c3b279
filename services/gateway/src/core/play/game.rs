//! A game as the fronts see it: its record, how it ended, and ratings.

use chess_domain::{
    Color, GameId, GameResult, Participant, PlayerId, SpeedCategory, Termination, TimeControl,
    color_from_pb,
};
use chess_proto::common::v1 as common;
use shakmaty::ByColor;

/// How a game ended, as its event or a move's answer tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    /// `None` for an aborted game (or one the service does not say).
    pub result: Option<GameResult>,
    /// `None` when the service names a termination this gateway does not know.
    pub termination: Option<Termination>,
}

impl Ended {
    pub(super) fn of(ended: &common::GameEnded) -> Self {
        Self {
            result: GameResult::try_from(ended.result).ok(),
            termination: Termination::try_from(ended.termination).ok(),
        }
    }

    /// The side that won; `None` for a draw or an aborted game.
    pub fn winner(&self) -> Option<Color> {
        self.result.and_then(GameResult::winner)
    }

    /// How `game` ended, if it has.
    fn of_game(game: &common::GameState) -> Option<Self> {
        if game.status != common::GameStatus::Finished as i32 {
            return None;
        }
        Some(Self {
            result: GameResult::try_from(game.result).ok(),
            termination: Termination::try_from(game.termination).ok(),
        })
    }
}

/// A move of a game, as it was played.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    pub uci: String,
    pub san: String,
}

/// A game as the game service keeps it: who plays it and on what terms,
/// where it stands, its moves, and how it ended. Its category, plies and
/// side to move follow from these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    pub id: GameId,
    /// `None` for a side the service names in a way this gateway cannot read.
    pub players: ByColor<Option<Participant>>,
    /// `None` when the service sends a clock this gateway does not know.
    pub time_control: Option<TimeControl>,
    pub rated: bool,
    /// The starting position.
    pub initial_fen: String,
    pub moves: Vec<PlayedMove>,
    /// The position now.
    pub fen: String,
    /// Whether the side to move is in check.
    pub check: bool,
    /// The side offering a draw, if one is.
    pub draw_offer: Option<Color>,
    pub ended: Option<Ended>,
}

impl Game {
    pub(super) fn of(game: common::GameState) -> Self {
        let player = |player: Option<&common::Player>| Participant::from_pb(player).ok();
        Self {
            players: ByColor {
                white: player(game.white.as_ref()),
                black: player(game.black.as_ref()),
            },
            time_control: TimeControl::try_from(game.time_control.as_ref()).ok(),
            rated: game.rated,
            check: game.check,
            draw_offer: color_from_pb(game.draw_offer),
            ended: Ended::of_game(&game),
            moves: game
                .moves
                .into_iter()
                .map(|m| PlayedMove {
                    uci: m.uci,
                    san: m.san,
                })
                .collect(),
            id: GameId::trusted(game.game_id),
            initial_fen: game.initial_fen,
            fen: game.fen,
        }
    }

    /// The player of side `color`.
    pub fn player(&self, color: Color) -> Option<&Participant> {
        self.players.get(color).as_ref()
    }

    /// The category its time control is rated in.
    pub fn speed(&self) -> Option<SpeedCategory> {
        self.time_control.map(TimeControl::speed)
    }

    /// Plies played.
    pub fn ply(&self) -> u32 {
        u32::try_from(self.moves.len()).unwrap_or(u32::MAX)
    }

    /// The side to move (`None` when the position does not say).
    pub fn turn(&self) -> Option<Color> {
        chess_domain::side_to_move(&self.fen)
    }

    /// The account id of the player of side `color`, if registered (not a
    /// guest or the engine).
    pub fn account_of(&self, color: Color) -> Option<&PlayerId> {
        match self.player(color)? {
            Participant::Registered { id, .. } => Some(id),
            _ => None,
        }
    }

    /// The name the player of side `color` is shown by, `?` when the game
    /// names nobody this gateway can read.
    pub fn name_of(&self, color: Color) -> String {
        self.player(color)
            .map_or_else(|| "?".to_owned(), Participant::display_name)
    }
}

/// A player's current rating in one category.
#[derive(Clone, Debug, PartialEq)]
pub struct Rating {
    pub player_id: PlayerId,
    pub rating: f64,
    /// Whether too few games stand behind it to trust it yet.
    pub provisional: bool,
}
