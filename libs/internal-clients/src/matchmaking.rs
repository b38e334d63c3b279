//! The matchmaking service: the gateway passes the lobby's calls through.

use chess_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use chess_runtime::Channel;

/// The matchmaking service.
#[derive(Clone, Debug)]
pub struct MatchmakingClient {
    inner: MatchmakingServiceClient<Channel>,
}

impl MatchmakingClient {
    pub fn new(channel: Channel) -> Self {
        Self {
            inner: MatchmakingServiceClient::new(channel),
        }
    }

    /// A client of the matchmaking service at `addr`, connected on first
    /// use.
    pub fn connect(addr: &str) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self::new(chess_runtime::channel(addr)?))
    }

    /// The generated client, for calls passed through as they are.
    pub fn rpc(&self) -> MatchmakingServiceClient<Channel> {
        self.inner.clone()
    }
}
