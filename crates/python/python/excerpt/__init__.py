"""Excerpt: retrieval for RAG that returns context reading like the source.

>>> import excerpt
>>> engine = excerpt.Engine("my-index")          # a directory, made on first ingest
>>> engine.ingest("docs/")                       # Markdown, HTML, text, JSONL, PDF
>>> ctx = engine.query("how do we rotate the keys?", budget=1500)
>>> print(ctx.text)                              # ready for a prompt
>>> ctx.pieces[0].doc_id, ctx.pieces[0].start, ctx.pieces[0].end

The engine is the same Rust code as the ``excerpt`` CLI and server, loaded in process:
the local embedding model (all-MiniLM-L6-v2 by default) runs on the CPU, offline.
Retrievers for LangChain and LlamaIndex are in :mod:`excerpt.langchain` and
:mod:`excerpt.llama_index`.
"""

from excerpt._excerpt import MAX_BUDGET, Context, Engine, Piece, __version__
from excerpt import errors
from excerpt.errors import (
    BadInputError,
    ConflictError,
    ExcerptError,
    InternalError,
    NotFoundError,
    UnavailableError,
)

__all__ = ["Engine", "Context", "Piece", "MAX_BUDGET", "__version__", *errors.__all__]
