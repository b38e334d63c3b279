//! The `:authority` of requests that come over a Unix socket.
//!
//! A socket file has no host name, and gRPC clients built on the C core
//! (Python's grpcio, C++, Ruby) send the percent-encoded socket path in its
//! place, for instance `tmp%2Fchess%2Fgame.sock`. That is no URI authority,
//! and the HTTP/2 server under tonic resets every such request with
//! PROTOCOL_ERROR before any service sees it. Nothing here reads the
//! authority of a local call, so [`LocalAuthority`] wraps each connection
//! accepted on a Unix socket and, when the first request's authority is not
//! one the server accepts, names `localhost` instead in every request of
//! that connection.
//!
//! Doing so means re-encoding the request headers (HPACK): the client's
//! blocks are decoded with a table that mirrors its encoder, and written
//! out again as literals that the server's decoder never adds to its own
//! table, so both tables stay consistent. A connection whose first request
//! is acceptable as it is (every client of this workspace, `buf curl`,
//! grpc-go) is passed through untouched from then on.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
};

use bytes::{Buf as _, BufMut as _, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a client says first on an HTTP/2 connection.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER: usize = 9;
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The largest frame the server accepts before it says otherwise (HTTP/2's
/// default `SETTINGS_MAX_FRAME_SIZE`, which tonic's server keeps).
const MAX_FRAME: usize = 16_384;
/// The header table size the server's decoder keeps (HTTP/2's default).
const TABLE_SIZE: usize = 4_096;
/// A header block larger than this is left to the server to refuse.
const MAX_BLOCK: usize = 1 << 20;
/// The authority named in place of one the server would refuse.
const LOCALHOST: &[u8] = b"localhost";

/// A connection accepted on a Unix socket, with its requests' authority
/// made acceptable (see the module's documentation).
pub(crate) struct LocalAuthority<S> {
    inner: S,
    mode: Mode,
    /// Bytes read from the client and not yet looked at in full.
    raw: BytesMut,
    /// Bytes ready for the server.
    out: BytesMut,
    /// The fragments of a header block not yet ended.
    block: Option<Block>,
    decoder: fluke_hpack::Decoder<'static>,
    /// Where reads from the client land before `raw`.
    scratch: Box<[u8]>,
    ended: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Waiting for the client's preface.
    Preface,
    /// Reading frames until the first header block says which of the two
    /// below the connection needs.
    Undecided,
    /// Every header block is re-encoded.
    Rewrite,
    /// Everything passes as it comes.
    Transparent,
}

/// A header block being gathered from a HEADERS frame and its
/// CONTINUATION frames.
struct Block {
    stream: u32,
    flags: u8,
    priority: Option<[u8; 5]>,
    fragments: BytesMut,
    /// The frames as they came, for a block passed on unchanged.
    frames: BytesMut,
}

impl<S> LocalAuthority<S> {
    pub(crate) fn new(inner: S) -> Self {
        let mut decoder = fluke_hpack::Decoder::new();
        decoder.set_max_allowed_table_size(TABLE_SIZE);
        Self {
            inner,
            mode: Mode::Preface,
            raw: BytesMut::new(),
            out: BytesMut::new(),
            block: None,
            decoder,
            scratch: vec![0; 8 * 1024].into_boxed_slice(),
            ended: false,
        }
    }

    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Moves what `raw` holds in full into `out`, as far as it can; false
    /// when it needs more bytes first.
    fn advance(&mut self) -> bool {
        match self.mode {
            Mode::Transparent => {
                let all = self.raw.split();
                self.out.unsplit(all);
                false
            }
            Mode::Preface => {
                if self.raw.len() < PREFACE.len() {
                    return false;
                }
                if &self.raw[..PREFACE.len()] != PREFACE {
                    // Not HTTP/2 with prior knowledge: the server answers it.
                    self.mode = Mode::Transparent;
                    return true;
                }
                let preface = self.raw.split_to(PREFACE.len());
                self.out.unsplit(preface);
                self.mode = Mode::Undecided;
                true
            }
            Mode::Undecided | Mode::Rewrite => self.frame(),
        }
    }

    /// Handles one whole frame of `raw`, if it holds one.
    fn frame(&mut self) -> bool {
        if self.raw.len() < FRAME_HEADER {
            return false;
        }
        let length = usize::from(self.raw[0]) << 16
            | usize::from(self.raw[1]) << 8
            | usize::from(self.raw[2]);
        if length > MAX_BLOCK {
            self.give_up();
            return true;
        }
        if self.raw.len() < FRAME_HEADER + length {
            return false;
        }
        let kind = self.raw[3];
        let flags = self.raw[4];
        let stream =
            u32::from_be_bytes([self.raw[5], self.raw[6], self.raw[7], self.raw[8]]) & 0x7fff_ffff;
        let frame = self.raw.split_to(FRAME_HEADER + length);
        let payload = &frame[FRAME_HEADER..];
        match (kind, self.block.take()) {
            (HEADERS, None) => match headers_fragment(flags, payload) {
                Some((priority, fragment)) => {
                    let mut block = Block {
                        stream,
                        flags,
                        priority,
                        fragments: BytesMut::from(fragment),
                        frames: BytesMut::new(),
                    };
                    block.frames.unsplit(frame);
                    self.gathered(block);
                }
                None => self.pass(frame),
            },
            (CONTINUATION, Some(mut block)) if stream == block.stream => {
                block.fragments.extend_from_slice(payload);
                block.flags |= flags & END_HEADERS;
                block.frames.unsplit(frame);
                if block.fragments.len() > MAX_BLOCK {
                    self.out.unsplit(block.frames);
                    self.give_up();
                } else {
                    self.gathered(block);
                }
            }
            (_, Some(block)) => {
                // Anything but its CONTINUATION inside a block is the
                // client's error, which the server reports.
                self.out.unsplit(block.frames);
                self.pass(frame);
                self.give_up();
            }
            (_, None) => self.pass(frame),
        }
        true
    }

    fn pass(&mut self, frame: BytesMut) {
        self.out.unsplit(frame);
    }

    /// From now on the connection's bytes pass unchanged, for the server
    /// to judge.
    fn give_up(&mut self) {
        self.mode = Mode::Transparent;
        let rest = self.raw.split();
        self.out.unsplit(rest);
    }

    /// A block whose frames have come so far: kept until it ends, then
    /// passed on as it was or re-encoded.
    fn gathered(&mut self, block: Block) {
        if block.flags & END_HEADERS == 0 {
            self.block = Some(block);
            return;
        }
        let Ok(headers) = self.decoder.decode(&block.fragments) else {
            // The server's decoder will find the same fault.
            self.out.unsplit(block.frames);
            self.give_up();
            return;
        };
        if self.mode == Mode::Undecided {
            let refused = headers.iter().any(|(name, value)| {
                name == b":authority" && http::uri::Authority::try_from(value.as_slice()).is_err()
            });
            if !refused {
                self.out.unsplit(block.frames);
                self.give_up();
                return;
            }
            self.mode = Mode::Rewrite;
        }
        let mut encoded = BytesMut::new();
        for (name, value) in &headers {
            let value = if name == b":authority" {
                LOCALHOST
            } else {
                value.as_slice()
            };
            literal(&mut encoded, name, value);
        }
        write_block(
            &mut self.out,
            block.stream,
            block.flags & END_STREAM,
            block.priority,
            &encoded,
        );
    }
}

/// The priority fields and the header block fragment of a HEADERS frame's
/// payload, or `None` for a payload too short for what its flags say.
fn headers_fragment(flags: u8, payload: &[u8]) -> Option<(Option<[u8; 5]>, &[u8])> {
    let (pad, mut rest) = if flags & PADDED != 0 {
        let (&pad, rest) = payload.split_first()?;
        (usize::from(pad), rest)
    } else {
        (0, payload)
    };
    let priority = if flags & PRIORITY != 0 {
        let fields: [u8; 5] = rest.get(..5)?.try_into().ok()?;
        rest = &rest[5..];
        Some(fields)
    } else {
        None
    };
    let fragment = rest.get(..rest.len().checked_sub(pad)?)?;
    Some((priority, fragment))
}

/// One header as a literal never added to the table, its name and value
/// as plain strings (RFC 7541, 6.2.2).
fn literal(out: &mut BytesMut, name: &[u8], value: &[u8]) {
    out.put_u8(0x00);
    string(out, name);
    string(out, value);
}

fn string(out: &mut BytesMut, bytes: &[u8]) {
    integer(out, 7, 0x00, bytes.len());
    out.extend_from_slice(bytes);
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541, 5.1).
fn integer(out: &mut BytesMut, n: u32, first: u8, value: usize) {
    let limit = (1usize << n) - 1;
    if value < limit {
        // Below the limit, so it fits the prefix's bits.
        out.put_u8(first | value as u8);
        return;
    }
    out.put_u8(first | limit as u8);
    let mut rest = value - limit;
    while rest >= 0x80 {
        out.put_u8((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    out.put_u8(rest as u8);
}

/// A header block as a HEADERS frame and as many CONTINUATION frames as
/// the frame size needs.
fn write_block(
    out: &mut BytesMut,
    stream: u32,
    end_stream: u8,
    priority: Option<[u8; 5]>,
    block: &[u8],
) {
    let first_room = MAX_FRAME - if priority.is_some() { 5 } else { 0 };
    let (first, mut rest) = block.split_at(block.len().min(first_room));
    let mut flags = end_stream;
    if priority.is_some() {
        flags |= PRIORITY;
    }
    if rest.is_empty() {
        flags |= END_HEADERS;
    }
    frame_header(
        out,
        first.len() + priority.map_or(0, |p| p.len()),
        HEADERS,
        flags,
        stream,
    );
    if let Some(fields) = priority {
        out.extend_from_slice(&fields);
    }
    out.extend_from_slice(first);
    while !rest.is_empty() {
        let (chunk, after) = rest.split_at(rest.len().min(MAX_FRAME));
        rest = after;
        let flags = if rest.is_empty() { END_HEADERS } else { 0 };
        frame_header(out, chunk.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

fn frame_header(out: &mut BytesMut, length: usize, kind: u8, flags: u8, stream: u32) {
    // A frame is never longer than MAX_FRAME, so three bytes hold its length.
    out.put_uint(length as u64, 3);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream);
}

impl<S: AsyncRead + Unpin> AsyncRead for LocalAuthority<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                buf.put_slice(&this.out[..n]);
                this.out.advance(n);
                return Poll::Ready(Ok(()));
            }
            if this.mode == Mode::Transparent && this.raw.is_empty() || this.ended {
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            if this.advance() {
                continue;
            }
            if !this.out.is_empty() {
                continue;
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let filled = read.filled();
            if filled.is_empty() {
                // The client is gone: what is left goes to the server as it
                // is, and the end of the stream after it.
                this.ended = true;
                if let Some(block) = this.block.take() {
                    this.out.unsplit(block.frames);
                }
                let rest = this.raw.split();
                this.out.unsplit(rest);
                continue;
            }
            this.raw.extend_from_slice(filled);
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for LocalAuthority<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for LocalAuthority<tokio::net::UnixStream> {
    type ConnectInfo = <tokio::net::UnixStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.get_ref().connect_info()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt as _;

    use super::*;

    const SETTINGS: &[u8] = &[0, 0, 0, 0x4, 0, 0, 0, 0, 0];

    fn request(authority: &[u8], path: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        [
            (&b":method"[..], &b"POST"[..]),
            (b":scheme", b"http"),
            (b":path", path),
            (b":authority", authority),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        ]
        .iter()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect()
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        frame_header(&mut out, payload.len(), kind, flags, stream);
        out.extend_from_slice(payload);
        out.to_vec()
    }

    /// A client's connection: the preface, its settings, and two requests
    /// encoded by one encoder (the second referring to the first's table
    /// entries), each with a data frame.
    fn client(authority: &[u8]) -> Vec<u8> {
        let mut encoder = fluke_hpack::Encoder::new();
        let mut bytes = PREFACE.to_vec();
        bytes.extend_from_slice(SETTINGS);
        for (stream, path) in [(1, &b"/a.A/One"[..]), (3, b"/a.A/Two")] {
            let headers = request(authority, path);
            let block = encoder.encode(headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice())));
            bytes.extend(frame(HEADERS, END_HEADERS, stream, &block));
            bytes.extend(frame(0x0, END_STREAM, stream, b"\0\0\0\0\0"));
        }
        bytes
    }

    async fn through(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        LocalAuthority::new(bytes)
            .read_to_end(&mut out)
            .await
            .unwrap();
        out
    }

    /// The frames of a server's side of a connection: (type, flags, stream,
    /// payload), after the preface.
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        assert_eq!(&bytes[..PREFACE.len()], PREFACE);
        bytes = &bytes[PREFACE.len()..];
        let mut frames = Vec::new();
        while !bytes.is_empty() {
            let length =
                usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
            let stream = u32::from_be_bytes(bytes[5..9].try_into().unwrap());
            frames.push((bytes[3], bytes[4], stream, bytes[9..9 + length].to_vec()));
            bytes = &bytes[9 + length..];
        }
        frames
    }

    #[tokio::test]
    async fn a_socket_path_as_the_authority_becomes_localhost_in_every_request() {
        let out = through(&client(b"tmp%2Fchess%2Fgame.sock")).await;
        let frames = frames(&out);
        let kinds: Vec<u8> = frames.iter().map(|f| f.0).collect();
        assert_eq!(kinds, [0x4, HEADERS, 0x0, HEADERS, 0x0]);
        let mut decoder = fluke_hpack::Decoder::new();
        for (headers, path) in [(&frames[1], &b"/a.A/One"[..]), (&frames[3], b"/a.A/Two")] {
            assert_eq!(headers.1, END_HEADERS);
            assert_eq!(
                decoder.decode(&headers.3).unwrap(),
                request(b"localhost", path)
            );
        }
        assert_eq!(frames[2].3, b"\0\0\0\0\0");
    }

    #[tokio::test]
    async fn a_connection_whose_authority_is_acceptable_passes_unchanged() {
        let bytes = client(b"localhost:50053");
        assert_eq!(through(&bytes).await, bytes);
    }

    #[tokio::test]
    async fn padding_priority_and_continuation_frames_are_read_and_a_large_block_is_split() {
        let mut headers = request(b"tmp%2Fx.sock", b"/a.A/One");
        headers.push((b"x-large".to_vec(), vec![b'a'; 20_000]));
        let block = fluke_hpack::Encoder::new()
            .encode(headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice())));
        let (first, rest) = block.split_at(100);
        let mut payload = vec![3];
        payload.extend_from_slice(&[0x80, 0, 0, 0, 15]);
        payload.extend_from_slice(first);
        payload.extend_from_slice(&[0; 3]);
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(HEADERS, PADDED | PRIORITY | END_STREAM, 1, &payload));
        bytes.extend(frame(CONTINUATION, END_HEADERS, 1, rest));

        let out = through(&bytes).await;
        let frames = frames(&out);
        assert_eq!(frames.len(), 2);
        assert_eq!((frames[0].0, frames[0].1), (HEADERS, END_STREAM | PRIORITY));
        assert_eq!((frames[1].0, frames[1].1), (CONTINUATION, END_HEADERS));
        assert_eq!(frames[0].3[..5], [0x80, 0, 0, 0, 15]);
        let mut block = frames[0].3[5..].to_vec();
        block.extend_from_slice(&frames[1].3);
        headers[3].1 = b"localhost".to_vec();
        assert_eq!(fluke_hpack::Decoder::new().decode(&block).unwrap(), headers);
    }

    #[tokio::test]
    async fn what_is_not_http2_or_cannot_be_decoded_passes_for_the_server_to_refuse() {
        let http1 = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        assert_eq!(through(&http1).await, http1);

        let mut broken = PREFACE.to_vec();
        broken.extend(frame(HEADERS, END_HEADERS, 1, &[0xff, 0xff, 0xff, 0xff]));
        broken.extend(frame(0x0, END_STREAM, 1, b"data"));
        assert_eq!(through(&broken).await, broken);

        let mut cut = client(b"tmp%2Fx.sock");
        cut.truncate(cut.len() - 3);
        let out = through(&cut).await;
        assert!(out.len() > PREFACE.len(), "what came is passed on");
    }
}
