//! The players directory, presence and chat safety through the real stack:
//! every registered player listed whether they played or not, online and
//! playing flags, mutes and chat off with their refusals, and the moderator
//! role granted by `chess-stack moderator`.

use chess_e2e::{StackProcess, binary};
use chess_proto::{common::v1 as common, gateway::v1 as pb};
use chess_testkit::gateway::Gateway;
use tonic::Code;

fn directory(prefix: &str) -> pb::ListPlayersRequest {
    pb::ListPlayersRequest {
        username_prefix: prefix.into(),
        ..Default::default()
    }
}

async fn moderator(stack: &StackProcess, action: &str, name: &str) -> std::process::Output {
    tokio::process::Command::new(binary("chess-stack"))
        .args([
            "moderator",
            action,
            name,
            "--rating-addr",
            stack.internal("rating"),
        ])
        .arg("--data-dir")
        .arg(stack.data.path())
        .output()
        .await
        .expect("chess-stack moderator")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_presence_mutes_and_moderators() {
    let stack = StackProcess::start(&[], &[]).await;
    let gateway = Gateway::new(StackProcess::channel(&stack.gateway).await);
    let mut accounts = gateway.accounts();
    let ann = gateway.sign_up("ann").await;
    let ben = gateway.sign_up("ben").await;
    let cat = gateway.sign_up("cat").await;
    gateway
        .register("dan", "dan@example.org")
        .await
        .expect("register dan");
    // ann and ben play; cat only watches her events; dan never signs in.
    let time_control = chess_testkit::clocks::blitz();
    gateway
        .challenge_and_accept(&ann, &ben, common::ColorChoice::White, time_control)
        .await;
    let _events = gateway.events(&cat).await;

    let listed = accounts
        .list_players(directory(""))
        .await
        .expect("list")
        .into_inner();
    let seen: Vec<(&str, bool, bool)> = listed
        .players
        .iter()
        .map(|p| {
            let presence = p.presence.unwrap_or_default();
            (
                p.profile.as_ref().unwrap().username.as_str(),
                presence.online,
                presence.playing,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ann", true, true),
            ("ben", true, true),
            ("cat", true, false),
            ("dan", false, false)
        ]
    );
    assert_eq!(listed.players_online, 3);
    assert!(
        listed.players[3]
            .profile
            .as_ref()
            .unwrap()
            .ratings
            .iter()
            .all(|r| r.games_played == 0)
    );
    let profile = accounts
        .get_profile(pb::GetProfileRequest {
            username: "BEN".into(),
        })
        .await
        .expect("profile")
        .into_inner();
    assert_eq!(
        profile.presence,
        Some(pb::PlayerPresence {
            online: true,
            playing: true
        })
    );
    for bad in ["x".repeat(65), "no spaces".into()] {
        let status = accounts
            .list_players(directory(&bad))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument);
    }

    // Mutes: of another, never of oneself or of nobody.
    let mute = |name: &str| pb::MutePlayerRequest {
        username: name.into(),
    };
    let muted = accounts
        .mute_player(ann.call(mute("Ben")))
        .await
        .expect("mute")
        .into_inner();
    assert_eq!(muted.muted_usernames, ["ben"]);
    for (name, code) in [("ann", Code::InvalidArgument), ("nobody", Code::NotFound)] {
        let status = accounts
            .mute_player(ann.call(mute(name)))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), code, "{name}");
    }
    let unmuted = accounts
        .unmute_player(ann.call(pb::UnmutePlayerRequest {
            username: "ben".into(),
        }))
        .await
        .expect("unmute")
        .into_inner();
    assert!(unmuted.muted_usernames.is_empty());
    let off = accounts
        .set_chat_off(ann.call(pb::SetChatOffRequest { chat_off: true }))
        .await
        .expect("chat off")
        .into_inner();
    assert!(off.chat_off);
    let me = accounts
        .me(ann.call(pb::MeRequest {}))
        .await
        .expect("me")
        .into_inner();
    assert!(me.chat_off && !me.moderator);

    // Server-wide mutes: moderators only, granted by the operator.
    let mute_ben = |secs| pb::MuteAccountRequest {
        username: "ben".into(),
        duration_seconds: secs,
    };
    let status = accounts
        .mute_account(cat.call(mute_ben(600)))
        .await
        .expect_err("not a moderator");
    assert_eq!(status.code(), Code::PermissionDenied);
    let granted = moderator(&stack, "grant", "Cat").await;
    assert!(granted.status.success(), "{granted:?}");
    assert!(String::from_utf8_lossy(&granted.stdout).contains("Cat is a moderator"));
    let nobody = moderator(&stack, "grant", "nobody").await;
    assert!(!nobody.status.success());
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("no player nobody"));
    let status = accounts
        .mute_account(cat.call(mute_ben(400 * 86_400)))
        .await
        .expect_err("too long");
    assert_eq!(status.code(), Code::InvalidArgument);
    let done = accounts
        .mute_account(cat.call(mute_ben(600)))
        .await
        .expect("muted")
        .into_inner();
    assert!(done.muted_until.is_some());
    let me = accounts
        .me(ben.call(pb::MeRequest {}))
        .await
        .expect("me")
        .into_inner();
    assert_eq!(me.chat_muted_until, done.muted_until);
    let revoked = moderator(&stack, "revoke", "cat").await;
    assert!(revoked.status.success(), "{revoked:?}");
    let status = accounts
        .mute_account(cat.call(mute_ben(0)))
        .await
        .expect_err("revoked");
    assert_eq!(status.code(), Code::PermissionDenied);
    stack.stop().await;
}
