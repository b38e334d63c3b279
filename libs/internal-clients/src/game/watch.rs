//! Following one game across replicas: a WatchGame stream that, when the
//! game's shard moves or its replica dies, is opened again (routed) from
//! the last ply forwarded, so its reader sees one stream; and [`Seen`],
//! which keeps a stream opened again from repeating what it forwarded.

use std::{collections::HashMap, time::Duration};

use chess_domain::GameId;
use chess_proto::{
    common::v1::{self as common, game_event::Kind},
    game::v1 as pb,
};
use futures::StreamExt as _;
use tokio::time::Instant;
use tonic::{Code, Status, Streaming};

use super::{
    EventStream, GameClient,
    router::{FIRST_PAUSE, MAX_PAUSE},
};

/// How long a stream that broke is tried again before its reader is told
/// UNAVAILABLE: a failover takes up to about 4 s.
pub(crate) const REOPEN_WITHIN: Duration = Duration::from_secs(10);

/// Whether a stream failed because its replica went away or stopped
/// serving the game, rather than with an answer: UNAVAILABLE, or what the
/// client library reports for a connection that broke (UNKNOWN, CANCELLED,
/// an HTTP/2 error), never with a reason of the service.
pub(crate) fn broken(status: &Status) -> bool {
    if chess_runtime::Reason::of(status).is_some() {
        return false;
    }
    match status.code() {
        Code::Unavailable | Code::Unknown | Code::Cancelled => true,
        Code::Internal => status.message().starts_with("h2 protocol error"),
        _ => false,
    }
}

/// What a stream forwarded of each game, so that events a stream opened
/// again sends a second time are dropped: a move of a ply already
/// forwarded, the end of a game already ended. Other events (a draw offer
/// still standing) may come twice around a reopening, as they do for a
/// reader that resumes.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    games: HashMap<GameId, Forwarded>,
}

#[derive(Clone, Copy, Debug)]
struct Forwarded {
    /// The highest ply of an event forwarded.
    ply: u32,
    ended: bool,
    /// The highest chat revision forwarded (or resumed from), if any.
    chat: Option<u64>,
}

impl Seen {
    /// What a reader resuming after `cursors` has already seen.
    pub(crate) fn after(cursors: &[common::GameCursor]) -> Self {
        Self {
            games: cursors
                .iter()
                .map(|c| {
                    let seen = Forwarded {
                        ply: c.ply,
                        ended: false,
                        chat: c.chat_revision,
                    };
                    (GameId::trusted(c.game_id.clone()), seen)
                })
                .collect(),
        }
    }

    /// Whether `event` is to be forwarded; if so, it counts as forwarded.
    pub(crate) fn admit(&mut self, event: &common::GameEvent) -> bool {
        // A chat line says nothing of the game's ply: it counts only for
        // the chat of a game followed.
        if let Some(Kind::Chat(line)) = &event.kind {
            return match self.games.get_mut(event.game_id.as_str()) {
                Some(game) if game.chat.is_some_and(|seen| line.revision <= seen) => false,
                Some(game) => {
                    game.chat = Some(line.revision);
                    true
                }
                None => true,
            };
        }
        let ends = match &event.kind {
            Some(Kind::GameEnded(_)) => true,
            Some(Kind::Snapshot(state)) => state.status == common::GameStatus::Finished as i32,
            _ => false,
        };
        match self.games.get_mut(event.game_id.as_str()) {
            Some(game) => {
                match &event.kind {
                    Some(Kind::MoveMade(_)) if event.ply <= game.ply => return false,
                    Some(Kind::GameEnded(_)) if game.ended => return false,
                    _ => {}
                }
                game.ply = match &event.kind {
                    // The plies after a takeback are played afresh.
                    Some(Kind::TakenBack(_)) => event.ply,
                    _ => game.ply.max(event.ply),
                };
                game.ended |= ends;
            }
            None => {
                let seen = Forwarded {
                    ply: event.ply,
                    ended: ends,
                    chat: None,
                };
                self.games
                    .insert(GameId::trusted(event.game_id.clone()), seen);
            }
        }
        true
    }

    /// The last ply forwarded of `game_id`, if anything was.
    pub(crate) fn ply(&self, game_id: &GameId) -> Option<u32> {
        self.games.get(game_id).map(|g| g.ply)
    }

