//! The matchmaking service: the gateway passes the lobby's calls through.

use chess_domain::PlayerId;
use chess_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use chess_runtime::{Channel, Signer, identity::Signed};

/// The matchmaking service.
#[derive(Clone, Debug)]
pub struct MatchmakingClient {
    channel: Channel,
    signer: Signer,
}

impl MatchmakingClient {
    /// Calls over `channel`, each signed by `signer`.
    pub fn new(channel: Channel, signer: Signer) -> Self {
        Self { channel, signer }
    }

    /// A client of the matchmaking service at `addr`, connected on first
    /// use.
    pub fn connect(addr: &str, signer: Signer) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self::new(chess_runtime::channel(addr)?, signer))
    }

    /// The generated client, for calls passed through as they are that act
    /// for nobody (the list of seeks of a guest, the uqchess queue).
    pub fn rpc(&self) -> MatchmakingServiceClient<Signed> {
        MatchmakingServiceClient::new(self.signer.channel(self.channel.clone(), None, None))
    }

    /// The generated client for calls acting for `player_id` (seeks,
    /// requests, challenges and their lists): each call's assertion names
    /// the player, and the service refuses a request for another.
    pub fn acting(&self, player_id: &PlayerId) -> MatchmakingServiceClient<Signed> {
        MatchmakingServiceClient::new(self.signer.channel(
            self.channel.clone(),
            Some(player_id.as_str()),
            None,
        ))
    }
}
