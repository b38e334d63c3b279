//! Calls to the engine service for computer moves and hints.

use std::time::Duration;

use chess_proto::engine::v1::{
    self as pb, BestMoveRequest, ListMovesRequest, best_move_request::Strength,
    engine_service_client::EngineServiceClient,
};
use chess_runtime::Channel;
use tonic::Code;

/// The search the uqchess protocol prescribes for full strength.
pub const FULL_STRENGTH: pb::SearchLimits = pb::SearchLimits {
    movetime_ms: 500,
    depth: 15,
};

/// How long a search request may take, queueing included.
const SEARCH_DEADLINE: Duration = Duration::from_secs(30);

/// Why the engine gave no answer.
#[derive(Clone, Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine service (or its Stockfish) failed or was unreachable; the
    /// request may succeed later.
    #[error("engine unavailable: {0}")]
    Unavailable(String),
    /// The engine refused the request.
    #[error("engine refused the request: {0}")]
    Refused(String),
}

impl From<tonic::Status> for EngineError {
    fn from(status: tonic::Status) -> Self {
        match status.code() {
            Code::InvalidArgument | Code::FailedPrecondition => {
                Self::Refused(status.message().to_owned())
            }
            _ => Self::Unavailable(status.message().to_owned()),
        }
    }
}

/// A client of the engine service.
#[derive(Clone, Debug)]
pub struct Engine {
    client: EngineServiceClient<Channel>,
}

impl Engine {
    pub fn new(channel: Channel) -> Self {
        Self {
            client: EngineServiceClient::new(channel),
        }
    }

    fn position(initial_fen: &str, moves: Vec<String>) -> pb::Position {
        pb::Position {
            fen: initial_fen.to_owned(),
            moves,
        }
    }

    /// The engine's move at `level` (0: full strength).
    pub async fn best_move(
        &self,
        game_id: &str,
        initial_fen: &str,
        moves: Vec<String>,
        level: u8,
    ) -> Result<String, EngineError> {
        let strength = if level == 0 {
            Strength::Limits(FULL_STRENGTH)
        } else {
            Strength::Level(u32::from(level))
        };
        let mut request = tonic::Request::new(BestMoveRequest {
            position: Some(Self::position(initial_fen, moves)),
            strength: Some(strength),
            game_id: game_id.to_owned(),
        });
        request.set_timeout(SEARCH_DEADLINE);
        let response = self.client.clone().best_move(request).await?.into_inner();
        response
            .result
            .map(|r| r.best_move)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| EngineError::Unavailable("the engine returned no move".to_owned()))
    }

    /// Every legal move in Stockfish's order.
    pub async fn list_moves(
        &self,
        initial_fen: &str,
        moves: Vec<String>,
    ) -> Result<Vec<String>, EngineError> {
        let mut request = tonic::Request::new(ListMovesRequest {
            position: Some(Self::position(initial_fen, moves)),
        });
        request.set_timeout(SEARCH_DEADLINE);
        Ok(self
            .client
            .clone()
            .list_moves(request)
            .await?
            .into_inner()
            .moves)
    }
}
