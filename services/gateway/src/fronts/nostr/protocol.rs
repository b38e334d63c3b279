//! The events of `protocol/nostr.md`: reading the players' (kinds 20300 and
//! 20303) and writing the server's (20301, 20302, 20304).

use chess_domain::GameId;
use nostr_sdk::prelude::{Event, EventBuilder, EventId, Keys, Kind, PublicKey, Tag};

pub const REQUEST: u16 = 20300;
pub const REPLY: u16 = 20301;
pub const STATE: u16 = 20302;
pub const MOVE: u16 = 20303;
pub const ERROR: u16 = 20304;

/// Longest game id a move may name (ours are UUIDs).
const MAX_GAME_ID: usize = 64;

/// What a player's event asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// 20300: pair me.
    Play,
    /// 20303: a move (UCI, promotion in lower case) in a game.
    Move { game_id: GameId, uci: String },
    /// 20303 `quit`: resign a game.
    Quit { game_id: GameId },
}

/// Why a player's event cannot be acted on; the text is the 20304's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("a move needs the game's id in a d tag")]
    NoGame,
    #[error("not a long-algebraic move (e2e4, e7e8q) or quit: {0:?}")]
    NotAMove(String),
}

/// The first value of the event's first tag named `name`.
fn tag_value<'a>(event: &'a Event, name: &str) -> Option<&'a str> {
    event.tags.iter().find_map(|tag| match tag.as_slice() {
        [n, value, ..] if n == name => Some(value.as_str()),
        _ => None,
    })
}

/// Whether the event has a `p` tag naming `key`.
pub fn addressed_to(event: &Event, key: &PublicKey) -> bool {
    let hex = key.to_hex();
    event
        .tags
        .iter()
        .any(|tag| matches!(tag.as_slice(), [n, v, ..] if n == "p" && *v == hex))
}

/// The game a 20303 names, if any (also for errors about it).
pub fn game_of(event: &Event) -> Option<GameId> {
    tag_value(event, "d")
        .filter(|id| id.len() <= MAX_GAME_ID)
        .and_then(|id| GameId::parse(id).ok())
}

/// Reads a player's event of kind 20300 or 20303; `None` for other kinds.
pub fn read(event: &Event) -> Option<Result<Inbound, Malformed>> {
    match event.kind.as_u16() {
        REQUEST => Some(Ok(Inbound::Play)),
        MOVE => Some(read_move(event)),
        _ => None,
    }
}

fn read_move(event: &Event) -> Result<Inbound, Malformed> {
    let game_id = game_of(event).ok_or(Malformed::NoGame)?;
    let text = event.content.trim();
    if text == "quit" {
        return Ok(Inbound::Quit { game_id });
    }
    let uci =
        long_algebraic(text).ok_or_else(|| Malformed::NotAMove(text.chars().take(16).collect()))?;
    Ok(Inbound::Move { game_id, uci })
}

/// `e2e4` or `e7e8q` / `e7e8Q`, as UCI (promotion in lower case).
fn long_algebraic(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let square = |f: u8, r: u8| (b'a'..=b'h').contains(&f) && (b'1'..=b'8').contains(&r);
    let promotion = match b.len() {
        4 => None,
        5 => Some(b[4].to_ascii_lowercase()).filter(|p| b"qrbn".contains(p)),
        _ => return None,
    };
    if !square(b[0], b[1]) || !square(b[2], b[3]) || (b.len() == 5 && promotion.is_none()) {
        return None;
    }
    Some(text.to_ascii_lowercase())
}

/// The players of a game, by key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seats<'a> {
    pub game_id: &'a GameId,
    pub white: &'a str,
    pub black: &'a str,
}

fn tag(parts: &[&str]) -> Tag {
    // Every part is text: parsing only fails on an empty slice.
    Tag::parse(parts.iter().copied()).expect("a tag with a name")
}

fn game_tags(seats: &Seats<'_>) -> [Tag; 3] {
    [
        tag(&["d", seats.game_id.as_str()]),
        tag(&["p", seats.white]),
        tag(&["p", seats.black]),
    ]
}

fn sign(keys: &Keys, kind: u16, content: &str, tags: Vec<Tag>) -> Event {
    EventBuilder::new(Kind::Custom(kind), content)
        .tags(tags)
        .sign_with_keys(keys)
        // Signing with a key in memory cannot fail.
        .expect("sign an event")
}

/// 20301 to `player`: `queued`, `error:<message>` or
/// `started:<game id>:<opponent>:<w|b>`.
pub fn reply(keys: &Keys, player: &str, content: &str) -> Event {
    sign(keys, REPLY, content, vec![tag(&["p", player])])
}

