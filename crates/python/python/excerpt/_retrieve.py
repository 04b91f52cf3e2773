"""What the two framework retrievers share: making an engine from an index, the query
options they pass through, and each piece's metadata."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

from excerpt._excerpt import Engine, Piece

#: Keyword arguments of :meth:`excerpt.Engine.query` a retriever passes through.
QUERY_OPTIONS = (
    "strategy",
    "mode",
    "fusion",
    "doc_ids",
    "prefixes",
    "where",
    "top_k",
    "candidates",
    "rerank",
)


def engine_of(engine: Optional[Engine], index: Union[str, os.PathLike, None], model: Optional[str]) -> Engine:
    """The engine given, or one opened on ``index``; exactly one of the two."""
    if engine is not None and index is not None:
        raise ValueError("give either engine= or index=, not both")
    if engine is not None:
        if not isinstance(engine, Engine):
            raise TypeError(f"engine must be an excerpt.Engine, not {type(engine).__name__}")
        return engine
    if index is None:
        raise ValueError("give engine= (an excerpt.Engine) or index= (an index directory or PostgreSQL URL)")
    return Engine(index, model=model)


def piece_metadata(piece: Piece, query: str, strategy: str) -> Dict[str, Any]:
    """The metadata every retrieved passage carries: where it is, how it scored."""
    return {
        "doc_id": piece.doc_id,
        "title": piece.title,
        "section": piece.section,
        "start": piece.start,
        "end": piece.end,
        "page_start": piece.page_start,
        "page_end": piece.page_end,
        "score": piece.score,
        "relevance": piece.relevance,
        "tokens": piece.tokens,
        "strategy": strategy,
        "query": query,
    }


def piece_id(piece: Piece) -> str:
    """A stable id for a passage: its document and character range."""
    return f"{piece.doc_id}#{piece.start}-{piece.end}"
