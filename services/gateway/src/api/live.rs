//! PlayService's live games: ListLiveGames (a page of the games in play)
//! and WatchLiveGames (the same kept up to date), read from the gateway's
//! index ([`crate::core::live`]).

use std::{pin::Pin, sync::Arc};

use chess_proto::{common::v1 as common, gateway::v1 as pb};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_stream::Stream;
use tonic::{Request, Status};

use super::{Answer, play::Play};
use crate::core::live::{LiveChange, LiveFilter, LiveGame, LiveSide, LiveView};

type EventStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The largest page, and the page when none is asked for.
const MAX_PAGE: u32 = 100;
const DEFAULT_PAGE: u32 = 20;

/// The filter a request names; a speed this server does not know is bad
/// input.
fn filter(filter: Option<pb::LiveGamesFilter>) -> Result<LiveFilter, Status> {
    let filter = filter.unwrap_or_default();
    let speed = match common::SpeedCategory::try_from(filter.speed) {
        Ok(common::SpeedCategory::Unspecified) => None,
        Ok(speed) => Some(speed as i32),
        Err(_) => {
            return Err(Status::invalid_argument(
                "filter.speed is not a speed category",
            ));
        }
    };
    Ok(LiveFilter {
        speed,
        rated: filter.rated,
    })
}

fn side(side: &LiveSide) -> pb::LivePlayer {
    pb::LivePlayer {
        player: Some(side.player.clone()),
        rating: side.rating,
        provisional: side.provisional,
    }
}

fn live_game(game: &LiveGame) -> pb::LiveGame {
    pb::LiveGame {
        game_id: game.id.to_string(),
        white: Some(side(&game.white)),
        black: Some(side(&game.black)),
        time_control: game.time_control,
        speed: game.speed,
        rated: game.rated,
        ply: game.ply,
        fen: game.fen.clone(),
        last_move: game.last_move.clone(),
        clock: game.clock,
        spectators: game.spectators,
        created_at: game.created_at,
    }
}

/// A page of `view` from the offset `token` names.
fn page(view: &LiveView, page_size: u32, token: &str) -> Result<pb::ListLiveGamesResponse, Status> {
    let size = match page_size {
        0 => DEFAULT_PAGE,
        n => n.min(MAX_PAGE),
    } as usize;
    let from: usize = if token.is_empty() {
        0
    } else {
        token
            .parse()
            .map_err(|_| Status::invalid_argument("page_token is not one this server gave"))?
    };
    let games: Vec<pb::LiveGame> = view
        .games
        .iter()
        .skip(from)
        .take(size)
        .map(|g| live_game(g))
        .collect();
    let next = from + games.len();
    Ok(pb::ListLiveGamesResponse {
        games,
        next_page_token: if next < view.games.len() {
            next.to_string()
        } else {
            String::new()
        },
        in_play: view.in_play,
        featured: view.featured.as_deref().map(live_game),
    })
}

/// What one change is for a stream with `filter` (`featured_only`: only
/// the featured game and the count), if anything.
fn message(
    change: LiveChange,
    filter: &LiveFilter,
    featured_only: bool,
) -> Option<pb::watch_live_games_response::Event> {
    use pb::watch_live_games_response::Event;
    match change {
        LiveChange::Added(game) if !featured_only && filter.admits(&game) => {
            Some(Event::Added(live_game(&game)))
        }
        LiveChange::Updated(game) if !featured_only && filter.admits(&game) => {
            Some(Event::Updated(live_game(&game)))
        }
        // A client holds no game the filter left out: an id it does not
        // know is harmless, and cheaper than remembering what was sent.
        LiveChange::Removed(id) if !featured_only => Some(Event::Removed(id.to_string())),
        LiveChange::Featured(game) => Some(Event::Featured(pb::FeaturedGame {
            game: game.as_deref().map(live_game),
        })),
        LiveChange::InPlay(count) => Some(Event::InPlay(count)),
        _ => None,
    }
}

