//! The command line: usage errors (13), ports nothing listens on (11), and
//! the welcome line and first `start` message for every option combination.

mod support;

use support::{Client, GONE, Server, USAGE, WELCOME, connected, unused_port};

#[test]
fn bad_command_lines_exit_13_with_the_usage_line_before_connecting() {
    let server = Server::new();
    let port = server.port.to_string();
    let port = port.as_str();
    let bad: &[&[&str]] = &[
        &[],
        &[""],
        &["", "--versus", "human"],
        &[port, ""],
        &[port, "--versus"],
        &[port, "--versus", ""],
        &[port, "--versus", "robot"],
        &[port, "--versus", "Computer"],
        &[port, "--colour"],
        &[port, "--colour", ""],
        &[port, "--colour", "either"],
        &[port, "--colour", "red"],
        &[port, "--versus", "human", "--versus", "human"],
        &[port, "--versus", "human", "--versus", "computer"],
        &[port, "--colour", "white", "--colour", "white"],
        &[
            port, "--colour", "black", "--versus", "human", "--colour", "white",
        ],
        &[port, "--versus", "human", "--colour"],
        &[port, port],
        &[port, "--color", "white"],
        &[port, "--versus=human"],
        &[port, "-v", "human"],
        &[port, "--versus", "human", "extra"],
        &[port, "--colour", "white", "--versus", "computer", ""],
        &["--versus", "human"],
    ];
    for args in bad {
        let mut client = Client::start(args);
        client.expect_stderr(USAGE);
        let status = client.finish();
        assert_eq!(status.code(), Some(13), "{args:?}: {status:?}");
    }
    server.assert_no_connection();
}

#[test]
fn a_port_nothing_listens_on_exits_11_naming_the_port_as_given() {
    let free = unused_port().to_string();
    let zero_padded = format!("000{free}");
    for port in [
        free.as_str(),
        zero_padded.as_str(),
        "0",
        "65536",
        "99999999999999999999",
        "no-such-service-here",
        "HTTP ",
        "--versus",
    ] {
        let mut client = Client::start(&[port]);
        client.expect_stderr(&format!("uqchessclient: can't connect to port \"{port}\""));
        let status = client.finish();
        assert_eq!(status.code(), Some(11), "{port:?}: {status:?}");
    }
}

#[test]
fn a_port_with_options_that_cannot_connect_exits_11() {
    let free = unused_port().to_string();
    let mut client = Client::start(&[&free, "--colour", "black", "--versus", "human"]);
    client.expect_stderr(&format!("uqchessclient: can't connect to port \"{free}\""));
    client.expect_exit(11);
}

#[test]
fn every_option_combination_sends_its_start_message() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "start computer white"),
        (&["--versus", "computer"], "start computer white"),
        (&["--colour", "white"], "start computer white"),
        (&["--colour", "black"], "start computer black"),
        (
            &["--versus", "computer", "--colour", "black"],
            "start computer black",
        ),
        (
            &["--colour", "white", "--versus", "computer"],
            "start computer white",
        ),
        (&["--versus", "human"], "start human either"),
        (
            &["--versus", "human", "--colour", "white"],
            "start human white",
        ),
        (
            &["--colour", "black", "--versus", "human"],
            "start human black",
        ),
    ];
    for (args, start) in cases {
        let (mut client, peer) = connected(args, start);
        client.close_stdin();
        peer.expect_end();
        client.expect_exit(0);
    }
}

#[test]
fn the_welcome_line_comes_first_and_alone() {
    let server = Server::new();
    let mut client = Client::start(&[&server.port.to_string()]);
    let mut peer = server.accept();
    peer.expect("start computer white");
    client.expect_stdout(WELCOME);
    peer.close();
    client.expect_stderr(GONE);
    client.expect_exit(8);
}

/// A TCP service named in /etc/services whose port is free, with a listener
/// holding that port.
fn listening_service() -> (String, std::net::TcpListener) {
    let services = std::fs::read_to_string("/etc/services").expect("read /etc/services");
    services
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next().filter(|name| !name.starts_with('#'))?;
            let port: u16 = fields.next()?.strip_suffix("/tcp")?.parse().ok()?;
            Some((name.to_owned(), port))
        })
        .filter(|&(_, port)| port >= 1024)
        .find_map(|(name, port)| {
            Some((name, std::net::TcpListener::bind(("127.0.0.1", port)).ok()?))
        })
        .expect("some registered TCP port above 1023 is free")
}

#[test]
fn a_service_name_connects_to_its_registered_port() {
    let (name, listener) = listening_service();
    let server = Server::on(listener);
    let mut client = Client::start(&[&name, "--versus", "human"]);
    let mut peer = server.accept();
    peer.expect("start human either");
    client.expect_stdout(WELCOME);
    peer.close();
    client.expect_stderr(GONE);
    client.expect_exit(8);
}
