//! Game chat through the real stack: the players' and the spectators' rooms
//! and who reads which, the refusals of bad lines, of floods, of unknown
//! games and of callers not signed in, reports and hides by a moderator
//! granted with `chess-stack moderator`, and chat off.

use chess_e2e::{StackProcess, binary};
use chess_proto::{common::v1 as common, gateway::v1 as pb};
use chess_testkit::gateway::{Gateway, User};
use tonic::Code;

async fn moderator(stack: &StackProcess, name: &str) {
    let out = tokio::process::Command::new(binary("chess-stack"))
        .args(["moderator", "grant", name, "--rating-addr"])
        .arg(stack.internal("rating"))
        .arg("--data-dir")
        .arg(stack.data.path())
        .output()
        .await
        .expect("chess-stack moderator");
    assert!(out.status.success(), "{out:?}");
}

fn line(game_id: &str, room: common::ChatRoom, text: &str) -> pb::SendChatRequest {
    pb::SendChatRequest {
        game_id: game_id.into(),
        room: room as i32,
        text: text.into(),
    }
}

fn said(room: common::ChatRoom, text: &str) -> (i32, String) {
    (room as i32, text.into())
}

async fn texts(gateway: &Gateway, user: &User, game_id: &str) -> Vec<(i32, String)> {
    gateway
        .play()
        .list_chat(user.call(pb::ListChatRequest {
            game_id: game_id.into(),
            ..Default::default()
        }))
        .await
        .expect("list chat")
        .into_inner()
        .lines
        .into_iter()
        .map(|l| (l.room, if l.hidden { "(hidden)".into() } else { l.text }))
        .collect()
}

/// The next chat line on `user`'s WatchGame of `game_id` from `revision`.
async fn watch_chat(
    gateway: &Gateway,
    user: &User,
    game_id: &str,
    revision: u64,
) -> (tonic::Streaming<pb::WatchGameResponse>, common::ChatLine) {
    let mut stream = gateway
        .play()
        .watch_game(user.call(pb::WatchGameRequest {
            game_id: game_id.into(),
            from_ply: None,
            from_chat_revision: Some(revision),
        }))
        .await
        .expect("watch")
        .into_inner();
    let chat = next_chat(&mut stream).await;
    (stream, chat)
}

