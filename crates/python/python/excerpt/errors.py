"""Exceptions raised by Excerpt, one class per kind of failure.

Every class derives from :class:`ExcerptError`; each also derives from the built-in
exception a Python caller would catch for that kind (``ValueError`` for bad input,
``LookupError`` for something missing, ``ConnectionError`` for an unreachable
service), so existing ``except`` clauses keep working. The message is the engine's own,
the same text the CLI and the HTTP server print.
"""


class ExcerptError(Exception):
    """Base class of every Excerpt error."""


class BadInputError(ExcerptError, ValueError):
    """The request or input is malformed or asks for something impossible."""


class NotFoundError(ExcerptError, LookupError):
    """Something the request names does not exist (an index, a document, a model)."""


class ConflictError(ExcerptError):
    """The request collides with the index's state (e.g. another process is writing)."""


class UnavailableError(ExcerptError, ConnectionError):
    """A service the call depends on (an embedding or chat endpoint) failed; retry later."""


class InternalError(ExcerptError):
    """The system failed: damaged or mismatched data on disk, a misconfigured model, a bug."""


__all__ = [
    "ExcerptError",
    "BadInputError",
    "NotFoundError",
    "ConflictError",
    "UnavailableError",
    "InternalError",
]
