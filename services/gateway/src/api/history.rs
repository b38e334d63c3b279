//! A player's game history on PlayService: their finished games seen from
//! their side with what each did to their rating (`ListPlayerGames`), all
//! of them in one PGN file (`ExportPlayerGames`), and a game's rating
//! changes once it is applied (`GetRatingChanges`). Histories are public,
//! as on lichess: none of these reads needs a token.
//!
//! The games come from the game service's `ListPlayerHistory` (stored
//! games: any replica answers), the rating changes from the rating
//! service's history rows, asked for by the page's game ids at once.

use std::{collections::HashMap, sync::Arc};

use chess_domain::PlayerId;
use chess_internal_clients::GameRpc;
use chess_proto::{
    common::v1 as common,
    game::v1 as game,
    gateway::v1 as pb,
    rating::v1::{self as rating, get_player_request::Key},
};
use tonic::{Request, Status};

use super::{Answer, EventStream, Play};
use crate::api::{convert, with_retries};

type Rating = rating::rating_service_client::RatingServiceClient<chess_runtime::identity::Signed>;

/// Most games one export holds: the newest.
pub(super) const MAX_EXPORT: u32 = 1000;
/// Games per chunk of an export (one page of the game service's).
const EXPORT_CHUNK: u32 = 50;

/// A history's filters as the game service takes them, the opponent
/// resolved to their id.
struct Filter {
    rated: game::RatedFilter,
    speed: i32,
    opponent_id: String,
}

impl Play {
    fn rating(&self) -> Rating {
        self.shared.backends.rating.rpc()
    }

    /// The id of the player called `username`: NOT_FOUND if nobody is.
    async fn player_named(&self, field: &str, username: String) -> Result<PlayerId, Status> {
        convert::require(field, &username)?;
        let request = rating::GetPlayerRequest {
            key: Some(Key::Username(username)),
        };
        let call = |mut rating: Rating, r| async move { rating.get_player(r).await };
        let player = with_retries(self.rating(), request, call).await?;
        player
            .profile
            .map(|p| PlayerId::trusted(p.player_id))
            .ok_or_else(|| Status::unavailable("the rating service sent no profile"))
    }

    /// The filters of a request, checked, with the opponent looked up.
    async fn filter(&self, filter: Option<pb::PlayerGamesFilter>) -> Result<Filter, Status> {
        let filter = filter.unwrap_or_default();
        let rated = match pb::RatedFilter::try_from(filter.rated) {
            Ok(pb::RatedFilter::Unspecified) => game::RatedFilter::Unspecified,
            Ok(pb::RatedFilter::Rated) => game::RatedFilter::Rated,
            Ok(pb::RatedFilter::Casual) => game::RatedFilter::Casual,
            Err(_) => return Err(Status::invalid_argument("unknown rated filter")),
        };
        if filter.speed != 0 && chess_domain::SpeedCategory::try_from(filter.speed).is_err() {
            return Err(Status::invalid_argument("unknown speed category"));
        }
        let opponent_id = if filter.opponent_username.is_empty() {
            String::new()
        } else {
            self.player_named("opponent_username", filter.opponent_username)
                .await?
                .into_string()
        };
        Ok(Filter {
            rated,
            speed: filter.speed,
            opponent_id,
        })
    }

    /// A page of `player`'s history from the game service.
    async fn history_page(
        &self,
        player: &PlayerId,
        filter: &Filter,
        page_size: u32,
        page_token: String,
        with_pgn: bool,
    ) -> Result<game::ListPlayerHistoryResponse, Status> {
        let request = game::ListPlayerHistoryRequest {
            player_id: player.as_str().to_owned(),
            rated: filter.rated as i32,
            speed: filter.speed,
            opponent_id: filter.opponent_id.clone(),
            page_size,
            page_token,
            with_pgn,
        };
        let client = self.shared.backends.game.for_player(player);
        with_retries(client, request, |mut client: GameRpc, request| async move {
            client.list_player_history(request).await
        })
        .await
    }

