//! The live games through the public gRPC API, on the real binaries: the
//! list and its filters, the stream that keeps it (games added, their moves,
//! removed at their end), the featured game and how it is replaced, the
//! spectator count of a game as watchers come and go, and, with two game
//! replicas, a list that covers the games of both.

mod support;

use std::{collections::HashSet, time::Duration};

use chess_domain::TimeControl;
use chess_e2e::{StackProcess, load::grpc::Player};
use chess_proto::{
    common::v1 as common,
    gateway::v1::{
        self as pb, lobby_service_client::LobbyServiceClient,
        play_service_client::PlayServiceClient, watch_live_games_response::Event,
    },
};
use support::{UNLIMITED, sign_up};
use tonic::{Streaming, transport::Channel};

/// How long a change may take to reach a stream.
const WITHIN: Duration = Duration::from_secs(10);

/// `white` challenges `black` to a game of `time_control`; black accepts.
async fn challenge(
    channel: &Channel,
    white: &Player,
    black: &Player,
    time_control: TimeControl,
    rated: bool,
) -> String {
    let mut lobby = LobbyServiceClient::new(channel.clone());
    let challenge = lobby
        .create_challenge(white.request(pb::CreateChallengeRequest {
            opponent_username: black.username.clone(),
            time_control: Some(time_control.into()),
            color: common::ColorChoice::White as i32,
            rated,
            expires_in_seconds: 0,
            allow_hints: false,
        }))
        .await
        .expect("challenge")
        .into_inner()
        .challenge
        .expect("a challenge");
    lobby
        .accept_challenge(black.request(pb::AcceptChallengeRequest {
            challenge_id: challenge.challenge_id,
        }))
        .await
        .expect("accept")
        .into_inner()
        .challenge
        .map(|c| c.game_id)
        .expect("a game")
}

/// A casual untimed game of `player`'s (white) against the engine.
async fn engine_game(channel: &Channel, player: &Player) -> String {
    LobbyServiceClient::new(channel.clone())
        .play_engine(player.request(pb::PlayEngineRequest {
            level: 1,
            color: common::ColorChoice::White as i32,
            time_control: None,
            full_strength: false,
        }))
        .await
        .expect("play the engine")
        .into_inner()
        .game
        .map(|g| g.game_id)
        .expect("a game")
}

async fn make_move(channel: &Channel, player: &Player, game_id: &str, san: &str) {
    PlayServiceClient::new(channel.clone())
        .make_move(player.request(pb::MakeMoveRequest {
            game_id: game_id.to_owned(),
            r#move: san.to_owned(),
            ply: None,
        }))
        .await
        .expect("move");
}

async fn resign(channel: &Channel, player: &Player, game_id: &str) {
    PlayServiceClient::new(channel.clone())
        .resign(player.request(pb::ResignRequest {
            game_id: game_id.to_owned(),
        }))
        .await
        .expect("resign");
}

async fn list(
    channel: &Channel,
    filter: pb::LiveGamesFilter,
    page_size: u32,
    token: &str,
) -> pb::ListLiveGamesResponse {
    PlayServiceClient::new(channel.clone())
        .list_live_games(pb::ListLiveGamesRequest {
            filter: Some(filter),
            page_size,
            page_token: token.to_owned(),
        })
        .await
        .expect("list")
        .into_inner()
}

fn ids(games: &[pb::LiveGame]) -> Vec<&str> {
    games.iter().map(|g| g.game_id.as_str()).collect()
}

