"""The LangChain and LlamaIndex retrievers, against the real frameworks from PyPI."""

import pytest

import excerpt


def test_langchain_retriever_documents_carry_exact_offsets(engine, index):
    from langchain_core.documents import Document

    from excerpt.langchain import ExcerptRetriever

    for retriever in (ExcerptRetriever(engine=engine, budget=300), ExcerptRetriever(index=str(index), budget=300)):
        docs = retriever.invoke("how often are signing keys rotated?")
        assert docs and all(isinstance(d, Document) for d in docs)
        top = docs[0]
        assert top.metadata["doc_id"].endswith("keys.md")
        assert "ninety days" in top.page_content
        for d in docs:
            m = d.metadata
            assert engine.document_text(m["doc_id"])[m["start"] : m["end"]] == d.page_content
            assert d.id == f'{m["doc_id"]}#{m["start"]}-{m["end"]}'


def test_langchain_retriever_passes_options_and_refuses_bad_ones(engine):
    from excerpt.langchain import ExcerptRetriever

    ids = [d["id"] for d in engine.documents()]
    garden = next(i for i in ids if i.endswith("garden.txt"))
    docs = ExcerptRetriever(engine=engine, doc_ids=[garden]).invoke("signing keys")
    assert {d.metadata["doc_id"] for d in docs} == {garden}
    with pytest.raises(ValueError, match="give engine="):
        ExcerptRetriever()
    with pytest.raises(excerpt.BadInputError):
        ExcerptRetriever(engine=engine, strategy="nope").invoke("keys")


def test_llama_index_retriever_nodes_carry_exact_offsets(engine, index):
    from llama_index.core.schema import MetadataMode, NodeWithScore

    from excerpt.llama_index import ExcerptRetriever

    for retriever in (ExcerptRetriever(engine, budget=300), ExcerptRetriever(index=str(index), budget=300)):
        nodes = retriever.retrieve("when does the night train arrive in Rome?")
        assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
        top = nodes[0].node
        assert top.ref_doc_id.endswith("trains.txt")
        assert "10:05" in top.text
        for n in nodes:
            node = n.node
            source = engine.document_text(node.ref_doc_id)
            assert source[node.start_char_idx : node.end_char_idx] == node.text
            assert node.metadata["start"] == node.start_char_idx
            # Offsets and scores stay out of what the LLM reads.
            assert "start:" not in node.get_content(metadata_mode=MetadataMode.LLM)


def test_llama_index_retriever_filters(engine):
    from excerpt.llama_index import ExcerptRetriever

    ids = [d["id"] for d in engine.documents()]
    garden = next(i for i in ids if i.endswith("garden.txt"))
    nodes = ExcerptRetriever(engine, doc_ids=[garden]).retrieve("night train")
    assert {n.node.ref_doc_id for n in nodes} == {garden}