    /// The rating changes of `games`, by game and player.
    async fn changes_of(
        &self,
        games: Vec<String>,
    ) -> Result<HashMap<(String, String), pb::RatingDelta>, Status> {
        if games.is_empty() {
            return Ok(HashMap::new());
        }
        let request = rating::GetGameRatingChangesRequest {
            game_ids: games,
            player_id: String::new(),
        };
        let call = |mut rating: Rating, r| async move { rating.get_game_rating_changes(r).await };
        let changes = with_retries(self.rating(), request, call).await?.changes;
        Ok(changes
            .into_iter()
            .map(|c| {
                let delta = pb::RatingDelta {
                    rating_before: c.rating_before,
                    rating_after: c.rating_after,
                };
                ((c.game_id, c.player_id), delta)
            })
            .collect())
    }

    pub(super) async fn list_player_games(
        &self,
        request: Request<pb::ListPlayerGamesRequest>,
    ) -> Answer<pb::ListPlayerGamesResponse> {
        let r = request.into_inner();
        let player = self.player_named("username", r.username).await?;
        let filter = self.filter(r.filter).await?;
        let page = self
            .history_page(&player, &filter, r.page_size, r.page_token, false)
            .await?;
        let states: Vec<common::GameState> =
            page.games.into_iter().filter_map(|g| g.game).collect();
        let mut changes = self
            .changes_of(states.iter().map(|g| g.game_id.clone()).collect())
            .await?;
        let games = states
            .into_iter()
            .map(|state| seen_by(&player, state, &mut changes))
            .collect();
        Ok(pb::ListPlayerGamesResponse {
            games,
            next_page_token: page.next_page_token,
        })
    }

    pub(super) async fn export_player_games(
        &self,
        request: Request<pb::ExportPlayerGamesRequest>,
    ) -> Answer<EventStream<pb::ExportPlayerGamesResponse>> {
        let r = request.into_inner();
        let player = self.player_named("username", r.username).await?;
        let filter = self.filter(r.filter).await?;
        let wanted = match r.max_games {
            0 => MAX_EXPORT,
            n => n.min(MAX_EXPORT),
        };
        let what = Arc::new((Play::new(Arc::clone(&self.shared)), player, filter));
        // Each chunk is the next page; the stream ends after the last page
        // or once `wanted` games are sent.
        let start = Some((what, String::new(), wanted));
        let chunks = futures::stream::unfold(start, |state| async move {
            let (what, token, left) = state?;
            let (play, player, filter) = &*what;
            let size = left.min(EXPORT_CHUNK);
            let page = match play.history_page(player, filter, size, token, true).await {
                Ok(page) => page,
                Err(status) => return Some((Err(status), None)),
            };
            let sent = page.games.len() as u32;
            let pgn = join_games(page.games.iter().map(|g| g.pgn.as_str()));
            if pgn.is_empty() {
                return None;
            }
            let next = (!page.next_page_token.is_empty() && sent < left)
                .then(|| (Arc::clone(&what), page.next_page_token, left - sent));
            Some((Ok(pb::ExportPlayerGamesResponse { pgn }), next))
        });
        Ok(Box::pin(chunks))
    }

    pub(super) async fn get_rating_changes(
        &self,
        request: Request<pb::GetRatingChangesRequest>,
    ) -> Answer<pb::GetRatingChangesResponse> {
        let game_id = convert::game_id(&request.into_inner().game_id)?;
        let client = self.shared.backends.game.for_game(&game_id);
        let ask = game::GetGameRequest {
            game_id: game_id.as_str().to_owned(),
        };
        let state = with_retries(client, ask, |mut client: GameRpc, r| async move {
            client.get_game(r).await
        })
        .await?
        .game
        .ok_or_else(|| Status::unavailable("the game service sent no game"))?;
        let mut changes = self.changes_of(vec![state.game_id.clone()]).await?;
        let mut side = |player: &Option<common::Player>| {
            registered_id(player).and_then(|id| changes.remove(&(state.game_id.clone(), id)))
        };
        Ok(pb::GetRatingChangesResponse {
            white: side(&state.white),
            black: side(&state.black),
        })
    }
}

/// The registered player's id, if `player` is one.
fn registered_id(player: &Option<common::Player>) -> Option<String> {
    match player.as_ref()?.kind.as_ref()? {
        common::player::Kind::Registered(p) => Some(p.player_id.clone()),
        _ => None,
    }
}

