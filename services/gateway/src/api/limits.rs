//! Throttling per source address: failed logins (and password changes) and
//! registrations.
//!
//! Failed logins back off exponentially ([`chess_runtime::throttle`]).
//! Registrations are a bucket of [`REGISTRATION_BURST`] accounts refilled at
//! one a minute: a class of 30 registering together behind a school's one
//! address all get in at once, and the next class an hour later finds the
//! bucket full again. A script on one address gets the burst and then one
//! account a minute, which is far from the thousands a farm needs, and each
//! address it adds buys it only one more burst.
//!
//! The source is the peer address of the connection. Forwarding headers
//! (`X-Forwarded-For`) are not trusted: anyone could send them. Behind a
//! proxy every caller would share the proxy's address, so such a deployment
//! must raise or turn off these limits. IPv6 addresses count per /64, the
//! block one subscriber usually holds. Callers on the gateway's Unix socket
//! (`--unix-listen`) have no address: they are on this machine, and all
//! count as one source, the loopback address, as a local proxy's callers
//! would over TCP.
//!
//! The counters live in each gateway replica (an attacker spread over N
//! replicas gets N times the attempts); the per-account counter that every
//! replica shares lives where passwords are checked, in the rating service.
//! A successful login does not forgive the address: otherwise an attacker
//! could reset it by signing into an account of their own between guesses.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    sync::Mutex,
    time::{Duration, Instant},
};

use chess_runtime::throttle::{self, Policy, Throttle};
use tonic::{Request, Status, transport::server::UdsConnectInfo};

/// Most addresses remembered per kind of attempt.
const MAX_ADDRESSES: usize = 50_000;

/// The registrations one address may make at once (the default of
/// `--registrations-per-address`): a class registering together.
pub const REGISTRATION_BURST: u32 = 40;

/// The time in which one spent registration comes back: 60 an hour.
const REGISTRATION_REFILL: Duration = Duration::from_secs(60);

/// The per-address throttles of the public API.
#[derive(Debug)]
pub struct AddressLimits {
    logins: Throttle<IpAddr>,
    registrations: Bucket,
}

