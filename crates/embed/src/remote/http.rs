//! Shared plumbing of the blocking HTTP clients (embeddings, rerank, chat): the settings
//! every client has ([`EndpointConfig`]), the agent, the API key, one JSON POST attempt
//! classified as retryable or not, and the retry loop with exponential backoff with
//! jitter, honouring `Retry-After`.

use std::time::Duration;

use excerpt_core::{EmbedError, RemoteEndpoint};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Longest wait honoured from a `Retry-After` header or reached by backoff.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Largest error body read for the message.
const MAX_ERROR_BODY_BYTES: u64 = 64 * 1024;

/// Characters of an error body quoted in the message.
const ERROR_SNIPPET_CHARS: usize = 500;

/// The outcome of one failed attempt.
#[derive(Debug)]
pub(crate) struct Failure {
    /// HTTP status, if there was a response.
    pub(crate) status: Option<u16>,
    /// What happened.
    pub(crate) message: String,
    /// Whether another attempt may succeed (429, 5xx, transport errors).
    pub(crate) retryable: bool,
    /// The server's `Retry-After`, in seconds, capped at [`MAX_BACKOFF`].
    pub(crate) retry_after: Option<Duration>,
}

/// The settings every remote client has ([`crate::ChatConfig::endpoint`],
/// [`crate::RemoteConfig::endpoint`], [`crate::RerankConfig::endpoint`]): where requests
/// go, the model named in them, the API key, and the timeout and retries of each
/// request. Each client's config says how its requests' URL is made from
/// [`EndpointConfig::url`] and what its model name is also used for.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointConfig {
    /// Base URL of the service (see the client's config for the URL requests go to).
    pub url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Name of the environment variable holding the API key, sent as
    /// `Authorization: Bearer <key>`. `None`, or a variable that is unset, sends no
    /// header (fine for local servers).
    pub api_key_env: Option<String>,
    /// Send the key even over plain `http://` to a non-loopback host (refused
    /// otherwise: anyone on the path could read it).
    pub allow_plain_http_key: bool,
    /// Retries after the first attempt on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// Timeout of one whole request (for a chat endpoint, generation included).
    pub timeout: Duration,
    /// Delay before the first retry; doubles on each further retry (capped at 60 s).
    /// A `Retry-After` header (in seconds) takes precedence when longer.
    pub initial_backoff: Duration,
}

impl EndpointConfig {
    /// Settings with defaults: no API key, 5 retries starting at 500 ms, 60 s timeout.
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: model.into(),
            api_key_env: None,
            allow_plain_http_key: false,
            max_retries: 5,
            timeout: Duration::from_secs(60),
            initial_backoff: Duration::from_millis(500),
        }
    }

    /// The retries these settings ask for.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            initial_backoff: self.initial_backoff,
        }
    }
}

/// Where a client's requests go: the kind of endpoint and its full URL. Every error
/// of the client is reported against it.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// Which API the URL serves.
    pub(crate) kind: RemoteEndpoint,
    /// The full URL requests are posted to.
    pub(crate) url: String,
}

impl Endpoint {
    /// [`EmbedError::Remote`] for this endpoint.
    pub(crate) fn error(&self, status: Option<u16>, message: impl Into<String>) -> EmbedError {
        EmbedError::Remote {
            endpoint: self.kind,
            url: self.url.clone(),
            status,
            message: message.into(),
        }
    }

    /// The API key from the environment variable [`EndpointConfig::api_key_env`] of
    /// `settings` ([`api_key`]), refused when it would travel in the clear: over plain
    /// `http://` to a host that is not a loopback address, unless
    /// [`EndpointConfig::allow_plain_http_key`] says the user wants that.
    pub(crate) fn api_key(&self, settings: &EndpointConfig) -> Result<Option<String>, EmbedError> {
        let var = settings.api_key_env.as_deref();
        let key = api_key(var);
        if key.is_some() && !settings.allow_plain_http_key && !self.is_private_transport() {
            return Err(self.error(
                None,
                format!(
                    "refusing to send the API key from ${} over plain http to a non-loopback host (anyone on the path could read it); use https, or allow plain http explicitly",
                    var.unwrap_or_default()
                ),
            ));
        }
        Ok(key)
    }

