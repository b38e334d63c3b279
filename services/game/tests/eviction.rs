//! Active games left alone leave memory and come back whole: moves, clocks
//! and draw offers as they were; a flag that falls while its game is out
//! of memory still ends the game on time, with nobody asking; a watched
//! game stays; and calls racing an eviction are answered, never lost.
//!
//! The registry runs here on a real SQLite file, as the service runs it; the
//! engine and rating services are not needed and point at a closed port.

use std::{sync::Arc, time::Duration};

use chess_domain::{GameId, PlayerId, RuleSet, TimeControl};
use chess_game::{
    clients::{EngineClient, RatingClient, Reporter},
    hub::PlayerHub,
    model::{Game, GameSetup, Participant, Termination},
    registry::{Action, Context, Registry},
    shards::{Replica, Shards},
    store::Store,
    time::TimeSource,
};
use chess_proto::common::v1::game_event::Kind;
use shakmaty::Color;
use tokio::time::{sleep, timeout};
use tokio_util::sync::CancellationToken;

const CLOSED: &str = "127.0.0.1:9";

struct Fixture {
    registry: Arc<Registry>,
    store: Store,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn fixture(evict_after: Duration) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let url = chess_storage::sqlite_url(&dir.path().join("game.sqlite"));
    let store = Store::open(&url).await.unwrap();
    let shards = Shards::lone(Replica {
        id: "game".into(),
        address: String::new(),
    });
    let shutdown = CancellationToken::new();
    let signer = chess_testkit::signer("game");
    let reporter = Reporter::spawn(
        store.clone(),
        Arc::clone(&shards),
        RatingClient::connect(CLOSED, signer.clone()).unwrap(),
        shutdown.clone(),
    );
    let ctx = Arc::new(Context {
        store: store.clone(),
        hub: PlayerHub::default(),
        engine: EngineClient::connect(CLOSED, signer).unwrap(),
        reporter,
        time: TimeSource::system(),
        shutdown: shutdown.clone(),
        evict_after,
        rated_takebacks: false,
    });
    Fixture {
        registry: Registry::new(ctx, shards),
        store,
        shutdown,
        _dir: dir,
    }
}

fn setup(time_control: TimeControl) -> GameSetup {
    let guest = |id: &str| Participant::Guest {
        id: PlayerId::trusted(id),
        name: String::new(),
    };
    GameSetup {
        white: guest("w"),
        black: guest("b"),
        time_control,
        rules: RuleSet::Standard,
        rated: false,
        allow_hints: false,
        initial_fen: None,
    }
}

/// A new untimed game between "w" and "b"; its id.
async fn untimed_game(registry: &Arc<Registry>) -> GameId {
    registry
        .create_game(setup(TimeControl::Untimed), None)
        .await
        .unwrap()
        .id()
        .clone()
}

fn move_(input: &str) -> Action {
    Action::Move {
        input: input.into(),
        ply: None,
    }
}

