//! Bad input on every public RPC: every string field oversized, and bodies
//! that are not the RPC's message at all. Each is refused with a client
//! error (never INTERNAL or UNKNOWN), while other callers' reads, made at
//! the same time, are all answered.

mod common;

use chess_proto::{common::v1 as wire, gateway::v1 as pb};
use common::System;
use tonic::{Code, Status, transport::Channel};

/// Far past every field's limit.
fn huge() -> String {
    "x".repeat(100_000)
}

/// The code of an answer: OK, or the refusal's.
fn code<T>(answer: Result<tonic::Response<T>, Status>) -> (Code, String) {
    match answer {
        Ok(_) => (Code::Ok, String::new()),
        Err(status) => (status.code(), status.message().to_owned()),
    }
}

/// Calls every public RPC that takes a string, with every string oversized,
/// and returns (RPC, code, message) for each.
async fn oversized_everywhere(channel: Channel) -> Vec<(&'static str, Code, String)> {
    let mut accounts = pb::account_service_client::AccountServiceClient::new(channel.clone());
    let mut lobby = pb::lobby_service_client::LobbyServiceClient::new(channel.clone());
    let mut nostr = pb::nostr_service_client::NostrServiceClient::new(channel.clone());
    let mut play = pb::play_service_client::PlayServiceClient::new(channel);
    let id = huge;
    let mut seen = Vec::new();
    macro_rules! call {
        ($client:ident . $rpc:ident ( $request:expr )) => {{
            let (code, message) = code($client.$rpc($request).await);
            seen.push((stringify!($rpc), code, message));
        }};
    }
    // The RPCs whose one field is the id of what they act on.
    macro_rules! by_id {
        ($client:ident, $field:ident: $($rpc:ident($request:ident)),+) => {
            $(call!($client.$rpc(pb::$request { $field: id() }));)+
        };
    }
    // The lists whose one string is the page token.
    macro_rules! paged {
        ($client:ident: $($rpc:ident($request:ident)),+) => {
            $(call!($client.$rpc(pb::$request { page_token: huge(), ..Default::default() }));)+
        };
    }
    call!(accounts.register(pb::RegisterRequest {
        username: huge(),
        email: huge(),
        password: huge(),
    }));
    call!(accounts.login(pb::LoginRequest {
        login: huge(),
        password: huge(),
    }));
    call!(accounts.change_password(pb::ChangePasswordRequest {
        old_password: huge(),
        new_password: huge(),
    }));
    call!(accounts.get_profile(pb::GetProfileRequest { username: huge() }));
    call!(accounts.get_rating_history(pb::GetRatingHistoryRequest {
        username: huge(),
        page_token: huge(),
        ..Default::default()
    }));
    paged!(accounts: leaderboard(LeaderboardRequest));
    call!(nostr.link_nostr_key(pb::LinkNostrKeyRequest { event: huge() }));
    paged!(lobby: list_seeks(ListSeeksRequest));
    by_id!(lobby, seek_id: cancel_seek(CancelSeekRequest), request_seek(RequestSeekRequest));
    by_id!(lobby, request_id: accept_seek_request(AcceptSeekRequestRequest),
        reject_seek_request(RejectSeekRequestRequest),
        withdraw_seek_request(WithdrawSeekRequestRequest));
    call!(lobby.create_challenge(pb::CreateChallengeRequest {
        opponent_username: huge(),
        ..Default::default()
    }));
    call!(lobby.decline_challenge(pb::DeclineChallengeRequest {
        challenge_id: id(),
        reason: huge(),
    }));
    by_id!(lobby, challenge_id: accept_challenge(AcceptChallengeRequest),
        cancel_challenge(CancelChallengeRequest));
    call!(play.make_move(pb::MakeMoveRequest {
        game_id: id(),
        r#move: huge(),
        ply: Some(1),
    }));
    by_id!(play, game_id: resign(ResignRequest), offer_draw(OfferDrawRequest),
        accept_draw(AcceptDrawRequest), decline_draw(DeclineDrawRequest),
        claim_draw(ClaimDrawRequest), abort(AbortRequest), hint(HintRequest),
        legal_moves(LegalMovesRequest), board(BoardRequest), get_game(GetGameRequest),
        export_pgn(ExportPgnRequest));
    paged!(play: list_my_games(ListMyGamesRequest));
    call!(play.watch_game(pb::WatchGameRequest {
        game_id: id(),
        ..Default::default()
    }));
    call!(play.stream_events(pb::StreamEventsRequest {
        resume: true,
        games: vec![wire::GameCursor {
            chat_revision: None,
            game_id: id(),
            ply: 0,
        }],
    }));
    seen
}

