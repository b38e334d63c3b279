//! A Nostr player plays as a guest whose id is [`GUEST_PREFIX`] and the
//! player's key in hex: the one place that turns a key into that id and
//! back.

use chess_domain::PlayerId;

/// Guest ids of Nostr players: this and the key in hex.
pub(super) const GUEST_PREFIX: &str = "nostr-";

/// The guest id the key `key` plays as.
pub(super) fn guest_id(key: &str) -> PlayerId {
    // Never empty: the prefix alone follows the rule.
    PlayerId::trusted(format!("{GUEST_PREFIX}{key}"))
}

/// The key of a Nostr guest; `None` for any other player.
pub(super) fn key_of(id: &PlayerId) -> Option<&str> {
    id.as_str().strip_prefix(GUEST_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_id_carries_its_key() {
        let id = guest_id("ab12");
        assert_eq!(id, "nostr-ab12");
        assert_eq!(key_of(&id), Some("ab12"));
        assert_eq!(key_of(&PlayerId::trusted("p1")), None);
    }
}
