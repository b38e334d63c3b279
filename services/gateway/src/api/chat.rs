//! Game chat on PlayService: SendChat, ListChat, ReportChat, HideChat,
//! ListChatReports, and the chat part of WatchGame.
//!
//! The game service stores each game's chat beside the game and sends its
//! lines in the game's streams; this is where a caller's rights are
//! decided: which rooms they read ([`readable_rooms`]), whether they may
//! write ([`ChatPolicy::may_post`]) and how often ([`ChatLimiter`]), whose
//! lines they see ([`ChatPolicy::shows`]) and whether they moderate
//! ([`ChatPolicy::is_moderator`]).

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chess_domain::{GameId, PlayerId};
use chess_internal_clients::{ChatRooms, EventStream as GameEvents, GameRpc};
use chess_proto::{common::v1 as common, game::v1 as game, gateway::v1 as pb};
use chess_runtime::Reason;
use tonic::{Code, Request, Status};

use super::{Answer, convert, edge::CallerOf as _, forward, play::Play, relay, with_retries};
use crate::core::chat_policy::{ChatPolicy, Refusal};

/// Most players whose recent lines are remembered; beyond, the oldest
/// windows are forgotten first.
const MAX_WRITERS: usize = 50_000;

/// The flags of the chat.
#[derive(Debug, Clone, clap::Args)]
pub struct ChatArgs {
    /// Chat lines one player may write within --chat-window-secs before
    /// further ones are refused until the window has room; 0 for no limit.
    #[arg(long, default_value_t = 5)]
    pub chat_lines_per_window: u32,
    /// The length of the chat's rate window, in seconds.
    #[arg(long, default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub chat_window_secs: u64,
    /// Let spectators read the players' room of the games they watch (off:
    /// only the two players read it).
    #[arg(long, default_value_t = false,
        action = clap::ArgAction::Set)]
    pub chat_spectators_read_players: bool,
}

/// Each player's recent lines, for the rate of writing: at most `lines`
/// in any `window`.
#[derive(Debug)]
pub struct ChatLimiter {
    lines: usize,
    window: Duration,
    recent: Mutex<HashMap<PlayerId, VecDeque<Instant>>>,
}

impl ChatLimiter {
    /// At most `lines` lines (0: no limit) per `window`.
    pub fn new(lines: u32, window: Duration) -> Self {
        Self {
            lines: lines as usize,
            window,
            recent: Mutex::default(),
        }
    }

    /// How long `player` must wait before writing again, if at all.
    pub fn wait_at(&self, player: &PlayerId, now: Instant) -> Option<Duration> {
        if self.lines == 0 {
            return None;
        }
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let times = recent.get_mut(player)?;
        while times
            .front()
            .is_some_and(|&t| now.duration_since(t) >= self.window)
        {
            times.pop_front();
        }
        if times.len() < self.lines {
            return None;
        }
        let oldest = *times.front()?;
        Some(self.window.saturating_sub(now.duration_since(oldest)))
    }

    /// Counts a line `player` wrote at `now`.
    pub fn record_at(&self, player: &PlayerId, now: Instant) {
        if self.lines == 0 {
            return;
        }
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if recent.len() >= MAX_WRITERS && !recent.contains_key(player) {
            let window = self.window;
            recent.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|&t| now.duration_since(t) < window)
            });
        }
        let times = recent.entry(player.clone()).or_default();
        times.push_back(now);
        while times.len() > self.lines {
            times.pop_front();
        }
    }
}

/// The chat's rules on this gateway.
#[derive(Debug)]
pub struct ChatRules {
    /// Moderators, mutes and chat switched off: the accounts' standing.
    pub policy: Arc<ChatPolicy>,
    pub limiter: ChatLimiter,
    /// Spectators read the players' room too.
    pub spectators_read_players: bool,
}

impl ChatRules {
    pub fn new(args: &ChatArgs, policy: Arc<ChatPolicy>) -> Self {
        Self {
            policy,
            limiter: ChatLimiter::new(
                args.chat_lines_per_window,
                Duration::from_secs(args.chat_window_secs),
            ),
            spectators_read_players: args.chat_spectators_read_players,
        }
    }
}

