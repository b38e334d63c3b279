//! Reading an engine's output line by line, with a bound on line length.
//!
//! The reader keeps every partial line in itself rather than in the future
//! that reads it, so a read abandoned in a `select!` loses nothing: the next
//! read continues where it stopped. A line longer than the bound is an error
//! instead of an ever-growing buffer, so garbage output cannot exhaust memory.

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};

/// Why no line could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineError {
    #[error("line longer than {0} bytes")]
    TooLong(usize),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Lines from `R`, each at most `max` bytes (without its line break).
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    partial: Vec<u8>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::new(inner),
            partial: Vec::new(),
            max,
        }
    }

    /// The next line without its `\n` (or `\r\n`), decoded lossily as UTF-8;
    /// `None` at the end of the stream. Cancel-safe.
    pub(crate) async fn next_line(&mut self) -> Result<Option<String>, LineError> {
        loop {
            // `fill_buf` consumes nothing, and between it and `consume` there
            // is no await point, so dropping this future never loses bytes.
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                // A partial last line without a line break is dropped with the
                // stream: the engine is gone either way.
                return Ok(None);
            }
            let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], true),
                None => (available, false),
            };
            if self.partial.len() + chunk.len() > self.max {
                return Err(LineError::TooLong(self.max));
            }
            self.partial.extend_from_slice(chunk);
            let used = chunk.len() + usize::from(found);
            self.inner.consume(used);
            if found {
                let mut line = std::mem::take(&mut self.partial);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(match String::from_utf8(line) {
                    Ok(text) => text,
                    Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncRead, AsyncWriteExt as _};

    /// The next line `reader` gives, which must not fail.
    async fn next<R: AsyncRead + Unpin>(reader: &mut LineReader<R>) -> Option<String> {
        reader.next_line().await.unwrap()
    }

    #[tokio::test]
    async fn splits_lines_and_strips_breaks() {
        let data: &[u8] = b"readyok\r\nbestmove e2e4\n\nlast";
        let mut reader = LineReader::new(data, 100);
        for expected in ["readyok", "bestmove e2e4", ""] {
            assert_eq!(next(&mut reader).await.as_deref(), Some(expected));
        }
        assert_eq!(next(&mut reader).await, None);
    }

    #[tokio::test]
    async fn long_lines_are_refused() {
        let data = vec![b'x'; 1000];
        let mut reader = LineReader::new(&data[..], 100);
        assert!(matches!(
            reader.next_line().await,
            Err(LineError::TooLong(100))
        ));
        // Exactly at the bound is fine.
        let mut exact = vec![b'y'; 100];
        exact.push(b'\n');
        let mut reader = LineReader::new(&exact[..], 100);
        assert_eq!(next(&mut reader).await.unwrap().len(), 100);
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced() {
        let data: &[u8] = b"info string \xff\n";
        let mut reader = LineReader::new(data, 100);
        assert_eq!(
            next(&mut reader).await.as_deref(),
            Some("info string \u{fffd}")
        );
    }

    #[tokio::test]
    async fn an_abandoned_read_loses_nothing() {
        let (mut writer, read_half) = tokio::io::duplex(64);
        let mut reader = LineReader::new(read_half, 100);
        writer.write_all(b"best").await.unwrap();
        // The read sees half a line, then is abandoned.
        let abandoned =
            tokio::time::timeout(std::time::Duration::from_millis(20), reader.next_line()).await;
        assert!(abandoned.is_err());
        writer.write_all(b"move e2e4\n").await.unwrap();
        assert_eq!(next(&mut reader).await.as_deref(), Some("bestmove e2e4"));
    }
}
