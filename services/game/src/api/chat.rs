//! The chat calls of the gRPC face (PostChat, ListChat, HideChat,
//! ReportChat, ListChatReports) and the chat parts of the watchers'
//! streams: who may write in which room, lines to and from the wire, and
//! what a resuming watcher missed.

use std::sync::Arc;

use chess_domain::{GameId, Participant, PlayerId, Timestamp, require};
use chess_proto::{common::v1 as common, game::v1 as pb};
use chess_runtime::{Claims, Reason};
use tonic::{Code, Request, Status};

use super::{Answer, GameApi, seat::known_game};
use crate::{
    chat::{self, Line, Room},
    error::Error,
    hub::WireEvent,
    model::Game,
    store::chat::NewLine,
};

/// Lines read from the store at a time for a watcher catching up.
const CATCH_UP_PAGE: u64 = 500;

/// The room a wire room names.
pub(super) fn room_of(room: i32) -> Result<Room, Status> {
    match common::ChatRoom::try_from(room) {
        Ok(common::ChatRoom::Players) => Ok(Room::Players),
        Ok(common::ChatRoom::Spectators) => Ok(Room::Spectators),
        _ => Err(invalid("the chat room must be players or spectators")),
    }
}

/// The rooms a request names: at least one, each once.
pub(super) fn rooms_of(rooms: &[i32]) -> Result<Vec<Room>, Status> {
    let mut out = Vec::with_capacity(2);
    for &room in rooms {
        let room = room_of(room)?;
        if !out.contains(&room) {
            out.push(room);
        }
    }
    if out.is_empty() {
        return Err(invalid("name at least one chat room"));
    }
    Ok(out)
}

fn invalid(message: impl Into<String>) -> Status {
    Reason::InvalidRequest.status(Code::InvalidArgument, message.into())
}

pub(super) fn room_pb(room: Room) -> common::ChatRoom {
    match room {
        Room::Players => common::ChatRoom::Players,
        Room::Spectators => common::ChatRoom::Spectators,
    }
}

/// `line` on the wire: a hidden line without its text.
pub(crate) fn line_pb(line: &Line) -> common::ChatLine {
    common::ChatLine {
        seq: line.seq,
        room: room_pb(line.room) as i32,
        author_id: line.author.to_string(),
        author_name: line.author_name.clone(),
        text: if line.hidden {
            String::new()
        } else {
            line.text.clone()
        },
        posted_at: Some(line.posted_at.to_proto()),
        hidden: line.hidden,
        revision: line.revision,
    }
}

/// `line` of `game` as an event.
pub(crate) fn line_event(game: &GameId, line: &Line) -> common::GameEvent {
    common::GameEvent {
        game_id: game.to_string(),
        ply: 0,
        clock: None,
        kind: Some(common::game_event::Kind::Chat(line_pb(line))),
    }
}

/// The room and revision of `event`, if it is a chat line.
pub(super) fn chat_of(event: &common::GameEvent) -> Option<(i32, u64)> {
    match &event.kind {
        Some(common::game_event::Kind::Chat(line)) => Some((line.room, line.revision)),
        _ => None,
    }
}

/// The ids of the players of `game` who have one.
fn players_of(game: &Game) -> impl Iterator<Item = &PlayerId> {
    [game.white(), game.black()]
        .into_iter()
        .filter_map(|p| match p {
            Participant::Registered { id, .. } | Participant::Guest { id, .. } => Some(id),
            Participant::Engine { .. } => None,
        })
}

/// Refuses `player` writing in `room` of `game`: the players' room is the
/// players', and the spectators' room is everyone else's while the game is
/// played (the players do not see it then), and everyone's after.
fn check_room(game: &Game, player: &PlayerId, room: Room) -> Result<(), Status> {
    let plays = game.side_of(player).is_some();
    match room {
        Room::Players if !plays => Err(Reason::NotAPlayer.status(
            Code::PermissionDenied,
            "only the players of a game write in its players' room",
        )),
        Room::Spectators if plays && game.is_active() => Err(Reason::NotAllowed.status(
            Code::FailedPrecondition,
            "the players write in the spectators' room once the game is over",
        )),
        _ => Ok(()),
    }
}

/// A page size asked for: 0 means 50, at most 200.
fn page_size(asked: u32) -> u64 {
    match asked {
        0 => 50,
        n => u64::from(n.min(200)),
    }
}

