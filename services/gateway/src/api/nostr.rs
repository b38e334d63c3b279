//! NostrService: how Nostr clients find the server, and linking a Nostr key
//! to an account (`docs/nostr.md`).
//!
//! A link is proven by an event signed with the key: kind 22242 (the kind
//! NIP-42 uses to prove a key to a server), tagged with the server's key and
//! `link:<username>`, and recent. Naming both the server and the account
//! keeps a proof from being used for another account or on another server.

use std::sync::Arc;

use chess_domain::Username;
use chess_proto::gateway::v1::{self as pb, nostr_service_server::NostrService};
use chess_runtime::Reason;
use nostr_sdk::prelude::{Event, JsonUtil as _};
use tonic::{Code, Request, Status};

use super::{Answer, Shared, custom, edge::CallerOf as _, public_service, relay};
use crate::fronts::nostr::Handle;

/// The kind of a proof of key ownership.
const PROOF_KIND: u16 = 22242;
/// How old (or how far ahead) a proof may be dated.
const PROOF_MAX_AGE_SECS: u64 = 10 * 60;

/// Implements `chess.gateway.v1.NostrService`.
#[derive(Debug)]
pub struct Nostr {
    shared: Arc<Shared>,
    bridge: Option<Handle>,
}

public_service! {
    impl NostrService for Nostr;
    custom() []: get_nostr_info(GetNostrInfoRequest -> pb::GetNostrInfoResponse),
        link_nostr_key(LinkNostrKeyRequest -> pb::LinkNostrKeyResponse),
        unlink_nostr_key(UnlinkNostrKeyRequest -> pb::UnlinkNostrKeyResponse);
}

fn invalid(message: impl Into<String>) -> Status {
    Reason::InvalidRequest.status(Code::InvalidArgument, message)
}

/// The key an event proves `username` owns on the server with key
/// `server`, in hex.
pub fn check_proof(
    json: &str,
    server: &str,
    username: &Username,
    now: u64,
) -> Result<String, Status> {
    let event =
        Event::from_json(json).map_err(|e| invalid(format!("event: not a Nostr event: {e}")))?;
    if event.verify().is_err() {
        return Err(invalid("event: bad id or signature"));
    }
    if event.kind.as_u16() != PROOF_KIND {
        return Err(invalid(format!("event: must be of kind {PROOF_KIND}")));
    }
    let has = |name: &str, value: &str| {
        event
            .tags
            .iter()
            .any(|t| matches!(t.as_slice(), [n, v, ..] if n == name && v == value))
    };
    if !has("p", server) {
        return Err(invalid(
            "event: must have the tag [\"p\", <this server's key>]",
        ));
    }
    if !has("challenge", &format!("link:{username}")) {
        return Err(invalid(
            "event: must have the tag [\"challenge\", \"link:<your username>\"]",
        ));
    }
    let at = event.created_at.as_secs();
    if at + PROOF_MAX_AGE_SECS < now || at > now + PROOF_MAX_AGE_SECS {
        return Err(invalid("event: must be created within the last 10 minutes"));
    }
    Ok(event.pubkey.to_hex())
}

impl Nostr {
    pub fn new(shared: Arc<Shared>, bridge: Option<Handle>) -> Self {
        Self { shared, bridge }
    }

    async fn get_nostr_info(
        &self,
        _request: Request<pb::GetNostrInfoRequest>,
    ) -> Answer<pb::GetNostrInfoResponse> {
        let Some(bridge) = &self.bridge else {
            return Ok(pb::GetNostrInfoResponse::default());
        };
        let info = bridge.info().await;
        Ok(pb::GetNostrInfoResponse {
            enabled: true,
            public_key: info.public_key,
            npub: info.npub,
            relays: info
                .relays
                .into_iter()
                .map(|r| pb::NostrRelay {
                    url: r.url,
                    connected: r.connected,
                    subscribed: r.subscribed,
                })
                .collect(),
        })
    }

    async fn link_nostr_key(
        &self,
        request: Request<pb::LinkNostrKeyRequest>,
    ) -> Answer<pb::LinkNostrKeyResponse> {
        let session = request.caller()?;
        let Some(bridge) = &self.bridge else {
            return Err(Reason::NotAllowed
                .status(Code::FailedPrecondition, "this server runs no Nostr bridge"));
        };
        let server = bridge.public_key();
        let key = check_proof(
            &request.get_ref().event,
            &server,
            &session.username,
            chess_domain::Timestamp::now().unsigned_secs(),
        )?;
        let profile = self
            .shared
            .backends
            .rating
            .link_nostr_key(&session.player_id, &key)
            .await
            .map_err(relay)?
            .profile;
        Ok(pb::LinkNostrKeyResponse { profile })
    }

    async fn unlink_nostr_key(
        &self,
        request: Request<pb::UnlinkNostrKeyRequest>,
    ) -> Answer<pb::UnlinkNostrKeyResponse> {
        let session = request.caller()?;
        let profile = self
            .shared
            .backends
            .rating
            .unlink_nostr_key(&session.player_id)
            .await
            .map_err(relay)?
            .profile;
        Ok(pb::UnlinkNostrKeyResponse { profile })
    }
}

#[cfg(test)]
mod tests {
    use nostr_sdk::prelude::{EventBuilder, Keys, Kind, Tag};

    use super::*;

    fn proof(keys: &Keys, kind: u16, tags: &[[&str; 2]], at: u64) -> String {
        EventBuilder::new(Kind::Custom(kind), "")
            .tags(tags.iter().map(|t| Tag::parse(*t).unwrap()))
            .custom_created_at(nostr_sdk::prelude::Timestamp::from(at))
            .sign_with_keys(keys)
            .unwrap()
            .as_json()
    }

    #[test]
    fn a_proof_names_the_server_and_the_account_and_is_recent() {
        let player = Keys::generate();
        let server = Keys::generate().public_key().to_hex();
        let now = 1_800_000_000;
        let good = [["p", server.as_str()], ["challenge", "link:ann"]];
        let ann = Username::trusted("ann");
        assert_eq!(
            check_proof(&proof(&player, 22242, &good, now), &server, &ann, now).unwrap(),
            player.public_key().to_hex()
        );
        let refused = |json: String, expected: &str| {
            let status = check_proof(&json, &server, &ann, now).unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument);
            assert!(status.message().contains(expected), "{}", status.message());
        };
        refused(proof(&player, 22242, &good, now - 3600), "10 minutes");
        refused(proof(&player, 1, &good, now), "kind");
        refused(
            proof(
                &player,
                22242,
                &[["p", &server], ["challenge", "link:bob"]],
                now,
            ),
            "challenge",
        );
        refused(
            proof(&player, 22242, &[["challenge", "link:ann"]], now),
            "server's key",
        );
        let tampered =
            proof(&player, 22242, &good, now).replacen("\"content\":\"\"", "\"content\":\"x\"", 1);
        refused(tampered, "signature");
        refused("{}".to_owned(), "not a Nostr event");
    }
}
