"""The Python engine against a real on-disk index and the real model."""

import json
import threading
import time

import pytest

import excerpt
from conftest import CORPUS


def test_ingest_reports_and_is_incremental(tmp_path, corpus):
    engine = excerpt.Engine(tmp_path / "idx")
    first = engine.ingest([corpus])
    assert (first["added"], first["updated"], first["unchanged"]) == (3, 0, 0)
    assert first["documents"] == 3
    again = engine.ingest(str(corpus))
    assert (again["added"], again["unchanged"]) == (0, 3)


def test_late_chunking_stores_a_vector_per_sentence(tmp_path, corpus):
    plain = excerpt.Engine(tmp_path / "plain")
    plain.ingest(corpus)
    assert plain.stats()["sentence_vectors"] == 0
    late = excerpt.Engine(tmp_path / "late")
    report = late.ingest(corpus, late_chunking=True)
    assert report["sentences_embedded"] > 0
    stats = late.stats()
    assert stats["sentence_vectors"] == report["sentences_embedded"]
    assert stats["sentence_vector_documents"] == 3
    docs = excerpt.Engine(tmp_path / "docs")
    docs.ingest_documents([{"id": "a", "text": CORPUS["keys.md"]}], late_chunking=True)
    assert docs.stats()["sentence_vector_documents"] == 1
    # The queries read them: same pieces' guarantees as any index.
    ctx = late.query("how often are signing keys rotated?", budget=300)
    for p in ctx.pieces:
        assert late.document_text(p.doc_id)[p.start : p.end] == p.text


def test_query_pieces_are_exact_spans_of_the_source(engine, corpus):
    ctx = engine.query("how often are signing keys rotated?", budget=300)
    assert ctx.pieces, ctx.notes
    assert ctx.pieces[0].doc_id.endswith("keys.md")
    assert "ninety days" in ctx.pieces[0].text
    assert 0 < ctx.tokens <= 300
    for p in ctx.pieces:
        source = engine.document_text(p.doc_id)
        assert source is not None
        assert source[p.start : p.end] == p.text
        name = p.doc_id.rsplit("/", 1)[-1]
        if name.endswith(".txt"):
            # A plain-text document's text is its file: offsets index the file too.
            assert (corpus / name).read_text(encoding="utf-8")[p.start : p.end] == p.text


def test_context_renderings_agree(engine):
    ctx = engine.query("night train to Rome", budget=400)
    assert len(ctx) == len(ctx.pieces) > 0
    as_json = json.loads(ctx.json)
    assert as_json == ctx.to_dict()
    assert [p["doc_id"] for p in as_json["pieces"]] == [p.doc_id for p in ctx.pieces]
    assert [p["start"] for p in as_json["pieces"]] == [p.start for p in ctx.pieces]
    assert ctx.pieces[0].text in ctx.text
    assert ctx.pieces[0].text.splitlines()[0] in ctx.markdown
    assert str(ctx) == ctx.text
    assert ctx.render_text("") != ctx.text
    first = ctx.pieces[0].to_dict()
    assert first["end"] == ctx.pieces[0].end and first["doc_id"] == ctx.pieces[0].doc_id
    assert {k: as_json["pieces"][0].get(k) for k in first} == first


def test_same_query_same_context(engine):
    a = engine.query("tomatoes sunlight", budget=500, strategy="rse")
    b = engine.query("tomatoes sunlight", budget=500, strategy="rse")
    assert a.strategy == "rse"
    assert [(p.doc_id, p.start, p.end, p.score) for p in a.pieces] == [
        (p.doc_id, p.start, p.end, p.score) for p in b.pieces
    ]
    assert a.timings is None and "timings" not in a.to_dict()


def test_timings_when_asked(engine):
    plain = engine.query("tomatoes sunlight", budget=500)
    timed = engine.query("tomatoes sunlight", budget=500, timings=True)
    assert [(p.doc_id, p.start, p.end) for p in timed.pieces] == [
        (p.doc_id, p.start, p.end) for p in plain.pieces
    ]
    t = timed.timings
    assert set(t) == {
        "embed_ms", "lexical_ms", "dense_ms", "fusion_ms",
        "rerank_ms", "feedback_ms", "assembly_ms", "total_ms",
    }
    assert t["embed_ms"] > 0 and t["total_ms"] >= t["embed_ms"] + t["assembly_ms"]


