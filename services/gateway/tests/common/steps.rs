//! The lobby steps many gateway tests take on the way to what they test
//! (posting a seek, joining one, accepting a request, a game against the
//! engine), each a call that must succeed, as [`System`] methods.

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
}
