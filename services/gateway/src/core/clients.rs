//! The internal services the gateway calls, through the typed clients of
//! [`chess_internal_clients`].

use chess_internal_clients::{GameClient, MatchmakingClient, RatingClient};

/// The internal services the gateway calls. Cloning is cheap: the clients
/// share their connections.
#[derive(Clone, Debug)]
pub struct Backends {
    pub game: GameClient,
    pub matchmaking: MatchmakingClient,
    pub rating: RatingClient,
}

impl Backends {
    /// Lazily connected clients of the services at these addresses, every
    /// call signed by `signer`.
    pub fn connect(
        signer: &chess_runtime::Signer,
        game: &str,
        matchmaking: &str,
        rating: &str,
    ) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self {
            game: GameClient::connect(game, signer.clone())?,
            matchmaking: MatchmakingClient::connect(matchmaking, signer.clone())?,
            rating: RatingClient::connect(rating, signer.clone())?,
        })
    }
}
