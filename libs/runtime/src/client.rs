//! Channels to other services.

use std::time::Duration;

use tonic::transport::Endpoint;

/// A channel whose calls carry the current trace context.
pub type Channel = chess_telemetry::ClientTrace<tonic::transport::Channel>;

/// A lazily connected channel to `addr` (`host:port` or a full `http://` URI).
/// Connecting happens on first use and again after failures, so a service can
/// start before the services it calls.
pub fn channel(addr: &str) -> Result<Channel, tonic::transport::Error> {
    let uri = if addr.contains("://") {
        addr.to_owned()
    } else {
        format!("http://{addr}")
    };
    let endpoint = Endpoint::from_shared(uri)?
        .connect_timeout(Duration::from_secs(3))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true);
    Ok(tower::Layer::layer(
        &chess_telemetry::ClientTraceLayer,
        endpoint.connect_lazy(),
    ))
}