/// The stream's messages until one `wanted` matches, which is returned.
async fn until(
    stream: &mut Streaming<pb::WatchLiveGamesResponse>,
    what: &str,
    mut wanted: impl FnMut(&Event) -> bool,
) -> Event {
    let found = tokio::time::timeout(WITHIN, async {
        loop {
            let message = stream.message().await.expect("stream").expect("open");
            if let Some(event) = message.event
                && wanted(&event)
            {
                return event;
            }
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("no {what} within {WITHIN:?}"))
}

fn featured(event: &Event) -> Option<Option<&pb::LiveGame>> {
    match event {
        Event::Featured(f) => Some(f.game.as_ref()),
        _ => None,
    }
}

/// The list and its filters, the stream, the featured game and the
/// spectator counts, on one game replica.
#[tokio::test]
async fn live_games_are_listed_followed_featured_and_watched() {
    let stack = StackProcess::start(&[], UNLIMITED).await;
    let channel = StackProcess::channel(&stack.gateway).await;
    let [alice, bob, carol, dave] = [
        sign_up(&channel, "alice".to_owned()).await,
        sign_up(&channel, "bob".to_owned()).await,
        sign_up(&channel, "carol".to_owned()).await,
        sign_up(&channel, "dave".to_owned()).await,
    ];
    let mut play = PlayServiceClient::new(channel.clone());
    let mut stream = play
        .watch_live_games(pb::WatchLiveGamesRequest::default())
        .await
        .expect("watch")
        .into_inner();
    let Some(Event::List(first)) = stream.message().await.unwrap().unwrap().event else {
        panic!("the stream starts with the list");
    };
    assert!(first.games.is_empty() && first.in_play == 0 && first.featured.is_none());

    // A rated blitz game and a casual rapid one.
    let blitz = TimeControl::Incremental {
        initial_secs: 180,
        increment_secs: 2,
    };
    let rapid = TimeControl::Incremental {
        initial_secs: 900,
        increment_secs: 10,
    };
    let a = challenge(&channel, &alice, &bob, blitz, true).await;
    let event = until(
        &mut stream,
        "game a added",
        |e| matches!(e, Event::Added(g) if g.game_id == a),
    )
    .await;
    let Event::Added(added) = event else {
        unreachable!()
    };
    assert_eq!(added.speed, common::SpeedCategory::Blitz as i32);
    assert!(added.rated);
    assert_eq!(added.white.as_ref().unwrap().rating, 1200);
    // The first game in play is featured at once.
    until(&mut stream, "game a featured", |e| {
        featured(e).flatten().is_some_and(|g| g.game_id == a)
    })
    .await;
    let b = challenge(&channel, &carol, &dave, rapid, false).await;
    until(
        &mut stream,
        "game b added",
        |e| matches!(e, Event::Added(g) if g.game_id == b),
    )
    .await;
    until(&mut stream, "two in play", |e| {
        matches!(e, Event::InPlay(2))
    })
    .await;

    let all = list(&channel, pb::LiveGamesFilter::default(), 0, "").await;
    assert_eq!(all.games.len(), 2);
    assert_eq!(all.in_play, 2);
    assert_eq!(all.featured.map(|g| g.game_id), Some(a.clone()));
    let speed = |s: common::SpeedCategory| pb::LiveGamesFilter {
        speed: s as i32,
        rated: None,
    };
    assert_eq!(
        ids(&list(&channel, speed(common::SpeedCategory::Blitz), 0, "")
            .await
            .games),
        [a.as_str()]
    );
    assert_eq!(
        ids(&list(&channel, speed(common::SpeedCategory::Rapid), 0, "")
            .await
            .games),
        [b.as_str()]
    );
    let casual = pb::LiveGamesFilter {
        speed: 0,
        rated: Some(false),
    };
    assert_eq!(
        ids(&list(&channel, casual, 0, "").await.games),
        [b.as_str()]
    );
    let first_page = list(&channel, pb::LiveGamesFilter::default(), 1, "").await;
    assert_eq!(first_page.games.len(), 1);
    let second_page = list(
        &channel,
        pb::LiveGamesFilter::default(),
        1,
        &first_page.next_page_token,
    )
    .await;
    assert_eq!(second_page.games.len(), 1);
    assert!(second_page.next_page_token.is_empty());
    assert_ne!(first_page.games[0].game_id, second_page.games[0].game_id);
    let bad = play
        .list_live_games(pb::ListLiveGamesRequest {
            filter: Some(pb::LiveGamesFilter {
                speed: 42,
                rated: None,
            }),
            page_size: 0,
            page_token: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);

    // Moves advance the game in the list and on the featured board.
    make_move(&channel, &alice, &a, "e4").await;
    let event = until(
        &mut stream,
        "game a's move",
        |e| matches!(e, Event::Updated(g) if g.game_id == a && g.ply == 1),
    )
    .await;
    let Event::Updated(moved) = event else {
        unreachable!()
    };
    assert_eq!(moved.last_move, "e2e4");
    assert!(
        moved.fen.starts_with("rnbqkbnr/pppppppp/8/8/4P3/"),
        "{}",
        moved.fen
    );
    until(&mut stream, "the featured game's move", |e| {
        featured(e)
            .flatten()
            .is_some_and(|g| g.game_id == a && g.ply == 1)
    })
    .await;
    make_move(&channel, &bob, &a, "e5").await;
    until(
        &mut stream,
        "game a's second move",
        |e| matches!(e, Event::Updated(g) if g.game_id == a && g.ply == 2),
    )
    .await;

    // Spectators: an anonymous watcher counts, a player watching does not.
    let mut watcher = play
        .watch_game(pb::WatchGameRequest {
            game_id: b.clone(),
            from_ply: None,
            from_chat_revision: None,
        })
        .await
        .expect("watch")
        .into_inner();
    let snapshot = watcher.message().await.unwrap().unwrap().event.unwrap();
    let Some(common::game_event::Kind::Snapshot(state)) = snapshot.kind else {
        panic!("a snapshot first");
    };
    assert_eq!(state.spectators, 1);
    until(
        &mut stream,
        "one spectator",
        |e| matches!(e, Event::Updated(g) if g.game_id == b && g.spectators == 1),
    )
    .await;
    let mut second = play
        .watch_game(pb::WatchGameRequest {
            game_id: b.clone(),
            from_ply: None,
            from_chat_revision: None,
        })
        .await
        .expect("watch")
        .into_inner();
    second.message().await.unwrap();
    until(
        &mut stream,
        "two spectators",
        |e| matches!(e, Event::Updated(g) if g.game_id == b && g.spectators == 2),
    )
    .await;
    // The first watcher hears of the second.
    let told = tokio::time::timeout(WITHIN, async {
        loop {
            let event = watcher.message().await.unwrap().unwrap().event.unwrap();
            // Its own arrival is told first.
            if let Some(common::game_event::Kind::SpectatorsChanged(c)) = event.kind
                && c.spectators == 2
            {
                return c.spectators;
            }
        }
    })
    .await
    .expect("the watcher told");
    assert_eq!(told, 2);
    let mut player_watch = play
        .watch_game(carol.request(pb::WatchGameRequest {
            game_id: b.clone(),
            from_ply: None,
            from_chat_revision: None,
        }))
        .await
        .expect("watch")
        .into_inner();
    let Some(common::game_event::Kind::Snapshot(state)) = player_watch
        .message()
        .await
        .unwrap()
        .unwrap()
        .event
        .unwrap()
        .kind
    else {
        panic!("a snapshot first");
    };
    assert_eq!(state.spectators, 2, "a player is no spectator");
    drop(second);
    drop(watcher);
    until(
        &mut stream,
        "no spectators again",
        |e| matches!(e, Event::Updated(g) if g.game_id == b && g.spectators == 0),
    )
    .await;
    drop(player_watch);

    // Two more games while a is featured: c between people (rated 1200 +
    // 1200) and e against the engine (no rating). Neither takes the board.
    let c = challenge(&channel, &bob, &carol, blitz, true).await;
    let e = engine_game(&channel, &dave).await;
    until(
        &mut stream,
        "game e added",
        |ev| matches!(ev, Event::Added(g) if g.game_id == e),
    )
    .await;
    assert_eq!(
        list(&channel, pb::LiveGamesFilter::default(), 0, "")
            .await
            .featured
            .map(|g| g.game_id),
        Some(a.clone())
    );

    // a ends: removed, and the highest of the others is featured: b and c
    // rank alike (1200 + 1200), and b began first.
    resign(&channel, &bob, &a).await;
    until(
        &mut stream,
        "game a removed",
        |ev| matches!(ev, Event::Removed(id) if *id == a),
    )
    .await;
    let event = until(&mut stream, "a new featured game", |ev| {
        featured(ev).is_some()
    })
    .await;
    assert_eq!(
        featured(&event).flatten().map(|g| g.game_id.clone()),
        Some(b.clone()),
        "b and c rank alike, b began first"
    );
    resign(&channel, &carol, &b).await;
    let event = until(&mut stream, "the next featured game", |ev| {
        featured(ev).is_some()
    })
    .await;
    assert_eq!(
        featured(&event).flatten().map(|g| g.game_id.clone()),
        Some(c.clone()),
        "c outranks the engine game"
    );
    resign(&channel, &bob, &c).await;
    let event = until(&mut stream, "the last featured game", |ev| {
        featured(ev).is_some()
    })
    .await;
    assert_eq!(
        featured(&event).flatten().map(|g| g.game_id.clone()),
        Some(e.clone())
    );
    resign(&channel, &dave, &e).await;
    let event = until(&mut stream, "nothing featured", |ev| featured(ev).is_some()).await;
    assert_eq!(featured(&event), Some(None));
    // The count went to 0 just before: the list agrees.
    assert_eq!(
        list(&channel, pb::LiveGamesFilter::default(), 0, "")
            .await
            .in_play,
        0
    );
    assert!(
        list(&channel, pb::LiveGamesFilter::default(), 0, "")
            .await
            .games
            .is_empty()
    );
    stack.stop().await;
}

/// With two game replicas the list holds the games of both, and follows
/// the moves and endings of each.
#[tokio::test]
async fn the_live_list_covers_every_game_replica() {
    let url = chess_storage::testing::fresh_postgres_database().await;
    let stack =
        StackProcess::start(&["--game-replicas", "2", "--database-url", &url], UNLIMITED).await;
    assert_eq!(stack.game_replicas.len(), 2, "{:?}", stack.game_replicas);
    let owners = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let owners = shard_owners(&stack).await;
            let serving: HashSet<&str> = owners.iter().map(String::as_str).collect();
            if serving.contains("game-0") && serving.contains("game-1") && !serving.contains("") {
                return owners;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("both replicas serve shards");
    let channel = StackProcess::channel(&stack.gateway).await;
    let erin = sign_up(&channel, "erin".to_owned()).await;
    let mut stream = PlayServiceClient::new(channel.clone())
        .watch_live_games(pb::WatchLiveGamesRequest::default())
        .await
        .expect("watch")
        .into_inner();
    // Games against the engine until each replica serves some.
    let mut games = Vec::new();
    let mut served = HashSet::new();
    while served.len() < 2 {
        assert!(games.len() < 24, "every game went to one replica");
        let id = engine_game(&channel, &erin).await;
        served.insert(owners[usize::from(chess_shards::shard_of(&id))].clone());
        games.push(id);
    }
    for id in &games {
        until(
            &mut stream,
            "each game added",
            |e| matches!(e, Event::Added(g) if g.game_id == *id),
        )
        .await;
    }
    let listed = list(&channel, pb::LiveGamesFilter::default(), 100, "").await;
    let mut listed_ids = ids(&listed.games);
    listed_ids.sort_unstable();
    let mut expected: Vec<&str> = games.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(listed_ids, expected);
    for id in &games {
        make_move(&channel, &erin, id, "e4").await;
        until(
            &mut stream,
            "each game's move",
            |e| matches!(e, Event::Updated(g) if g.game_id == *id && g.ply >= 1),
        )
        .await;
    }
    for id in &games {
        resign(&channel, &erin, id).await;
    }
    until(&mut stream, "none in play", |e| {
        matches!(e, Event::InPlay(0))
    })
    .await;
    stack.stop().await;
}

/// Which replica serves each shard, as the first replica has it.
async fn shard_owners(stack: &StackProcess) -> Vec<String> {
    use chess_proto::game::v1::{self as game_pb, game_service_client::GameServiceClient};
    let key = chess_runtime::InternalKey::read(&stack.data.path().join("internal.key"))
        .expect("the stack's key");
    let signer = chess_runtime::Signer::new(key, "gateway");
    let channel = chess_runtime::channel(&stack.game_replicas[0].1).expect("an address");
    GameServiceClient::new(signer.channel(channel, None, None))
        .get_shard_map(game_pb::GetShardMapRequest {})
        .await
        .expect("shard map")
        .into_inner()
        .owners
}
