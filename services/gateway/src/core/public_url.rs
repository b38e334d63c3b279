//! The address players reach the server at, for the links in emails and
//! pages.

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    str::FromStr,
};

use chess_domain::GameId;

/// The address players reach the server at (`https://chess.example.org`,
/// `http://127.0.0.1:50051`), without a trailing slash: links in emails are
/// built on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl(String);

impl PublicUrl {
    /// The default for a gateway listening on `addr`: `http://<addr>`, with
    /// 127.0.0.1 for an unspecified host (0.0.0.0 or [::]). Only the operator
    /// knows the name others reach the machine by (the host name is often
    /// not resolvable by whoever reads the email), so an unspecified host
    /// gets the address that at least works on this machine, as the address
    /// `chess-stack` prints does.
    pub fn for_listener(addr: SocketAddr) -> Self {
        let addr = if addr.ip().is_unspecified() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        } else {
            addr
        };
        Self(format!("http://{addr}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The link to game `id`.
    pub fn game(&self, id: &GameId) -> String {
        format!("{}/games/{id}", self.0)
    }
}

impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PublicUrl {
    type Err = String;

    /// An `http` or `https` URL with a host and optionally a path prefix (a
    /// reverse proxy's), no query or fragment.
    fn from_str(s: &str) -> Result<Self, String> {
        let trimmed = s.trim_end_matches('/');
        let uri: http::Uri = trimmed
            .parse()
            .map_err(|_| "not a URL (e.g. https://chess.example.org)".to_owned())?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err("must start with http:// or https://".to_owned());
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err("must name a host".to_owned());
        }
        if trimmed.contains(['?', '#']) {
            return Err("must not have a query or fragment".to_owned());
        }
        Ok(Self(trimmed.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_checked_and_lose_their_trailing_slash() {
        let url: PublicUrl = "https://chess.example.org/".parse().unwrap();
        assert_eq!(
            url.game(&GameId::trusted("abc")),
            "https://chess.example.org/games/abc"
        );
        let prefixed: PublicUrl = "https://example.org/chess".parse().unwrap();
        assert_eq!(
            prefixed.game(&GameId::trusted("x")),
            "https://example.org/chess/games/x"
        );
        let port: PublicUrl = "http://[::1]:8080".parse().unwrap();
        assert_eq!(port.as_str(), "http://[::1]:8080");
        for bad in [
            "",
            "chess.example.org",
            "ftp://example.org",
            "http://",
            "https://example.org/?a=b",
            "https://exa mple.org",
        ] {
            assert!(bad.parse::<PublicUrl>().is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn the_default_comes_from_the_listen_address() {
        let at = |s: &str| PublicUrl::for_listener(s.parse().unwrap()).0;
        assert_eq!(at("127.0.0.1:50051"), "http://127.0.0.1:50051");
        assert_eq!(at("0.0.0.0:8080"), "http://127.0.0.1:8080");
        assert_eq!(at("[::]:8080"), "http://127.0.0.1:8080");
        assert_eq!(at("[::1]:9"), "http://[::1]:9");
        assert_eq!(at("192.0.2.7:443"), "http://192.0.2.7:443");
    }
}