/// The ids of a game's players who have one.
fn players_of(state: &common::GameState) -> Vec<&str> {
    [&state.white, &state.black]
        .into_iter()
        .filter_map(|p| match p.as_ref()?.kind.as_ref()? {
            common::player::Kind::Registered(r) => Some(r.player_id.as_str()),
            common::player::Kind::Guest(g) => Some(g.guest_id.as_str()),
            common::player::Kind::Engine(_) => None,
        })
        .collect()
}

/// The rooms (`common::ChatRoom`) `viewer` reads in the game `state`: a
/// player the players' room, and the spectators' room once the game is
/// over (not while it is played, as a player might be told moves);
/// anyone else the spectators' room, and the players' room if the server
/// allows it.
pub(super) fn readable_rooms(
    state: &common::GameState,
    viewer: Option<&PlayerId>,
    spectators_read_players: bool,
) -> Vec<i32> {
    let plays = viewer.is_some_and(|v| players_of(state).contains(&v.as_str()));
    let over = state.status == common::GameStatus::Finished as i32;
    let (players, spectators) = if plays {
        (true, over)
    } else {
        (spectators_read_players, true)
    };
    let mut rooms = Vec::with_capacity(2);
    if players {
        rooms.push(common::ChatRoom::Players as i32);
    }
    if spectators {
        rooms.push(common::ChatRoom::Spectators as i32);
    }
    rooms
}

/// Whether `viewer` (`None`: not signed in) is shown a line by `author`:
/// not if they muted the author or switched their chat off.
async fn shows(policy: &ChatPolicy, viewer: Option<&PlayerId>, author: &str) -> bool {
    match viewer {
        Some(viewer) => policy.sees(viewer, &PlayerId::trusted(author)).await,
        None => true,
    }
}

/// Whether `event` is a line `viewer` is not to see.
async fn unseen(policy: &ChatPolicy, viewer: Option<&PlayerId>, event: &common::GameEvent) -> bool {
    match &event.kind {
        Some(common::game_event::Kind::Chat(line)) => !shows(policy, viewer, &line.author_id).await,
        _ => false,
    }
}

/// A player's standing refusing a line, as the API reports it.
fn refused(refusal: Refusal) -> Status {
    match refusal {
        Refusal::Unavailable => Status::unavailable(refusal.to_string()),
        Refusal::Muted { .. } | Refusal::ChatOff => {
            Reason::NotAllowed.status(Code::FailedPrecondition, refusal.to_string())
        }
    }
}

fn permission_denied(message: &str) -> Status {
    Reason::NotAllowed.status(Code::PermissionDenied, message)
}

impl Play {
    fn chat_rules(&self) -> &ChatRules {
        &self.shared().chat_rules
    }

    /// The game `game_id` as it stands, retried while its service restarts.
    async fn game_state(&self, game_id: &GameId) -> Result<common::GameState, Status> {
        let rpc = self.shared().backends.game.for_game(game_id);
        let request = game::GetGameRequest {
            game_id: game_id.to_string(),
        };
        with_retries(rpc, request, |mut rpc: GameRpc, request| async move {
            rpc.get_game(request).await
        })
        .await?
        .game
        .ok_or_else(|| Status::internal("the game service sent no game"))
    }

    pub(super) async fn send_chat(
        &self,
        request: Request<pb::SendChatRequest>,
    ) -> Answer<pb::SendChatResponse> {
        let (session, r) = request.signed_in()?;
        let game_id = convert::game_id(&r.game_id)?;
        let rules = self.chat_rules();
        rules
            .policy
            .may_post(&session.player_id)
            .await
            .map_err(refused)?;
        if let Some(wait) = rules.limiter.wait_at(&session.player_id, Instant::now()) {
            return Err(Reason::TooManyAttempts.status(
                Code::ResourceExhausted,
                format!(
                    "too many chat lines in a short time; try again in {} s",
                    wait.as_millis().div_ceil(1000).max(1)
                ),
            ));
        }
        let mut rpc = self
            .shared()
            .backends
            .game
            .acting(&session.player_id, &game_id);
        let request = game::PostChatRequest {
            game_id: game_id.to_string(),
            player_id: session.player_id.to_string(),
            author_name: session.username.as_str().to_owned(),
            room: r.room,
            text: r.text,
        };
        let posted = forward(rpc.post_chat(request)).await?;
        rules.limiter.record_at(&session.player_id, Instant::now());
        Ok(pb::SendChatResponse { line: posted.line })
    }