    /// The last chat revision forwarded of `game_id`, if any was.
    pub(crate) fn chat(&self, game_id: &GameId) -> Option<u64> {
        self.games.get(game_id).and_then(|g| g.chat)
    }

    /// Whether the end of `game_id` was forwarded.
    pub(crate) fn ended(&self, game_id: &GameId) -> bool {
        self.games.get(game_id).is_some_and(|g| g.ended)
    }

    /// Where a stream opened again resumes: each game not over, after the
    /// last ply forwarded.
    pub(crate) fn cursors(&self) -> Vec<common::GameCursor> {
        let mut cursors: Vec<common::GameCursor> = self
            .games
            .iter()
            .filter(|(_, g)| !g.ended)
            .map(|(id, g)| common::GameCursor {
                game_id: id.to_string(),
                ply: g.ply,
                chat_revision: g.chat,
            })
            .collect();
        cursors.sort_unstable_by(|a, b| a.game_id.cmp(&b.game_id));
        cursors
    }
}

/// The events of `game_id` (from `from_ply`, as WatchGameRequest has it),
/// followed across replicas until the game's end.
pub(crate) async fn watch_game(
    client: GameClient,
    game_id: GameId,
    from_ply: Option<u32>,
    without_moves_of: Option<chess_domain::Color>,
    watcher_id: String,
    chat: Option<ChatRooms>,
) -> Result<EventStream<pb::WatchGameResponse>, Status> {
    let without_moves_of = without_moves_of.map(|c| chess_domain::color_to_pb(c) as i32);
    let seen = match from_ply {
        Some(ply) => Seen::after(&[common::GameCursor {
            game_id: game_id.to_string(),
            ply,
            chat_revision: None,
        }]),
        None => Seen::default(),
    };
    let upstream = open(
        &client,
        &game_id,
        from_ply,
        without_moves_of,
        &watcher_id,
        chat.as_ref(),
    )
    .await?;
    let following = Following {
        client,
        game_id,
        without_moves_of,
        watcher_id,
        chat,
        seen,
        upstream,
        done: false,
    };
    Ok(Box::pin(futures::stream::unfold(
        following,
        |mut following| async move {
            let item = following.next().await?;
            Some((item, following))
        },
    )))
}

/// The chat a watcher of one game follows: from which revision, in which
/// rooms (`common::ChatRoom`).
#[derive(Clone, Debug)]
pub struct ChatRooms {
    pub from_revision: u64,
    pub rooms: Vec<i32>,
}

async fn open(
    client: &GameClient,
    game_id: &GameId,
    from_ply: Option<u32>,
    without_moves_of: Option<i32>,
    watcher_id: &str,
    chat: Option<&ChatRooms>,
) -> Result<Streaming<pb::WatchGameResponse>, Status> {
    let request = pb::WatchGameRequest {
        game_id: game_id.to_string(),
        from_ply,
        without_moves_of,
        watcher_id: watcher_id.to_owned(),
        from_chat_revision: chat.map(|c| c.from_revision),
        chat_rooms: chat.map(|c| c.rooms.clone()).unwrap_or_default(),
    };
    Ok(client
        .for_game(game_id)
        .watch_game(request)
        .await?
        .into_inner())
}

/// A game followed.
struct Following {
    client: GameClient,
    game_id: GameId,
    /// The side whose live moves are left out, as WatchGameRequest has it.
    without_moves_of: Option<i32>,
    /// Who watches, as WatchGameRequest has it (empty: unknown).
    watcher_id: String,
    /// The chat followed too, if any: where it started.
    chat: Option<ChatRooms>,
    seen: Seen,
    upstream: Streaming<pb::WatchGameResponse>,
    done: bool,
}

impl Following {
    async fn next(&mut self) -> Option<Result<pb::WatchGameResponse, Status>> {
        loop {
            if self.done {
                return None;
            }
            let ended = self.seen.ended(&self.game_id);
            let failure = match self.upstream.next().await {
                Some(Ok(response)) => {
                    if response
                        .event
                        .as_ref()
                        .is_some_and(|event| !self.seen.admit(event))
                    {
                        continue;
                    }
                    return Some(Ok(response));
                }
                // After the game's end nothing is missed: the stream is over.
                Some(Err(_)) | None if ended => {
                    self.done = true;
                    return None;
                }
                Some(Err(status)) if !broken(&status) => {
                    self.done = true;
                    return Some(Err(status));
                }
                Some(Err(status)) => Some(status),
                None => None,
            };
            if let Err(status) = self.reopen(failure).await {
                self.done = true;
                return Some(Err(status));
            }
        }
    }

