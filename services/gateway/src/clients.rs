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
    /// Lazily connected clients of the services at these addresses.
    pub fn connect(
        game: &str,
        matchmaking: &str,
        rating: &str,
    ) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self {
            game: GameClient::connect(game)?,
            matchmaking: MatchmakingClient::connect(matchmaking)?,
            rating: RatingClient::connect(rating)?,
        })
    }
}
