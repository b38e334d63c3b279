//! The players directory and chat standing end to end: every registered
//! player found by prefix in any case, sorted and paged, newcomers marked
//! provisional; the moderator role, personal mutes, chat switched off and
//! server-wide mutes with their refusals. Every body runs on SQLite and on
//! PostgreSQL.

mod common;

use chess_proto::{
    common::v1::{GameResult, SpeedCategory},
    rating::v1 as pb,
};
use common::{Client, RatingService, assert_refused, game, record, register};
use tonic::Code;

common::on_sqlite_and_postgres!(
    directory_search_sort_and_paging,
    chat_standing_and_its_refusals
);

fn request(
    prefix: &str,
    sort: pb::PlayerSort,
    descending: bool,
    size: u32,
) -> pb::ListPlayersRequest {
    pb::ListPlayersRequest {
        username_prefix: prefix.into(),
        sort: sort as i32,
        category: SpeedCategory::Blitz as i32,
        descending,
        page_size: size,
        page_token: String::new(),
    }
}

/// Every player `request` lists, read `request.page_size` at a time.
async fn all_pages(
    client: &mut Client,
    mut request: pb::ListPlayersRequest,
) -> Vec<pb::ListPlayersResponse> {
    let mut pages = Vec::new();
    loop {
        let page = client
            .list_players(request.clone())
            .await
            .expect("list players")
            .into_inner();
        let next = page.next_page_token.clone();
        pages.push(page);
        if next.is_empty() {
            return pages;
        }
        request.page_token = next;
    }
}

async fn names(client: &mut Client, request: pb::ListPlayersRequest) -> Vec<String> {
    let size = request.page_size;
    let pages = all_pages(client, request).await;
    for page in &pages {
        assert!(page.players.len() <= size as usize);
    }
    pages
        .into_iter()
        .flat_map(|p| p.players)
        .map(|p| p.username)
        .collect()
}

async fn directory_search_sort_and_paging(url: &str) {
    let service = RatingService::start(url).await;
    let mut client = service.client().await;
    let mut ids = std::collections::HashMap::new();
    for name in ["alice", "Bob", "carol", "Alf", "al_x", "alpha", "dave"] {
        ids.insert(name, register(&mut client, name).await);
    }
    // alice 1220 (2 blitz games), carol 1200 (2), Bob and dave 1190 (1);
    // Alf, al_x and alpha have not played.
    for (game_id, white, black) in [
        ("d1", "alice", "Bob"),
        ("d2", "carol", "dave"),
        ("d3", "alice", "carol"),
    ] {
        record(
            &mut client,
            game(game_id, &ids[white], &ids[black], GameResult::WhiteWins),
        )
        .await;
    }

    use pb::PlayerSort::{Games, Name, Rating};
    let everyone = ["al_x", "Alf", "alice", "alpha", "Bob", "carol", "dave"];
    for size in [1, 2, 3, 50] {
        assert_eq!(
            names(&mut client, request("", Name, false, size)).await,
            everyone
        );
    }
    let mut reversed = everyone;
    reversed.reverse();
    assert_eq!(
        names(&mut client, request("", Name, true, 2)).await,
        reversed
    );

    // A prefix in any case; `_` is a letter of a name, not a wildcard.
    assert_eq!(
        names(&mut client, request("AL", Name, false, 2)).await,
        ["al_x", "Alf", "alice", "alpha"]
    );
    assert_eq!(
        names(&mut client, request("al_", Name, false, 2)).await,
        ["al_x"]
    );
    assert_eq!(
        names(&mut client, request("alph", Name, false, 2)).await,
        ["alpha"]
    );
    assert!(
        names(&mut client, request("zz", Name, false, 2))
            .await
            .is_empty()
    );

    // By blitz rating, best first, names among equals; and the other way.
    // Equal ratings run by name in the same direction as the sort.
    for size in [1, 3] {
        assert_eq!(
            names(&mut client, request("", Rating, true, size)).await,
            ["alice", "carol", "alpha", "Alf", "al_x", "dave", "Bob"]
        );
    }
    assert_eq!(
        names(&mut client, request("", Rating, false, 2)).await,
        ["Bob", "dave", "al_x", "Alf", "alpha", "carol", "alice"]
    );
    assert_eq!(
        names(&mut client, request("", Games, true, 2)).await,
        ["carol", "alice", "dave", "Bob", "alpha", "Alf", "al_x"]
    );

    // Every row has every category; one never played is provisional.
    let page = client
        .list_players(request("alpha", Name, false, 5))
        .await
        .unwrap()
        .into_inner();
    let alpha = &page.players[0];
    assert_eq!(alpha.ratings.len(), 5);
    assert!(
        alpha
            .ratings
            .iter()
            .all(|r| r.games_played == 0 && r.rating == 1200.0)
    );
    let page = client
        .list_players(request("alice", Name, false, 5))
        .await
        .unwrap()
        .into_inner();
    let blitz = page.players[0]
        .ratings
        .iter()
        .find(|r| r.category == SpeedCategory::Blitz as i32)
        .unwrap();
    assert_eq!((blitz.rating, blitz.games_played), (1220.0, 2));

    for bad in [
        request("bad prefix", Name, false, 5),
        request("a_very_long_prefix_of_21", Name, false, 5),
        pb::ListPlayersRequest {
            category: SpeedCategory::Untimed as i32,
            ..request("", Rating, false, 5)
        },
        pb::ListPlayersRequest {
            sort: 99,
            ..request("", Name, false, 5)
        },
        pb::ListPlayersRequest {
            page_token: "garbage".into(),
            ..request("", Name, false, 5)
        },
    ] {
        assert_refused(client.list_players(bad).await, Code::InvalidArgument);
    }
    service.stop().await;
}