impl Play {
    pub(super) async fn list_live_games(
        &self,
        request: Request<pb::ListLiveGamesRequest>,
    ) -> Answer<pb::ListLiveGamesResponse> {
        let r = request.into_inner();
        let filter = filter(r.filter)?;
        let view = self.shared().live.view(&filter).await;
        page(&view, r.page_size, &r.page_token)
    }

    pub(super) async fn watch_live_games(
        &self,
        request: Request<pb::WatchLiveGamesRequest>,
    ) -> Answer<EventStream<pb::WatchLiveGamesResponse>> {
        use pb::watch_live_games_response::Event;
        let r = request.into_inner();
        let filter = filter(r.filter)?;
        let featured_only = r.featured_only;
        let shared = Arc::clone(self.shared());
        let (view, changes) = shared.live.subscribe(&filter).await;
        let first = Event::List(pb::LiveGamesList {
            games: if featured_only {
                Vec::new()
            } else {
                view.games.iter().map(|g| live_game(g)).collect()
            },
            in_play: view.in_play,
            featured: view.featured.as_deref().map(live_game),
        });
        let shutdown = shared.shutdown.clone();
        struct State {
            first: Option<pb::watch_live_games_response::Event>,
            changes: broadcast::Receiver<LiveChange>,
        }
        let state = State {
            first: Some(first),
            changes,
        };
        // Read as the client's stream is written: no task between.
        let events = futures::stream::unfold(Some(state), move |state| {
            let shutdown = shutdown.clone();
            async move {
                let mut state = state?;
                if let Some(first) = state.first.take() {
                    let item = pb::WatchLiveGamesResponse { event: Some(first) };
                    return Some((Ok(item), Some(state)));
                }
                loop {
                    let change = tokio::select! {
                        change = state.changes.recv() => change,
                        () = shutdown.cancelled() => return None,
                    };
                    match change {
                        Ok(change) => {
                            if let Some(event) = message(change, &filter, featured_only) {
                                let item = pb::WatchLiveGamesResponse { event: Some(event) };
                                return Some((Ok(item), Some(state)));
                            }
                        }
                        // Ending right after is the point.
                        Err(RecvError::Lagged(_)) => {
                            let status = Status::aborted(
                                "the stream fell behind the live games; open it again",
                            );
                            return Some((Err(status), None));
                        }
                        Err(RecvError::Closed) => return None,
                    }
                }
            }
        });
        Ok(Box::pin(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chess_domain::GameId;

    fn view(n: usize) -> LiveView {
        let games = (0..n)
            .map(|i| {
                Arc::new(LiveGame {
                    id: GameId::trusted(format!("g{i}")),
                    white: LiveSide {
                        player: common::Player::default(),
                        rating: 0,
                        provisional: false,
                    },
                    black: LiveSide {
                        player: common::Player::default(),
                        rating: 0,
                        provisional: false,
                    },
                    time_control: None,
                    speed: 0,
                    rated: false,
                    ply: 0,
                    fen: String::new(),
                    last_move: String::new(),
                    clock: None,
                    spectators: 0,
                    created_at: None,
                })
            })
            .collect();
        LiveView {
            games,
            in_play: u32::try_from(n).unwrap(),
            featured: None,
        }
    }

    #[test]
    fn pages_follow_each_other_to_the_end() {
        let view = view(5);
        let first = page(&view, 2, "").unwrap();
        assert_eq!(first.games.len(), 2);
        assert_eq!(first.next_page_token, "2");
        let second = page(&view, 2, &first.next_page_token).unwrap();
        assert_eq!(second.games[0].game_id, "g2");
        let last = page(&view, 2, &second.next_page_token).unwrap();
        assert_eq!(last.games.len(), 1);
        assert!(last.next_page_token.is_empty());
        assert_eq!(last.in_play, 5);
        assert!(page(&view, 2, "x").is_err());
        assert_eq!(page(&view, 0, "").unwrap().games.len(), 5);
    }

    #[test]
    fn an_unknown_speed_is_refused() {
        let bad = pb::LiveGamesFilter {
            speed: 99,
            rated: None,
        };
        assert_eq!(
            filter(Some(bad)).unwrap_err().code(),
            tonic::Code::InvalidArgument
        );
        assert_eq!(filter(None).unwrap(), LiveFilter::default());
    }
}
