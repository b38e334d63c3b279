//! Ports named by number or by service name (from `/etc/services`).

/// The TCP port named `name` in a services database (`/etc/services` format:
/// `name port/proto [aliases…]`, `#` comments).
pub fn lookup_service(services: &str, name: &str) -> Option<u16> {
    services.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_whitespace();
        let official = fields.next()?;
        let (port, proto) = fields.next()?.split_once('/')?;
        let aliases: Vec<&str> = fields.collect();
        (proto == "tcp" && (official == name || aliases.contains(&name)))
            .then(|| port.parse().ok())
            .flatten()
    })
}

/// The port `spec` names: a number from 0 to 65535, or a TCP service name.
pub fn resolve_port(spec: &str) -> Option<u16> {
    if !spec.is_empty() && spec.bytes().all(|b| b.is_ascii_digit()) {
        return spec.parse().ok();
    }
    let services = std::fs::read_to_string("/etc/services").ok()?;
    lookup_service(&services, spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICES: &str = "\
# comment
ftp\t\t21/tcp
http\t\t80/tcp\t\twww\t# WorldWideWeb HTTP
domain\t\t53/udp
";

    #[test]
    fn names_and_numbers() {
        assert_eq!(lookup_service(SERVICES, "http"), Some(80));
        assert_eq!(lookup_service(SERVICES, "www"), Some(80));
        assert_eq!(lookup_service(SERVICES, "domain"), None);
        assert_eq!(lookup_service(SERVICES, "nothing"), None);
        assert_eq!(resolve_port("0"), Some(0));
        assert_eq!(resolve_port("65535"), Some(65535));
        assert_eq!(resolve_port("65536"), None);
        assert_eq!(resolve_port(""), None);
        assert_eq!(resolve_port("not-a-service-name-anywhere"), None);
    }
}