fn acting<T>(player: &str, message: T) -> tonic::Request<T> {
    chess_testkit::acting(message, player, None)
}

fn muted_ids(standing: &pb::ChatStanding) -> Vec<String> {
    standing.muted.iter().map(|m| m.player_id.clone()).collect()
}

fn standing<T>(
    answer: Result<tonic::Response<T>, tonic::Status>,
    get: fn(T) -> Option<pb::ChatStanding>,
) -> pb::ChatStanding {
    get(answer.expect("answer").into_inner()).expect("a standing")
}

async fn chat_standing_and_its_refusals(url: &str) {
    let (service, mut client, [mo, pat, quinn]) =
        RatingService::with_players(url, ["moe", "pat", "quinn"]).await;
    let channel = chess_testkit::connect(&service.addr).await;
    let mut ops = pb::rating_service_client::RatingServiceClient::new(chess_testkit::signed_as(
        channel, "ops",
    ));

    // Only an operator's tool grants the role.
    let grant = pb::SetModeratorRequest {
        username: "MOE".into(),
        moderator: true,
    };
    assert_refused(
        client.set_moderator(grant.clone()).await,
        Code::PermissionDenied,
    );
    let granted = ops.set_moderator(grant).await.unwrap().into_inner();
    assert_eq!(granted.player_id, mo);
    assert!(granted.standing.unwrap().moderator);
    assert_refused(
        ops.set_moderator(pb::SetModeratorRequest {
            username: "nobody".into(),
            moderator: true,
        })
        .await,
        Code::NotFound,
    );

    // Personal mutes: of another player, never of oneself.
    let mute = |muted| pb::SetPersonalMuteRequest {
        player_id: pat.clone(),
        username: "Quinn".into(),
        muted,
    };
    let s = standing(
        client.set_personal_mute(acting(&pat, mute(true))).await,
        |r| r.standing,
    );
    assert_eq!(muted_ids(&s), vec![quinn.clone()]);
    let again = standing(
        client.set_personal_mute(acting(&pat, mute(true))).await,
        |r| r.standing,
    );
    assert_eq!(muted_ids(&again), vec![quinn.clone()]);
    assert_eq!(again.muted[0].username, "quinn");
    let myself = pb::SetPersonalMuteRequest {
        player_id: pat.clone(),
        username: "pat".into(),
        muted: true,
    };
    assert_refused(
        client.set_personal_mute(acting(&pat, myself)).await,
        Code::InvalidArgument,
    );
    let unknown = pb::SetPersonalMuteRequest {
        player_id: pat.clone(),
        username: "nobody".into(),
        muted: true,
    };
    assert_refused(
        client.set_personal_mute(acting(&pat, unknown)).await,
        Code::NotFound,
    );
    let s = standing(
        client.set_personal_mute(acting(&pat, mute(false))).await,
        |r| r.standing,
    );
    assert!(s.muted.is_empty());

    // Chat off, for oneself.
    let off = pb::SetChatOffRequest {
        player_id: quinn.clone(),
        chat_off: true,
    };
    assert!(
        standing(client.set_chat_off(acting(&quinn, off)).await, |r| r
            .standing)
        .chat_off
    );

    // A server-wide mute: by a moderator only, for a bounded time.
    let mute_pat = |by: &str, secs| pb::MuteAccountRequest {
        moderator_id: by.into(),
        username: "pat".into(),
        duration_seconds: secs,
    };
    assert_refused(
        client
            .mute_account(acting(&quinn, mute_pat(&quinn, 600)))
            .await,
        Code::PermissionDenied,
    );
    assert_refused(
        client
            .mute_account(acting(&mo, mute_pat(&mo, 400 * 86_400)))
            .await,
        Code::InvalidArgument,
    );
    let muted = client
        .mute_account(acting(&mo, mute_pat(&mo, 600)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(muted.player_id, pat);
    let until = muted.standing.unwrap().muted_until.expect("muted until");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(
        (now + 590..=now + 610).contains(&until.seconds),
        "{until:?}"
    );

    let read = |id: &str| pb::GetChatStandingRequest {
        player_id: id.into(),
    };
    let pat_now = standing(client.get_chat_standing(read(&pat)).await, |r| r.standing);
    assert!(pat_now.muted_until.is_some() && !pat_now.moderator);
    let lifted = client
        .mute_account(acting(&mo, mute_pat(&mo, 0)))
        .await
        .unwrap()
        .into_inner();
    assert!(lifted.standing.unwrap().muted_until.is_none());
    assert_refused(
        client.get_chat_standing(read("no-such-player")).await,
        Code::NotFound,
    );

    // Revoked, the role is gone.
    let revoke = pb::SetModeratorRequest {
        username: "moe".into(),
        moderator: false,
    };
    assert!(
        !ops.set_moderator(revoke)
            .await
            .unwrap()
            .into_inner()
            .standing
            .unwrap()
            .moderator
    );
    assert_refused(
        client.mute_account(acting(&mo, mute_pat(&mo, 600))).await,
        Code::PermissionDenied,
    );
    service.stop().await;
}
