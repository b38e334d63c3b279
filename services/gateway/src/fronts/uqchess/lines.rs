//! Reading lines of bounded length.
//!
//! A client may send a megabyte without a newline; the reader never keeps
//! more than [`MAX_LINE`] bytes of it (nor, while a request is served, more
//! than [`MAX_BUFFERED`] read ahead). An overlong line is reported once, its
//! remainder skipped up to the next newline, and reading goes on.

use tokio::io::{AsyncRead, AsyncReadExt as _};

/// Longest line kept; every valid request is far shorter.
pub const MAX_LINE: usize = 256;

/// The most bytes read ahead while a request is being served.
pub const MAX_BUFFERED: usize = 16 * 1024;

/// One line, or the fact that one was too long.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line without its newline.
    Complete(Vec<u8>),
    /// A line longer than [`MAX_LINE`] (reported when the limit is passed).
    TooLong,
}

/// Splits a byte stream into lines, holding at most a small buffer per
/// connection.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    /// Bytes received but not yet returned.
    pending: Vec<u8>,
    /// Skipping the rest of an overlong line.
    skipping: bool,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            pending: Vec::new(),
            skipping: false,
            eof: false,
        }
    }

    /// Takes one line out of what is pending, if there is one.
    fn take_line(&mut self) -> Option<Line> {
        loop {
            match self.pending.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    let mut line: Vec<u8> = self.pending.drain(..=end).collect();
                    line.pop();
                    if self.skipping {
                        self.skipping = false;
                        continue;
                    }
                    if line.len() > MAX_LINE {
                        return Some(Line::TooLong);
                    }
                    return Some(Line::Complete(line));
                }
                None if self.skipping => {
                    self.pending.clear();
                    return None;
                }
                None if self.pending.len() > MAX_LINE => {
                    self.pending.clear();
                    self.skipping = true;
                    return Some(Line::TooLong);
                }
                None => return None,
            }
        }
    }

    /// The next line; `None` at the end of the stream (a partial last line is
    /// dropped, as the connection is gone).
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            if let Some(line) = self.take_line() {
                return Ok(Some(line));
            }
            if self.eof {
                return Ok(None);
            }
            let mut chunk = [0u8; 512];
            let n = self.inner.read(&mut chunk).await?;
            if n == 0 {
                self.eof = true;
                continue;
            }
            self.pending.extend_from_slice(&chunk[..n]);
        }
    }

    /// Whether a complete line is already buffered.
    /// Completes when the client has closed its side of the connection (or
    /// it failed), while a request is being served. What arrives meanwhile
    /// is kept for [`Self::next_line`], up to [`MAX_BUFFERED`] bytes; past
    /// that the client is not read until it is served. Cancel-safe.
    pub async fn closed(&mut self) {
        loop {
            if self.eof {
                return;
            }
            if self.pending.len() >= MAX_BUFFERED {
                std::future::pending::<()>().await;
            }
            let mut chunk = [0u8; 512];
            match self.inner.read(&mut chunk).await {
                Ok(0) | Err(_) => self.eof = true,
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
            }
        }
    }

    pub fn has_line(&self) -> bool {
        !self.skipping && self.pending.contains(&b'\n')
    }

    /// Frees buffer memory held by an idle connection.
    pub fn shrink(&mut self) {
        if self.pending.is_empty() {
            self.pending = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8]) -> Vec<Line> {
        let mut reader = LineReader::new(input);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn splits_and_drops_a_partial_tail() {
        assert_eq!(
            lines(b"board\nhint best\npartial").await,
            vec![
                Line::Complete(b"board".to_vec()),
                Line::Complete(b"hint best".to_vec())
            ]
        );
        assert_eq!(lines(b"\n").await, vec![Line::Complete(Vec::new())]);
    }

    #[tokio::test]
    async fn overlong_lines_are_reported_once_and_skipped() {
        let mut input = vec![b'x'; 1_000_000];
        input.extend_from_slice(b"\nboard\n");
        assert_eq!(
            lines(&input).await,
            vec![Line::TooLong, Line::Complete(b"board".to_vec())]
        );
        let mut input = vec![b'y'; MAX_LINE + 1];
        input.push(b'\n');
        assert_eq!(lines(&input).await, vec![Line::TooLong]);
        let endless = vec![b'z'; 100_000];
        assert_eq!(lines(&endless).await, vec![Line::TooLong]);
    }

    #[tokio::test]
    async fn closing_is_noticed_and_what_came_before_is_kept() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = LineReader::new(server);
        tokio::io::AsyncWriteExt::write_all(&mut client, b"board\nhint")
            .await
            .unwrap();
        // Still open: closed() keeps waiting.
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(50), reader.closed()).await;
        assert!(waited.is_err());
        drop(client);
        reader.closed().await;
        assert_eq!(
            reader.next_line().await.unwrap(),
            Some(Line::Complete(b"board".to_vec()))
        );
        assert_eq!(reader.next_line().await.unwrap(), None);
    }
}