    pub(super) async fn list_chat(
        &self,
        request: Request<pb::ListChatRequest>,
    ) -> Answer<pb::ListChatResponse> {
        let viewer = request.viewer().map(|s| s.player_id);
        let r = request.into_inner();
        let game_id = convert::game_id(&r.game_id)?;
        let state = self.game_state(&game_id).await?;
        let rules = self.chat_rules();
        let readable = readable_rooms(&state, viewer.as_ref(), rules.spectators_read_players);
        let rooms = if r.rooms.is_empty() {
            readable
        } else if r.rooms.iter().all(|room| readable.contains(room)) {
            r.rooms
        } else if r
            .rooms
            .iter()
            .any(|&room| common::ChatRoom::try_from(room).is_err() || room == 0)
        {
            return Err(Reason::InvalidRequest
                .status(Code::InvalidArgument, "rooms must be players or spectators"));
        } else {
            return Err(permission_denied(
                "you may not read that room of this game's chat",
            ));
        };
        let request = game::ListChatRequest {
            game_id: game_id.to_string(),
            rooms,
            after_seq: r.after_seq,
            page_size: r.page_size,
        };
        let rpc = self.shared().backends.game.for_game(&game_id);
        let page = with_retries(rpc, request, |mut rpc: GameRpc, request| async move {
            rpc.list_chat(request).await
        })
        .await?;
        let mut lines = Vec::with_capacity(page.lines.len());
        for line in page.lines {
            if shows(&rules.policy, viewer.as_ref(), &line.author_id).await {
                lines.push(line);
            }
        }
        Ok(pb::ListChatResponse {
            lines,
            next_after_seq: page.next_after_seq,
        })
    }

    pub(super) async fn report_chat(
        &self,
        request: Request<pb::ReportChatRequest>,
    ) -> Answer<pb::ReportChatResponse> {
        let (session, r) = request.signed_in()?;
        let game_id = convert::game_id(&r.game_id)?;
        // Filed where the game is stored: routed by the game's shard.
        let mut rpc = self
            .shared()
            .backends
            .game
            .acting(&session.player_id, &game_id);
        forward(rpc.report_chat(game::ReportChatRequest {
            game_id: game_id.to_string(),
            seq: r.seq,
            player_id: session.player_id.to_string(),
            reason: r.reason,
        }))
        .await?;
        Ok(pb::ReportChatResponse {})
    }

    pub(super) async fn hide_chat(
        &self,
        request: Request<pb::HideChatRequest>,
    ) -> Answer<pb::HideChatResponse> {
        let (session, r) = request.signed_in()?;
        let game_id = convert::game_id(&r.game_id)?;
        if !self
            .chat_rules()
            .policy
            .is_moderator(&session.player_id)
            .await
        {
            return Err(permission_denied("only moderators hide chat lines"));
        }
        let mut rpc = self
            .shared()
            .backends
            .game
            .acting(&session.player_id, &game_id);
        let hidden = forward(rpc.hide_chat(game::HideChatRequest {
            game_id: game_id.to_string(),
            seq: r.seq,
            player_id: session.player_id.to_string(),
        }))
        .await?;
        Ok(pb::HideChatResponse { line: hidden.line })
    }