/// A message whose field 1 is a fixed64: sent where field 1 is a string,
/// its bytes are not a valid request.
#[derive(Clone, PartialEq, prost::Message)]
struct NotTheRequest {
    #[prost(fixed64, tag = "1")]
    field: u64,
}

/// Sends `NotTheRequest` to `method` (a unary RPC path).
async fn wrong_body(channel: Channel, method: &'static str) -> Status {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let codec = tonic_prost::ProstCodec::<NotTheRequest, pb::GetGameResponse>::default();
    grpc.unary(
        tonic::Request::new(NotTheRequest { field: 7 }),
        http::uri::PathAndQuery::from_static(method),
        codec,
    )
    .await
    .expect_err("a body that is not the request is refused")
}

#[tokio::test]
async fn bad_input_on_every_rpc_is_refused_and_hurts_no_one_else() {
    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let game = system.play_engine(&alice).await;

    // Others read the game all along, on their own connection.
    let readers = system.gateway.channel().await;
    let mut reads = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let mut play = pb::play_service_client::PlayServiceClient::new(readers.clone());
        let game_id = game.game_id.clone();
        reads.spawn(async move { play.get_game(pb::GetGameRequest { game_id }).await });
    }
    let hostile = system.gateway.channel().await;
    let seen = oversized_everywhere(hostile.clone()).await;
    assert_eq!(seen.len(), 32, "every RPC with a string field is tried");
    for (rpc, code, message) in &seen {
        assert_eq!(*code, Code::InvalidArgument, "{rpc}: {message}");
        assert!(
            message.contains("is too long") || message.starts_with("games:"),
            "{rpc}: {message}"
        );
    }
    for method in [
        "/chess.gateway.v1.PlayService/GetGame",
        "/chess.gateway.v1.AccountService/GetProfile",
        "/chess.gateway.v1.LobbyService/CancelSeek",
    ] {
        let status = wrong_body(hostile.clone(), method).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{method}: {status:?}");
    }
    while let Some(read) = reads.join_next().await {
        read.expect("a reader task")
            .expect("another caller's read is answered");
    }
}

/// Tokens that are not this gateway's, altered, or past their expiry are
/// refused (UNAUTHENTICATED), and say why where it helps: an expired one
/// asks the player to sign in again.
#[tokio::test]
async fn forged_tampered_and_expired_tokens_are_refused() {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    use chess_gateway::core::auth::Tokens;

    let system = System::start(&[]).await;
    let alice = system.sign_up("alice").await;
    let mut accounts = system.accounts().await;
    let me = |token: String| {
        let mut request = tonic::Request::new(pb::MeRequest {});
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        request
    };
    // Her own token works.
    accounts
        .me(alice.call(pb::MeRequest {}))
        .await
        .expect("her token");
    let player_id = chess_domain::PlayerId::trusted(alice.id.clone());
    let name = chess_domain::Username::trusted("alice");
    let hour = std::time::Duration::from_secs(3600);
    let now = chess_domain::Timestamp::now().secs();

    // Signed with the gateway's key, but expired an hour ago.
    let ours = Tokens::new(b"a test key that is long enough", hour).unwrap();
    let (expired, _) = ours.issue_at(&player_id, &name, 0, now - 2 * 3600);
    let status = accounts.me(me(expired)).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert!(status.message().contains("expired"), "{status:?}");

    // Well formed and unexpired, but signed with another key.
    let theirs = Tokens::new(b"somebody else's key, long enough", hour).unwrap();
    let (forged, _) = theirs.issue(&player_id, &name, 0);
    let status = accounts.me(me(forged)).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");

    // Her real token with its payload altered to name someone else.
    let (payload, signature) = alice.token.split_once('.').expect("payload.signature");
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    let altered = text.replacen("|alice|", "|mallory|", 1);
    assert_ne!(altered, text);
    let tampered = format!("{}.{signature}", URL_SAFE_NO_PAD.encode(altered));
    let status = accounts.me(me(tampered)).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
}