    /// Whether a key sent to the URL is safe from the network: https, or plain http to
    /// a loopback host.
    fn is_private_transport(&self) -> bool {
        if self.url.starts_with("https://") {
            return true;
        }
        let Some(rest) = self.url.strip_prefix("http://") else {
            return false;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => authority.split(':').next().unwrap_or(""),
        };
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// Fails with [`EmbedError::Remote`] (no status) unless the URL is http(s).
    pub(crate) fn check_scheme(&self) -> Result<(), EmbedError> {
        if self.url.starts_with("http://") || self.url.starts_with("https://") {
            Ok(())
        } else {
            Err(self.error(None, "the URL must start with http:// or https://"))
        }
    }
}

/// The environment variable a key for `url` is read from when the user named none:
/// `OPENAI_API_KEY` for OpenAI's own API, else none, so a key meant for one service is
/// never sent to another by default.
pub fn default_key_env(url: &str) -> Option<&'static str> {
    let rest = url.trim().strip_prefix("https://")?;
    let host = rest.split(['/', ':', '?', '#']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
        .then_some("OPENAI_API_KEY")
}

/// An agent with a global timeout that returns non-2xx responses instead of errors.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into()
}

/// The API key from the environment variable `var`, trimmed; `None` when no variable
/// is configured, it is unset or it is blank.
pub(crate) fn api_key(var: Option<&str>) -> Option<String> {
    var.and_then(|var| std::env::var(var).ok())
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
}

/// `{base}/v1/{resource}`, whether or not `base` already ends in `/v1` or
/// `/v1/{resource}`.
pub(crate) fn openai_endpoint(base: &str, resource: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    let base = base
        .strip_suffix(resource)
        .and_then(|b| b.strip_suffix('/'))
        .unwrap_or(base);
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}/v1/{resource}")
}

/// One POST of `body` as JSON to `url`, with `Authorization: Bearer <key>` when a key
/// is given, reading at most `max_response_bytes` of a JSON response.
pub(crate) fn post_json<B: Serialize, R: DeserializeOwned>(
    agent: &ureq::Agent,
    url: &str,
    api_key: Option<&str>,
    body: &B,
    max_response_bytes: u64,
) -> Result<R, Failure> {
    let mut response = post(agent, url, api_key, body)?;
    let status = response.status().as_u16();
    response
        .body_mut()
        .with_config()
        .limit(max_response_bytes)
        .read_json::<R>()
        .map_err(|e| Failure {
            status: Some(status),
            message: format!("malformed response: {e}"),
            // A truncated body is a transport problem; bad JSON is not.
            retryable: matches!(e, ureq::Error::Io(_) | ureq::Error::Timeout(_)),
            retry_after: None,
        })
}

/// One POST of `body` as JSON to `url` (with the key as for [`post_json`]), answering
/// the response of a 2xx status with its body unread, for callers that read it as it
/// arrives (server-sent events); other statuses and transport errors are failures
/// classified as [`post_json`] classifies them.
pub(crate) fn post<B: Serialize>(
    agent: &ureq::Agent,
    url: &str,
    api_key: Option<&str>,
    body: &B,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let mut request = agent.post(url);
    if let Some(key) = api_key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = match request.send_json(body) {
        Ok(r) => r,
        Err(e) => {
            let retryable = matches!(
                e,
                ureq::Error::Io(_)
                    | ureq::Error::Timeout(_)
                    | ureq::Error::ConnectionFailed
                    | ureq::Error::HostNotFound
                    | ureq::Error::Protocol(_)
                    | ureq::Error::BodyStalled
            );
            return Err(Failure {
                status: None,
                message: format!("request failed: {e}"),
                retryable,
                retry_after: None,
            });
        }
    };
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| Duration::from_secs_f64(s).min(MAX_BACKOFF));
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ERROR_BODY_BYTES)
            .lossy_utf8(true)
            .read_to_string()
            .unwrap_or_default();
        let mut snippet: String = text.chars().take(ERROR_SNIPPET_CHARS).collect();
        if snippet.len() < text.len() {
            snippet.push('…');
        }
        return Err(Failure {
            status: Some(status),
            message: format!("HTTP {status}: {}", snippet.trim()),
            retryable: status == 429 || status >= 500,
            retry_after,
        });
    }
    Ok(response)
}