/// A report's reason, trimmed, if it is short and has no control
/// characters other than line breaks.
fn reason_text(raw: &str) -> Result<String, Status> {
    let reason = raw.trim();
    if reason.chars().count() > chat::MAX_REASON_CHARS {
        return Err(invalid(format!(
            "a report's reason must be at most {} characters",
            chat::MAX_REASON_CHARS
        )));
    }
    if reason.chars().any(|c| c.is_control() && c != '\n') {
        return Err(invalid(
            "a report's reason must not contain control characters",
        ));
    }
    Ok(reason.to_owned())
}

impl GameApi {
    /// Sends a line (new or changed) of `game` to its watchers and, the
    /// players' room, to its players' streams.
    fn publish_line(&self, game: &Game, line: &Line) {
        let event: WireEvent = Arc::new(line_event(game.id(), line));
        self.chat.publish(game.id(), &event);
        if line.room == Room::Players {
            let hub = &self.registry.context().hub;
            for player in players_of(game) {
                hub.publish(player, &event);
            }
        }
    }

    /// `game_id`'s lines in `rooms` changed after `revision`, all of them,
    /// as events.
    pub(super) async fn chat_catch_up(
        &self,
        game_id: &GameId,
        rooms: &[Room],
        revision: u64,
    ) -> Result<Vec<common::GameEvent>, Error> {
        let store = &self.registry.context().store;
        let mut events = Vec::new();
        let mut after = revision;
        loop {
            let lines = store
                .chat_since(game_id, rooms, after, CATCH_UP_PAGE)
                .await?;
            let full = lines.len() as u64 == CATCH_UP_PAGE;
            for line in &lines {
                after = line.revision;
                events.push(line_event(game_id, line));
            }
            if !full {
                return Ok(events);
            }
        }
    }

    pub(super) async fn post_chat(
        &self,
        request: Request<pb::PostChatRequest>,
    ) -> Answer<pb::PostChatResponse> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        let (game_id, player) = super::seat::check_seat(&claims, &r.game_id, &r.player_id)?;
        let room = room_of(r.room)?;
        let text = chat::line_text(&r.text).map_err(|e| invalid(e.to_string()))?;
        let author_name = r.author_name.trim();
        if author_name.is_empty()
            || author_name.len() > chat::MAX_AUTHOR_NAME
            || author_name.chars().any(char::is_control)
        {
            return Err(invalid(format!(
                "author_name must be 1 to {} bytes with no control characters",
                chat::MAX_AUTHOR_NAME
            )));
        }
        let game = self.registry.view(&game_id).await?;
        if let Some(side) = game.side_of(&player)
            && !matches!(game.player(side), Participant::Registered { .. })
        {
            return Err(Reason::NotAllowed.status(
                Code::PermissionDenied,
                "only players with an account write in a game's chat",
            ));
        }
        check_room(&game, &player, room)?;
        let new = NewLine {
            room,
            author: player,
            author_name: author_name.to_owned(),
            text,
            posted_at: self.now(),
        };
        let line = {
            let _turn = self.chat.turn(&game_id).await;
            let line = self
                .registry
                .context()
                .store
                .post_chat(&game_id, new)
                .await
                .map_err(Error::from)?;
            self.publish_line(&game, &line);
            line
        };
        Ok(pb::PostChatResponse {
            line: Some(line_pb(&line)),
        })
    }

    pub(super) async fn list_chat(
        &self,
        request: Request<pb::ListChatRequest>,
    ) -> Answer<pb::ListChatResponse> {
        Claims::of(&request)?;
        let r = request.into_inner();
        require("game_id", &r.game_id).map_err(Error::from)?;
        let rooms = rooms_of(&r.rooms)?;
        let game_id = known_game(&r.game_id)?;
        // Answers as the game's replica, and NOT_FOUND for no game.
        self.registry.view(&game_id).await?;
        let limit = page_size(r.page_size);
        let lines = self
            .registry
            .context()
            .store
            .chat_page(&game_id, &rooms, r.after_seq, limit)
            .await
            .map_err(Error::from)?;
        let next_after_seq = if lines.len() as u64 == limit {
            lines.last().map_or(0, |l| l.seq)
        } else {
            0
        };
        Ok(pb::ListChatResponse {
            lines: lines.iter().map(line_pb).collect(),
            next_after_seq,
        })
    }

    pub(super) async fn hide_chat(
        &self,
        request: Request<pb::HideChatRequest>,
    ) -> Answer<pb::HideChatResponse> {
        let claims = Claims::of(&request)?;
        claims.check_caller(&["gateway"])?;
        let r = request.into_inner();
        require("game_id", &r.game_id).map_err(Error::from)?;
        let by = PlayerId::parse(&r.player_id).map_err(Error::from)?;
        let game_id = known_game(&r.game_id)?;
        let game = self.registry.view(&game_id).await?;
        let line = {
            let _turn = self.chat.turn(&game_id).await;
            let line = self
                .registry
                .context()
                .store
                .hide_chat(&game_id, r.seq, &by)
                .await
                .map_err(Error::from)?
                .ok_or_else(|| no_line(&game_id, r.seq))?;
            self.publish_line(&game, &line);
            line
        };
        Ok(pb::HideChatResponse {
            line: Some(line_pb(&line)),
        })
    }

    pub(super) async fn report_chat(
        &self,
        request: Request<pb::ReportChatRequest>,
    ) -> Answer<pb::ReportChatResponse> {
        let claims = Claims::of(&request)?;
        let r = request.into_inner();
        require("game_id", &r.game_id).map_err(Error::from)?;
        let reporter = PlayerId::parse(&r.player_id).map_err(Error::from)?;
        claims.check_player(&r.player_id)?;
        let reason = reason_text(&r.reason)?;
        let game_id = known_game(&r.game_id)?;
        let filed = self
            .registry
            .context()
            .store
            .report_chat(&game_id, r.seq, &reporter, &reason, self.now())
            .await
            .map_err(Error::from)?;
        if !filed {
            return Err(no_line(&game_id, r.seq));
        }
        Ok(pb::ReportChatResponse {})
    }

    pub(super) async fn list_chat_reports(
        &self,
        request: Request<pb::ListChatReportsRequest>,
    ) -> Answer<pb::ListChatReportsResponse> {
        Claims::of(&request)?.check_caller(&["gateway"])?;
        let limit = page_size(request.into_inner().page_size);
        let reports = self
            .registry
            .context()
            .store
            .open_chat_reports(limit)
            .await
            .map_err(Error::from)?;
        Ok(pb::ListChatReportsResponse {
            reports: reports
                .iter()
                .map(|r| pb::ChatReport {
                    game_id: r.game_id.to_string(),
                    line: Some(line_pb(&r.line)),
                    reporter_id: r.reporter.to_string(),
                    reason: r.reason.clone(),
                    reported_at: Some(Timestamp::to_proto(r.reported_at)),
                })
                .collect(),
        })
    }
}

