//! One call's way to its replica: the refusals it follows, the pauses while
//! its shard moves, and the deadline it keeps ([`Route`]); the refusals and
//! deadlines read from (and written to) a call's headers.

use std::time::Duration;

use chess_shards::routing::{self, Redirect};
use tokio::time::Instant;
use tonic::{Code, Status, metadata::MetadataMap};

use super::Target;

/// How long a call may spend being redirected and waiting for its shard
/// to find an owner (a failover takes up to about 4 s).
const ROUTE_WITHIN: Duration = Duration::from_secs(6);
/// How many times a call follows a refusal naming another owner.
const MAX_HOPS: u32 = 5;
/// Pauses while a shard moves: this, doubling up to [`MAX_PAUSE`].
pub(crate) const FIRST_PAUSE: Duration = Duration::from_millis(50);
pub(crate) const MAX_PAUSE: Duration = Duration::from_millis(500);
/// How long a call whose refusal knew no owner waits for a fresher map.
const OWNER_WAIT: Duration = Duration::from_secs(1);

/// Where a call is in being routed, and what it does after a refusal.
#[derive(Debug)]
pub(crate) struct Route {
    target: Target,
    /// Refusals naming an owner (or saying none is known) followed.
    hops: u32,
    /// The next pause while the shard moves.
    pause: Duration,
    /// Other replicas tried in turn, for a call to any.
    others_tried: usize,
    give_up: Instant,
}

/// What a refused call does next.
#[derive(Debug)]
pub(crate) enum Next {
    /// Goes to the replica at this address.
    Owner(String),
    /// Goes by a fresh map, waiting this long at most for it.
    Reread(Duration),
    /// Goes by the map after this pause.
    Wait(Duration),
    /// Goes to another replica at once.
    Another,
    /// Fails with this status.
    GiveUp(Status),
}

impl Route {
    /// A call for `target` sent at `began`, with its own `deadline`.
    pub(crate) fn new(target: Target, began: Instant, deadline: Option<Instant>) -> Self {
        let within = began + ROUTE_WITHIN;
        Self {
            target,
            hops: 0,
            pause: FIRST_PAUSE,
            others_tried: 0,
            give_up: deadline.map_or(within, |d| d.min(within)),
        }
    }

    /// What to do at `now` after a refusal saying `redirect`, with
    /// `replicas` replicas to send calls for any replica to.
    pub(crate) fn after(&mut self, redirect: Redirect, now: Instant, replicas: usize) -> Next {
        let left = self.give_up.saturating_duration_since(now);
        let next = match &redirect {
            Redirect::Owner(Some(owner)) => {
                self.hops += 1;
                Next::Owner(owner.clone())
            }
            Redirect::Owner(None) => {
                self.hops += 1;
                Next::Reread(left.min(OWNER_WAIT))
            }
            // A call for any replica first tries the others.
            Redirect::Moving
                if matches!(self.target, Target::Any) && self.others_tried + 1 < replicas =>
            {
                self.others_tried += 1;
                Next::Another
            }
            Redirect::Moving => {
                let pause = self.pause.min(left);
                self.pause = (self.pause * 2).min(MAX_PAUSE);
                self.others_tried = 0;
                Next::Wait(pause)
            }
        };
        if self.hops > MAX_HOPS || left.is_zero() {
            return Next::GiveUp(gave_up(&redirect));
        }
        next
    }
}

/// What the routing refusal in a response's headers (a trailers-only
/// response) says, if it is one.
pub(crate) fn refusal(headers: &http::HeaderMap) -> Option<Redirect> {
    let code = Code::from_bytes(headers.get("grpc-status")?.as_bytes());
    if !matches!(code, Code::FailedPrecondition | Code::Unavailable) {
        return None;
    }
    routing::redirect(code, &MetadataMap::from_headers(headers.clone()))
}

/// The failure a call gets when it could not be routed: UNAVAILABLE (a
/// refusal naming an owner is no answer about the game, and callers take
/// FAILED_PRECONDITION for one), saying nothing of the replicas.
pub(crate) fn gave_up(redirect: &Redirect) -> Status {
    Status::unavailable(match redirect {
        Redirect::Moving => "the game's shard is moving between replicas; try again shortly",
        Redirect::Owner(_) => "the game's replica could not be found; try again shortly",
    })
}

