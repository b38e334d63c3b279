//! Outgoing mail: through an SMTP server when one is configured, otherwise
//! written as `.eml` files into a directory (the one-machine default, where
//! any mail program can open them).

use std::path::{Path, PathBuf};

use lettre::{
    AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor,
    message::{Mailbox, header::ContentType},
    transport::smtp::authentication::Credentials,
};

/// One message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body: String,
}

/// Why mail could not be set up or sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("invalid SMTP URL {0:?} (expected smtp://[user:password@]host[:port])")]
    Url(String),
    #[error("invalid address {address:?}: {reason}")]
    Address { address: String, reason: String },
    #[error("cannot build the message: {0}")]
    Build(#[from] lettre::error::Error),
    #[error("cannot write mail into {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("the SMTP server refused the message: {0}")]
    Smtp(#[from] lettre::transport::smtp::Error),
}

/// Where mail goes.
#[derive(Clone, Debug)]
pub struct Mailer {
    from: Mailbox,
    route: Route,
}

#[derive(Clone, Debug)]
enum Route {
    Directory(PathBuf),
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
}

fn mailbox(address: &str) -> Result<Mailbox, MailError> {
    address
        .parse()
        .map_err(|e: lettre::address::AddressError| MailError::Address {
            address: address.to_owned(),
            reason: e.to_string(),
        })
}

/// The host, port and credentials of `smtp://[user:password@]host[:port]`.
fn parse_smtp_url(url: &str) -> Result<(String, u16, Option<Credentials>), MailError> {
    let bad = || MailError::Url(url.to_owned());
    let rest = url.strip_prefix("smtp://").ok_or_else(bad)?;
    let rest = rest.trim_end_matches('/');
    let (credentials, server) = match rest.rsplit_once('@') {
        Some((userinfo, server)) => {
            let (user, password) = userinfo.split_once(':').ok_or_else(bad)?;
            (
                Some(Credentials::new(user.to_owned(), password.to_owned())),
                server,
            )
        }
        None => (None, rest),
    };
    let (host, port) = match server.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().map_err(|_| bad())?),
        None => (server, 25),
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port, credentials))
}

impl Mailer {
    /// Mail from `from`, through the SMTP server at `smtp_url` if given,
    /// else into `directory`.
    ///
    /// SMTP is spoken in plain text, as to a relay on the same host or in the
    /// same cluster (which may itself use TLS onwards).
    pub fn new(smtp_url: Option<&str>, directory: &Path, from: &str) -> Result<Self, MailError> {
        let from = mailbox(from)?;
        let route = match smtp_url.filter(|u| !u.is_empty()) {
            Some(url) => {
                let (host, port, credentials) = parse_smtp_url(url)?;
                let mut builder =
                    AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host).port(port);
                if let Some(credentials) = credentials {
                    builder = builder.credentials(credentials);
                }
                Route::Smtp(builder.build())
            }
            None => Route::Directory(directory.to_owned()),
        };
        Ok(Self { from, route })
    }

    /// Sends `mail`.
    pub async fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let message = Message::builder()
            .from(self.from.clone())
            .to(mailbox(&mail.to)?)
            .subject(mail.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body.clone())?;
        match &self.route {
            Route::Smtp(transport) => {
                transport.send(message).await?;
            }
            Route::Directory(dir) => write_eml(dir, &message.formatted()).await?,
        }
        Ok(())
    }
}

/// Writes one message into `dir` under a fresh name; written to a temporary
/// name first so a reader never sees half a message.
async fn write_eml(dir: &Path, bytes: &[u8]) -> Result<(), MailError> {
    let failed = |source| MailError::Write {
        path: dir.display().to_string(),
        source,
    };
    tokio::fs::create_dir_all(dir).await.map_err(failed)?;
    let ms = chess_domain::Timestamp::now().millis();
    let name = format!("{ms}-{}", uuid::Uuid::new_v4().simple());
    let partial = dir.join(format!(".{name}.tmp"));
    tokio::fs::write(&partial, bytes).await.map_err(failed)?;
    tokio::fs::rename(&partial, dir.join(format!("{name}.eml")))
        .await
        .map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_urls() {
        let (host, port, credentials) = parse_smtp_url("smtp://127.0.0.1:2525").unwrap();
        assert_eq!((host.as_str(), port), ("127.0.0.1", 2525));
        assert!(credentials.is_none());
        let (host, port, credentials) = parse_smtp_url("smtp://u:p@mail.example.org/").unwrap();
        assert_eq!((host.as_str(), port), ("mail.example.org", 25));
        assert!(credentials.is_some());
        for bad in [
            "http://x",
            "smtp://",
            "smtp://host:port",
            "smtp://user@host",
        ] {
            assert!(parse_smtp_url(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn mail_lands_in_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mailer = Mailer::new(None, dir.path(), "Rookery <chess@example.org>").unwrap();
        mailer
            .send(&Mail {
                to: "bob@example.org".into(),
                subject: "Your move".into(),
                body: "alice played 1. e4".into(),
            })
            .await
            .unwrap();
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].extension().unwrap(), "eml");
        let text = std::fs::read_to_string(&files[0]).unwrap();
        assert!(text.contains("To: bob@example.org"), "{text}");
        assert!(text.contains("Subject: Your move"), "{text}");
        assert!(text.contains("alice played 1. e4"), "{text}");
        assert!(
            mailer
                .send(&Mail {
                    to: "not an address".into(),
                    subject: String::new(),
                    body: String::new(),
                })
                .await
                .is_err()
        );
    }
}
