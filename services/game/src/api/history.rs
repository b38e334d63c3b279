//! ListPlayerHistory: a player's finished games with filters, straight from
//! the store (finished games no longer change, so any replica answers).

use chess_domain::{GameId, PlayerId, SpeedCategory};
use chess_proto::game::v1 as pb;
use tonic::Request;

use super::{Answer, GameApi};
use crate::{
    convert,
    error::Error,
    model::pgn,
    store::{HistoryFilter, StoreError},
};

/// Longest page of a history.
const MAX_PAGE: u32 = 100;
/// A page's size when the caller names none.
const DEFAULT_PAGE: u32 = 20;

/// The filter a request asks for, or why it is not one.
fn filter_of(r: &pb::ListPlayerHistoryRequest) -> Result<HistoryFilter, Error> {
    let rated = match pb::RatedFilter::try_from(r.rated) {
        Ok(pb::RatedFilter::Unspecified) => None,
        Ok(pb::RatedFilter::Rated) => Some(true),
        Ok(pb::RatedFilter::Casual) => Some(false),
        Err(_) => return Err(Error::Invalid("unknown rated filter".to_owned())),
    };
    let speed = match r.speed {
        0 => None,
        speed => Some(SpeedCategory::try_from(speed)?),
    };
    let opponent = match r.opponent_id.as_str() {
        "" => None,
        id => Some(PlayerId::parse(id)?),
    };
    Ok(HistoryFilter {
        rated,
        speed,
        opponent,
    })
}

impl GameApi {
    pub(super) async fn list_player_history(
        &self,
        request: Request<pb::ListPlayerHistoryRequest>,
    ) -> Answer<pb::ListPlayerHistoryResponse> {
        let r = request.into_inner();
        let player = PlayerId::parse(&r.player_id).map_err(Error::from)?;
        let filter = filter_of(&r)?;
        let page_size = match r.page_size {
            0 => DEFAULT_PAGE,
            n => n.min(MAX_PAGE),
        };
        let store = &self.registry.context().store;
        let (rows, next_page_token) = store
            .history(&player, &filter, u64::from(page_size), &r.page_token)
            .await
            .map_err(Error::from)?;
        let mut games = Vec::with_capacity(rows.len());
        for row in rows {
            let pgn = if r.with_pgn {
                let id = GameId::trusted(row.id.clone());
                let game = store.load(&id).await.map_err(Error::from)?.ok_or_else(|| {
                    Error::Store(StoreError::Corrupt {
                        id: row.id.clone(),
                        reason: "listed but not loaded".to_owned(),
                    })
                })?;
                pgn::export(&game, &self.site)
            } else {
                String::new()
            };
            games.push(pb::HistoryGame {
                game: Some(convert::row_state(&row).map_err(Error::from)?),
                pgn,
            });
        }
        Ok(pb::ListPlayerHistoryResponse {
            games,
            next_page_token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_read_and_bad_ones_refused() {
        let mut r = pb::ListPlayerHistoryRequest {
            rated: pb::RatedFilter::Casual as i32,
            speed: chess_proto::common::v1::SpeedCategory::Blitz as i32,
            opponent_id: "bob".to_owned(),
            ..Default::default()
        };
        let filter = filter_of(&r).unwrap();
        assert_eq!(filter.rated, Some(false));
        assert_eq!(filter.speed, Some(SpeedCategory::Blitz));
        assert_eq!(filter.opponent, Some(PlayerId::trusted("bob")));
        r.rated = 9;
        assert!(matches!(filter_of(&r), Err(Error::Invalid(_))));
        r.rated = 0;
        r.speed = 99;
        assert!(matches!(filter_of(&r), Err(Error::Invalid(_))));
        r.speed = 0;
        r.opponent_id.clear();
        assert_eq!(filter_of(&r).unwrap(), HistoryFilter::default());
    }
}
