//! A player's history: their finished games, newest first, filtered by
//! rated or casual, speed and opponent, a page at a time. Aborted games
//! (finished without a result) are left out: nothing was played.
//!
//! The query is served by the indexes on each side's player, status and
//! start (`games_white_history_idx`, `games_black_history_idx`).

use chess_domain::{GameStatus, PlayerId, SpeedCategory};
use sea_orm::{
    ColumnTrait as _, Condition, EntityTrait as _, QueryFilter as _, QueryOrder as _,
    QuerySelect as _,
};

use super::{Store, StoreError, games, reads::parse_token};

/// Which of a player's finished games a history lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only rated (`Some(true)`) or only casual (`Some(false)`) games.
    pub rated: Option<bool>,
    pub speed: Option<SpeedCategory>,
    /// Only games against this player.
    pub opponent: Option<PlayerId>,
}

impl Store {
    /// A page of `player_id`'s finished games that pass `filter`, newest
    /// first, and the token of the next page (empty on the last).
    pub async fn history(
        &self,
        player_id: &PlayerId,
        filter: &HistoryFilter,
        page_size: u64,
        page_token: &str,
    ) -> Result<(Vec<games::Model>, String), StoreError> {
        let side = |me: games::Column, them: games::Column| {
            let mut side = Condition::all().add(me.eq(player_id.as_str()));
            if let Some(opponent) = &filter.opponent {
                side = side.add(them.eq(opponent.as_str()));
            }
            side
        };
        let mut query = games::Entity::find()
            .filter(
                Condition::any()
                    .add(side(games::Column::WhiteId, games::Column::BlackId))
                    .add(side(games::Column::BlackId, games::Column::WhiteId)),
            )
            .filter(games::Column::Status.eq(GameStatus::Finished.as_str()))
            .filter(games::Column::Result.is_not_null());
        if let Some(rated) = filter.rated {
            query = query.filter(games::Column::Rated.eq(rated));
        }
        if let Some(speed) = filter.speed {
            query = query.filter(games::Column::Speed.eq(speed.as_str()));
        }
        if let Some((created, id)) = parse_token(page_token) {
            query = query.filter(
                Condition::any()
                    .add(games::Column::CreatedAt.lt(created))
                    .add(
                        Condition::all()
                            .add(games::Column::CreatedAt.eq(created))
                            .add(games::Column::Id.lt(id)),
                    ),
            );
        }
        let mut rows = query
            .order_by_desc(games::Column::CreatedAt)
            .order_by_desc(games::Column::Id)
            .limit(page_size + 1)
            .all(&self.db)
            .await?;
        let next = if rows.len() as u64 > page_size {
            rows.truncate(page_size as usize);
            rows.last()
                .map(|r| format!("{}:{}", r.created_at, r.id))
                .unwrap_or_default()
        } else {
            String::new()
        };
        Ok((rows, next))
    }
}

#[cfg(test)]
mod tests {
    use chess_domain::{GameId, RuleSet, TimeControl, Timestamp, Username};
    use shakmaty::Color;

    use super::*;
    use crate::{
        model::{Game, GameSetup, Participant},
        store::{WriteOp, new_game_row, ops_for},
    };

    fn registered(id: &str) -> Participant {
        Participant::Registered {
            id: PlayerId::trusted(id),
            username: Username::trusted(id),
        }
    }

