//! Errors of the PostgreSQL backend, each one line that says what to do.

use excerpt_core::ErrorKind;

/// Why the PostgreSQL index failed.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The URL does not parse as a PostgreSQL connection string.
    #[error("invalid PostgreSQL URL {url}: {message}")]
    BadUrl {
        /// The URL, password hidden.
        url: String,
        /// What the parser said.
        message: String,
    },
    /// The server could not be reached (refused, unknown host, timed out).
    #[error("cannot reach PostgreSQL at {url}: {message}")]
    Unreachable {
        /// The URL, password hidden.
        url: String,
        /// What failed.
        message: String,
    },
    /// The server refused the user name or password.
    #[error("PostgreSQL at {url} refused the credentials: {message}")]
    Credentials {
        /// The URL, password hidden.
        url: String,
        /// The server's message.
        message: String,
    },
    /// The `vector` extension is not installed on the server, or cannot be created in
    /// this database by this user.
    #[error("the pgvector extension is missing at {url}: {message} (install pgvector on the server, or have a superuser run CREATE EXTENSION vector in this database)")]
    NoPgvector {
        /// The URL, password hidden.
        url: String,
        /// The server's message.
        message: String,
    },
    /// The database holds an Excerpt schema newer than this build knows.
    #[error("the Excerpt schema at {url} is version {found}, newer than the {supported} this build knows; upgrade Excerpt")]
    NewerSchema {
        /// The URL, password hidden.
        url: String,
        /// Version in the database.
        found: i32,
        /// Newest version this build can read.
        supported: i32,
    },
    /// The database has no Excerpt index yet.
    #[error("no index at {url} (ingest documents first)")]
    NoIndex {
        /// The URL, password hidden.
        url: String,
    },
    /// The stored config (model, dimension, chunker, headers) differs from the one asked
    /// for.
    #[error(transparent)]
    Config(#[from] excerpt_index::IndexError),
    /// A stored value could not be read back.
    #[error("PostgreSQL index at {url}: {message}")]
    Format {
        /// The URL, password hidden.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// A value PostgreSQL cannot store (a NUL character, `\0`, in text or JSON).
    #[error("{field} contains a NUL character (\\0), which PostgreSQL cannot store")]
    Unstorable {
        /// What holds it: `query`, `prefix`, `document "id": title`, ….
        field: String,
    },
    /// Any other database error.
    #[error("PostgreSQL at {url}: {message}")]
    Database {
        /// The URL, password hidden.
        url: String,
        /// The error, in one line.
        message: String,
    },
}

impl PgError {
    /// Whose fault it is: an unreachable server is unavailable, a missing index not
    /// found, a bad URL and unstorable text bad input, everything else internal.
    pub fn kind(&self) -> ErrorKind {
        match self {
            PgError::BadUrl { .. } | PgError::Unstorable { .. } => ErrorKind::BadInput,
            PgError::Unreachable { .. } => ErrorKind::Unavailable,
            PgError::NoIndex { .. } => ErrorKind::NotFound,
            PgError::Config(e) => e.kind(),
            PgError::Credentials { .. }
            | PgError::NoPgvector { .. }
            | PgError::NewerSchema { .. }
            | PgError::Format { .. }
            | PgError::Database { .. } => ErrorKind::Internal,
        }
    }

    /// Classifies a client error: a refused password is [`PgError::Credentials`], an
    /// error before any server answer is [`PgError::Unreachable`], the rest
    /// [`PgError::Database`].
    pub(crate) fn from_client(url: &str, e: &postgres::Error) -> PgError {
        let url = url.to_string();
        if let Some(db) = e.as_db_error() {
            let message = one_line(db.message());
            let code = db.code().code();
            // 28P01 invalid_password, 28000 invalid_authorization_specification.
            if code == "28P01" || code == "28000" {
                return PgError::Credentials { url, message };
            }
            return PgError::Database { url, message };
        }
        let message = one_line(&source_chain(e));
        if e.is_closed() || e.code().is_none() {
            return PgError::Unreachable { url, message };
        }
        PgError::Database { url, message }
    }
}

/// The error and its sources, joined by `: `.
fn source_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        cur = s.source();
    }
    out
}

/// `text` on one line.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Keys whose values are secrets, in a URL's query and in a keyword/value string.
const SECRET_KEYS: [&str; 2] = ["password", "sslpassword"];