    pub(super) async fn list_chat_reports(
        &self,
        request: Request<pb::ListChatReportsRequest>,
    ) -> Answer<pb::ListChatReportsResponse> {
        let (session, r) = request.signed_in()?;
        if !self
            .chat_rules()
            .policy
            .is_moderator(&session.player_id)
            .await
        {
            return Err(permission_denied("only moderators read chat reports"));
        }
        let mut rpc = self.shared().backends.game.for_player(&session.player_id);
        let reports = forward(rpc.list_chat_reports(game::ListChatReportsRequest {
            page_size: r.page_size,
        }))
        .await?;
        Ok(pb::ListChatReportsResponse {
            reports: reports
                .reports
                .into_iter()
                .map(|r| pb::ChatReport {
                    game_id: r.game_id,
                    line: r.line,
                    reporter_id: r.reporter_id,
                    reason: r.reason,
                    reported_at: r.reported_at,
                })
                .collect(),
        })
    }

    /// WatchGame with the chat of the rooms `viewer` reads, from
    /// `from_revision`.
    pub(super) async fn watch_with_chat(
        &self,
        viewer: Option<PlayerId>,
        game_id: &GameId,
        from_ply: Option<u32>,
        from_revision: u64,
    ) -> Result<GameEvents<game::WatchGameResponse>, Status> {
        let state = self.game_state(game_id).await?;
        let rules = self.chat_rules();
        let rooms = readable_rooms(&state, viewer.as_ref(), rules.spectators_read_players);
        let chat = ChatRooms {
            from_revision,
            rooms,
        };
        let upstream = self
            .shared()
            .backends
            .game
            .watch_game_with_chat(
                game_id,
                from_ply,
                viewer.as_ref().map(ToString::to_string).unwrap_or_default(),
                chat,
            )
            .await
            .map_err(relay)?;
        let shared = std::sync::Arc::clone(self.shared());
        Ok(Box::pin(futures::StreamExt::filter(
            upstream,
            move |item| {
                let event = item.as_ref().ok().and_then(|m| m.event.clone());
                let policy = Arc::clone(&shared.chat_rules.policy);
                let viewer = viewer.clone();
                async move {
                    match event {
                        Some(event) => !unseen(&policy, viewer.as_ref(), &event).await,
                        None => true,
                    }
                }
            },
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(white: &str, black: &str, status: common::GameStatus) -> common::GameState {
        common::GameState {
            white: Some(chess_domain::registered_player(white, white)),
            black: Some(chess_domain::registered_player(black, black)),
            status: status as i32,
            ..Default::default()
        }
    }

    #[test]
    fn players_read_their_room_and_spectators_theirs() {
        let players = common::ChatRoom::Players as i32;
        let spectators = common::ChatRoom::Spectators as i32;
        let live = state("p1", "p2", common::GameStatus::Active);
        let over = state("p1", "p2", common::GameStatus::Finished);
        let p1 = PlayerId::trusted("p1");
        let other = PlayerId::trusted("p3");
        assert_eq!(readable_rooms(&live, Some(&p1), false), vec![players]);
        assert_eq!(
            readable_rooms(&over, Some(&p1), false),
            vec![players, spectators]
        );
        assert_eq!(readable_rooms(&live, Some(&other), false), vec![spectators]);
        assert_eq!(readable_rooms(&live, None, false), vec![spectators]);
        assert_eq!(readable_rooms(&live, None, true), vec![players, spectators]);
    }

    #[test]
    fn a_writer_waits_once_the_window_is_full() {
        let limiter = ChatLimiter::new(2, Duration::from_secs(10));
        let p = PlayerId::trusted("p");
        let t0 = Instant::now();
        assert_eq!(limiter.wait_at(&p, t0), None);
        limiter.record_at(&p, t0);
        limiter.record_at(&p, t0 + Duration::from_secs(3));
        assert_eq!(
            limiter.wait_at(&p, t0 + Duration::from_secs(4)),
            Some(Duration::from_secs(6))
        );
        assert_eq!(limiter.wait_at(&p, t0 + Duration::from_secs(10)), None);
        // Another player is counted apart; no limit counts no one.
        assert_eq!(limiter.wait_at(&PlayerId::trusted("q"), t0), None);
        let open = ChatLimiter::new(0, Duration::from_secs(10));
        open.record_at(&p, t0);
        assert_eq!(open.wait_at(&p, t0), None);
    }
}