async fn next_chat(stream: &mut tonic::Streaming<pb::WatchGameResponse>) -> common::ChatLine {
    let wait = std::time::Duration::from_secs(10);
    loop {
        let message = tokio::time::timeout(wait, stream.message())
            .await
            .expect("a chat line in time")
            .expect("the stream")
            .expect("not ended");
        if let Some(common::game_event::Kind::Chat(line)) =
            message.event.and_then(|event| event.kind)
        {
            return line;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rooms_refusals_moderation_and_chat_off() {
    use common::ChatRoom::{Players, Spectators};
    let stack = StackProcess::start(&[], &[]).await;
    let gateway = Gateway::new(StackProcess::channel(&stack.gateway).await);
    let mut play = gateway.play();
    let ann = gateway.sign_up("ann").await;
    let ben = gateway.sign_up("ben").await;
    let cat = gateway.sign_up("cat").await;
    // Granted before the gateway has cached dan's standing.
    let dan = gateway.sign_up("dan").await;
    moderator(&stack, "dan").await;
    let game_id = gateway
        .challenge_and_accept(
            &ann,
            &ben,
            common::ColorChoice::White,
            chess_testkit::clocks::blitz(),
        )
        .await;

    // Each room read by its own people.
    let sent = play
        .send_chat(ann.call(line(&game_id, Players, "  good luck  ")))
        .await
        .expect("ann writes")
        .into_inner()
        .line
        .expect("the line");
    assert_eq!(
        (sent.text.as_str(), sent.author_name.as_str()),
        ("good luck", "ann")
    );
    play.send_chat(cat.call(line(&game_id, Spectators, "go ben")))
        .await
        .expect("cat writes");
    assert_eq!(
        texts(&gateway, &ben, &game_id).await,
        [said(Players, "good luck")]
    );
    assert_eq!(
        texts(&gateway, &cat, &game_id).await,
        [said(Spectators, "go ben")]
    );
    let status = play
        .list_chat(cat.call(pb::ListChatRequest {
            game_id: game_id.clone(),
            rooms: vec![Players as i32],
            ..Default::default()
        }))
        .await
        .expect_err("a spectator reads the players' room");
    assert_eq!(status.code(), Code::PermissionDenied);

    // A watcher resuming from the last revision it saw misses no line.
    let (stream, first) = watch_chat(&gateway, &cat, &game_id, 0).await;
    assert_eq!(first.text, "go ben");
    drop(stream);
    play.send_chat(dan.call(line(&game_id, Spectators, "while away")))
        .await
        .expect("dan writes");
    let (mut stream, resumed) = watch_chat(&gateway, &cat, &game_id, first.revision).await;
    assert_eq!(resumed.text, "while away");
    play.send_chat(dan.call(line(&game_id, Spectators, "live")))
        .await
        .expect("dan writes");
    assert_eq!(next_chat(&mut stream).await.text, "live");
    drop(stream);

    // Bad lines change nothing.
    let control = "a\u{7}b".to_owned();
    for bad in ["x".repeat(141), "   ".into(), control] {
        let status = play
            .send_chat(ben.call(line(&game_id, Players, &bad)))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}");
    }
    assert_eq!(
        texts(&gateway, &ann, &game_id).await,
        [said(Players, "good luck")]
    );
    let status = play
        .send_chat(ben.call(line("00000000-0000-4000-8000-000000000000", Players, "hi")))
        .await
        .expect_err("no such game");
    assert_eq!(status.code(), Code::NotFound);
    let status = play
        .send_chat(tonic::Request::new(line(&game_id, Spectators, "hi")))
        .await
        .expect_err("not signed in");
    assert_eq!(status.code(), Code::Unauthenticated);

    // A flood: five lines in the window, the sixth waits.
    for n in 0..4 {
        play.send_chat(ann.call(line(&game_id, Players, &format!("line {n}"))))
            .await
            .expect("within the limit");
    }
    let status = play
        .send_chat(ann.call(line(&game_id, Players, "one too many")))
        .await
        .expect_err("flood");
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(status.message().contains("try again in"), "{status:?}");

    // Reports, read and acted on by a moderator only.
    play.report_chat(ben.call(pb::ReportChatRequest {
        game_id: game_id.clone(),
        seq: sent.seq,
        reason: "rude".into(),
    }))
    .await
    .expect("report");
    let status = play
        .list_chat_reports(cat.call(pb::ListChatReportsRequest { page_size: 0 }))
        .await
        .expect_err("not a moderator");
    assert_eq!(status.code(), Code::PermissionDenied);
    let hide = pb::HideChatRequest {
        game_id: game_id.clone(),
        seq: sent.seq,
    };
    let status = play
        .hide_chat(cat.call(hide.clone()))
        .await
        .expect_err("not a moderator");
    assert_eq!(status.code(), Code::PermissionDenied);
    let reports = play
        .list_chat_reports(dan.call(pb::ListChatReportsRequest { page_size: 0 }))
        .await
        .expect("reports")
        .into_inner()
        .reports;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].reason, "rude");
    assert_eq!(reports[0].line.as_ref().map(|l| l.seq), Some(sent.seq));
    let hidden = play
        .hide_chat(dan.call(hide))
        .await
        .expect("hide")
        .into_inner()
        .line
        .expect("the line");
    assert!(hidden.hidden && hidden.text.is_empty());
    assert_eq!(texts(&gateway, &ben, &game_id).await[0].1, "(hidden)");

    // A mute hides the muted author's lines from the muter only.
    gateway
        .accounts()
        .mute_player(ben.call(pb::MutePlayerRequest {
            username: "ann".into(),
        }))
        .await
        .expect("mute");
    assert!(texts(&gateway, &ben, &game_id).await.is_empty());
    assert_eq!(texts(&gateway, &ann, &game_id).await.len(), 5);

    // Chat off: no more writing.
    gateway
        .accounts()
        .set_chat_off(ben.call(pb::SetChatOffRequest { chat_off: true }))
        .await
        .expect("chat off");
    let status = play
        .send_chat(ben.call(line(&game_id, Players, "hello?")))
        .await
        .expect_err("chat off");
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    stack.stop().await;
}
