//! `GET /metrics`: the server's figures in the Prometheus text format (version 0.0.4),
//! through the Prometheus project's own client crate (`prometheus-client`).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `excerpt_http_requests_total` | counter | `method`, `route`, `status` |
//! | `excerpt_http_request_duration_seconds` | histogram | `method`, `route` |
//! | `excerpt_index_documents` | gauge | |
//! | `excerpt_index_chunks` | gauge | |
//! | `excerpt_index_disk_bytes` | gauge | |
//! | `excerpt_index_generation` | gauge | |
//! | `excerpt_ingest_documents_total` | counter | `outcome` (`added`, `updated`, `unchanged`, `failed`) |
//! | `excerpt_ingest_chunks_embedded_total` | counter | |
//! | `excerpt_ingest_chunks_reused_total` | counter | |
//! | `excerpt_documents_removed_total` | counter | |
//!
//! `route` is the route's template (`/v1/documents/{*id}`), never the path asked for,
//! so ids never become label values; a path no route matches counts as `unmatched`, and
//! a method outside the standard ones as `OTHER`. Every request counts, the refused
//! ones too (401, 403, 503), and its duration runs until its response head (a streamed
//! answer's body is not waited for). The index figures are read when the page is
//! scraped; the ingest counters count `POST /v1/ingest` and the removals `DELETE
//! /v1/documents/{id}` since the server started.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use excerpt::{IndexStats, IngestReport};
use prometheus_client::encoding::{prometheus_text, EncodeLabelSet};

/// The content type of the page.
pub(crate) const PROMETHEUS_TEXT: &str = prometheus_text::CONTENT_TYPE;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The labels of a request count.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

/// The labels of a request duration.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: String,
}

/// The label of an ingest count.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

/// A request duration histogram: 1 ms to about 33 s, doubling.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The figures and the registry that prints them.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram, fn() -> Histogram>,
    documents: Gauge,
    chunks: Gauge,
    disk_bytes: Gauge,
    generation: Gauge,
    ingested: Family<OutcomeLabels, Counter>,
    chunks_embedded: Counter,
    chunks_reused: Counter,
    removed: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("excerpt");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route template and status",
            requests.clone(),
        );
        let durations = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its response head, by method and route template",
            durations.clone(),
        );
        let documents = Gauge::default();
        registry.register(
            "index_documents",
            "Documents in the committed index (0 before the first ingest)",
            documents.clone(),
        );
        let chunks = Gauge::default();
        registry.register(
            "index_chunks",
            "Chunks in the committed index",
            chunks.clone(),
        );
        let disk_bytes = Gauge::default();
        registry.register(
            "index_disk_bytes",
            "Bytes the index takes on disk (on PostgreSQL: its tables with their indexes)",
            disk_bytes.clone(),
        );
        let generation = Gauge::default();
        registry.register(
            "index_generation",
            "Generation of the committed index (0 on PostgreSQL)",
            generation.clone(),
        );
        let ingested = Family::<OutcomeLabels, Counter>::default();
        // Every outcome is printed from the start, at 0, so a rate over it has a base.
        for outcome in ["added", "updated", "unchanged", "failed"] {
            drop(ingested.get_or_create(&OutcomeLabels { outcome }));
        }
        registry.register(
            "ingest_documents",
            "Documents posted to POST /v1/ingest, by outcome (added, updated, unchanged, failed)",
            ingested.clone(),
        );
        let chunks_embedded = Counter::default();
        registry.register(
            "ingest_chunks_embedded",
            "Chunks embedded by the model for POST /v1/ingest",
            chunks_embedded.clone(),
        );
        let chunks_reused = Counter::default();
        registry.register(
            "ingest_chunks_reused",
            "Chunks whose vector POST /v1/ingest reused from the index (same text, same model)",
            chunks_reused.clone(),
        );
        let removed = Counter::default();
        registry.register(
            "documents_removed",
            "Documents removed by DELETE /v1/documents/{id}",
            removed.clone(),
        );
        Metrics {
            registry,
            requests,
            durations,
            documents,
            chunks,
            disk_bytes,
            generation,
            ingested,
            chunks_embedded,
            chunks_reused,
            removed,
        }
    }

    /// Counts what an ingest did.
    pub(crate) fn ingested(&self, report: &IngestReport) {
        for (outcome, n) in [
            ("added", report.added),
            ("updated", report.updated),
            ("unchanged", report.unchanged),
            ("failed", report.failed.len()),
        ] {
            self.ingested
                .get_or_create(&OutcomeLabels { outcome })
                .inc_by(n as u64);
        }
        self.chunks_embedded.inc_by(report.chunks_embedded as u64);
        self.chunks_reused.inc_by(report.chunks_reused as u64);
    }

    /// Counts removed documents.
    pub(crate) fn removed(&self, n: usize) {
        self.removed.inc_by(n as u64);
    }

    /// Counts one answered request.
    fn observe(&self, method: &'static str, route: String, status: u16, seconds: f64) {
        self.durations
            .get_or_create(&RouteLabels {
                method,
                route: route.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status,
            })
            .inc();
    }

    /// The page, in the Prometheus text format.
    /// The page of `GET /metrics`, the index gauges set from `stats` (all 0 without an
    /// index).
    pub(crate) fn page(&self, stats: Option<&IndexStats>) -> Result<String, std::fmt::Error> {
        let size = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        match stats {
            Some(s) => {
                self.documents.set(size(s.documents));
                self.chunks.set(size(s.chunks));
                self.disk_bytes
                    .set(i64::try_from(s.disk_bytes).unwrap_or(i64::MAX));
                self.generation
                    .set(i64::try_from(s.generation).unwrap_or(i64::MAX));
            }
            None => {
                for g in [
                    &self.documents,
                    &self.chunks,
                    &self.disk_bytes,
                    &self.generation,
                ] {
                    g.set(0);
                }
            }
        }
        self.encode()
    }

    fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// A method as a label value: the standard ones by name, any other as `OTHER` (a client
/// must not be able to make up label values).
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "OTHER",
    }
}

/// The outermost layer: counts and times every request by its route template.
pub(crate) async fn track(State(m): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let res = next.run(req).await;
    m.observe(
        method,
        route,
        res.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    res
}

/// `GET /metrics`.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_bounded_labels() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::DELETE), "DELETE");
        let odd = Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&odd), "OTHER");
    }

    #[test]
    fn the_page_names_every_metric() {
        let m = Metrics::new();
        m.observe("GET", "/v1/stats".into(), 200, 0.004);
        m.ingested(&IngestReport {
            added: 2,
            chunks_embedded: 5,
            ..IngestReport::default()
        });
        let page = m.encode().unwrap();
        for needle in [
            "excerpt_http_requests_total{method=\"GET\",route=\"/v1/stats\",status=\"200\"} 1",
            "excerpt_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/stats\"} 1",
            "excerpt_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/stats\",le=\"0.008\"} 1",
            "excerpt_ingest_documents_total{outcome=\"added\"} 2",
            "excerpt_ingest_documents_total{outcome=\"updated\"} 0",
            "excerpt_ingest_chunks_embedded_total 5",
            "excerpt_index_documents 0",
            "# TYPE excerpt_http_requests_total counter",
        ] {
            assert!(page.contains(needle), "{needle} not in:\n{page}");
        }
    }
}