/// `state` from `player`'s side, with both players' rating changes.
fn seen_by(
    player: &PlayerId,
    state: common::GameState,
    changes: &mut HashMap<(String, String), pb::RatingDelta>,
) -> pb::PlayerGame {
    let white = registered_id(&state.white);
    let is_white = white.as_deref() == Some(player.as_str());
    let (mine, theirs) = if is_white {
        (white, registered_id(&state.black))
    } else {
        (registered_id(&state.black), white)
    };
    let color = if is_white {
        common::Color::White
    } else {
        common::Color::Black
    };
    let outcome = match common::GameResult::try_from(state.result) {
        Ok(common::GameResult::Draw) => pb::PlayerOutcome::Drawn,
        Ok(common::GameResult::WhiteWins) if is_white => pb::PlayerOutcome::Won,
        Ok(common::GameResult::BlackWins) if !is_white => pb::PlayerOutcome::Won,
        Ok(common::GameResult::WhiteWins | common::GameResult::BlackWins) => {
            pb::PlayerOutcome::Lost
        }
        _ => pb::PlayerOutcome::Unspecified,
    };
    let mut take =
        |id: Option<String>| id.and_then(|id| changes.remove(&(state.game_id.clone(), id)));
    let rating = take(mine);
    let opponent_rating = take(theirs);
    pb::PlayerGame {
        game: Some(state),
        color: color as i32,
        outcome: outcome as i32,
        rating,
        opponent_rating,
    }
}

/// Games in PGN as one file: each game's text ended by a blank line, the
/// separation the PGN standard gives between one game's movetext and the
/// next game's tags.
fn join_games<'a>(games: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for pgn in games {
        let pgn = pgn.trim_end();
        if pgn.is_empty() {
            continue;
        }
        out.push_str(pgn);
        out.push_str("\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(id: &str) -> Option<common::Player> {
        Some(common::Player {
            kind: Some(common::player::Kind::Registered(common::RegisteredPlayer {
                player_id: id.to_owned(),
                username: id.to_owned(),
            })),
        })
    }

    #[test]
    fn a_game_is_seen_from_the_players_side() {
        let state = common::GameState {
            game_id: "g1".to_owned(),
            white: registered("alice"),
            black: registered("bob"),
            result: common::GameResult::BlackWins as i32,
            ..Default::default()
        };
        let delta = |before, after| pb::RatingDelta {
            rating_before: before,
            rating_after: after,
        };
        let mut changes = HashMap::from([
            (("g1".to_owned(), "alice".to_owned()), delta(1500.0, 1490.0)),
            (("g1".to_owned(), "bob".to_owned()), delta(1400.0, 1410.0)),
        ]);
        let seen = seen_by(
            &PlayerId::trusted("bob"),
            state.clone(),
            &mut changes.clone(),
        );
        assert_eq!(seen.color, common::Color::Black as i32);
        assert_eq!(seen.outcome, pb::PlayerOutcome::Won as i32);
        assert_eq!(seen.rating, Some(delta(1400.0, 1410.0)));
        assert_eq!(seen.opponent_rating, Some(delta(1500.0, 1490.0)));
        let seen = seen_by(&PlayerId::trusted("alice"), state, &mut changes);
        assert_eq!(seen.color, common::Color::White as i32);
        assert_eq!(seen.outcome, pb::PlayerOutcome::Lost as i32);
        assert_eq!(seen.rating, Some(delta(1500.0, 1490.0)));
        let casual = common::GameState {
            game_id: "g2".to_owned(),
            white: registered("alice"),
            black: registered("bob"),
            result: common::GameResult::Draw as i32,
            ..Default::default()
        };
        let seen = seen_by(&PlayerId::trusted("alice"), casual, &mut changes);
        assert_eq!(seen.outcome, pb::PlayerOutcome::Drawn as i32);
        assert_eq!(seen.rating, None);
    }

    #[test]
    fn games_are_joined_with_a_blank_line_between() {
        let joined = join_games(["[A \"1\"]\n\n1. e4 *\n", "", "[B \"2\"]\n\n1. d4 *"].into_iter());
        assert_eq!(joined, "[A \"1\"]\n\n1. e4 *\n\n[B \"2\"]\n\n1. d4 *\n\n");
    }
}
