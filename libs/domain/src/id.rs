//! The ids that travel between the services, each with its rule: a game's
//! id ([`GameId`]), a player's ([`PlayerId`]) and a username
//! ([`Username`]). On the wire they stay strings; a service parses one at
//! its edge and then holds a value that is known to follow the rule.

use std::fmt;

use rand::Rng as _;

use crate::InvalidInput;

/// The longest game id accepted from outside (the game service makes ids
/// of [`GameId::GENERATED_LEN`]; the rest is room for ids made elsewhere).
pub const MAX_GAME_ID: usize = 200;

/// A game's id: 1 to [`MAX_GAME_ID`] bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameId(String);

impl GameId {
    /// How long the ids the game service makes are.
    pub const GENERATED_LEN: usize = 12;

    /// `id` if it follows the rule.
    pub fn parse(id: &str) -> Result<Self, InvalidInput> {
        if id.is_empty() || id.len() > MAX_GAME_ID {
            return Err(InvalidInput(format!(
                "a game id must be 1 to {MAX_GAME_ID} bytes"
            )));
        }
        Ok(Self(id.to_owned()))
    }

    /// A fresh random id: [`GENERATED_LEN`](Self::GENERATED_LEN) letters
    /// and digits, enough that two games never share one.
    pub fn generate() -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let mut rng = rand::rng();
        Self(
            (0..Self::GENERATED_LEN)
                .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
                .collect(),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// A player's id, an account's or a guest's: never empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlayerId(String);

impl PlayerId {
    /// `id` if given.
    pub fn parse(id: &str) -> Result<Self, InvalidInput> {
        crate::require("player_id", id)?;
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// Fewest characters in a username.
pub const USERNAME_MIN: usize = 3;
/// Most characters in a username.
pub const USERNAME_MAX: usize = 20;

/// A username that follows the rules: 3 to 20 ASCII letters, digits, `_`
/// and `-`. Usernames are unique regardless of case ([`key`](Self::key)).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Username(String);

impl Username {
    /// `name` if it follows the rules.
    pub fn parse(name: &str) -> Result<Self, InvalidInput> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if (USERNAME_MIN..=USERNAME_MAX).contains(&name.len()) && name.chars().all(allowed) {
            Ok(Self(name.to_owned()))
        } else {
            Err(InvalidInput(format!(
                "a username must be {USERNAME_MIN} to {USERNAME_MAX} letters, digits, `_` or `-`"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form uniqueness is decided on.
    pub fn key(&self) -> String {
        username_key(&self.0)
    }
}

/// The lower-cased form of a username, which is what is unique.
pub fn username_key(name: &str) -> String {
    name.to_lowercase()
}

/// Plain text an id can be made of: never another id, so that one kind
/// of id is not silently taken for another.
pub trait Text: Into<String> + sealed::Sealed {}

impl Text for String {}
impl Text for &str {}
impl Text for &String {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for String {}
    impl Sealed for &str {}
    impl Sealed for &String {}
}

macro_rules! display_as_str {
    ($($id:ident),*) => {$(
        impl $id {
            /// An id that already passed the rule where it came in: read
            /// back from a service's own store, or answered by one of our
            /// own services. Input from outside goes through `parse`.
            pub fn trusted(id: impl Text) -> Self {
                Self(id.into())
            }
        }

        impl From<$id> for String {
            fn from(id: $id) -> String {
                id.0
            }
        }

        /// Maps keyed by the id can be looked up with a plain `&str`.
        impl std::borrow::Borrow<str> for $id {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $id {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $id {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $id {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    )*};
}

display_as_str!(GameId, PlayerId, Username);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn game_ids_are_bounded_and_generated_fresh() {
        assert_eq!(GameId::parse("g1").unwrap().as_str(), "g1");
        assert!(GameId::parse("").is_err());
        assert!(GameId::parse(&"g".repeat(MAX_GAME_ID)).is_ok());
        assert!(GameId::parse(&"g".repeat(MAX_GAME_ID + 1)).is_err());
        let id = GameId::generate();
        assert_eq!(id.as_str().len(), GameId::GENERATED_LEN);
        assert!(id.as_str().chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(id, GameId::generate());
        assert_eq!(GameId::parse(id.as_str()), Ok(id));
    }

    #[test]
    fn player_ids_must_be_given() {
        assert_eq!(PlayerId::parse("p1").unwrap().to_string(), "p1");
        assert_eq!(
            PlayerId::parse("").unwrap_err().to_string(),
            "player_id must be given"
        );
    }

    #[test]
    fn trusted_ids_look_up_by_str() {
        let mut games = std::collections::HashMap::new();
        games.insert(GameId::trusted("g1"), 1);
        assert_eq!(games.get("g1"), Some(&1));
        assert_eq!(PlayerId::trusted("p1"), "p1");
        assert_eq!(String::from(Username::trusted("Ann")), "Ann");
    }

    #[test]
    fn usernames() {
        for good in ["abc", "Magnus_C", "a-b_c-123", "x".repeat(20).as_str()] {
            assert!(Username::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "ab",
            "",
            "x".repeat(21).as_str(),
            "has space",
            "dot.ted",
            "émile",
            "a@b",
        ] {
            assert!(Username::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Username::parse("MiXeD").unwrap().key(), "mixed");
    }
}