fn no_line(game: &GameId, seq: u64) -> Status {
    Reason::NotFound.status(
        Code::NotFound,
        format!("game {game} has no chat line {seq}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooms_are_named_at_least_once() {
        let players = common::ChatRoom::Players as i32;
        let spectators = common::ChatRoom::Spectators as i32;
        assert_eq!(rooms_of(&[players, players]).unwrap(), vec![Room::Players]);
        assert_eq!(
            rooms_of(&[spectators, players]).unwrap(),
            vec![Room::Spectators, Room::Players]
        );
        assert_eq!(rooms_of(&[]).unwrap_err().code(), Code::InvalidArgument);
        assert_eq!(rooms_of(&[0]).unwrap_err().code(), Code::InvalidArgument);
        assert_eq!(rooms_of(&[9]).unwrap_err().code(), Code::InvalidArgument);
    }

    #[test]
    fn a_hidden_line_goes_out_without_its_text() {
        let line = Line {
            seq: 3,
            room: Room::Spectators,
            author: PlayerId::trusted("p1"),
            author_name: "alice".into(),
            text: "rude".into(),
            posted_at: Timestamp::from_millis(5),
            hidden: true,
            revision: 7,
        };
        let wire = line_pb(&line);
        assert!(wire.hidden && wire.text.is_empty());
        assert_eq!((wire.seq, wire.revision), (3, 7));
        assert_eq!(
            line_pb(&Line {
                hidden: false,
                ..line
            })
            .text,
            "rude"
        );
    }

    #[test]
    fn reasons_are_bounded() {
        assert_eq!(reason_text("  spam\nand more ").unwrap(), "spam\nand more");
        assert!(reason_text(&"x".repeat(chat::MAX_REASON_CHARS + 1)).is_err());
        assert!(reason_text("a\u{0}").is_err());
    }
}
