//! The gateway: every external protocol in front of the internal services.
//! It keeps no game state of its own, only live connections, so it scales by
//! adding replicas.
//!
//! - [`api`]: the public gRPC API (`chess.gateway.v1`), also as gRPC-Web:
//!   the only module that sees its wire types and `tonic::Status`.
//! - [`fronts`]: every other protocol, one module each: [`fronts::web`]
//!   (pages on the public port), [`fronts::uqchess`] (the line protocol),
//!   [`fronts::nostr`] (the Nostr bridge). The next one, a lichess-compatible
//!   HTTP API, goes in `fronts/lichess/`.
//! - [`core`]: what the fronts share: sessions and their tokens, the typed
//!   clients of the internal services, and the email notices of daily games.

pub mod api;
pub mod core;
pub mod fronts;

use std::{sync::Arc, time::Duration};

use crate::{
    core::{
        auth, chat_policy, clients, mail, notifier::Notifier, presence, public_url::PublicUrl,
        sessions,
    },
    fronts::{nostr, uqchess, web},
};

/// The gateway: public gRPC API, the uqchess line protocol and the Nostr bridge
///
/// The flags of `chess-gateway`, under the summary above that `--help` prints;
/// each has an environment twin `CHESS_GATEWAY_<FLAG>`.
#[derive(Debug, clap::Parser)]
#[command(version, long_about = None)]
pub struct Config {
    #[command(flatten)]
    pub service: chess_runtime::ServiceArgs,
    #[command(flatten)]
    pub nostr: nostr::NostrArgs,
    /// Address for the uqchess line protocol, `host:port`; empty to turn it
    /// off.
    #[arg(long, default_value = chess_runtime::addr::UQCHESS)]
    pub uqchess_listen: String,
    /// Serve the uqchess protocol on listening socket number N handed over
    /// by a supervisor (`LISTEN_FDS`) instead of binding `--uqchess-listen`.
    #[arg(long)]
    pub uqchess_listen_fd: Option<usize>,
    /// The game service, `host:port`; with several replicas, the
    /// addresses of one or more of them separated by commas (any one tells
    /// where the others are).
    #[arg(long, default_value = chess_runtime::addr::GAME)]
    pub game_addr: String,
    /// The matchmaking service, `host:port`.
    #[arg(long, default_value = chess_runtime::addr::MATCHMAKING)]
    pub matchmaking_addr: String,
    /// The rating service, `host:port`.
    #[arg(long, default_value = chess_runtime::addr::RATING)]
    pub rating_addr: String,
    /// File holding the secret that signs session tokens (at least 16
    /// bytes; trailing whitespace ignored). Every replica needs the same.
    #[arg(long)]
    pub token_key_file: Option<std::path::PathBuf>,
    /// The secret that signs session tokens, instead of a file. With neither,
    /// a random key: sessions then end when the gateway stops.
    #[arg(long, conflicts_with = "token_key_file")]
    pub token_key: Option<String>,
    /// Hours a session token stays valid.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u64).range(1..=8760))]
    pub token_ttl_hours: u64,
    /// Seconds a player's session state from the rating service is trusted:
    /// a sign-out or password change made through another replica is
    /// enforced here within this time (at once through this one).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=300))]
    pub session_cache_secs: u64,
    /// Failed logins from one address (IPv6: one /64) before each further
    /// attempt from it waits, doubling up to 5 minutes; 0 for no limit.
    /// The peer address is used, never a forwarding header; callers on the
    /// Unix socket (`--unix-listen`) all count as the loopback address.
    #[arg(long, default_value_t = 20)]
    pub login_failures_per_address: u32,
    /// Registrations from one address (told apart as for logins) allowed at
    /// once, as by a class registering together; spent ones come back at
    /// one a minute; 0 for no limit.
    #[arg(long, default_value_t = api::limits::REGISTRATION_BURST)]
    pub registrations_per_address: u32,
    /// Directory outgoing mail is written to when no SMTP server is set.
    #[arg(long, default_value = "data/mail")]
    pub mail_dir: std::path::PathBuf,
    /// SMTP server for outgoing mail, `smtp://[user:password@]host[:port]`
    /// (plain SMTP, as to a local relay); unset writes mail to --mail-dir.
    #[arg(long)]
    pub smtp_url: Option<String>,
    /// Sender of outgoing mail.
    #[arg(long, default_value = "Rookery <noreply@localhost>")]
    pub mail_from: String,
    /// The address players reach this gateway at, `http(s)://host[:port][/prefix]`:
    /// the emails link `<public-url>/games/<id>`, which this port serves as a
    /// page. Default: `http://` and the public gRPC address, with 127.0.0.1
    /// for an unspecified host (0.0.0.0, [::]).
    #[arg(long)]
    pub public_url: Option<PublicUrl>,
    /// Email the opponent after each move of a daily game. Exactly one
    /// replica should do it: with several, set `false` on all but one.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub notify_daily_moves: bool,
    #[command(flatten)]
    pub chat: api::chat::ChatArgs,
}

