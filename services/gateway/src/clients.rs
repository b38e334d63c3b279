//! Clients of the internal services.

use chess_proto::{
    game::v1::game_service_client::GameServiceClient,
    matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient,
    rating::v1::rating_service_client::RatingServiceClient,
};
use chess_runtime::Channel;

/// The internal services the gateway calls. Cloning is cheap: the clients
/// share their connections.
#[derive(Clone, Debug)]
pub struct Backends {
    pub game: GameServiceClient<Channel>,
    pub matchmaking: MatchmakingServiceClient<Channel>,
    pub rating: RatingServiceClient<Channel>,
}

impl Backends {
    /// Lazily connected clients of the services at these addresses.
    pub fn connect(
        game: &str,
        matchmaking: &str,
        rating: &str,
    ) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self {
            game: GameServiceClient::new(chess_runtime::channel(game)?),
            matchmaking: MatchmakingServiceClient::new(chess_runtime::channel(matchmaking)?),
            rating: RatingServiceClient::new(chess_runtime::channel(rating)?),
        })
    }
}
