//! `chess-stack moderator grant|revoke <username>`: the operator's way to
//! give an account the moderator role (who may mute an account's chat
//! server-wide) or take it back, on a running stack.
//!
//! The call goes to the stack's rating service (its socket in the data
//! directory, else `--rating-addr`), signed as `ops` with the data
//! directory's internal key: the one caller the rating service takes role
//! changes from.

use chess_proto::rating::v1::{SetModeratorRequest, rating_service_client::RatingServiceClient};

use crate::{
    config::{ModeratorAction, ModeratorArgs},
    data_dir::INTERNAL_KEY_FILE,
};

/// What `args` asks done, as one line to print, or why it failed.
pub(crate) async fn moderator(args: &ModeratorArgs) -> Result<String, String> {
    let (username, grant) = match &args.action {
        ModeratorAction::Grant { username } => (username, true),
        ModeratorAction::Revoke { username } => (username, false),
    };
    let key_path = args.data_dir.join(INTERNAL_KEY_FILE);
    let key = chess_runtime::InternalKey::read(&key_path).map_err(|e| e.to_string())?;
    let signer = chess_runtime::Signer::new(key, "ops");
    let socket = args.data_dir.join("rating.sock");
    let addr = match &args.rating_addr {
        Some(addr) => addr.clone(),
        None if socket.exists() => format!("unix:{}", socket.display()),
        None => chess_runtime::addr::RATING.to_owned(),
    };
    let channel = chess_runtime::channel(&addr).map_err(|e| e.to_string())?;
    let mut rating = RatingServiceClient::new(signer.channel(channel, None, None));
    let answer = rating
        .set_moderator(SetModeratorRequest {
            username: username.clone(),
            moderator: grant,
        })
        .await
        .map_err(|status| match status.code() {
            tonic::Code::NotFound => format!("no player {username}"),
            tonic::Code::Unavailable => {
                format!("the rating service at {addr} is not answering; is the stack running?")
            }
            _ => status.message().to_owned(),
        })?
        .into_inner();
    Ok(if grant {
        format!("{username} is a moderator (player {})", answer.player_id)
    } else {
        format!(
            "{username} is no longer a moderator (player {})",
            answer.player_id
        )
    })
}
