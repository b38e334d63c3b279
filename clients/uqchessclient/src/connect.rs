//! Connecting to the server on localhost by port number or service name.

use std::ffi::OsStr;
use std::net::{TcpStream, ToSocketAddrs};

/// Where service names are looked up, as the C library's `getaddrinfo` does.
const SERVICES_FILE: &str = "/etc/services";

/// No address of localhost accepted a connection on the port, or the port
/// names no known TCP service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CannotConnect;

impl std::fmt::Display for CannotConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cannot connect")
    }
}

impl std::error::Error for CannotConnect {}

/// Connects to `localhost` on `port` (a decimal number or a TCP service
/// name), trying every address localhost resolves to in turn.
pub fn connect(port: &OsStr) -> Result<TcpStream, CannotConnect> {
    let number = port.to_str().and_then(port_number).ok_or(CannotConnect)?;
    let addresses = ("localhost", number)
        .to_socket_addrs()
        .map_err(|_unresolvable| CannotConnect)?;
    addresses
        .into_iter()
        .find_map(|address| TcpStream::connect(address).ok())
        .ok_or(CannotConnect)
}

/// The TCP port `port` names: a decimal number up to 65535, or a TCP
/// service name. `uqchessserver` takes its port the same way.
pub fn port_number(port: &str) -> Option<u16> {
    if is_decimal(port) {
        port.parse().ok()
    } else {
        // An unreadable services file simply means no service names.
        let services = std::fs::read_to_string(SERVICES_FILE).unwrap_or_default();
        lookup_service(&services, port)
    }
}

/// Whether `port` is a port number rather than a service name.
fn is_decimal(port: &str) -> bool {
    !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
}

/// The TCP port of service `name` (or one of its aliases) in the text of a
/// services(5) file.
pub fn lookup_service(services: &str, name: &str) -> Option<u16> {
    services.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_whitespace();
        let official = fields.next()?;
        let (number, protocol) = fields.next()?.split_once('/')?;
        let named = official == name || fields.any(|alias| alias == name);
        if named && protocol == "tcp" {
            number.parse().ok()
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICES: &str = "\
# Network services, Internet style
tcpmux\t\t1/tcp\t\t\t\t# TCP port service multiplexer
http\t\t80/tcp\t\twww\t\t# WorldWideWeb HTTP
domain\t\t53/udp
domain\t\t53/tcp
snmp\t\t161/udp
odd # 99/tcp
kerberos\t88/tcp\t\tkerberos5 krb5 kerberos-sec\t# Kerberos v5
";

    #[test]
    fn finds_services_by_name_and_alias() {
        assert_eq!(lookup_service(SERVICES, "http"), Some(80));
        assert_eq!(lookup_service(SERVICES, "www"), Some(80));
        assert_eq!(lookup_service(SERVICES, "krb5"), Some(88));
        assert_eq!(lookup_service(SERVICES, "domain"), Some(53));
    }

    #[test]
    fn ignores_udp_comments_and_unknown_names() {
        assert_eq!(lookup_service(SERVICES, "snmp"), None);
        assert_eq!(lookup_service(SERVICES, "odd"), None);
        assert_eq!(lookup_service(SERVICES, "WorldWideWeb"), None);
        assert_eq!(lookup_service(SERVICES, "HTTP"), None);
        assert_eq!(lookup_service(SERVICES, "#"), None);
        assert_eq!(lookup_service(SERVICES, ""), None);
    }

    #[test]
    fn tells_numbers_from_names() {
        assert!(is_decimal("50050"));
        assert!(is_decimal("0080"));
        assert!(is_decimal("65536"));
        assert!(!is_decimal("+80"));
        assert!(!is_decimal(" 80"));
        assert!(!is_decimal("http"));
        assert!(!is_decimal(""));
        assert_eq!(port_number("0"), Some(0));
        assert_eq!(port_number("65535"), Some(65535));
        assert_eq!(port_number("65536"), None);
        assert_eq!(port_number(""), None);
        assert_eq!(port_number("not-a-service-name-anywhere"), None);
    }

    #[test]
    fn ports_out_of_range_never_connect() {
        assert_eq!(connect(OsStr::new("65536")).err(), Some(CannotConnect));
        assert_eq!(
            connect(OsStr::new("99999999999999999999")).err(),
            Some(CannotConnect)
        );
        assert_eq!(connect(OsStr::new("0")).err(), Some(CannotConnect));
    }
}
