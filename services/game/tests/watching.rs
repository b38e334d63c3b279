//! Watching over gRPC: a game's watchers resuming from a ply or leaving
//! out a side's moves, and a player's stream of every game they play,
//! resumed with what it missed.

mod common;

use chess_proto::{common::v1 as c, game::v1 as pb};
use common::*;
use tokio_stream::StreamExt as _;
use tonic::{Status, Streaming};

/// Watches `game` from `from_ply`, leaving out the moves of
/// `without_moves_of`.
async fn watch_game(
    client: &mut Client,
    game: &str,
    from_ply: Option<u32>,
    without_moves_of: Option<c::Color>,
) -> Result<Streaming<pb::WatchGameResponse>, Status> {
    let request = pb::WatchGameRequest {
        from_chat_revision: None,
        chat_rooms: Vec::new(),
        game_id: game.to_owned(),
        from_ply,
        without_moves_of: without_moves_of.map(|color| color as i32),
        watcher_id: String::new(),
    };
    Ok(client.watch_game(request).await?.into_inner())
}

#[tokio::test]
async fn watching_resumes_from_a_ply() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    for (p, m) in [("w", "e4"), ("b", "e5"), ("w", "Nf3"), ("b", "Nc6")] {
        play(&mut client, &g, p, m).await.unwrap();
    }
    let mut watch = watch_game(&mut client, &g, Some(2), None).await.unwrap();
    // Only what the watcher missed: no snapshot, no ply it already has.
    for expected in [(3, "g1f3"), (4, "b8c6")] {
        let event = watch.next().await.unwrap().unwrap().event.unwrap();
        match event.kind {
            Some(c::game_event::Kind::MoveMade(m)) => {
                assert_eq!((event.ply, m.r#move.unwrap().uci.as_str()), expected);
            }
            other => panic!("{other:?}"),
        }
    }
    play(&mut client, &g, "w", "Bb5").await.unwrap();
    // The count of watchers may change first (this one is a spectator).
    let live = loop {
        let event = watch.next().await.unwrap().unwrap().event.unwrap();
        if !matches!(event.kind, Some(c::game_event::Kind::SpectatorsChanged(_))) {
            break event;
        }
    };
    assert_eq!(live.ply, 5);

    // Resuming a game that ended meanwhile: the missed move, then the end.
    play(&mut client, &g, "b", "a6").await.unwrap();
    resign(&mut client, &g, "w").await.unwrap();
    let mut watch = watch_game(&mut client, &g, Some(5), None).await.unwrap();
    let mut kinds = Vec::new();
    while let Some(event) = watch.next().await {
        let event = event.unwrap().event.unwrap();
        match event.kind.unwrap() {
            c::game_event::Kind::SpectatorsChanged(_) => {}
            kind => kinds.push((event.ply, kind)),
        }
    }
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert!(
        matches!(&kinds[0], (6, c::game_event::Kind::MoveMade(m)) if m.r#move.as_ref().unwrap().uci == "a7a6"),
        "{kinds:?}"
    );
    assert!(
        matches!(&kinds[1], (6, c::game_event::Kind::GameEnded(e)) if e.termination == c::Termination::Resignation as i32),
        "{kinds:?}"
    );

    // A ply the game has not reached is refused.
    let beyond = watch_game(&mut client, &g, Some(7), None).await;
    assert_eq!(beyond.unwrap_err().code(), tonic::Code::OutOfRange);
}

#[tokio::test]
async fn a_player_watching_its_game_can_leave_out_its_own_live_moves() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    play(&mut client, &g, "w", "e4").await.unwrap();
    let mut watch = watch_game(&mut client, &g, Some(0), Some(c::Color::White))
        .await
        .unwrap();
    for (p, m) in [("b", "e5"), ("w", "Nf3"), ("b", "Nc6"), ("w", "Bb5")] {
        play(&mut client, &g, p, m).await.unwrap();
    }
    resign(&mut client, &g, "b").await.unwrap();
    let mut seen = Vec::new();
    while let Some(event) = watch.next().await {
        let event = event.unwrap().event.unwrap();
        let kind = match event.kind.unwrap() {
            c::game_event::Kind::MoveMade(m) => m.r#move.unwrap().uci,
            c::game_event::Kind::GameEnded(_) => "ended".to_owned(),
            other => panic!("{other:?}"),
        };
        seen.push((event.ply, kind));
    }
    // White's move before the watch came in the catch-up; live, only
    // black's moves and the end.
    let expected = [(1, "e2e4"), (2, "e7e5"), (4, "b8c6"), (5, "ended")];
    let seen: Vec<(u32, &str)> = seen.iter().map(|(p, k)| (*p, k.as_str())).collect();
    assert_eq!(seen, expected);

    let unknown = watch_game(&mut client, &g, None, Some(c::Color::Unspecified)).await;
    assert_eq!(unknown.unwrap_err().code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn player_streams_see_new_games_and_their_moves() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let mut events = client
        .watch_player(acting(
            pb::WatchPlayerRequest {
                player_id: "p1".into(),
                ..Default::default()
            },
            "p1",
            None,
        ))
        .await
        .unwrap()
        .into_inner();
    let g = create(&mut client, "p1", "p2", untimed()).await.game_id;
    let started = events.next().await.unwrap().unwrap().event.unwrap();
    assert!(
        matches!(started.kind, Some(c::game_event::Kind::GameStarted(_))),
        "{started:?}"
    );
    assert_eq!(started.game_id, g);
    // A game p1 is not in is not seen.
    let other = create(&mut client, "p3", "p4", untimed()).await.game_id;
    play(&mut client, &other, "p3", "d4").await.unwrap();
    play(&mut client, &g, "p1", "e4").await.unwrap();
    let moved = events.next().await.unwrap().unwrap().event.unwrap();
    assert_eq!(moved.game_id, g);
    assert!(matches!(moved.kind, Some(c::game_event::Kind::MoveMade(_))));
}

/// A player stream resumed with where the watcher stood begins with what it
/// missed: the moves after its ply in the games it names, a snapshot of its
/// other active games, nothing of games it does not play; then live events,
/// none of them twice.
#[tokio::test]
async fn a_resumed_player_stream_begins_with_what_was_missed() {
    let (_dir, _service, mut client) = on_sqlite().await;
    let g = create(&mut client, "p1", "p2", untimed()).await.game_id;
    for (player, mv) in [("p1", "e4"), ("p2", "e5"), ("p1", "Nf3")] {
        play(&mut client, &g, player, mv).await.unwrap();
    }
    // Started while the watcher was away.
    let new = create(&mut client, "p2", "p1", untimed()).await.game_id;
    // Not p1's: named, but left out.
    let other = create(&mut client, "p3", "p4", untimed()).await.game_id;
    let mut events = client
        .watch_player(acting(
            pb::WatchPlayerRequest {
                player_id: "p1".into(),
                resume: true,
                games: vec![
                    c::GameCursor {
                        chat_revision: None,
                        game_id: g.clone(),
                        ply: 1,
                    },
                    c::GameCursor {
                        chat_revision: None,
                        game_id: other,
                        ply: 0,
                    },
                ],
            },
            "p1",
            None,
        ))
        .await
        .unwrap()
        .into_inner();
    let mut next = async || events.next().await.unwrap().unwrap().event.unwrap();
    let mut first = Vec::new();
    for _ in 0..3 {
        first.push(next().await);
    }
    let moves: Vec<(String, u32)> = first
        .iter()
        .filter(|e| matches!(e.kind, Some(c::game_event::Kind::MoveMade(_))))
        .map(|e| (e.game_id.clone(), e.ply))
        .collect();
    assert_eq!(moves, vec![(g.clone(), 2), (g.clone(), 3)]);
    assert!(
        first
            .iter()
            .any(|e| e.game_id == new && matches!(e.kind, Some(c::game_event::Kind::Snapshot(_)))),
        "{first:?}"
    );
    // Live from here on.
    play(&mut client, &g, "p2", "Nc6").await.unwrap();
    let live = next().await;
    assert_eq!((live.game_id.as_str(), live.ply), (g.as_str(), 4));
}