/// Per address, a bucket of `burst` registrations, each spent one back after
/// [`REGISTRATION_REFILL`]; 0 means no limit.
#[derive(Debug)]
struct Bucket {
    burst: u32,
    /// Per address: the registrations left and when that was counted.
    left: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl Bucket {
    fn new(burst: u32) -> Self {
        Self {
            burst,
            left: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one registration for `source` at `now`, or `Err(wait)` until
    /// one is back.
    fn take_at(&self, source: IpAddr, now: Instant) -> Result<(), Duration> {
        if self.burst == 0 {
            return Ok(());
        }
        let burst = f64::from(self.burst);
        let refill = REGISTRATION_REFILL.as_secs_f64();
        let refilled = |(left, at): (f64, Instant)| {
            (left + now.saturating_duration_since(at).as_secs_f64() / refill).min(burst)
        };
        // The map stays consistent whatever panicked while holding it.
        let mut map = self
            .left
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !map.contains_key(&source) && map.len() >= MAX_ADDRESSES {
            // Full buckets hold nothing worth remembering; failing that, the
            // one counted longest ago goes.
            map.retain(|_, entry| refilled(*entry) < burst);
            if map.len() >= MAX_ADDRESSES
                && let Some(oldest) = map.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| *k)
            {
                map.remove(&oldest);
            }
        }
        let left = map.get(&source).map_or(burst, |entry| refilled(*entry));
        if left < 1.0 {
            map.insert(source, (left, now));
            return Err(REGISTRATION_REFILL.mul_f64(1.0 - left));
        }
        map.insert(source, (left - 1.0, now));
        Ok(())
    }
}

impl AddressLimits {
    /// Limits allowing `login_failures` failed logins from one address
    /// before each further one waits, and `registrations` registrations at
    /// once, then one a minute; 0 turns a limit off.
    pub fn new(login_failures: u32, registrations: u32) -> Self {
        let or_unlimited = |free: u32, policy: Policy| {
            if free == 0 {
                Policy::UNLIMITED
            } else {
                Policy { free, ..policy }
            }
        };
        Self {
            logins: Throttle::new(
                or_unlimited(
                    login_failures,
                    Policy {
                        free: 0,
                        base: Duration::from_secs(1),
                        cap: Duration::from_secs(300),
                        forget_after: Duration::from_secs(15 * 60),
                    },
                ),
                MAX_ADDRESSES,
            ),
            registrations: Bucket::new(registrations),
        }
    }

    /// The source a call is counted against: its peer address, IPv6 cut to
    /// its /64; the loopback address for a caller on a Unix socket. None
    /// when the call came over no connection (in-process).
    pub fn source<T>(request: &Request<T>) -> Option<IpAddr> {
        if let Some(addr) = request.remote_addr() {
            return Some(match addr.ip() {
                IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                    Some(v4) => IpAddr::V4(v4),
                    None => {
                        let s = v6.segments();
                        IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
                    }
                },
                v4 => v4,
            });
        }
        request
            .extensions()
            .get::<UdsConnectInfo>()
            .map(|_| IpAddr::V4(Ipv4Addr::LOCALHOST))
    }

    /// Refuses a login from `source` while the address must wait.
    pub fn check_login(&self, source: Option<IpAddr>) -> Result<(), Status> {
        match source.map(|s| self.logins.check(&s)) {
            Some(Err(wait)) => Err(throttle::status("failed logins from your address", wait)),
            _ => Ok(()),
        }
    }

    /// Counts a failed login (or wrong old password) from `source`.
    pub fn login_failed(&self, source: Option<IpAddr>) {
        if let Some(source) = source {
            let wait = self.logins.fail(source);
            if !wait.is_zero() {
                tracing::info!(%source, wait_secs = wait.as_secs_f64(), "logins from an address throttled");
            }
        }
    }

    /// Counts a registration from `source`, or refuses it while the address
    /// must wait.
    pub fn register(&self, source: Option<IpAddr>) -> Result<(), Status> {
        let Some(source) = source else {
            return Ok(());
        };
        self.register_at(source, Instant::now())
    }

    fn register_at(&self, source: IpAddr, now: Instant) -> Result<(), Status> {
        self.registrations.take_at(source, now).map_err(|wait| {
            tracing::info!(%source, wait_secs = wait.as_secs_f64(), "registrations from an address throttled");
            throttle::status("accounts were registered from your network", wait)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    fn from(addr: &str) -> Request<()> {
        let mut request = Request::new(());
        let addr: SocketAddr = addr.parse().unwrap();
        request
            .extensions_mut()
            .insert(tonic::transport::server::TcpConnectInfo {
                local_addr: None,
                remote_addr: Some(addr),
            });
        request
    }

    #[test]
    fn sources_are_addresses_and_v6_blocks() {
        assert_eq!(AddressLimits::source(&Request::new(())), None);
        assert_eq!(
            AddressLimits::source(&from("127.0.0.2:5555")),
            Some("127.0.0.2".parse().unwrap())
        );
        assert_eq!(
            AddressLimits::source(&from("[2001:db8:1:2:3:4:5:6]:80")),
            Some("2001:db8:1:2::".parse().unwrap())
        );
        assert_eq!(
            AddressLimits::source(&from("[::ffff:10.0.0.1]:80")),
            Some("10.0.0.1".parse().unwrap())
        );
    }

    #[test]
    fn addresses_wait_after_their_free_attempts() {
        let limits = AddressLimits::new(2, 1);
        let a = Some("10.0.0.1".parse().unwrap());
        let b = Some("10.0.0.2".parse().unwrap());
        limits.login_failed(a);
        limits.login_failed(a);
        assert!(limits.check_login(a).is_ok());
        limits.login_failed(a);
        let refused = limits.check_login(a).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(limits.check_login(b).is_ok());

        // A burst of one: the second registration waits for the refill.
        assert!(limits.register(a).is_ok());
        assert_eq!(
            limits.register(a).unwrap_err().code(),
            tonic::Code::ResourceExhausted
        );
        assert!(limits.register(b).is_ok());
        // No address, no limit.
        assert!(limits.register(None).is_ok());

        let off = AddressLimits::new(0, 0);
        for _ in 0..100 {
            off.login_failed(a);
            assert!(off.register(a).is_ok());
        }
        assert!(off.check_login(a).is_ok());
    }

    #[test]
    fn a_classroom_registers_together_and_a_script_waits() {
        let limits = AddressLimits::new(20, REGISTRATION_BURST);
        let school: IpAddr = "192.0.2.7".parse().unwrap();
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        // Thirty pupils behind one address, all at once.
        for pupil in 0..30 {
            assert!(limits.register_at(school, start).is_ok(), "pupil {pupil}");
        }
        // A script from the same address gets the rest of the burst, then
        // waits about a minute for each further account.
        for _ in 0..10 {
            assert!(limits.register_at(school, at(1)).is_ok());
        }
        let refused = limits.register_at(school, at(1)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused
                .message()
                .starts_with("too many accounts were registered from your network; try again in "),
            "{}",
            refused.message()
        );
        let wait = throttle::wait_of(&refused).unwrap();
        assert!(
            wait > Duration::from_secs(50) && wait <= REGISTRATION_REFILL,
            "{wait:?}"
        );
        // Trying every ten seconds for an hour gets it one account a minute.
        let mut farmed = 0;
        for tick in 1..=360 {
            if limits.register_at(school, at(1 + tick * 10)).is_ok() {
                farmed += 1;
            }
        }
        assert!(
            (59..=61).contains(&farmed),
            "{farmed} in an hour after the burst"
        );
        // The next class, forty minutes after the script stopped, all get in.
        for pupil in 0..30 {
            assert!(
                limits.register_at(school, at(3601 + 40 * 60)).is_ok(),
                "pupil {pupil} of the next class"
            );
        }
        // Another address is not held back by the school's.
        assert!(
            limits
                .register_at("192.0.2.8".parse().unwrap(), at(1))
                .is_ok()
        );
    }
}
