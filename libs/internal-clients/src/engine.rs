//! The engine service: the computer's moves and hints, and Stockfish's list
//! of legal moves.

use std::time::Duration;

use chess_proto::engine::v1::{
    self as pb, BestMoveRequest, ListMovesRequest, best_move_request::Strength,
    engine_service_client::EngineServiceClient,
};
use chess_runtime::{Channel, Signer, identity::Signed};
use tonic::Code;

use crate::{timed, within};

/// The search the uqchess protocol prescribes for full strength.
pub const FULL_STRENGTH_SEARCH: pb::SearchLimits = pb::SearchLimits {
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

/// The engine service.
#[derive(Clone, Debug)]
pub struct EngineClient {
    channel: Channel,
    signer: Signer,
}

impl EngineClient {
    /// Calls over `channel`, each signed by `signer`.
    pub fn new(channel: Channel, signer: Signer) -> Self {
        Self { channel, signer }
    }

    /// A client of the engine service at `addr`, connected on first use.
    pub fn connect(addr: &str, signer: Signer) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self::new(chess_runtime::channel(addr)?, signer))
    }

    /// The generated client, each call's assertion naming `game_id` if any.
    fn rpc(&self, game_id: Option<&str>) -> EngineServiceClient<Signed> {
        EngineServiceClient::new(self.signer.channel(self.channel.clone(), None, game_id))
    }

    fn position(initial_fen: &str, moves: Vec<String>) -> pb::Position {
        pb::Position {
            fen: initial_fen.to_owned(),
            moves,
        }
    }

    /// The engine's move in `game_id` at `level`
    /// ([`chess_domain::FULL_STRENGTH`]: the full-strength search).
    pub async fn best_move(
        &self,
        game_id: &str,
        initial_fen: &str,
        moves: Vec<String>,
        level: u32,
    ) -> Result<String, EngineError> {
        let strength = if level == chess_domain::FULL_STRENGTH {
            Strength::Limits(FULL_STRENGTH_SEARCH)
        } else {
            Strength::Level(level)
        };
        let request = timed(
            BestMoveRequest {
                position: Some(Self::position(initial_fen, moves)),
                strength: Some(strength),
                game_id: game_id.to_owned(),
            },
            SEARCH_DEADLINE,
        );
        let response = within(
            "engine",
            SEARCH_DEADLINE,
            self.rpc(Some(game_id)).best_move(request),
        )
        .await?;
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
        let request = timed(
            ListMovesRequest {
                position: Some(Self::position(initial_fen, moves)),
            },
            SEARCH_DEADLINE,
        );
        Ok(within(
            "engine",
            SEARCH_DEADLINE,
            self.rpc(None).list_moves(request),
        )
        .await?
        .moves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_and_failures_are_told_apart() {
        let refused = EngineError::from(tonic::Status::invalid_argument("bad fen"));
        assert!(matches!(refused, EngineError::Refused(m) if m == "bad fen"));
        let down = EngineError::from(tonic::Status::unavailable("no engine"));
        assert!(matches!(down, EngineError::Unavailable(m) if m == "no engine"));
    }
}
