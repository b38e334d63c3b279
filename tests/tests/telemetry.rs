//! Traces cross process boundaries: a hint asked over the uqchess protocol
//! goes gateway → game → engine, and an in-process OTLP receiver collects
//! spans of all three services in one trace, each service's span a child of
//! its caller's. The engine's metrics arrive over OTLP too.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use chess_e2e::{StackProcess, UqClient};
use opentelemetry_proto::tonic::{
    collector::{
        metrics::v1::{
            ExportMetricsServiceRequest, ExportMetricsServiceResponse,
            metrics_service_server::{MetricsService, MetricsServiceServer},
        },
        trace::v1::{
            ExportTraceServiceRequest, ExportTraceServiceResponse,
            trace_service_server::{TraceService, TraceServiceServer},
        },
    },
    common::v1::any_value::Value,
    resource::v1::Resource,
};
use tonic::{Request, Response, Status};

/// A span as received: its service and names.
#[derive(Clone, Debug)]
struct Received {
    service: String,
    name: String,
    trace_id: Vec<u8>,
    span_id: Vec<u8>,
    parent_span_id: Vec<u8>,
}

#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Received>>>,
    /// Metric names by service.
    metrics: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

fn service_name(resource: Option<&Resource>) -> String {
    resource
        .into_iter()
        .flat_map(|r| &r.attributes)
        .find(|kv| kv.key == "service.name")
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .and_then(|v| match v {
            Value::StringValue(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mut spans = self.spans.lock().unwrap();
        for resource_spans in request.into_inner().resource_spans {
            let service = service_name(resource_spans.resource.as_ref());
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    spans.push(Received {
                        service: service.clone(),
                        name: span.name,
                        trace_id: span.trace_id,
                        span_id: span.span_id,
                        parent_span_id: span.parent_span_id,
                    });
                }
            }
        }
        Ok(Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let mut metrics = self.metrics.lock().unwrap();
        for resource_metrics in request.into_inner().resource_metrics {
            let service = service_name(resource_metrics.resource.as_ref());
            let names = metrics.entry(service).or_default();
            for scope in resource_metrics.scope_metrics {
                names.extend(scope.metrics.into_iter().map(|m| m.name));
            }
        }
        Ok(Response::new(ExportMetricsServiceResponse {
            partial_success: None,
        }))
    }
}

/// The trace in which the engine served a BestMove for a hint, if it has
/// arrived whole: (gateway, game, engine) spans linked parent to child.
fn find_trace(spans: &[Received]) -> Option<(Received, Received, Received)> {
    let by_id = |id: &[u8]| spans.iter().find(|s| s.span_id == id);
    for engine in spans
        .iter()
        .filter(|s| s.service == "chess-engine" && s.name.ends_with("EngineService/BestMove"))
    {
        // Walk up the parents to the gateway.
        let mut chain = vec![engine.clone()];
        let mut current = engine;
        while let Some(parent) = by_id(&current.parent_span_id) {
            chain.push(parent.clone());
            current = parent;
        }
        let game = chain
            .iter()
            .find(|s| s.service == "chess-game" && s.name.ends_with("GameService/Hint"))?;
        let gateway = chain.iter().find(|s| s.service == "chess-gateway")?;
        if chain.iter().all(|s| s.trace_id == engine.trace_id) {
            return Some((gateway.clone(), game.clone(), engine.clone()));
        }
    }
    None
}

#[tokio::test]
async fn one_request_through_three_services_is_one_trace() {
    let collector = Collector::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let server = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(collector.clone()))
        .add_service(MetricsServiceServer::new(collector.clone()))
        .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
    tokio::spawn(server);

    let stack = StackProcess::start(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
        ],
    )
    .await;
    let mut client = UqClient::connect(stack.uqchess_port()).await;
    client.ask("start computer white", &["started white"]).await;
    client.send("hint best\n").await;
    assert!(client.line().await.starts_with("moves "));

    let deadline = Instant::now() + Duration::from_secs(30);
    let (gateway, game, engine) = loop {
        if let Some(found) = find_trace(&collector.spans.lock().unwrap()) {
            break found;
        }
        assert!(Instant::now() < deadline, "no complete trace arrived");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(gateway.trace_id, game.trace_id);
    assert_eq!(game.trace_id, engine.trace_id);

    loop {
        let engine_metrics = collector
            .metrics
            .lock()
            .unwrap()
            .get("chess-engine")
            .cloned()
            .unwrap_or_default();
        let expected = [
            "engine.requests",
            "engine.search.duration",
            "engine.queue.depth",
            "engine.processes.alive",
        ];
        if expected
            .iter()
            .all(|name| engine_metrics.iter().any(|m| m == name))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no engine metrics arrived: {engine_metrics:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(stack.stop().await.success());
}
