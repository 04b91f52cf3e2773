"""A LlamaIndex retriever over an Excerpt index.

>>> from excerpt.llama_index import ExcerptRetriever
>>> retriever = ExcerptRetriever(index="my-index", budget=1500)
>>> nodes = retriever.retrieve("how do we rotate the keys?")
>>> nodes[0].node.text, nodes[0].node.ref_doc_id, nodes[0].node.start_char_idx

Each :class:`~llama_index.core.schema.NodeWithScore` is one passage of the context
Excerpt assembled, in the order an LLM should read them. Its node is a ``TextNode`` with
``start_char_idx``/``end_char_idx`` set to the passage's exact character offsets in the
source text, the source document as its ``ref_doc_id``, and ``doc_id``, ``start``,
``end``, ``page_start``/``page_end``, ``title`` and ``section`` in its metadata (kept out
of the text LlamaIndex shows the LLM and embeds). Needs ``llama-index-core``
(``pip install 'excerpt-rag[llama-index]'``).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Union

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from excerpt._excerpt import Engine
from excerpt._retrieve import QUERY_OPTIONS, engine_of, piece_id, piece_metadata

# Metadata a reader of the passage does not need: kept out of the LLM's and the
# embedder's view of the node.
_HIDDEN = [
    "doc_id",
    "start",
    "end",
    "page_start",
    "page_end",
    "score",
    "relevance",
    "tokens",
    "strategy",
    "query",
]


class ExcerptRetriever(BaseRetriever):
    """Retrieves the passages of an Excerpt context as LlamaIndex nodes.

    Give ``engine=`` (an :class:`excerpt.Engine`) or ``index=`` (an index directory or
    PostgreSQL URL, opened with the default local model or ``model=``). ``budget`` is the
    context's size in LLM tokens; the other keywords are :meth:`excerpt.Engine.query`'s
    options.
    """

    def __init__(
        self,
        engine: Optional[Engine] = None,
        *,
        index: Union[str, os.PathLike, None] = None,
        model: Optional[str] = None,
        budget: int = 2000,
        strategy: Optional[str] = None,
        mode: Optional[str] = None,
        fusion: Optional[str] = None,
        doc_ids: Optional[Sequence[str]] = None,
        prefixes: Optional[Sequence[str]] = None,
        where: Optional[Union[str, Sequence[str]]] = None,
        top_k: Optional[int] = None,
        candidates: Optional[int] = None,
        rerank: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        self.engine = engine_of(engine, index, model)
        self.budget = budget
        self._options = {
            "strategy": strategy,
            "mode": mode,
            "fusion": fusion,
            "doc_ids": doc_ids,
            "prefixes": prefixes,
            "where": where,
            "top_k": top_k,
            "candidates": candidates,
            "rerank": rerank,
        }
        assert set(self._options) == set(QUERY_OPTIONS)
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        query = query_bundle.query_str
        ctx = self.engine.query(query, budget=self.budget, **self._options)
        out = []
        for p in ctx.pieces:
            node = TextNode(
                id_=piece_id(p),
                text=p.text,
                start_char_idx=p.start,
                end_char_idx=p.end,
                metadata=piece_metadata(p, query, ctx.strategy),
                excluded_llm_metadata_keys=list(_HIDDEN),
                excluded_embed_metadata_keys=list(_HIDDEN),
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=p.doc_id)},
            )
            out.append(NodeWithScore(node=node, score=float(p.score)))
        return out


__all__ = ["ExcerptRetriever"]