/// `url` with every password replaced by `***`: the one in the userinfo
/// (`postgres://user:secret@host`), `password=` and `sslpassword=` in the query string,
/// and in a keyword/value connection string (`host=h password=secret`, quoted or not).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return redact_keywords(url);
    };
    // The userinfo ends at the last `@` before the query string, so that a password
    // holding `/`, `#` or `@` (unescaped, as people type them) is hidden whole.
    let query_at = rest.find('?').unwrap_or(rest.len());
    let (authority, tail) = match rest[..query_at].rfind('@') {
        Some(at) => {
            let (userinfo, after) = rest.split_at(at);
            let userinfo = match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => userinfo.to_string(),
            };
            (userinfo, after)
        }
        None => (String::new(), rest),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, format!("#{f}")),
                None => (query, String::new()),
            };
            let params: Vec<String> = query
                .split('&')
                .map(|param| match param.split_once('=') {
                    Some((key, _)) if is_secret(key) => format!("{key}=***"),
                    _ => param.to_string(),
                })
                .collect();
            format!("{path}?{}{fragment}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// Whether a key (percent-encoding undone) names a secret.
fn is_secret(key: &str) -> bool {
    let bytes = key.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                decoded.push(b);
                i += 3;
            }
            (b, _) => {
                decoded.push(b);
                i += 1;
            }
        }
    }
    let decoded = String::from_utf8_lossy(&decoded);
    SECRET_KEYS
        .iter()
        .any(|k| decoded.trim().eq_ignore_ascii_case(k))
}

/// A keyword/value connection string (`host=h user=u password='a b'`) with the values
/// of its secret keys replaced by `***`; other text is returned as it is.
fn redact_keywords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        // Copy whitespace, then look at one `key = value` pair.
        let word_at = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..word_at]);
        rest = &rest[word_at..];
        if rest.is_empty() {
            break;
        }
        let key_end = rest
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        let after_key = &rest[key_end..];
        let eq = after_key.trim_start();
        let Some(value) = eq.strip_prefix('=') else {
            out.push_str(key);
            rest = after_key;
            continue;
        };
        let value = value.trim_start();
        let value_len = if let Some(quoted) = value.strip_prefix('\'') {
            // Up to the closing quote; `\'` and `\\` are escapes inside.
            let mut end = quoted.len();
            let mut chars = quoted.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '\'' => {
                        end = i + 1;
                        break;
                    }
                    _ => {}
                }
            }
            1 + end
        } else {
            value.find(char::is_whitespace).unwrap_or(value.len())
        };
        let consumed = rest.len() - value.len() + value_len;
        if is_secret(key) {
            out.push_str(key);
            out.push_str("=***");
        } else {
            out.push_str(&rest[..consumed]);
        }
        rest = &rest[consumed..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db?x=1"),
            "postgres://u:***@h:5432/db?x=1"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgres://h"), "postgres://h");
        assert_eq!(
            redact("postgresql://u@h/db?password=secret&sslmode=disable"),
            "postgresql://u@h/db?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("postgres://h/db?sslmode=require&sslpassword=secret&PASSWORD=other#f"),
            "postgres://h/db?sslmode=require&sslpassword=***&PASSWORD=***#f"
        );
        assert_eq!(
            redact("postgres://u:se/cr@t@h/db?password=x"),
            "postgres://u:***@h/db?password=***"
        );
        assert_eq!(
            redact("postgres://h/db?pass%77ord=x&application_name=a"),
            "postgres://h/db?pass%77ord=***&application_name=a"
        );
        assert_eq!(
            redact("host=h user=u password=secret dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
        assert_eq!(
            redact("host=h password = 'se cr\\'et' sslpassword=k port=5432"),
            "host=h password=*** sslpassword=*** port=5432"
        );
        assert_eq!(redact("a/plain/index/dir"), "a/plain/index/dir");
        for secret in [
            "postgres://u:pw1@h/db",
            "postgres://u@h/db?password=pw1",
            "postgres://u@h/db?sslpassword=pw1",
            "host=h password=pw1",
            "host=h password='pw1 x'",
        ] {
            assert!(
                !redact(secret).contains("pw1"),
                "{secret}: {}",
                redact(secret)
            );
        }
    }
}