/// When and how often to retry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub(crate) max_retries: u32,
    /// The backoff before the first retry; doubles on each further retry, capped at
    /// [`MAX_BACKOFF`]. Each wait is a random fraction between half and all of the
    /// backoff ([`Jitter`]); a longer `Retry-After` takes precedence.
    pub(crate) initial_backoff: Duration,
}

/// The random part of the waits between retries, so that workers failing together
/// (one rate limit, one restarting server) do not all retry at the same instant.
/// A small SplitMix64 generator: seeded per client call by [`Jitter::new`], or with a
/// fixed seed in tests.
#[derive(Debug, Clone)]
pub(crate) struct Jitter {
    state: u64,
}

impl Jitter {
    /// A generator seeded from the process's random hash keys, the time and the
    /// thread, so concurrent callers draw different waits.
    pub(crate) fn new() -> Self {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        std::time::SystemTime::now().hash(&mut hasher);
        std::thread::current().id().hash(&mut hasher);
        Self::seeded(hasher.finish())
    }

    /// A generator with a fixed seed (same seed, same waits).
    pub(crate) fn seeded(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next value, uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The wait for a retry whose backoff is `backoff`: uniform in
    /// `[backoff / 2, backoff)`, or the server's `Retry-After` when that is longer.
    pub(crate) fn wait(&mut self, backoff: Duration, retry_after: Option<Duration>) -> Duration {
        let jittered = backoff.mul_f64(0.5 + 0.5 * self.unit());
        retry_after.map_or(jittered, |ra| ra.max(jittered))
    }
}

/// Runs `attempt` until it succeeds, fails for good, or the retries are spent,
/// waiting between attempts as [`RetryPolicy`] says (jitter from [`Jitter::new`]).
/// The final failure becomes [`EmbedError::Remote`] for `endpoint`, its message
/// noting how many retries were made.
pub(crate) fn with_retries<T>(
    endpoint: &Endpoint,
    policy: RetryPolicy,
    attempt: impl FnMut() -> Result<T, Failure>,
) -> Result<T, EmbedError> {
    with_retries_jittered(endpoint, policy, &mut Jitter::new(), attempt)
}

/// [`with_retries`] drawing its waits from `jitter`.
pub(crate) fn with_retries_jittered<T>(
    endpoint: &Endpoint,
    policy: RetryPolicy,
    jitter: &mut Jitter,
    mut attempt: impl FnMut() -> Result<T, Failure>,
) -> Result<T, EmbedError> {
    let mut backoff = policy.initial_backoff;
    let mut retries = 0;
    loop {
        match attempt() {
            Ok(r) => return Ok(r),
            Err(f) if f.retryable && retries < policy.max_retries => {
                retries += 1;
                std::thread::sleep(jitter.wait(backoff, f.retry_after));
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(f) => {
                let message = if retries > 0 {
                    format!("{} (after {} retries)", f.message, retries)
                } else {
                    f.message
                };
                return Err(endpoint.error(f.status, message));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{openai_endpoint, with_retries_jittered, Endpoint, Failure, Jitter, RetryPolicy};

    #[test]
    fn waits_are_jittered_within_half_to_all_of_the_backoff() {
        let backoff = Duration::from_millis(800);
        let mut jitter = Jitter::seeded(7);
        let waits: Vec<Duration> = (0..1000).map(|_| jitter.wait(backoff, None)).collect();
        for w in &waits {
            assert!(*w >= backoff / 2 && *w < backoff, "{w:?}");
        }
        // Spread over the whole range, not stuck at one value.
        let min = waits.iter().min().expect("waits");
        let max = waits.iter().max().expect("waits");
        assert!(
            *min < backoff * 11 / 20 && *max > backoff * 19 / 20,
            "{min:?} {max:?}"
        );
        // Same seed, same waits; other seeds, other waits (workers do not retry in
        // lockstep).
        let mut again = Jitter::seeded(7);
        assert_eq!(again.wait(backoff, None), waits[0]);
        let firsts: std::collections::BTreeSet<Duration> = (0..50)
            .map(|seed| Jitter::seeded(seed).wait(backoff, None))
            .collect();
        assert!(firsts.len() >= 45, "{} distinct waits of 50", firsts.len());
        // Two generators seeded from the environment differ too.
        let (mut a, mut b) = (Jitter::new(), Jitter::new());
        let draws = |j: &mut Jitter| (0..4).map(|_| j.wait(backoff, None)).collect::<Vec<_>>();
        assert_ne!(draws(&mut a), draws(&mut b));
    }

    #[test]
    fn a_longer_retry_after_wins_over_the_jittered_backoff() {
        let mut jitter = Jitter::seeded(1);
        let backoff = Duration::from_millis(100);
        let long = Duration::from_secs(2);
        assert_eq!(jitter.wait(backoff, Some(long)), long);
        let short = Duration::from_millis(1);
        let w = jitter.wait(backoff, Some(short));
        assert!(w >= backoff / 2 && w < backoff, "{w:?}");
    }

    #[test]
    fn retries_stop_after_the_policy_and_say_how_many() {
        let endpoint = Endpoint {
            kind: excerpt_core::RemoteEndpoint::Embedding,
            url: "http://127.0.0.1:1/v1/embeddings".into(),
        };
        let policy = RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_micros(10),
        };
        let mut attempts = 0;
        let result: Result<(), _> =
            with_retries_jittered(&endpoint, policy, &mut Jitter::seeded(3), || {
                attempts += 1;
                Err(Failure {
                    status: Some(503),
                    message: "HTTP 503: busy".into(),
                    retryable: true,
                    retry_after: None,
                })
            });
        assert_eq!(attempts, 4);
        let err = result.expect_err("fails").to_string();
        assert!(err.contains("HTTP 503: busy (after 3 retries)"), "{err}");
    }

    #[test]
    fn openai_endpoint_accepts_base_with_or_without_v1() {
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
            "http://h:1/v1/chat/completions",
        ] {
            assert_eq!(
                openai_endpoint(base, "chat/completions"),
                "http://h:1/v1/chat/completions",
                "{base}"
            );
        }
    }
}

#[cfg(test)]
mod key_tests {
    use super::*;

    fn endpoint(url: &str) -> Endpoint {
        Endpoint {
            kind: RemoteEndpoint::Chat,
            url: url.into(),
        }
    }

    #[test]
    fn keys_travel_only_privately() {
        for ok in [
            "https://api.example.com/v1",
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080",
            "http://[::1]:9000/x",
            "http://user@127.0.0.1/",
        ] {
            assert!(endpoint(ok).is_private_transport(), "{ok}");
        }
        for bad in [
            "http://api.example.com/v1",
            "http://10.0.0.5:8080",
            "http://localhost.evil.example/",
            "http://127.0.0.1.evil.example/",
        ] {
            assert!(!endpoint(bad).is_private_transport(), "{bad}");
        }
    }

    #[test]
    fn openai_key_only_for_openai() {
        assert_eq!(
            default_key_env("https://api.openai.com/v1"),
            Some("OPENAI_API_KEY")
        );
        assert_eq!(
            default_key_env("https://API.OPENAI.COM"),
            Some("OPENAI_API_KEY")
        );
        for other in [
            "http://api.openai.com/v1",
            "https://api.openai.com.evil.example/v1",
            "https://my-proxy.example/v1",
            "http://localhost:11434/v1",
        ] {
            assert_eq!(default_key_env(other), None, "{other}");
        }
    }
}
