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
    /// found, a bad URL bad input, everything else internal.
    pub fn kind(&self) -> ErrorKind {
        match self {
            PgError::BadUrl { .. } => ErrorKind::BadInput,
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

/// `url` with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
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
    }
}