/// Default address of the public gRPC API.
pub const DEFAULT_LISTEN: &str = chess_runtime::addr::GATEWAY;

chess_runtime::start_error! {
    /// Why the gateway could not run.
    pub enum StartError {
        #[error("{0}")]
        TokenKey(#[from] auth::KeyError),
        #[error("mail: {0}")]
        Mail(#[from] mail::MailError),
        #[error("{0}")]
        Nostr(#[from] nostr::NostrError),
    }
}

/// Runs the gateway until shutdown.
pub async fn run(config: Config) -> Result<(), StartError> {
    // Every call to the internal services is signed as the gateway's.
    let signer = chess_runtime::Signer::new(config.service.internal_key.load()?, "gateway");
    let tokens = auth::Tokens::from_config(
        config.token_key.as_deref(),
        // An empty value (as an environment variable can only give) means
        // no file.
        config
            .token_key_file
            .as_deref()
            .filter(|p| !p.as_os_str().is_empty()),
        Duration::from_secs(config.token_ttl_hours * 3600),
    )?;
    let mailer = mail::Mailer::new(
        config.smtp_url.as_deref(),
        &config.mail_dir,
        &config.mail_from,
    )?;
    let server = config
        .service
        .bind("gateway", DEFAULT_LISTEN, &api::SERVICE_NAMES)
        .await?;
    let backends = clients::Backends::connect(
        &signer,
        &config.game_addr,
        &config.matchmaking_addr,
        &config.rating_addr,
    )?;
    let server = server
        .with_grpc_web(true)
        .with_front(web::front(backends.clone()));
    let public_url = match config.public_url {
        Some(url) => url,
        None => {
            let url = PublicUrl::for_listener(server.local_addr());
            if server.local_addr().ip().is_unspecified() {
                tracing::warn!(%url, "links in emails use this address; set --public-url to the one players reach");
            }
            url
        }
    };
    tracing::info!(%public_url, "web page served at <public-url>/, games at <public-url>/games/<id>");
    let notifier = config.notify_daily_moves.then(|| {
        tokio::spawn(Notifier::new(backends.clone(), mailer, public_url).run(server.shutdown()))
    });
    let uqchess = if config.uqchess_listen.is_empty() && config.uqchess_listen_fd.is_none() {
        None
    } else {
        let listener = match config.uqchess_listen_fd {
            Some(index) => chess_runtime::server::inherited_listener(index)?,
            None => chess_runtime::server::bind_listener(&config.uqchess_listen).await?,
        };
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "serving the uqchess protocol");
        }
        Some(tokio::spawn(uqchess::serve(
            listener,
            backends.clone(),
            server.shutdown(),
        )))
    };
    let bridge = nostr::start(&config.nostr, backends.clone(), server.shutdown()).await?;
    server.health().set_ready(true).await;
    let sessions = Arc::new(sessions::Sessions::new(
        tokens,
        backends.rating.clone(),
        Duration::from_secs(config.session_cache_secs),
    ));
    sessions.keep_fresh(server.shutdown());
    let presence = Arc::new(presence::Presence::new(
        Arc::clone(&sessions),
        backends.game.clone(),
    ));
    let chat = Arc::new(chat_policy::ChatPolicy::new(backends.rating.clone()));
    let routes = api::routes(
        Arc::new(api::Shared {
            live: core::live::LiveGames::start(backends.clone(), server.shutdown()),
            backends: backends.clone(),
            sessions,
            presence,
            chat: Arc::clone(&chat),
            limits: api::limits::AddressLimits::new(
                config.login_failures_per_address,
                config.registrations_per_address,
            ),
            shutdown: server.shutdown(),
            chat_rules: api::chat::ChatRules::new(&config.chat, Arc::clone(&chat)),
        }),
        bridge,
    );
    let served = server.serve(routes).await;
    if let Some(notifier) = notifier {
        // It stops at shutdown; a panic in it was already reported.
        let _ = notifier.await;
    }
    if let Some(uqchess) = uqchess {
        // Sessions end promptly once shutdown began; a panic in one was
        // already reported by the runtime.
        let _ = uqchess.await;
    }
    served?;
    Ok(())
}
