"""Type stubs of the native module (crates/python/src/lib.rs)."""

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

__version__: str
MAX_BUDGET: int

_Strings = Union[str, Sequence[str], None]

class Piece:
    """One passage: a contiguous span of one document (``text == source[start:end]``)."""

    doc_id: str
    title: str
    section: str
    start: int
    end: int
    text: str
    score: float
    relevance: float
    tokens: int
    page_start: Optional[int]
    page_end: Optional[int]
    first_chunk: int
    last_chunk: int
    def to_dict(self) -> Dict[str, Any]: ...

class Context:
    """The context for one query: pieces in reading order for an LLM, and renderings."""

    @property
    def query(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def budget(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def pieces(self) -> List[Piece]: ...
    @property
    def notes(self) -> List[str]: ...
    @property
    def warnings(self) -> List[str]: ...
    @property
    def timings(self) -> Optional[Dict[str, float]]: ...
    @property
    def explain(self) -> Optional[List[Dict[str, Any]]]: ...
    @property
    def text(self) -> str: ...
    @property
    def markdown(self) -> str: ...
    @property
    def json(self) -> str: ...
    def render_text(self, instruction: str) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def __len__(self) -> int: ...

class Engine:
    """An Excerpt index (a directory or a PostgreSQL URL) and its embedding model."""

    def __init__(
        self,
        index: Union[str, os.PathLike[str]],
        *,
        model: Optional[str] = None,
        embed_url: Optional[str] = None,
        embed_model: Optional[str] = None,
        embed_api_key_env: Optional[str] = None,
        llm_encoding: str = "o200k_base",
    ) -> None: ...
    @property
    def index(self) -> str: ...
    def ingest(
        self,
        paths: Union[str, os.PathLike[str], Iterable[Union[str, os.PathLike[str]]]],
        *,
        prune: bool = False,
        pdf_worker: Union[str, os.PathLike[str], None] = None,
        late_chunking: bool = False,
    ) -> Dict[str, Any]: ...
    def ingest_documents(
        self, documents: Iterable[Mapping[str, Any]], *, late_chunking: bool = False
    ) -> Dict[str, Any]: ...
    def query(
        self,
        text: str,
        *,
        budget: Optional[int] = None,
        strategy: Optional[str] = None,
        mode: Optional[str] = None,
        fusion: Optional[str] = None,
        doc_ids: _Strings = None,
        prefixes: _Strings = None,
        where: _Strings = None,
        top_k: Optional[int] = None,
        candidates: Optional[int] = None,
        rerank: Optional[int] = None,
        timings: bool = False,
        explain: Optional[int] = None,
    ) -> Context: ...
    def documents(self) -> List[Dict[str, Any]]: ...
    def document_text(self, doc_id: str) -> Optional[str]: ...
    def remove(self, ids: _Strings) -> List[str]: ...
    def stats(self) -> Dict[str, Any]: ...
