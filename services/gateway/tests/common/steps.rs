//! The steps many gateway tests take on the way to what they test (posting
//! a seek, joining one, a game against the engine, reading a game's legal
//! moves or a player's profile), each a call that must succeed, as
//! [`System`] methods.

use chess_proto::{common::v1 as common, gateway::v1 as pb};

use super::{Answer as _, System, User};

impl System {
    /// `user` posts `seek`: the seek as posted.
    pub async fn post_seek(&self, user: &User, seek: pb::CreateSeekRequest) -> common::Seek {
        let mut lobby = self.lobby().await;
        let posted = lobby.create_seek(user.call(seek)).answer().await;
        posted.seek.expect("the posted seek")
    }

    /// `user` asks to join the seek `seek_id`: the request, which names the
    /// game at once if the seek takes its askers without asking its poster.
    pub async fn request_seek(&self, user: &User, seek_id: &str) -> common::SeekRequest {
        let request = pb::RequestSeekRequest {
            seek_id: seek_id.to_owned(),
        };
        let mut lobby = self.lobby().await;
        let asked = lobby.request_seek(user.call(request)).answer().await;
        asked.request.expect("the seek request")
    }

    /// The game against the engine that `user` starts by `request`.
    pub async fn engine_game(
        &self,
        user: &User,
        request: pb::PlayEngineRequest,
    ) -> common::GameState {
        let mut lobby = self.lobby().await;
        let started = lobby.play_engine(user.call(request)).answer().await;
        started.game.expect("the game against the engine")
    }

    /// The legal moves in the game `game_id` now, as anyone reads them.
    pub async fn legal_moves(&self, game_id: &str) -> Vec<pb::LegalMove> {
        let game_id = game_id.to_owned();
        let mut play = self.play().await;
        let legal = play.legal_moves(pb::LegalMovesRequest { game_id });
        legal.answer().await.moves
    }

    /// The public profile of the player called `username` (in any case).
    pub async fn profile(&self, username: &str) -> common::PlayerProfile {
        let username = username.to_owned();
        let mut accounts = self.accounts().await;
        let read = accounts.get_profile(pb::GetProfileRequest { username });
        read.answer().await.profile.expect("the profile")
    }
}
