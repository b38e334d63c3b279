//! [`Stack`]: a running system, from its data directory and sockets to its
//! supervised services, and [`Addresses`], where they are reached.

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::{
    Exit, StackOptions, StartError, Supervisor, children::children, data_dir::DataDir,
    health::wait_until_serving, listeners::Listeners,
};

/// The addresses of a running system.
#[derive(Clone, Debug)]
pub struct Addresses {
    pub gateway: String,
    /// Where players reach the gateway, for links: `http://<gateway>` unless
    /// another was given.
    pub public_url: String,
    pub uqchess: String,
    pub matchmaking: String,
    /// The first replica of the game service.
    pub game: String,
    /// Every replica of the game service (`game-0`, `game-1`, …), in order.
    pub game_replicas: Vec<String>,
    pub rating: String,
    pub engine: String,
}

/// A running system.
#[derive(Debug)]
pub struct Stack {
    pub addresses: Addresses,
    supervisor: Supervisor,
    exits: mpsc::UnboundedReceiver<Exit>,
    /// The services' Unix sockets, removed once they have stopped.
    sockets: Vec<PathBuf>,
    /// Held while the stack runs (and by its services).
    _data: DataDir,
}

/// Whether `url` names a PostgreSQL database.
fn is_postgres(url: Option<&str>) -> bool {
    url.is_some_and(|u| u.starts_with("postgres://") || u.starts_with("postgresql://"))
}

impl Stack {
    /// Starts the system and waits until every service is SERVING.
    pub async fn start(options: StackOptions) -> Result<Self, StartError> {
        let data = DataDir::open(&options.data_dir).await?;
        if options.game_replicas > 1 && !is_postgres(options.game_database_url.as_deref()) {
            return Err(StartError::Options(
                "several game replicas share their games through PostgreSQL: pass \
                 --database-url postgres://… with --game-replicas"
                    .to_owned(),
            ));
        }
        let listeners = Listeners::bind(&options, &data.path)?;
        let addresses = listeners.addresses(options.public_url.as_deref());
        let sockets = listeners.socket_files();
        let children = children(&options, &data, &addresses, listeners)?;
        let (supervisor, mut exits) =
            Supervisor::start(children, options.output, options.announce_restarts);
        if let Err(error) = wait_until_serving(&addresses, &mut exits).await {
            supervisor.stop().await;
            remove_all(&sockets);
            return Err(error);
        }
        Ok(Self {
            addresses,
            supervisor,
            exits,
            sockets,
            _data: data,
        })
    }

    /// Stops every service gracefully.
    pub async fn stop(self) {
        drop(self.exits);
        self.supervisor.stop().await;
        remove_all(&self.sockets);
    }

    /// The next exit of a child (it is being restarted).
    pub async fn next_exit(&mut self) -> Option<Exit> {
        self.exits.recv().await
    }
}

/// Removes the files at `paths`, those that are still there.
fn remove_all(paths: &[PathBuf]) {
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}