/// 20302: the game's position; `result` (`1-0` and how) once it ended.
pub fn state(keys: &Keys, seats: &Seats<'_>, fen: &str, result: Option<(&str, &str)>) -> Event {
    let mut tags = game_tags(seats).to_vec();
    if let Some((score, how)) = result {
        tags.push(tag(&["result", score, how]));
    }
    sign(keys, STATE, fen, tags)
}

/// 20304 about event `offending`: with the game's tags when it is known,
/// else addressed to the event's author; an author who does not play the
/// game gets a `p` tag of their own after the game's, or they would never
/// see the answer.
pub fn error(
    keys: &Keys,
    offending: &EventId,
    seats: Option<&Seats<'_>>,
    author: &PublicKey,
    message: &str,
) -> Event {
    let mut tags = vec![tag(&["e", &offending.to_hex()])];
    let author = author.to_hex();
    match seats {
        Some(seats) => {
            tags.extend(game_tags(seats));
            if author != seats.white && author != seats.black {
                tags.push(tag(&["p", &author]));
            }
        }
        None => tags.push(tag(&["p", &author])),
    }
    sign(keys, ERROR, message, tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(keys: &Keys, kind: u16, content: &str, tags: &[&[&str]]) -> Event {
        sign(keys, kind, content, tags.iter().map(|t| tag(t)).collect())
    }

    #[test]
    fn moves_are_long_algebraic_or_quit() {
        let k = Keys::generate();
        let read = |content: &str| read(&event(&k, MOVE, content, &[&["d", "g1"]])).unwrap();
        let mv = |uci: &str| {
            Ok(Inbound::Move {
                game_id: GameId::trusted("g1"),
                uci: uci.into(),
            })
        };
        assert_eq!(read("e2e4"), mv("e2e4"));
        assert_eq!(read("e7e8Q"), mv("e7e8q"));
        assert_eq!(read(" e7e8n\n"), mv("e7e8n"));
        assert_eq!(
            read("quit"),
            Ok(Inbound::Quit {
                game_id: GameId::trusted("g1")
            })
        );
        for bad in ["e4", "Nf3", "e2e4k", "i2i4", "e2e9", "", "e2e4e5"] {
            assert!(matches!(read(bad), Err(Malformed::NotAMove(_))), "{bad}");
        }
        let no_game = read_move(&event(&k, MOVE, "e2e4", &[]));
        assert_eq!(no_game, Err(Malformed::NoGame));
        let too_long = "g".repeat(MAX_GAME_ID + 1);
        for bad in ["", too_long.as_str()] {
            let named = read_move(&event(&k, MOVE, "e2e4", &[&["d", bad]]));
            assert_eq!(named, Err(Malformed::NoGame), "{bad:?}");
        }
        assert_eq!(super::read(&event(&k, 1, "hi", &[])), None);
    }

    #[test]
    fn server_events_carry_the_protocol_tags() {
        let server = Keys::generate();
        let (w, b) = (Keys::generate().public_key(), Keys::generate().public_key());
        let (wh, bh) = (w.to_hex(), b.to_hex());
        let g1 = GameId::trusted("g1");
        let seats = Seats {
            game_id: &g1,
            white: &wh,
            black: &bh,
        };
        let st = state(&server, &seats, "fen", None);
        assert_eq!(st.kind.as_u16(), STATE);
        let tags: Vec<Vec<String>> = st.tags.iter().map(|t| t.as_slice().to_vec()).collect();
        assert_eq!(tags, vec![vec!["d", "g1"], vec!["p", &wh], vec!["p", &bh]]);
        st.verify().unwrap();

        let offending = event(&Keys::generate(), MOVE, "e2e4", &[&["d", "x"]]);
        let err = error(
            &server,
            &offending.id,
            None,
            &offending.pubkey,
            "unknown game",
        );
        let tags: Vec<Vec<String>> = err.tags.iter().map(|t| t.as_slice().to_vec()).collect();
        assert_eq!(
            tags,
            vec![
                vec!["e".to_owned(), offending.id.to_hex()],
                vec!["p".to_owned(), offending.pubkey.to_hex()]
            ]
        );
        assert!(addressed_to(&err, &offending.pubkey));
        assert!(!addressed_to(&err, &w));

        // About a known game: its tags, and the author's when not a player.
        let err = error(
            &server,
            &offending.id,
            Some(&seats),
            &offending.pubkey,
            "no",
        );
        let tags: Vec<Vec<String>> = err.tags.iter().map(|t| t.as_slice().to_vec()).collect();
        assert_eq!(tags.len(), 5);
        assert_eq!(tags[1], vec!["d", "g1"]);
        assert_eq!(tags[4], vec!["p".to_owned(), offending.pubkey.to_hex()]);
        let err = error(&server, &offending.id, Some(&seats), &w, "no");
        assert_eq!(err.tags.len(), 4);
    }
}