/// Waits until game `id` has left memory.
async fn evicted(registry: &Registry, id: &GameId) {
    timeout(Duration::from_secs(10), async {
        while registry.is_live(id) {
            sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the idle game left memory");
}

/// What must survive a trip out of memory and back.
fn state(game: &Game) -> impl PartialEq + std::fmt::Debug {
    (
        game.fen(),
        game.moves().to_vec(),
        game.draw_offer(),
        game.ending(),
        game.credits().to_vec(),
        game.next_deadline(),
    )
}

#[tokio::test]
async fn an_idle_game_leaves_memory_and_comes_back_whole() {
    let f = fixture(Duration::from_millis(200)).await;
    let registry = &f.registry;
    let clocked = TimeControl::Incremental {
        initial_secs: 600,
        increment_secs: 5,
    };
    let game = registry.create_game(setup(clocked), None).await.unwrap();
    let id = game.id().clone();
    let [w, b] = ["w", "b"].map(PlayerId::trusted);
    for (player, m) in [(&w, "e4"), (&b, "c5"), (&w, "Nf3")] {
        registry.act(&id, player, move_(m)).await.unwrap();
    }
    registry.act(&id, &w, Action::OfferDraw).await.unwrap();
    let before = registry.view(&id).await.unwrap();
    assert!(registry.is_live(&id));

    evicted(registry, &id).await;
    assert_eq!(registry.live_count(), 0);
    let after = registry.view(&id).await.unwrap();
    assert!(registry.is_live(&id), "asking for the game loaded it");
    assert_eq!(state(&after), state(&before));
    // Black's clock kept running while the game was out of memory.
    let now = chess_domain::Timestamp::now();
    let (was, is) = (before.clock(now), after.clock(now));
    assert_eq!(is.running, Some(Color::Black));
    assert_eq!(is.remaining, was.remaining);
    assert_eq!(is.flag_at, was.flag_at);

    // Play goes on where it was: the draw offer stands and can be taken.
    evicted(registry, &id).await;
    let acted = registry.act(&id, &b, Action::AcceptDraw).await.unwrap();
    assert_eq!(acted.ply, 3);
    let stored = f.store.load(&id).await.unwrap().unwrap();
    assert_eq!(
        stored.ending().map(|e| e.termination),
        Some(Termination::DrawAgreement)
    );
    assert_eq!(stored.moves(), before.moves());
}

#[tokio::test]
async fn a_flag_falls_on_time_while_its_game_is_out_of_memory() {
    let f = fixture(Duration::from_millis(100)).await;
    let registry = &f.registry;
    let [w, b] = ["w", "b"].map(PlayerId::trusted);
    let mut white = f.registry.context().hub.subscribe(&w);
    let game = registry
        .create_game(
            // Long enough to be evicted before the flag falls, however
            // slow the writes before.
            setup(TimeControl::Incremental {
                initial_secs: 5,
                increment_secs: 0,
            }),
            None,
        )
        .await
        .unwrap();
    let id = game.id().clone();
    registry.act(&id, &w, move_("d4")).await.unwrap();
    registry.act(&id, &b, move_("d5")).await.unwrap();
    let flag_at = registry.view(&id).await.unwrap().next_deadline().unwrap();
    evicted(registry, &id).await;
    assert!(
        chess_domain::Timestamp::now() < flag_at,
        "evicted before the flag fell"
    );

    // Nobody asks: the registry loads the game at its deadline and its
    // actor ends it, telling the players.
    let ended = timeout(Duration::from_secs(30), async {
        loop {
            let event = white.recv().await.unwrap();
            if let Some(Kind::GameEnded(ended)) = &event.kind {
                return *ended;
            }
        }
    })
    .await
    .expect("white heard of the flag");
    assert_eq!(
        ended.termination,
        chess_proto::common::v1::Termination::Timeout as i32
    );
    let stored = f.store.load(&id).await.unwrap().unwrap();
    let ending = stored.ending().unwrap();
    assert_eq!(ending.termination, Termination::Timeout);
    assert!(ending.at >= flag_at);
    assert_eq!(stored.ply(), 2);
}

#[tokio::test]
async fn a_watched_game_stays_in_memory_until_its_watchers_leave() {
    let f = fixture(Duration::from_millis(50)).await;
    let registry = &f.registry;
    let id = untimed_game(registry).await;
    let watcher = registry.watch(&id, None, false).await.unwrap().events;
    sleep(Duration::from_millis(400)).await;
    assert!(registry.is_live(&id), "a watched game stays");
    drop(watcher);
    evicted(registry, &id).await;
}

#[tokio::test]
async fn calls_racing_evictions_are_all_answered() {
    // Evicted after a millisecond of quiet: most moves find their game
    // leaving memory or gone.
    let f = fixture(Duration::from_millis(1)).await;
    let registry = &f.registry;
    let id = untimed_game(registry).await;
    let moves = [
        "e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1", "b5", "Bb3",
        "d6", "c3", "O-O", "h3", "Nb8", "d4", "Nbd7",
    ];
    let mut reloaded = 0;
    for (i, m) in moves.iter().enumerate() {
        let player = PlayerId::trusted(if i % 2 == 0 { "w" } else { "b" });
        // 0–2 ms apart: on either side of the eviction.
        sleep(Duration::from_micros((i as u64 * 700) % 2100)).await;
        reloaded += usize::from(!registry.is_live(&id));
        let acted = registry.act(&id, &player, move_(m)).await.unwrap();
        assert_eq!(acted.ply as usize, i + 1);
    }
    assert!(reloaded > 0, "some moves found their game out of memory");
    let stored = f.store.load(&id).await.unwrap().unwrap();
    let sans: Vec<&str> = stored.moves().iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, moves);
}
