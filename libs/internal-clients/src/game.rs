//! The game service: creating games, and the calls about one game or many.

use chess_domain::{RuleSet, TimeControl};
use chess_proto::{
    common::v1 as common,
    game::v1::{self as pb, game_service_client::GameServiceClient},
};
use chess_runtime::{Channel, Signer, identity::Signed};
use tonic::Status;

use crate::{CALL_TIMEOUT, timed, within};

/// A game to create.
#[derive(Clone, Debug)]
pub struct NewGame {
    pub white: common::Player,
    pub black: common::Player,
    pub time_control: TimeControl,
    pub rules: RuleSet,
    pub rated: bool,
    pub allow_hints: bool,
    /// The starting position; `None` for the standard one.
    pub initial_fen: Option<String>,
    /// Names the game: creating it again with the same key returns the
    /// first one instead of a second game.
    pub idempotency_key: Option<String>,
}

impl NewGame {
    /// A casual game of standard chess from the usual start: untimed unless
    /// `time_control` says otherwise.
    pub fn casual(white: common::Player, black: common::Player, time_control: TimeControl) -> Self {
        Self {
            white,
            black,
            time_control,
            rules: RuleSet::Standard,
            rated: false,
            allow_hints: false,
            initial_fen: None,
            idempotency_key: None,
        }
    }

    /// A game of the uqchess protocol: untimed, unrated, its own rules, and
    /// hints allowed, as the protocol has them.
    pub fn uqchess(white: common::Player, black: common::Player) -> Self {
        Self {
            rules: RuleSet::Uqchess,
            allow_hints: true,
            ..Self::casual(white, black, TimeControl::Untimed)
        }
    }

    fn into_request(self) -> pb::CreateGameRequest {
        pb::CreateGameRequest {
            white: Some(self.white),
            black: Some(self.black),
            time_control: Some(self.time_control.into()),
            rules: common::RuleSet::from(self.rules) as i32,
            rated: self.rated,
            allow_hints: self.allow_hints,
            initial_fen: self.initial_fen.unwrap_or_default(),
            idempotency_key: self.idempotency_key.unwrap_or_default(),
        }
    }
}

/// The game service.
#[derive(Clone, Debug)]
pub struct GameClient {
    channel: Channel,
    signer: Signer,
}

impl GameClient {
    /// Calls over `channel`, each signed by `signer`.
    pub fn new(channel: Channel, signer: Signer) -> Self {
        Self { channel, signer }
    }

    /// A client of the game service at `addr`, connected on first use.
    pub fn connect(addr: &str, signer: Signer) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self::new(chess_runtime::channel(addr)?, signer))
    }

    fn client(&self, player: Option<&str>, game: Option<&str>) -> GameServiceClient<Signed> {
        // One service holds every game today; calls about one game will be
        // routed here when games live on several replicas.
        GameServiceClient::new(self.signer.channel(self.channel.clone(), player, game))
    }

    /// The service that holds game `game_id`, for calls that read it: each
    /// call's assertion names the game and no player.
    pub fn for_game(&self, game_id: &str) -> GameServiceClient<Signed> {
        self.client(None, Some(game_id))
    }

    /// The service that holds game `game_id`, for calls that act for
    /// `player_id` in it (moves, resigning, draws, hints): each call's
    /// assertion names both, and the service refuses any other pair.
    pub fn acting(&self, player_id: &str, game_id: &str) -> GameServiceClient<Signed> {
        self.client(Some(player_id), Some(game_id))
    }

    /// The service for calls across games that act for `player_id`: their
    /// list of games and their event stream.
    pub fn for_player(&self, player_id: &str) -> GameServiceClient<Signed> {
        self.client(Some(player_id), None)
    }

    /// The service for calls across games for nobody in particular: the
    /// daily-games feed.
    pub fn across_games(&self) -> GameServiceClient<Signed> {
        self.client(None, None)
    }

    /// Creates `game` and returns it as the game service sees it.
    pub async fn create_game(&self, game: NewGame) -> Result<common::GameState, Status> {
        let request = timed(game.into_request(), CALL_TIMEOUT);
        within(
            "game",
            CALL_TIMEOUT,
            self.across_games().create_game(request),
        )
        .await?
        .game
        .ok_or_else(|| Status::internal("the game service sent no game"))
    }

    /// Resigns `player_id`'s side of `game_id`.
    pub async fn resign(&self, game_id: &str, player_id: &str) -> Result<(), Status> {
        let request = timed(
            pb::ResignRequest {
                game_id: game_id.to_owned(),
                player_id: player_id.to_owned(),
            },
            CALL_TIMEOUT,
        );
        within(
            "game",
            CALL_TIMEOUT,
            self.acting(player_id, game_id).resign(request),
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uqchess_game_is_untimed_unrated_with_hints() {
        let white = chess_domain::guest_player("g1", "");
        let black = chess_domain::engine_player(chess_domain::FULL_STRENGTH);
        let request = NewGame::uqchess(white.clone(), black.clone()).into_request();
        assert_eq!(request.white, Some(white));
        assert_eq!(request.black, Some(black));
        assert_eq!(request.rules, common::RuleSet::Uqchess as i32);
        assert!(!request.rated);
        assert!(request.allow_hints);
        assert_eq!(request.time_control, Some(TimeControl::Untimed.into()));
        assert!(request.initial_fen.is_empty());
        assert!(request.idempotency_key.is_empty());
    }

    #[test]
    fn a_key_and_a_position_are_passed_on() {
        let player = chess_domain::registered_player("p1", "ann");
        let game = NewGame {
            rated: true,
            initial_fen: Some("8/8/8/8/8/8/8/K1k5 w - - 0 1".to_owned()),
            idempotency_key: Some("seek:1".to_owned()),
            ..NewGame::casual(player.clone(), player, TimeControl::Untimed)
        };
        let request = game.into_request();
        assert_eq!(request.rules, common::RuleSet::Standard as i32);
        assert!(request.rated);
        assert_eq!(request.initial_fen, "8/8/8/8/8/8/8/K1k5 w - - 0 1");
        assert_eq!(request.idempotency_key, "seek:1");
    }
}
