//! The rating service: accounts, ratings and the results that move them.

use chess_domain::{GameId, PlayerId, ResultReport, SpeedCategory};
use chess_proto::{
    common::v1 as common,
    rating::v1::{
        self as pb, GetPlayerRequest, GetRatingsRequest, LinkNostrKeyRequest, RecordResultRequest,
        UnlinkNostrKeyRequest, get_player_request::Key, rating_service_client::RatingServiceClient,
    },
};
use chess_runtime::{Channel, Signer, identity::Signed};
use tonic::{Code, Status};

use crate::{CALL_TIMEOUT, timed, within};

/// `report` as the rating service takes it.
fn record_request(report: ResultReport) -> RecordResultRequest {
    RecordResultRequest {
        game_id: report.game_id.into(),
        white_id: report.white_id.into(),
        black_id: report.black_id.into(),
        result: common::GameResult::from(report.result) as i32,
        category: common::SpeedCategory::from(report.speed) as i32,
        rated: report.rated && report.speed.is_rated(),
        finished_at: Some(report.finished_at.to_proto()),
    }
}

/// The rating service.
#[derive(Clone, Debug)]
pub struct RatingClient {
    channel: Channel,
    signer: Signer,
}

impl RatingClient {
    /// Calls over `channel`, each signed by `signer`.
    pub fn new(channel: Channel, signer: Signer) -> Self {
        Self { channel, signer }
    }

    /// A client of the rating service at `addr`, connected on first use.
    pub fn connect(addr: &str, signer: Signer) -> Result<Self, chess_runtime::client::Error> {
        Ok(Self::new(chess_runtime::channel(addr)?, signer))
    }

    /// The generated client, for calls passed through as they are.
    pub fn rpc(&self) -> RatingServiceClient<Signed> {
        self.bound(None)
    }

    fn bound(&self, game_id: Option<&GameId>) -> RatingServiceClient<Signed> {
        let game_id = game_id.map(GameId::as_str);
        RatingServiceClient::new(self.signer.channel(self.channel.clone(), None, game_id))
    }

    /// The generated client for calls acting for `player_id` (linking a
    /// Nostr key): each call's assertion names the player, and the service
    /// refuses a request for another.
    pub fn acting(&self, player_id: &PlayerId) -> RatingServiceClient<Signed> {
        RatingServiceClient::new(self.signer.channel(
            self.channel.clone(),
            Some(player_id.as_str()),
            None,
        ))
    }

    /// The ratings in `category` of those of `player_ids` the service knows,
    /// as (player id, rating).
    pub async fn ratings(
        &self,
        player_ids: Vec<PlayerId>,
        category: SpeedCategory,
    ) -> Result<Vec<(PlayerId, common::Rating)>, Status> {
        let request = timed(
            GetRatingsRequest {
                player_ids: player_ids.into_iter().map(String::from).collect(),
                category: common::SpeedCategory::from(category) as i32,
            },
            CALL_TIMEOUT,
        );
        let response = within("rating", CALL_TIMEOUT, self.rpc().get_ratings(request)).await?;
        Ok(response
            .ratings
            .into_iter()
            .filter_map(|r| Some((PlayerId::trusted(r.player_id), r.rating?)))
            .collect())
    }

    /// The registered player called `username` (any case): NOT_FOUND if
    /// there is none. Any text is looked up (a name that breaks the username
    /// rules is nobody's), so that callers answer for it as for an unknown
    /// name.
    pub async fn player_named(&self, username: &str) -> Result<pb::GetPlayerResponse, Status> {
        let request = timed(
            GetPlayerRequest {
                key: Some(Key::Username(username.to_owned())),
            },
            CALL_TIMEOUT,
        );
        within("rating", CALL_TIMEOUT, self.rpc().get_player(request)).await
    }

    /// The registered player whose linked Nostr public key is `key` (64
    /// lowercase hexadecimal digits), or None if no account holds it. A key
    /// not so written is INVALID_ARGUMENT.
    pub async fn player_by_nostr_key(
        &self,
        key: &str,
    ) -> Result<Option<pb::GetPlayerResponse>, Status> {
        let request = timed(
            GetPlayerRequest {
                key: Some(Key::NostrPublicKey(key.to_owned())),
            },
            CALL_TIMEOUT,
        );
        match within("rating", CALL_TIMEOUT, self.rpc().get_player(request)).await {
            Ok(player) => Ok(Some(player)),
            Err(status) if status.code() == Code::NotFound => Ok(None),
            Err(status) => Err(status),
        }
    }

    /// Links the Nostr public key `key` (64 lowercase hexadecimal digits) to
    /// `player_id`, replacing their earlier one, once the caller has checked
    /// that the player owns it: ALREADY_EXISTS if another player holds it,
    /// NOT_FOUND if there is no such player. Linking it again changes
    /// nothing.
    pub async fn link_nostr_key(
        &self,
        player_id: &PlayerId,
        key: &str,
    ) -> Result<pb::LinkNostrKeyResponse, Status> {
        let request = timed(
            LinkNostrKeyRequest {
                player_id: player_id.to_string(),
                public_key: key.to_owned(),
            },
            CALL_TIMEOUT,
        );
        within(
            "rating",
            CALL_TIMEOUT,
            self.acting(player_id).link_nostr_key(request),
        )
        .await
    }

    /// Removes `player_id`'s linked Nostr public key, if any: NOT_FOUND if
    /// there is no such player.
    pub async fn unlink_nostr_key(
        &self,
        player_id: &PlayerId,
    ) -> Result<pb::UnlinkNostrKeyResponse, Status> {
        let request = timed(
            UnlinkNostrKeyRequest {
                player_id: player_id.to_string(),
            },
            CALL_TIMEOUT,
        );
        within(
            "rating",
            CALL_TIMEOUT,
            self.acting(player_id).unlink_nostr_key(request),
        )
        .await
    }

    /// Records a finished game; recording the same game again changes
    /// nothing.
    pub async fn record_result(&self, report: ResultReport) -> Result<(), Status> {
        let mut game = self.bound(Some(&report.game_id));
        let request = timed(record_request(report), CALL_TIMEOUT);
        within("rating", CALL_TIMEOUT, game.record_result(request)).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use chess_domain::GameResult;

    use super::*;

    fn result(speed: SpeedCategory, rated: bool) -> ResultReport {
        ResultReport {
            game_id: chess_domain::GameId::trusted("g1"),
            white_id: chess_domain::PlayerId::trusted("w"),
            black_id: chess_domain::PlayerId::trusted("b"),
            result: GameResult::WhiteWins,
            speed,
            rated,
            finished_at: chess_domain::Timestamp::from_millis(1_700_000_000_123),
        }
    }

    #[test]
    fn untimed_games_are_never_sent_as_rated() {
        assert!(!record_request(result(SpeedCategory::Untimed, true)).rated);
        assert!(record_request(result(SpeedCategory::Blitz, true)).rated);
        assert!(!record_request(result(SpeedCategory::Blitz, false)).rated);
    }

    #[test]
    fn a_result_is_sent_with_its_wire_values() {
        let request = record_request(result(SpeedCategory::Blitz, true));
        assert_eq!(request.result, common::GameResult::WhiteWins as i32);
        assert_eq!(request.category, common::SpeedCategory::Blitz as i32);
        let at = request.finished_at.unwrap();
        assert_eq!((at.seconds, at.nanos), (1_700_000_000, 123_000_000));
    }
}
