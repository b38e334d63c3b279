//! Command-line flags with environment twins.
//!
//! Every long flag `--some-flag` of service `game` can also be given as
//! `CHESS_GAME_SOME_FLAG`, without each struct spelling the names out: the
//! names are derived once here, so they cannot drift from the flags.

use clap::{CommandFactory, FromArgMatches};

/// The environment variable for flag `long` of `service`.
pub fn env_name(service: &str, long: &str) -> String {
    format!(
        "CHESS_{}_{}",
        service.to_uppercase(),
        long.to_uppercase().replace('-', "_")
    )
}

/// The clap command of `C` with an environment twin on every long flag that
/// has none yet, and the service's own default address on `--listen` (the
/// shared server flags cannot name it themselves).
pub fn command<C: CommandFactory>(service: &str) -> clap::Command {
    let listen = crate::addr::default_listen(service);
    C::command().mut_args(|arg| {
        let arg = match listen {
            Some(addr) if arg.get_id() == "listen" && arg.get_default_values().is_empty() => {
                arg.default_value(addr)
            }
            _ => arg,
        };
        if arg.get_env().is_some() || arg.is_positional() {
            return arg;
        }
        match arg.get_long().map(|long| env_name(service, long)) {
            Some(name) if !matches!(arg.get_id().as_str(), "help" | "version") => arg.env(name),
            _ => arg,
        }
    })
}

/// Parses `args` (the program name first) into `C`.
pub fn try_parse_from<C, I, T>(service: &str, args: I) -> Result<C, clap::Error>
where
    C: CommandFactory + FromArgMatches,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command::<C>(service);
    let matches = command.try_get_matches_from_mut(args)?;
    C::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// Parses the process's arguments into `C`. `--help` and `--version` print and
/// exit 0; any error is printed on one line (`chess-game: error: …`) and the
/// process exits with status 2.
pub fn parse<C: CommandFactory + FromArgMatches>(service: &str) -> C {
    match try_parse_from(service, std::env::args_os()) {
        Ok(config) => config,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let rendered = e.to_string();
            let line = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            eprintln!("chess-{service}: {line}");
            std::process::exit(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// Test flags.
    #[derive(Debug, Parser)]
    struct Flags {
        /// A port.
        #[arg(long, default_value_t = 1)]
        some_port: u16,
        /// Already named.
        #[arg(long, env = "EXPLICIT")]
        named: Option<String>,
    }

    #[test]
    fn env_names_follow_the_flags() {
        assert_eq!(env_name("game", "database-url"), "CHESS_GAME_DATABASE_URL");
        let command = command::<Flags>("engine");
        let port = command
            .get_arguments()
            .find(|a| a.get_id() == "some_port")
            .unwrap();
        assert_eq!(port.get_env().unwrap(), "CHESS_ENGINE_SOME_PORT");
        let named = command
            .get_arguments()
            .find(|a| a.get_id() == "named")
            .unwrap();
        assert_eq!(named.get_env().unwrap(), "EXPLICIT");
    }

    /// A service's flags.
    #[derive(Debug, Parser)]
    struct Service {
        #[command(flatten)]
        server: crate::ServerArgs,
    }

    #[test]
    fn listen_shows_the_service_default() {
        for (service, addr) in [
            ("game", crate::addr::GAME),
            ("gateway", crate::addr::GATEWAY),
        ] {
            let help = command::<Service>(service).render_long_help().to_string();
            assert!(help.contains(&format!("[default: {addr}]")), "{help}");
            let parsed = try_parse_from::<Service, _, _>(service, ["x"]).unwrap();
            assert_eq!(parsed.server.listen.as_deref(), Some(addr));
        }
        let parsed = try_parse_from::<Service, _, _>("game", ["x", "--listen", "127.0.0.1:0"]);
        assert_eq!(
            parsed.unwrap().server.listen.as_deref(),
            Some("127.0.0.1:0")
        );
    }

    #[test]
    fn bad_flags_are_errors() {
        let e = try_parse_from::<Flags, _, _>("x", ["x", "--some-port", "nope"]).unwrap_err();
        assert!(e.to_string().contains("invalid value"), "{e}");
        let e = try_parse_from::<Flags, _, _>("x", ["x", "--unknown"]).unwrap_err();
        assert!(e.to_string().contains("unexpected argument"), "{e}");
        let ok = try_parse_from::<Flags, _, _>("x", ["x", "--some-port", "7"]).unwrap();
        assert_eq!(ok.some_port, 7);
    }
}
