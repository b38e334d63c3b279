//! The game service takes calls only from the other services: a call
//! without a valid caller assertion is refused before it changes anything,
//! and an assertion for one player or game is refused for another.

mod common;

use chess_domain::Timestamp;
use chess_proto::game::v1::{self as pb, game_service_client::GameServiceClient};
use chess_runtime::{InternalKey, Reason, Signer, identity::HEADER};
use common::*;
use tonic::{Code, metadata::MetadataValue};

/// A move by `player` in `game` carrying `assertion` (none if `None`).
fn move_with(
    game: &str,
    player: &str,
    assertion: Option<String>,
) -> tonic::Request<pb::MakeMoveRequest> {
    let mut request = tonic::Request::new(pb::MakeMoveRequest {
        game_id: game.to_owned(),
        player_id: player.to_owned(),
        r#move: "e4".to_owned(),
        ply: None,
    });
    if let Some(assertion) = assertion {
        request
            .metadata_mut()
            .insert(HEADER, MetadataValue::try_from(assertion).unwrap());
    }
    request
}

fn test_signer() -> Signer {
    chess_testkit::signer("gateway")
}

#[tokio::test]
async fn calls_without_a_valid_assertion_are_refused_and_change_nothing() {
    let (_dir, service, mut signed) = on_sqlite().await;
    let game = create(&mut signed, "w", "b", untimed()).await.game_id;
    let mut raw = GameServiceClient::new(chess_testkit::connect(&service.addr).await);

    let other_key = Signer::new(InternalKey::from_bytes(&[7; 32]).unwrap(), "gateway");
    let valid = test_signer().mint(Some("w"), Some(&game)).unwrap();
    let (claims, signature) = valid.rsplit_once('.').unwrap();
    let flipped = if signature.ends_with('A') { 'B' } else { 'A' };
    let forged = format!("{claims}.{}{flipped}", &signature[..signature.len() - 1]);
    let refused = [
        ("no assertion", None),
        ("garbage", Some("not an assertion".to_owned())),
        ("a forged signature", Some(forged)),
        (
            "an expired assertion",
            Some(
                test_signer()
                    .mint_expiring(
                        Some("w"),
                        Some(&game),
                        Timestamp::from_millis(Timestamp::now().millis() - 1_000),
                    )
                    .unwrap(),
            ),
        ),
        (
            "another key's assertion",
            Some(other_key.mint(Some("w"), Some(&game)).unwrap()),
        ),
    ];
    for (what, assertion) in refused {
        let status = raw
            .make_move(move_with(&game, "w", assertion.clone()))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
        if let Some(assertion) = assertion {
            assert!(
                !status.message().contains(&assertion),
                "{what}: the header is echoed: {status:?}"
            );
        }
        // Reads are refused alike.
        let status = raw
            .get_game(pb::GetGameRequest {
                game_id: game.clone(),
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{what}: {status:?}");
    }
    let state = get(&mut signed, &game).await;
    assert_eq!(state.ply, 0, "a refused call moved");

    // The same move with a valid assertion is played.
    raw.make_move(move_with(&game, "w", Some(valid)))
        .await
        .unwrap();
    assert_eq!(get(&mut signed, &game).await.ply, 1);
}

#[tokio::test]
async fn an_assertion_for_one_player_or_game_is_refused_for_another() {
    let (_dir, service, mut client) = on_sqlite().await;
    let g = create(&mut client, "w", "b", untimed()).await.game_id;
    let h = create(&mut client, "w", "b", untimed()).await.game_id;
    play(&mut client, &g, "w", "e4").await.unwrap();

    let denied = |status: tonic::Status| {
        assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
        assert_eq!(Reason::of(&status), Some(Reason::CallerMismatch));
    };
    // White's assertion for game g, replayed for black in g.
    let whites = test_signer().mint(Some("w"), Some(&g)).unwrap();
    let mut raw = GameServiceClient::new(chess_testkit::connect(&service.addr).await);
    let mut request = move_with(&g, "b", Some(whites.clone()));
    request.get_mut().r#move = "e5".to_owned();
    denied(raw.make_move(request).await.unwrap_err());
    let mut resign = tonic::Request::new(pb::ResignRequest {
        game_id: g.clone(),
        player_id: "b".to_owned(),
    });
    resign
        .metadata_mut()
        .insert(HEADER, MetadataValue::try_from(whites).unwrap());
    denied(raw.resign(resign).await.unwrap_err());
    // White's assertion for game g, replayed in game h.
    let for_g = test_signer().mint(Some("w"), Some(&g)).unwrap();
    denied(
        raw.make_move(move_with(&h, "w", Some(for_g)))
            .await
            .unwrap_err(),
    );
    // An assertion for nobody acts for nobody.
    let nobody = test_signer().mint(None, None).unwrap();
    denied(
        raw.make_move(move_with(&h, "w", Some(nobody)))
            .await
            .unwrap_err(),
    );

    assert_eq!(get(&mut client, &g).await.ply, 1, "game g changed");
    assert_eq!(get(&mut client, &h).await.ply, 0, "game h changed");
    assert_eq!(
        get(&mut client, &g).await.status,
        chess_proto::common::v1::GameStatus::Active as i32
    );
}

#[tokio::test]
async fn only_the_lobby_and_the_gateway_create_games() {
    let (_dir, url) = sqlite();
    let service = GameService::start(&url).await;
    let mut engine = GameServiceClient::new(chess_testkit::signed_as(
        chess_testkit::connect(&service.addr).await,
        "game",
    ));
    let status = engine
        .create_game(pb::CreateGameRequest {
            white: Some(guest("w")),
            black: Some(guest("b")),
            time_control: Some(untimed()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
}

#[tokio::test]
async fn health_and_reflection_need_no_assertion() {
    let (_dir, url) = sqlite();
    let service = GameService::start(&url).await;
    let channel = chess_testkit::connect(&service.addr).await;
    let status = tonic_health::pb::health_client::HealthClient::new(channel.clone())
        .check(tonic_health::pb::HealthCheckRequest {
            service: "chess.game.v1.GameService".to_owned(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("{answer:?}");
    };
    assert!(
        list.service
            .iter()
            .any(|s| s.name == "chess.game.v1.GameService"),
        "{list:?}"
    );
}
