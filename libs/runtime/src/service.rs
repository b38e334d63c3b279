//! What every service binary declares and does the same way: the flags
//! they all accept ([`ServiceArgs`]), binding its port from them
//! ([`ServiceArgs::bind_verified`]), the ways they all can fail to start
//! ([`StartError`]) and their `main` ([`main`]).

use std::{future::Future, process::ExitCode};

use clap::{CommandFactory, FromArgMatches};

/// The flags every service accepts, flattened first into its `Config`:
/// where it serves, how it logs and traces, and the internal key its calls
/// are signed and checked with.
#[derive(Clone, Debug, clap::Args)]
pub struct ServiceArgs {
    #[command(flatten)]
    pub server: crate::ServerArgs,
    #[command(flatten)]
    pub telemetry: chess_telemetry::TelemetryArgs,
    #[command(flatten)]
    pub internal_key: crate::identity::KeyArgs,
}

impl ServiceArgs {
    /// Binds the service's port from `--listen` and its kin
    /// (`default_addr` unless given); `services` names the gRPC services
    /// its health reports on. For a service taking calls from anyone; the
    /// internal ones use [`Self::bind_verified`].
    pub async fn bind(
        &self,
        service: &'static str,
        default_addr: &str,
        services: &[&'static str],
    ) -> Result<crate::Server, crate::server::Error> {
        crate::Server::bind(service, &self.server, default_addr, services).await
    }

    /// Loads the internal key, then binds as [`Self::bind`] a server that
    /// takes only calls signed with it. The key is handed back: the
    /// service signs its own calls to the others with it.
    pub async fn bind_verified(
        &self,
        service: &'static str,
        default_addr: &str,
        services: &[&'static str],
    ) -> Result<(crate::Server, crate::InternalKey), StartError> {
        let key = self.internal_key.load()?;
        let server = self
            .bind(service, default_addr, services)
            .await?
            .with_verified_callers(key.clone());
        Ok((server, key))
    }
}

/// The ways every service can fail to start, said once: each service's own
/// error, declared with [`start_error!`], wraps it and lists only the
/// failures that are its own.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Server(#[from] crate::server::Error),
    #[error(transparent)]
    Lock(#[from] crate::lock::Error),
    #[error("invalid service address: {0}")]
    Address(#[from] crate::client::Error),
    #[error(transparent)]
    InternalKey(#[from] crate::identity::KeyError),
}

/// Declares a service's `StartError`: the variants given (thiserror's
/// attributes and all), and `Runtime`, the shared [`StartError`] shown as
/// it is. `?` takes each source of the shared error directly: the `From`
/// conversions are written here, as `#[from]` conversions do not chain.
/// A variant given shows a failure as it is with `#[error("{0}")]`, not
/// `#[error(transparent)]`, whose expansion by thiserror does not resolve
/// across this macro's hygiene.
#[macro_export]
macro_rules! start_error {
    ($(#[$meta:meta])* $vis:vis enum $error:ident { $($variants:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, thiserror::Error)]
        $vis enum $error {
            /// A failure every service can have.
            #[error(transparent)]
            Runtime($crate::StartError),
            $($variants)*
        }

        $crate::start_error!(
            @from $error: $crate::StartError, $crate::server::Error, $crate::lock::Error,
            $crate::client::Error, $crate::identity::KeyError
        );
    };
    (@from $error:ident: $($source:ty),+) => {
        $(
            impl ::core::convert::From<$source> for $error {
                fn from(error: $source) -> Self {
                    Self::Runtime($crate::StartError::from(error))
                }
            }
        )+
    };
}

/// A service's `main`: parses its flags (see [`crate::cli::parse`]), starts
/// the runtime and telemetry, and runs `run` until it ends; an error is
/// printed on one line and the process exits with status 1.
pub fn main<C, F, E>(service: &str, run: impl FnOnce(C) -> F) -> ExitCode
where
    C: CommandFactory + FromArgMatches,
    F: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    main_with(service, |config| async move {
        crate::exit_code(service, run(config).await)
    })
}

/// [`main`] for a service that chooses its own exit status.
pub fn main_with<C, F>(service: &str, run: impl FnOnce(C) -> F) -> ExitCode
where
    C: CommandFactory + FromArgMatches,
    F: Future<Output = ExitCode>,
{
    let WithShared { shared, config } = crate::cli::parse::<WithShared<C>>(service);
    crate::runtime(service).block_on(async {
        let _telemetry = crate::init_telemetry(service, &shared.telemetry);
        run(config).await
    })
}

/// A service's `Config` and, read from the same flags, the [`ServiceArgs`]
/// flattened into it: what `main` needs of them without each service
/// saying where they are.
struct WithShared<C> {
    shared: ServiceArgs,
    config: C,
}

impl<C: CommandFactory> CommandFactory for WithShared<C> {
    fn command() -> clap::Command {
        C::command()
    }

    fn command_for_update() -> clap::Command {
        C::command_for_update()
    }
}

impl<C: FromArgMatches> FromArgMatches for WithShared<C> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self {
            shared: ServiceArgs::from_arg_matches(matches)?,
            config: C::from_arg_matches(matches)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.shared.update_from_arg_matches(matches)?;
        self.config.update_from_arg_matches(matches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service's flags.
    #[derive(Debug, clap::Parser)]
    struct Config {
        #[command(flatten)]
        service: ServiceArgs,
        /// Its own.
        #[arg(long, default_value_t = 1)]
        own: u32,
    }

    #[test]
    fn the_shared_flags_are_read_beside_the_service_s_own() {
        let parsed = crate::cli::try_parse_from::<WithShared<Config>, _, _>(
            "game",
            ["x", "--log-filter", "debug", "--own", "7"],
        )
        .unwrap();
        assert_eq!(parsed.shared.telemetry.log_filter.as_deref(), Some("debug"));
        assert_eq!(
            parsed.config.service.telemetry.log_filter.as_deref(),
            Some("debug")
        );
        assert_eq!(parsed.config.own, 7);
        assert_eq!(
            parsed.shared.server.listen.as_deref(),
            Some(crate::addr::GAME)
        );
    }
}
