//! Throttling per source address: failed logins (and password changes) and
//! registrations.
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
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
    time::Duration,
};

use chess_runtime::throttle::{self, Policy, Throttle};
use tonic::{Request, Status, transport::server::UdsConnectInfo};

/// Most addresses remembered per kind of attempt.
const MAX_ADDRESSES: usize = 50_000;

/// The per-address throttles of the public API.
#[derive(Debug)]
pub struct AddressLimits {
    logins: Throttle<IpAddr>,
    registrations: Throttle<IpAddr>,
}

impl AddressLimits {
    /// Limits allowing `login_failures` failed logins and `registrations`
    /// registrations from one address before each further one waits; 0
    /// turns a limit off.
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
            registrations: Throttle::new(
                or_unlimited(
                    registrations,
                    Policy {
                        free: 0,
                        base: Duration::from_secs(10),
                        cap: Duration::from_secs(600),
                        forget_after: Duration::from_secs(3600),
                    },
                ),
                MAX_ADDRESSES,
            ),
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
        if let Err(wait) = self.registrations.check(&source) {
            return Err(throttle::status("registrations from your address", wait));
        }
        self.registrations.fail(source);
        Ok(())
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

        assert!(limits.register(a).is_ok());
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
}