def test_explain_when_asked(engine):
    plain = engine.query("tomatoes sunlight", budget=500)
    assert plain.explain is None
    ctx = engine.query("tomatoes sunlight", budget=500, explain=3)
    assert [(p.doc_id, p.start, p.end) for p in ctx.pieces] == [
        (p.doc_id, p.start, p.end) for p in plain.pieces
    ]
    hits = ctx.explain
    assert 0 < len(hits) <= 3
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    for h in hits:
        text = engine.document_text(h["doc_id"])
        assert text[h["start"]:h["end"]].startswith(h["preview"])
        assert h["bm25_rank"] is not None or h["dense_rank"] is not None
        assert 0 <= h["in_context"] <= h["end"] - h["start"]
    assert sum(h["in_context"] for h in hits) > 0


def test_filters_restrict_documents(engine):
    ids = {d["id"] for d in engine.documents()}
    garden = next(i for i in ids if i.endswith("garden.txt"))
    ctx = engine.query("signing keys rotation", doc_ids=garden, budget=300)
    assert {p.doc_id for p in ctx.pieces} == {garden}


def test_in_memory_documents_metadata_and_where(tmp_path):
    engine = excerpt.Engine(tmp_path / "idx")
    report = engine.ingest_documents(
        [
            {"id": "a", "text": CORPUS["trains.txt"], "metadata": {"team": "travel"}},
            {"id": "b", "text": CORPUS["keys.md"], "format": "markdown", "title": "Keys",
             "metadata": {"team": "infra"}},
        ]
    )
    assert report["added"] == 2
    listing = {d["id"]: d for d in engine.documents()}
    assert listing["b"]["title"] == "Keys"
    # The language detected at ingest is recorded beside the metadata given.
    assert listing["a"]["metadata"] == {"team": "travel", "language": "eng"}
    ctx = engine.query("when does the train leave?", where="team=infra", budget=300)
    assert {p.doc_id for p in ctx.pieces} == {"b"}
    assert engine.remove(["a"]) == ["a"]
    assert [d["id"] for d in engine.documents()] == ["b"]
    assert engine.stats()["documents"] == 1
    # The server's rules for posted documents: unknown keys, bad base64 and blank text
    # are refused, naming the problem.
    with pytest.raises(excerpt.BadInputError, match="tags"):
        engine.ingest_documents([{"id": "c", "text": "x", "tags": []}])
    with pytest.raises(excerpt.BadInputError, match="base64"):
        engine.ingest_documents([{"id": "c.pdf", "text": "not base64!", "format": "pdf"}])
    with pytest.raises(excerpt.BadInputError, match="no text"):
        engine.ingest_documents([{"id": "c", "text": "  \n"}])
    assert [d["id"] for d in engine.documents()] == ["b"]


def test_errors_are_typed_with_the_engine_message(engine, tmp_path):
    with pytest.raises(excerpt.BadInputError, match="strategy") as bad:
        engine.query("keys", strategy="no-such-strategy")
    assert isinstance(bad.value, ValueError)
    assert isinstance(bad.value, excerpt.ExcerptError)
    with pytest.raises(excerpt.BadInputError, match="unknown field `body`"):
        excerpt.Engine(tmp_path / "x").ingest_documents([{"id": "a", "text": "t", "body": "?"}])
    with pytest.raises(excerpt.ExcerptError):
        excerpt.Engine(tmp_path / "never-ingested").query("anything")
    with pytest.raises(TypeError):
        engine.ingest(42)


def test_model_not_found_is_named(tmp_path):
    engine = excerpt.Engine(tmp_path / "idx", model=str(tmp_path / "no-model-here"))
    with pytest.raises(excerpt.ExcerptError, match="no-model-here"):
        engine.ingest_documents([{"id": "a", "text": "some text"}])


def test_the_gil_is_released_while_the_engine_works(tmp_path):
    """The main thread keeps running Python while another thread ingests and queries:
    had the native calls held the GIL, it could not wake from its sleeps until they
    returned."""
    engine = excerpt.Engine(tmp_path / "idx")
    docs = [
        {"id": f"doc-{i}", "text": f"Paragraph {i}. " + CORPUS["trains.txt"] * 3}
        for i in range(40)
    ]
    started, done = threading.Event(), threading.Event()
    errors = []

    def work():
        started.set()
        try:
            engine.ingest_documents(docs)
            for _ in range(10):
                engine.query("sleeper cabins and breakfast", budget=2000, strategy="window")
        except Exception as e:  # reported below
            errors.append(e)
        finally:
            done.set()

    thread = threading.Thread(target=work)
    thread.start()
    started.wait()
    wakeups = 0
    while not done.is_set():
        time.sleep(0.01)
        wakeups += 1
    thread.join()
    assert not errors, errors
    assert engine.stats()["documents"] == 40
    assert wakeups >= 5, wakeups