    /// Opens the game's stream again after the last ply forwarded.
    async fn reopen(&mut self, failure: Option<Status>) -> Result<(), Status> {
        let deadline = Instant::now() + REOPEN_WITHIN;
        let mut pause = FIRST_PAUSE;
        let mut failure = failure;
        loop {
            let from_ply = self.seen.ply(&self.game_id);
            tracing::debug!(
                game_id = %self.game_id,
                ?from_ply,
                error = failure.as_ref().map(|s| s.message().to_owned()),
                "following a game's events again"
            );
            // The chat resumes after the last line forwarded.
            let chat = self.chat.as_ref().map(|c| ChatRooms {
                from_revision: self.seen.chat(&self.game_id).unwrap_or(c.from_revision),
                rooms: c.rooms.clone(),
            });
            let opened = open(
                &self.client,
                &self.game_id,
                from_ply,
                self.without_moves_of,
                &self.watcher_id,
                chat.as_ref(),
            )
            .await;
            match opened {
                Ok(upstream) => {
                    self.upstream = upstream;
                    return Ok(());
                }
                Err(status) if !broken(&status) => return Err(status),
                Err(status) => failure = Some(status),
            }
            if Instant::now() + pause >= deadline {
                tracing::debug!(game_id = %self.game_id, "gave up following a game's events");
                return Err(Status::unavailable(
                    "the game's events cannot be followed now; watch it again",
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(game_id: &str, ply: u32, kind: Kind) -> common::GameEvent {
        common::GameEvent {
            game_id: game_id.to_owned(),
            ply,
            clock: None,
            kind: Some(kind),
        }
    }

    fn moved(game_id: &str, ply: u32) -> common::GameEvent {
        event(game_id, ply, Kind::MoveMade(common::MoveMade::default()))
    }

    fn ended(game_id: &str, ply: u32) -> common::GameEvent {
        event(game_id, ply, Kind::GameEnded(common::GameEnded::default()))
    }

    fn offered(game_id: &str, ply: u32) -> common::GameEvent {
        event(
            game_id,
            ply,
            Kind::DrawOffered(common::DrawOffered::default()),
        )
    }

    fn snapshot(game_id: &str, ply: u32, status: common::GameStatus) -> common::GameEvent {
        let state = common::GameState {
            game_id: game_id.to_owned(),
            status: status as i32,
            ..Default::default()
        };
        event(game_id, ply, Kind::Snapshot(state))
    }

    /// Which of `events` pass, in order.
    fn admitted(seen: &mut Seen, events: &[common::GameEvent]) -> Vec<(String, u32)> {
        events
            .iter()
            .filter(|e| seen.admit(e))
            .map(|e| (e.game_id.clone(), e.ply))
            .collect()
    }

    #[test]
    fn the_plies_after_a_takeback_pass_again() {
        let back = event("a", 2, Kind::TakenBack(common::TakenBack::default()));
        let events = [
            moved("a", 1),
            moved("a", 2),
            moved("a", 3),
            back,
            moved("a", 3),
            moved("a", 3),
        ];
        let mut seen = Seen::default();
        let passed: Vec<u32> = admitted(&mut seen, &events)
            .into_iter()
            .map(|(_, ply)| ply)
            .collect();
        // The new ply 3 passes once; a copy of it does not.
        assert_eq!(passed, [1, 2, 3, 2, 3]);
        assert_eq!(seen.ply(&GameId::trusted("a")), Some(3));
    }

    #[test]
    fn one_stream_passes_whole() {
        // Every game's events in ply order, as one replica sends them.
        let events = [
            snapshot("a", 4, common::GameStatus::Active),
            moved("b", 1),
            moved("a", 5),
            offered("a", 5),
            moved("b", 2),
            moved("a", 6),
            ended("a", 6),
        ];
        let mut seen = Seen::default();
        assert_eq!(admitted(&mut seen, &events).len(), events.len());
        assert_eq!(seen.ply(&GameId::trusted("a")), Some(6));
        assert!(seen.ended(&GameId::trusted("a")));
        assert_eq!(seen.ply(&GameId::trusted("c")), None);
        // A resumed reader's stream too.
        let mut seen = Seen::after(&[common::GameCursor {
            game_id: "a".to_owned(),
            ply: 4,
            chat_revision: None,
        }]);
        assert_eq!(admitted(&mut seen, &events[2..]).len(), 5);
    }

    #[test]
    fn a_stream_opened_again_repeats_nothing_forwarded() {
        let mut seen = Seen::default();
        // The first stream, until it broke.
        let first = [moved("a", 1), moved("b", 3), moved("a", 2), ended("b", 3)];
        assert_eq!(admitted(&mut seen, &first).len(), 4);
        // Only a is resumed; b is over.
        assert_eq!(
            seen.cursors(),
            vec![common::GameCursor {
                game_id: "a".to_owned(),
                ply: 2,
                chat_revision: None,
            }]
        );
        // The one that replaced it overlapped the first: its moves from
        // ply 2 and the end of b come again, and a new game starts.
        let second = [
            moved("a", 2),
            ended("b", 3),
            moved("a", 3),
            snapshot("c", 0, common::GameStatus::Active),
            moved("a", 3),
            moved("c", 1),
        ];
        assert_eq!(
            admitted(&mut seen, &second),
            vec![
                ("a".to_owned(), 3),
                ("c".to_owned(), 0),
                ("c".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn a_resumed_game_may_repeat_its_standing_offer() {
        let mut seen = Seen::after(&[common::GameCursor {
            game_id: "a".to_owned(),
            ply: 5,
            chat_revision: None,
        }]);
        assert!(seen.admit(&offered("a", 5)));
        assert!(seen.admit(&offered("a", 5)));
        assert!(!seen.admit(&moved("a", 5)));
        assert!(seen.admit(&moved("a", 6)));
    }

    fn said(game_id: &str, revision: u64) -> common::GameEvent {
        let line = common::ChatLine {
            seq: revision,
            revision,
            ..Default::default()
        };
        event(game_id, 0, Kind::Chat(line))
    }

    #[test]
    fn chat_lines_count_by_revision_and_leave_plies_alone() {
        let mut seen = Seen::after(&[common::GameCursor {
            game_id: "a".to_owned(),
            ply: 5,
            chat_revision: Some(2),
        }]);
        assert!(!seen.admit(&said("a", 2)));
        assert!(seen.admit(&said("a", 3)));
        assert!(!seen.admit(&said("a", 3)));
        assert_eq!(seen.ply(&GameId::trusted("a")), Some(5));
        assert_eq!(seen.cursors()[0].chat_revision, Some(3));
        // A line of a game not followed passes and starts nothing.
        assert!(seen.admit(&said("b", 1)));
        assert_eq!(seen.ply(&GameId::trusted("b")), None);
        assert_eq!(seen.chat(&GameId::trusted("b")), None);
    }

    #[test]
    fn a_finished_game_in_a_snapshot_is_over() {
        let mut seen = Seen::default();
        assert!(seen.admit(&snapshot("a", 40, common::GameStatus::Finished)));
        assert!(seen.ended(&GameId::trusted("a")));
        assert!(seen.cursors().is_empty());
        assert!(seen.admit(&snapshot("b", 3, common::GameStatus::Active)));
        assert!(!seen.ended(&GameId::trusted("b")));
    }

    #[test]
    fn broken_streams_are_told_from_answers() {
        assert!(broken(&Status::unavailable("shard moving")));
        assert!(broken(&Status::unknown("transport error")));
        assert!(broken(&Status::cancelled("operation was canceled")));
        assert!(broken(&Status::internal(
            "h2 protocol error: error reading a body from connection"
        )));
        assert!(!broken(&Status::internal("the database failed")));
        assert!(!broken(&Status::aborted(
            "the watcher fell 3 events behind"
        )));
        assert!(!broken(&Status::not_found("no game g1")));
        assert!(!broken(&Status::out_of_range("from_ply 9 is beyond")));
        let answered = chess_runtime::Reason::NotAPlayer.status(Code::Unavailable, "x");
        assert!(!broken(&answered));
    }
}