/// The deadline a request carries (`grpc-timeout`), if any.
pub(crate) fn grpc_timeout(headers: &http::HeaderMap) -> Option<Duration> {
    let value = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Sets the deadline a resent request carries to what is left of it.
pub(super) fn set_grpc_timeout(headers: &mut http::HeaderMap, left: Duration) {
    // At most 8 digits; milliseconds cover a day.
    let millis = left.as_millis().clamp(1, 99_999_999);
    if let Ok(value) = http::HeaderValue::from_str(&format!("{millis}m")) {
        headers.insert("grpc-timeout", value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_of(status: Status) -> http::HeaderMap {
        status.into_http::<tonic::body::Body>().headers().clone()
    }

    #[test]
    fn refusals_are_read_from_the_headers_of_a_response() {
        let refused = routing::not_owner("g1", 7, Some("10.0.0.2:50053"));
        assert_eq!(
            refusal(&headers_of(refused)),
            Some(Redirect::Owner(Some("10.0.0.2:50053".to_owned())))
        );
        let refused = routing::not_owner("g1", 7, None);
        assert_eq!(refusal(&headers_of(refused)), Some(Redirect::Owner(None)));
        let refused = routing::shard_moving(7);
        assert_eq!(refusal(&headers_of(refused)), Some(Redirect::Moving));
    }

    #[test]
    fn answers_are_no_refusals() {
        // A message follows: no status in the headers.
        let answer = http::Response::builder()
            .header("content-type", "application/grpc")
            .body(())
            .unwrap();
        assert!(refusal(answer.headers()).is_none());
        // Answers about the game, with the same codes.
        let turn =
            chess_runtime::Reason::NotYourTurn.status(Code::FailedPrecondition, "not your turn");
        assert!(refusal(&headers_of(turn)).is_none());
        assert!(refusal(&headers_of(Status::unavailable("engine down"))).is_none());
        assert!(refusal(&headers_of(Status::not_found("no game g1"))).is_none());
    }

    #[test]
    fn a_call_that_cannot_be_routed_is_unavailable() {
        let failed = gave_up(&Redirect::Owner(Some("10.0.0.2:50053".to_owned())));
        assert_eq!(failed.code(), Code::Unavailable);
        assert!(failed.metadata().is_empty());
        assert!(
            !failed.message().contains("10.0.0.2"),
            "{}",
            failed.message()
        );
        let failed = gave_up(&Redirect::Moving);
        assert_eq!(failed.code(), Code::Unavailable);
        assert!(failed.metadata().is_empty());
    }

    fn owner(address: &str) -> Redirect {
        Redirect::Owner(Some(address.to_owned()))
    }

    fn given_up(next: Next) -> Status {
        match next {
            Next::GiveUp(status) => status,
            other => panic!("not given up: {other:?}"),
        }
    }

    #[test]
    fn a_call_follows_a_handful_of_owners_then_gives_up() {
        let now = Instant::now();
        let mut route = Route::new(Target::Shard(7), now, None);
        for hop in 0..MAX_HOPS {
            match route.after(owner(&format!("10.0.0.{hop}:50053")), now, 3) {
                Next::Owner(address) => assert_eq!(address, format!("10.0.0.{hop}:50053")),
                other => panic!("{other:?}"),
            }
        }
        let status = given_up(route.after(owner("10.0.0.9:50053"), now, 3));
        assert_eq!(status.code(), Code::Unavailable);
        // An owner nobody knows: a fresh map first.
        let mut route = Route::new(Target::Shard(7), now, None);
        assert!(matches!(
            route.after(Redirect::Owner(None), now, 1),
            Next::Reread(wait) if wait == OWNER_WAIT
        ));
    }

    #[test]
    fn a_call_waits_longer_each_time_its_shard_moves_until_it_gives_up() {
        let began = Instant::now();
        let mut route = Route::new(Target::Shard(7), began, None);
        let mut now = began;
        let mut pauses = Vec::new();
        loop {
            match route.after(Redirect::Moving, now, 3) {
                Next::Wait(pause) => {
                    pauses.push(pause.as_millis());
                    now += pause;
                }
                Next::GiveUp(status) => {
                    assert_eq!(status.code(), Code::Unavailable);
                    break;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(pauses[..5], [50, 100, 200, 400, 500]);
        assert!(pauses[5..pauses.len() - 1].iter().all(|&p| p == 500));
        assert_eq!(now, began + ROUTE_WITHIN);
    }

    #[test]
    fn a_call_for_any_replica_tries_the_others_first() {
        let now = Instant::now();
        let mut route = Route::new(Target::Any, now, None);
        let mut next = || route.after(Redirect::Moving, now, 3);
        assert!(matches!(next(), Next::Another));
        assert!(matches!(next(), Next::Another));
        assert!(matches!(next(), Next::Wait(_)));
        assert!(matches!(next(), Next::Another));
    }

    #[test]
    fn a_call_gives_up_at_its_own_deadline() {
        let now = Instant::now();
        let deadline = now + Duration::from_millis(120);
        let mut route = Route::new(Target::Shard(7), now, Some(deadline));
        assert!(matches!(
            route.after(Redirect::Moving, now + Duration::from_millis(100), 1),
            Next::Wait(pause) if pause == Duration::from_millis(20)
        ));
        given_up(route.after(Redirect::Moving, deadline, 1));
    }

    #[test]
    fn deadlines_are_read_and_shortened() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(grpc_timeout(&headers), None);
        let mut request = tonic::Request::new(());
        request.set_timeout(Duration::from_secs(10));
        // As tonic writes it.
        let sent = request.metadata().clone().into_headers();
        assert_eq!(grpc_timeout(&sent), Some(Duration::from_secs(10)));
        for (value, expected) in [
            ("1H", Some(Duration::from_secs(3600))),
            ("2M", Some(Duration::from_secs(120))),
            ("3S", Some(Duration::from_secs(3))),
            ("250m", Some(Duration::from_millis(250))),
            ("7u", Some(Duration::from_micros(7))),
            ("9n", Some(Duration::from_nanos(9))),
            ("123456789S", None),
            ("S", None),
            ("", None),
            ("10x", None),
        ] {
            headers.insert("grpc-timeout", value.parse().unwrap());
            assert_eq!(grpc_timeout(&headers), expected, "{value}");
        }
        set_grpc_timeout(&mut headers, Duration::from_millis(4321));
        assert_eq!(headers["grpc-timeout"], "4321m");
        assert_eq!(grpc_timeout(&headers), Some(Duration::from_millis(4321)));
        set_grpc_timeout(&mut headers, Duration::ZERO);
        assert_eq!(headers["grpc-timeout"], "1m");
    }
}