    /// Game `id` begun at `start` seconds, alice against `opponent`,
    /// finished by black's resignation unless `aborted`.
    #[allow(clippy::too_many_arguments)]
    async fn play(
        store: &Store,
        id: &str,
        start: i64,
        opponent: &str,
        time_control: TimeControl,
        rated: bool,
        alice_white: bool,
        aborted: bool,
    ) {
        let (white, black) = if alice_white {
            ("alice", opponent)
        } else {
            (opponent, "alice")
        };
        let setup = GameSetup {
            white: registered(white),
            black: registered(black),
            time_control,
            rules: RuleSet::Standard,
            rated,
            allow_hints: false,
            initial_fen: None,
        };
        let at = Timestamp::from_millis(start * 1000);
        let mut game = Game::new(GameId::trusted(id), setup, at).unwrap();
        let row = new_game_row(&game, None);
        store
            .write(None, vec![WriteOp::InsertGame(Box::new(row))])
            .await
            .unwrap();
        let end = Timestamp::from_millis(start * 1000 + 500);
        let events = if aborted {
            game.abort(Color::White, end).unwrap()
        } else {
            game.resign(Color::Black, end).unwrap()
        };
        store
            .write(None, ops_for(&game, &events, end))
            .await
            .unwrap();
    }

    async fn ids(
        store: &Store,
        filter: HistoryFilter,
        size: u64,
        token: &str,
    ) -> (Vec<String>, String) {
        let (rows, next) = store
            .history(&PlayerId::trusted("alice"), &filter, size, token)
            .await
            .unwrap();
        (rows.into_iter().map(|r| r.id).collect(), next)
    }

    /// Filters, order and paging of a history, and aborted and live
    /// games left out.
    async fn history_is_filtered_and_paged(store: Store) {
        let blitz = TimeControl::Incremental {
            initial_secs: 180,
            increment_secs: 2,
        };
        let rapid = TimeControl::Incremental {
            initial_secs: 600,
            increment_secs: 0,
        };
        play(&store, "g1", 1, "bob", blitz, true, true, false).await;
        play(&store, "g2", 2, "carol", rapid, false, false, false).await;
        play(&store, "g3", 3, "bob", rapid, true, false, false).await;
        play(&store, "g4", 4, "carol", blitz, false, true, false).await;
        play(&store, "g5", 5, "bob", blitz, true, true, true).await;
        play(&store, "x1", 6, "dave", blitz, true, true, false).await;
        // Between others, and one still in play.
        crate::store::tests::insert_games(&store, &[crate::store::tests::new_game("live")]).await;

        let all = HistoryFilter::default();
        let (page, next) = ids(&store, all.clone(), 3, "").await;
        assert_eq!(page, ["x1", "g4", "g3"]);
        let (page, last) = ids(&store, all.clone(), 3, &next).await;
        assert_eq!(page, ["g2", "g1"]);
        assert_eq!(last, "");

        let rated = HistoryFilter {
            rated: Some(true),
            ..HistoryFilter::default()
        };
        assert_eq!(ids(&store, rated, 10, "").await.0, ["x1", "g3", "g1"]);
        let casual_blitz = HistoryFilter {
            rated: Some(false),
            speed: Some(SpeedCategory::Blitz),
            ..HistoryFilter::default()
        };
        assert_eq!(ids(&store, casual_blitz, 10, "").await.0, ["g4"]);
        let against_bob = HistoryFilter {
            opponent: Some(PlayerId::trusted("bob")),
            ..HistoryFilter::default()
        };
        assert_eq!(ids(&store, against_bob, 10, "").await.0, ["g3", "g1"]);
        let rapid_carol = HistoryFilter {
            speed: Some(SpeedCategory::Rapid),
            opponent: Some(PlayerId::trusted("carol")),
            ..HistoryFilter::default()
        };
        assert_eq!(ids(&store, rapid_carol, 10, "").await.0, ["g2"]);
        let nobody = HistoryFilter {
            opponent: Some(PlayerId::trusted("alice")),
            ..HistoryFilter::default()
        };
        assert!(ids(&store, nobody, 10, "").await.0.is_empty());
    }

    #[tokio::test]
    async fn history_is_filtered_and_paged_on_sqlite() {
        let (_dir, _url, store) = crate::store::tests::sqlite_store().await;
        history_is_filtered_and_paged(store).await;
    }

    #[tokio::test]
    async fn history_is_filtered_and_paged_on_postgres() {
        let url = chess_storage::testing::fresh_postgres_database().await;
        history_is_filtered_and_paged(Store::open(&url).await.unwrap()).await;
    }
}
