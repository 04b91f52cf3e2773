"""A LangChain retriever over an Excerpt index.

>>> from excerpt.langchain import ExcerptRetriever
>>> retriever = ExcerptRetriever(index="my-index", budget=1500)
>>> docs = retriever.invoke("how do we rotate the keys?")
>>> docs[0].page_content, docs[0].metadata["doc_id"], docs[0].metadata["start"]

Each :class:`~langchain_core.documents.Document` is one passage of the context Excerpt
assembled (contiguous text of one source document, in the order an LLM should read
them), with ``doc_id``, ``start``, ``end`` (character offsets into the source text),
``page_start``/``page_end`` (PDFs), ``title``, ``section`` and ``score`` in its
metadata. Needs ``langchain-core`` (``pip install 'excerpt-rag[langchain]'``).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, model_validator

from excerpt._retrieve import QUERY_OPTIONS, engine_of, piece_id, piece_metadata


class ExcerptRetriever(BaseRetriever):
    """Retrieves the passages of an Excerpt context as LangChain documents.

    Give ``engine=`` (an :class:`excerpt.Engine`) or ``index=`` (an index directory or
    PostgreSQL URL, opened with the default local model or ``model=``). ``budget`` is the
    context's size in LLM tokens; the other fields are :meth:`excerpt.Engine.query`'s
    options.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any = None
    index: Optional[str] = None
    model: Optional[str] = None
    budget: int = 2000
    strategy: Optional[str] = None
    mode: Optional[str] = None
    fusion: Optional[str] = None
    doc_ids: Optional[Sequence[str]] = None
    prefixes: Optional[Sequence[str]] = None
    where: Optional[Union[str, Sequence[str]]] = None
    top_k: Optional[int] = None
    candidates: Optional[int] = None
    rerank: Optional[int] = None
    tags: Optional[List[str]] = Field(default=None)

    @model_validator(mode="after")
    def _open(self) -> "ExcerptRetriever":
        self.engine = engine_of(self.engine, self.index, self.model)
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        options = {name: getattr(self, name) for name in QUERY_OPTIONS}
        ctx = self.engine.query(query, budget=self.budget, **options)
        return [
            Document(
                id=piece_id(p),
                page_content=p.text,
                metadata=piece_metadata(p, query, ctx.strategy),
            )
            for p in ctx.pieces
        ]


__all__ = ["ExcerptRetriever"]
