//! Who is online and who is playing now, as this gateway process sees it.
//!
//! A registered player is **online** while they hold an open event stream
//! (StreamEvents rechecks its session every few seconds) or made a signed-in
//! call within the last [`ONLINE_WINDOW`]: what [`Sessions`] records of every
//! token it checks. Closing the page takes a player offline within that
//! window, as on lichess, where a player stays listed a little after leaving.
//!
//! A player online is **playing** while they have a game in progress, which
//! the game service tells (its ListGames, active games only); answers are
//! cached for [`PLAYING_TTL`] and asked for a page of players at once. A
//! player who is not online is not asked about: a correspondence game left
//! open does not make anyone "playing now".
//!
//! Presence is per gateway process: with several replicas, each knows the
//! players connected to it (today the system runs one gateway).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use chess_domain::PlayerId;
use chess_internal_clients::GameClient;
use chess_proto::game::v1 as game;
use futures::future::join_all;

use super::sessions::Sessions;

/// How long after their last signed-in call or stream check a player
/// counts as online.
pub const ONLINE_WINDOW: Duration = Duration::from_secs(120);
/// How long an answer of the game service about a player's games is used.
pub const PLAYING_TTL: Duration = Duration::from_secs(5);
/// Most players whose games are looked up for one answer (a page).
const MAX_LOOKUPS: usize = 200;
/// Most cached answers before old ones are dropped.
const MAX_CACHED: usize = 10_000;

/// Online and playing flags of one player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    pub online: bool,
    pub playing: bool,
}

/// Presence of the players this gateway serves.
#[derive(Debug)]
pub struct Presence {
    sessions: Arc<Sessions>,
    game: GameClient,
    playing: Mutex<HashMap<PlayerId, (Instant, bool)>>,
}

impl Presence {
    pub fn new(sessions: Arc<Sessions>, game: GameClient) -> Self {
        Self {
            sessions,
            game,
            playing: Mutex::new(HashMap::new()),
        }
    }

    /// How many registered players are online now.
    pub fn players_online(&self) -> usize {
        self.sessions.seen_within(ONLINE_WINDOW)
    }

    /// Whether `player_id` is online now.
    pub fn is_online(&self, player_id: &PlayerId) -> bool {
        self.sessions
            .last_seen(player_id)
            .is_some_and(|seen| seen.elapsed() < ONLINE_WINDOW)
    }

    /// The flags of each of `players`, in order. The game service is asked
    /// (at once, concurrently) only about online players whose answer is not
    /// cached; a failed answer counts as not playing and is not cached.
    pub async fn flags(&self, players: &[PlayerId]) -> Vec<Flags> {
        let online: Vec<bool> = players.iter().map(|p| self.is_online(p)).collect();
        let now = Instant::now();
        let mut known: HashMap<&PlayerId, bool> = HashMap::new();
        let mut ask: Vec<&PlayerId> = Vec::new();
        {
            let cache = self.cache();
            for (player, _) in players.iter().zip(&online).filter(|(_, on)| **on) {
                match cache.get(player) {
                    Some((at, playing)) if now.duration_since(*at) < PLAYING_TTL => {
                        known.insert(player, *playing);
                    }
                    _ if ask.len() < MAX_LOOKUPS && !ask.contains(&player) => ask.push(player),
                    _ => {}
                }
            }
        }
        let answers = join_all(ask.iter().map(|p| self.has_active_game(p))).await;
        {
            let mut cache = self.cache();
            if cache.len() >= MAX_CACHED {
                cache.retain(|_, (at, _)| now.duration_since(*at) < PLAYING_TTL);
            }
            for (player, answer) in ask.into_iter().zip(answers) {
                let playing = answer.unwrap_or(false);
                if answer.is_some() {
                    cache.insert(player.clone(), (now, playing));
                }
                known.insert(player, playing);
            }
        }
        players
            .iter()
            .zip(online)
            .map(|(player, online)| Flags {
                online,
                playing: online && known.get(player).copied().unwrap_or(false),
            })
            .collect()
    }

    /// The flags of one player.
    pub async fn flags_of(&self, player_id: &PlayerId) -> Flags {
        let flags = self.flags(std::slice::from_ref(player_id)).await;
        flags.first().copied().unwrap_or_default()
    }

    /// Whether `player_id` has a game in progress; None if the game service
    /// could not tell.
    async fn has_active_game(&self, player_id: &PlayerId) -> Option<bool> {
        let request = game::ListGamesRequest {
            player_id: player_id.to_string(),
            filter: game::GameFilter::Active as i32,
            page_size: 1,
            page_token: String::new(),
        };
        match self.game.for_player(player_id).list_games(request).await {
            Ok(answer) => Some(!answer.into_inner().games.is_empty()),
            Err(status) => {
                tracing::debug!(error = %status.message(), "cannot tell whether a player is playing");
                None
            }
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<PlayerId, (Instant, bool)>> {
        // Entries are replaced whole; a panic elsewhere leaves none half-done.
        self.playing.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
