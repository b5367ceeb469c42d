"""The searchable index of one project, in LanceDB: message chunks and curated memories.

A projection of the journal (rebuildable at any time). Each chunk row carries its message's
metadata so searches filter before ranking; whole messages are put back together from their
chunks. Vectors are optional per row: a row whose embedding is not there yet is still found by
full-text search, and gets its vector when the embedder is back.

Full-text search reads ``search_text``, not the text as said: who said it, the chunk, and — for a
message's first chunk — the message before it in the conversation (the question an answer answers),
stemmed and without stop words, so "flicker" finds "flickers" and "what did Caroline research"
finds her answer to "what have you been reading up on?". On LoCoMo this took evidence recall@10
of the full-text leg from 0.52 to 0.73 (docs/benchmarks.md §12). ``INDEX_FORMAT`` numbers this
layout; an index made by an older Kelvin is rebuilt once.
"""
from __future__ import annotations

import logging
import os
from datetime import timedelta
from typing import TYPE_CHECKING, Iterable, Sequence

from app.core import chunking
from app.core.filters import Filters
from app.core.records import Memory, Message, Tags

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger("kelvin.index")

# Lance's Rust logger writes WARN lines straight to stderr (e.g. "No existing dataset … will be
# created" on every new table); Kelvin reports what matters through its own logging instead.
os.environ.setdefault("LANCEDB_LOG", "error")

CHUNKS = "chunks"
MEMORIES = "memories"
INDEX_FORMAT = 3  # 2: search_text (speaker, chunk, the message before), stemmed, no stop words; 3: the
# message before only where the message answers it (app.memory.index.answers)
# English stemming ("flickers" finds "flicker") and no stop words ("what did she do" is "she do")
FTS_OPTIONS = dict(with_position=False, language="English", stem=True, remove_stop_words=True, lower_case=True,
                   ascii_folding=True)
CONTEXT_CHARS = 600  # of the message before, in a first chunk's search_text
VECTOR_INDEX_MIN_ROWS = 5_000  # a flat scan of 10k vectors already takes ~10 ms; the index builds in ~2 s
FILTER_INDEX_MIN_ROWS = 5_000  # below this a prefilter scan is cheap
KEEP_OLD_VERSIONS = timedelta(minutes=1)  # readers in other processes may still be on a recent version

_CHUNK_COLS = ["chunk_id", "message_id", "chunk_index", "n_chunks", "project", "conversation_id", "turn_id",
               "role", "speaker", "ts_ms", "domain", "type", "engine", "host_app", "priority", "status", "text",
               "search_text"]
_LEG_COLS = ["message_id", "ts_ms", "text", "n_chunks", "status"]  # what ranking needs; winners are fetched whole
_MEMORY_COLS = ["id", "project", "text", "category", "ts_ms", "source_id"]


def version_on_disk(uri: str, table: str = CHUNKS) -> int | None:
    """The newest version of a local table, read from its manifests' names without LanceDB (1.5 s to
    import): None for an index elsewhere (``s3://…``) or none at all. Lance names a manifest after
    its version (``N.manifest``) or, since 0.2x, after ``2**64 - 1 - N`` so the newest sorts first."""
    if "://" in uri:
        return None
    try:
        names = os.listdir(os.path.join(uri, f"{table}.lance", "_versions"))
    except OSError:
        return None
    numbers = [int(n[: -len(".manifest")]) for n in names if n.endswith(".manifest") and n[: -len(".manifest")].isdigit()]
    if not numbers:
        return None
    return max((2**64 - 1 - n) if n >= 2**63 else n for n in numbers)


class IndexError_(RuntimeError):
    """The index cannot be opened or written; the message says why."""


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


def where_clause(filters: Filters) -> str:
    """The filters as the index's SQL condition on its chunk rows ("" keeps every row)."""
    parts = []
    for col in ("domain", "type", "engine", "conversation_id"):
        value = getattr(filters, col)
        if value:
            parts.append(f"{col} = {sql_str(value)}")
    if filters.since_ms is not None:
        parts.append(f"ts_ms >= {int(filters.since_ms)}")
    if filters.until_ms is not None:
        parts.append(f"ts_ms <= {int(filters.until_ms)}")
    return " AND ".join(parts)


def _vector_field(dim: int) -> pa.Field:
    import pyarrow as pa  # (imported by what writes or searches the index: 0.3 s that a listing need not pay)

    return pa.field("vector", pa.list_(pa.float32(), dim), nullable=True)


def _chunk_schema(dim: int) -> pa.Schema:
    import pyarrow as pa

    fields = [pa.field(c, pa.string()) for c in _CHUNK_COLS]
    for i, c in enumerate(_CHUNK_COLS):
        if c in ("chunk_index", "n_chunks", "priority"):
            fields[i] = pa.field(c, pa.int32())
        elif c == "ts_ms":
            fields[i] = pa.field(c, pa.int64())
    if dim:
        fields.append(_vector_field(dim))
    return pa.schema(fields)


def _memory_schema(dim: int) -> pa.Schema:
    import pyarrow as pa

    fields = [pa.field(c, pa.int64() if c == "ts_ms" else pa.string()) for c in _MEMORY_COLS]
    if dim:
        fields.append(_vector_field(dim))
    return pa.schema(fields)


def said_by(speaker: str) -> str:
    """The name a message is said by, as searched and embedded: a person's name (an imported
    conversation's "Caroline"), never Kelvin's own label with its model ("Kelvin (llama3.1:8b)")."""
    return "" if not speaker or speaker.startswith("Kelvin") else speaker


def search_text(speaker: str, part: str, before: str = "") -> str:
    """What full-text search reads for one chunk: who said it, the chunk, the message before."""
    who = said_by(speaker)
    text = f"{who}: {part}" if who else part
    return f"{text}\n\n{before}" if before else text


def context_of(text: str) -> str:
    """What of a message stands in the search_text of the message after it: its opening."""
    return chunking.split(text)[0][:CONTEXT_CHARS]


NOT_ANSWERS = ("failed", "recall")  # an empty reply, or one quoting other messages: it answers nothing


def _field(x, name: str) -> str:
    return str(getattr(x, name, "") if isinstance(x, Message) else x.get(name, "") or "")


def answers(prev, cur) -> bool:
    """Whether ``cur`` (a Message or an index row) answers ``prev``, the message before it in its
    conversation: said by someone else (another speaker, or the other side of the chat), and neither is
    a non-answer (an empty reply, a quote from memory). A message that follows its own speaker's
    question — a second question, a new topic — does not ride on it."""
    if prev is None:
        return False
    if _field(prev, "status") in NOT_ANSWERS or _field(cur, "status") in NOT_ANSWERS:
        return False
    return (_field(prev, "role"), said_by(_field(prev, "speaker"))) != \
        (_field(cur, "role"), said_by(_field(cur, "speaker")))


def context_for(prev, cur) -> str:
    """What of the message before stands in a message's searched text: its opening, when the message
    answers it (so an answer is found by its question's words), else nothing."""
    return context_of(_field(prev, "text")) if answers(prev, cur) else ""


def embed_text(speaker: str, part: str) -> str:
    """What the embedder reads for one chunk: who said it and the chunk."""
    who = said_by(speaker)
    return f"{who}: {part}" if who else part


def message_rows(m: Message, before: str = "") -> list[dict]:
    """The chunk rows of a message; ``before``: the text of the message before it in its conversation."""
    parts = chunking.split(m.text)
    return [
        {
            "chunk_id": f"{m.id}#{i}", "message_id": m.id, "chunk_index": i, "n_chunks": len(parts),
            "project": m.project, "conversation_id": m.conversation_id, "turn_id": m.turn_id, "role": m.role,
            "speaker": m.speaker, "ts_ms": m.ts_ms, "domain": m.tags.domain, "type": m.tags.type,
            "engine": m.tags.engine or "", "host_app": m.tags.host_app or "", "priority": m.tags.priority,
            "status": m.status, "text": part, "search_text": search_text(m.speaker, part, before if i == 0 else ""),
        }
        for i, part in enumerate(parts)
    ]


def message_from_rows(rows: list[dict]) -> Message:
    rows = sorted(rows, key=lambda r: r["chunk_index"])
    r = rows[0]
    return Message(
        id=r["message_id"], project=r["project"], conversation_id=r["conversation_id"], role=r["role"],
        speaker=r["speaker"], text="".join(x["text"] for x in rows), ts_ms=r["ts_ms"], turn_id=r["turn_id"],
        tags=Tags(domain=r["domain"], type=r["type"], engine=r["engine"] or None, host_app=r.get("host_app") or None,
                  priority=int(r.get("priority") or 0)),
        status=r.get("status") or "",
    )


class ProjectIndex:
    def __init__(self, uri: str):
        from app.memory.lance_import import lancedb as imported  # here: ~1 s, only paid by code that searches or writes

        lancedb = imported()
        from lancedb.index import FTS, BTree

        self._FTS, self._BTree = FTS, BTree
        self.uri = uri
        try:
            # readers must see writes made since they opened, by this process or another
            self._db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
            names = set(self._db.list_tables().tables)
        except (OSError, ValueError, RuntimeError) as exc:
            raise IndexError_(f"cannot open the search index at {uri}: {exc}") from None
        self._chunks = self._db.open_table(CHUNKS) if CHUNKS in names else None
        self._memories = self._db.open_table(MEMORIES) if MEMORIES in names else None
        self.writes_since_optimize = 0
        self._dim = self._read_dim()
        # an index from before search_text (INDEX_FORMAT 1) is searched on its text until it is rebuilt
        self._fts_column = "search_text" if self._chunks is None or "search_text" in self._chunks.schema.names \
            else "text"
        self._upgrade_columns()

    def _cols(self) -> list[str]:
        return _CHUNK_COLS if self._fts_column == "search_text" else _CHUNK_COLS[:-1]

    def _upgrade_columns(self) -> None:
        """Columns added since an index was written: whole replies, no host app, normal priority. A
        reader of another process's index only reads (the writer upgrades, or rebuilds)."""
        if self._chunks is None:
            return
        missing = {col: sql for col, sql in (("status", "CAST('' AS STRING)"), ("host_app", "CAST('' AS STRING)"),
                                             ("priority", "CAST(0 AS INT)")) if col not in self._chunks.schema.names}
        if missing:
            self._chunks.add_columns(missing)

    def refresh(self) -> None:
        """Another Kelvin process wrote: tables it created since this one opened the index, and the
        width of the vectors it now stores (a new embedder). Rows need nothing: every read sees the
        latest version (``read_consistency_interval=0``)."""
        if self._chunks is None or self._memories is None:
            names = set(self._db.list_tables().tables)
            if self._chunks is None and CHUNKS in names:
                self._chunks = self._db.open_table(CHUNKS)
                self._fts_column = "search_text" if "search_text" in self._chunks.schema.names else "text"
            if self._memories is None and MEMORIES in names:
                self._memories = self._db.open_table(MEMORIES)
        self._dim = self._read_dim()

    # ---- schema ------------------------------------------------------------------------------------
    @property
    def exists(self) -> bool:
        return self._chunks is not None and self._memories is not None

    def _read_dim(self) -> int:
        if self._chunks is None or "vector" not in self._chunks.schema.names:
            return 0
        return self._chunks.schema.field("vector").type.list_size

    def vector_dim(self) -> int:
        """Width of the stored vectors (0: none). Cached: reading the schema costs a manifest read."""
        return self._dim

    def create(self, dim: int) -> None:
        """Create (or recreate, empty) both tables for vectors of ``dim`` (0: none)."""
        self._chunks = self._db.create_table(CHUNKS, schema=_chunk_schema(dim), mode="overwrite")
        self._memories = self._db.create_table(MEMORIES, schema=_memory_schema(dim), mode="overwrite")
        fts = self._FTS(**FTS_OPTIONS)
        self._chunks.create_index("search_text", config=fts, replace=True)
        self._memories.create_index("text", config=fts, replace=True)
        self._chunks.create_index("message_id", config=self._BTree(), replace=True)
        self._fts_column = "search_text"
        self._dim = dim

    def set_vector_dim(self, dim: int) -> None:
        """Switch embedders: drop every vector (they are not comparable) and make room for new ones."""
        for tbl in (self._chunks, self._memories):
            if "vector" in tbl.schema.names:
                for idx in tbl.list_indices():
                    if "vector" in idx.columns:
                        tbl.drop_index(idx.name)
                tbl.drop_columns(["vector"])
            if dim:
                tbl.add_columns(_vector_field(dim))
        self._dim = dim

    # ---- messages ----------------------------------------------------------------------------------
    def put_messages(self, messages: Sequence[Message], vectors: dict[str, list[float]] | None = None,
                     upsert: bool = False, rows: list[dict] | None = None) -> int:
        """Store messages as chunk rows (``rows``: their ``message_rows``, if the caller has them)."""
        rows = rows if rows is not None else [row for m in messages for row in message_rows(m)]
        if not rows:
            return 0
        if self.vector_dim():
            for row in rows:
                row["vector"] = (vectors or {}).get(row["chunk_id"])
        import pyarrow as pa

        table = pa.Table.from_pylist(rows, schema=self._chunks.schema)
        if upsert:
            # replay after a crash: a message may be half there (some chunks) or whole; replace it
            self._chunks.delete(sql_in("message_id", {m.id for m in messages}))
        self._chunks.add(table)
        self.writes_since_optimize += 1
        return len(rows)

    def delete_messages(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self._chunks.delete(sql_in("message_id", ids))
            self.writes_since_optimize += 1

    def messages(self, ids: Sequence[str]) -> dict[str, Message]:
        if not ids:
            return {}
        rows = (self._chunks.search().where(sql_in("message_id", ids)).select(self._cols())
                .limit(None).to_list())
        grouped: dict[str, list[dict]] = {}
        for r in rows:
            grouped.setdefault(r["message_id"], []).append(r)
        return {mid: message_from_rows(rs) for mid, rs in grouped.items()}

    def around(self, conversation_id: str, since_ms: int, until_ms: int) -> list[dict]:
        """The first chunks of a conversation's messages said in [since_ms, until_ms], oldest first, and
        the one just before and just after that span (to set a message's neighbours' context)."""
        conv = f"chunk_index = 0 AND conversation_id = {sql_str(conversation_id)}"
        cols = ["message_id", "ts_ms", "text", "speaker", "n_chunks", "role", "project", "turn_id", "conversation_id",
                "domain", "type", "engine", "host_app", "priority", "status"]

        # one query for the whole conversation, split here: three (inside, before, after) cost three
        # scans of the same rows, and each query's set-up is most of its time on a small table
        every = self._chunks.search().where(conv).select(cols).limit(None).to_list()
        inside = [r for r in every if since_ms <= r["ts_ms"] <= until_ms]
        before = [r for r in every if r["ts_ms"] < since_ms]
        after = [r for r in every if r["ts_ms"] > until_ms]
        edge = ([max(before, key=lambda r: (r["ts_ms"], r["message_id"]))] if before else []) + \
               ([min(after, key=lambda r: (r["ts_ms"], r["message_id"]))] if after else [])
        return sorted(inside + edge, key=lambda r: (r["ts_ms"], r["message_id"]))

    def set_search_text(self, texts: dict[str, str]) -> None:
        """New search_text for chunks (by chunk id): a message's neighbour changed."""
        if not texts or self._fts_column != "search_text":
            return
        import pyarrow as pa

        data = pa.table({"chunk_id": list(texts), "search_text": list(texts.values())})
        self._chunks.merge_insert("chunk_id").when_matched_update_all().execute(data)
        self.writes_since_optimize += 1

    def old_vectors(self) -> dict[str, tuple[str, list[float]]]:
        """Every chunk's vector with the text it was made from (to keep through a rebuild)."""
        if not self.vector_dim() or self._chunks is None:
            return {}
        table = self._chunks.search().where("vector IS NOT NULL").select(["chunk_id", "speaker", "text", "vector"]) \
            .limit(None).to_arrow()
        made_from = [embed_text(s, t) if self._fts_column == "search_text" else t
                     for s, t in zip(table.column("speaker").to_pylist(), table.column("text").to_pylist())]
        return dict(zip(table.column("chunk_id").to_pylist(), zip(made_from, table.column("vector").to_pylist())))

    def message_ids(self) -> set[str]:
        """Every stored message id."""
        table = self._chunks.search().where("chunk_index = 0").select(["message_id"]).limit(None).to_arrow()
        return set(table.column("message_id").to_pylist())

    def newest_ids(self, where: str = "", limit: int = 0) -> list[str]:
        """The id of every message that passes ``where`` (first chunks only), newest first; the newest
        ``limit`` only, if given. Sorted in Arrow: turning 100k rows into Python dicts holds the GIL
        ~100 ms, and the window stalls; and only the ids asked for become Python strings (100k of
        them hold the GIL ~15 ms, in one call the window cannot cut into)."""
        import pyarrow.compute as pc

        q = self._chunks.search().where("chunk_index = 0" + (f" AND ({where})" if where else ""))
        table = q.select(["message_id", "ts_ms"]).limit(None).to_arrow()
        order = pc.sort_indices(table, sort_keys=[("ts_ms", "descending"), ("message_id", "descending")])
        if limit:
            order = order[:limit]
        return table.column("message_id").take(order).to_pylist()

    def message_heads(self, where: str = "") -> list[dict]:
        """id, time and tags of every message (first chunks only), for listing and stats."""
        q = self._chunks.search().where("chunk_index = 0" + (f" AND ({where})" if where else ""))
        return q.select(["message_id", "ts_ms", "conversation_id", "domain", "type", "engine", "role"]) \
            .limit(None).to_list()

    def count_chunks(self) -> int:
        return self._chunks.count_rows()

    # ---- vectors -----------------------------------------------------------------------------------
    def chunks_without_vectors(self, limit: int) -> list[tuple[str, str]]:
        """(chunk id, the text to embed) of chunks that have no vector yet."""
        if not self.vector_dim():
            return []
        rows = self._chunks.search().where("vector IS NULL").select(["chunk_id", "speaker", "text"]).limit(limit).to_list()
        return [(r["chunk_id"], embed_text(r["speaker"], r["text"])) for r in rows]

    def count_without_vectors(self) -> int:
        return self._chunks.count_rows("vector IS NULL") if self.vector_dim() else self.count_chunks()

    def set_vectors(self, vectors: dict[str, list[float]], table: str = CHUNKS) -> None:
        if not vectors:
            return
        key = "chunk_id" if table == CHUNKS else "id"
        tbl = self._chunks if table == CHUNKS else self._memories
        import pyarrow as pa

        data = pa.table({key: list(vectors), "vector": pa.array(list(vectors.values()),
                                                               pa.list_(pa.float32(), self.vector_dim()))})
        tbl.merge_insert(key).when_matched_update_all().execute(data)
        self.writes_since_optimize += 1

    # ---- search ------------------------------------------------------------------------------------
    def search_text(self, query: str, where: str, limit: int) -> list[tuple[dict, float]]:
        """BM25 over chunk text: (row, score), best first. Rows are narrow (id, time, text,
        chunk count, ``_rowid``); ``rows_by_row_id`` fetches the winners whole."""
        from lancedb.query import MatchQuery

        if not query.strip():
            return []
        q = self._chunks.search(MatchQuery(query, self._fts_column), query_type="fts").with_row_id(True)
        if where:
            q = q.where(where, prefilter=True)
        rows = q.select(_LEG_COLS + ["_score"]).limit(limit).to_list()
        return [(r, float(r["_score"])) for r in rows]

    def search_vector(self, vector: list[float], where: str, limit: int) -> list[tuple[dict, float]]:
        """Nearest chunks by cosine distance: (row, distance), nearest first; rows as in search_text."""
        if not self._dim:
            return []
        q = self._chunks.search(vector, vector_column_name="vector").distance_type("cosine").with_row_id(True)
        if where:
            q = q.where(where, prefilter=True)
        rows = q.select(_LEG_COLS + ["_distance"]).limit(limit).to_list()
        return [(r, float(r["_distance"])) for r in rows]

    def rows_by_row_id(self, row_ids: Sequence[int]) -> list[dict]:
        """Whole chunk rows by row id (cheaper than a filtered scan). Row ids change when the
        table is compacted, so callers check the ids they get back."""
        if not row_ids:
            return []
        return self._chunks.take_row_ids(list(row_ids)).select(self._cols()).to_list()

    # ---- curated memories --------------------------------------------------------------------------
    def put_memories(self, memories: Sequence[Memory], vectors: dict[str, list[float]] | None = None,
                     upsert: bool = False) -> None:
        rows = [m.to_event() for m in memories]
        if not rows:
            return
        if self.vector_dim():
            for row in rows:
                row["vector"] = (vectors or {}).get(row["id"])
        if upsert:
            self._memories.delete(sql_in("id", [m.id for m in memories]))
        import pyarrow as pa

        self._memories.add(pa.Table.from_pylist(rows, schema=self._memories.schema))
        self.writes_since_optimize += 1

    def delete_memories(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if ids:
            self._memories.delete(sql_in("id", ids))
            self.writes_since_optimize += 1

    def memories(self, where: str = "") -> list[Memory]:
        q = self._memories.search()
        if where:
            q = q.where(where)
        rows = q.select(_MEMORY_COLS).limit(None).to_list()
        return sorted((Memory(**{c: r[c] for c in _MEMORY_COLS}) for r in rows), key=lambda m: m.ts_ms)

    def search_memories(self, query: str, limit: int) -> list[tuple[Memory, float]]:
        from lancedb.query import MatchQuery

        if not query.strip():
            return []
        rows = (self._memories.search(MatchQuery(query, "text"), query_type="fts")
                .select(_MEMORY_COLS + ["_score"]).limit(limit).to_list())
        return [(Memory(**{c: r[c] for c in _MEMORY_COLS}), float(r["_score"])) for r in rows]

    def memories_without_vectors(self) -> list[tuple[str, str]]:
        if not self.vector_dim():
            return []
        rows = self._memories.search().where("vector IS NULL").select(["id", "text"]).limit(None).to_list()
        return [(r["id"], r["text"]) for r in rows]

    def count_memories(self) -> int:
        return self._memories.count_rows()

    # ---- upkeep ------------------------------------------------------------------------------------
    def optimize(self) -> None:
        """Fold new rows into the indexes and compact old versions so the table does not grow
        without bound. Versions younger than a minute are kept for readers in other processes."""
        for tbl in (self._chunks, self._memories):
            tbl.optimize(cleanup_older_than=KEEP_OLD_VERSIONS)
        self.writes_since_optimize = 0

    def ensure_filter_indexes(self) -> bool:
        """Bitmap indexes on the filter columns and a BTree on time, once the table is big enough
        for a prefiltered search to need them. Returns True if any was built."""
        from lancedb.index import Bitmap

        if self._chunks.count_rows() < FILTER_INDEX_MIN_ROWS:
            return False
        have = {c for i in self._chunks.list_indices() for c in i.columns}
        built = False
        for column in ("domain", "type", "engine"):
            if column not in have:
                self._chunks.create_index(column, config=Bitmap(), replace=True)
                built = True
        if "ts_ms" not in have:
            self._chunks.create_index("ts_ms", config=self._BTree(), replace=True)
            built = True
        return built

    def ensure_vector_index(self) -> bool:
        """Build an ANN index once there are enough vectors to need one. Returns True if built."""
        from lancedb.index import IvfHnswSq

        if not self.vector_dim() or any("vector" in i.columns for i in self._chunks.list_indices()):
            return False
        with_vectors = self._chunks.count_rows("vector IS NOT NULL")
        if with_vectors < VECTOR_INDEX_MIN_ROWS:
            return False
        partitions = max(1, with_vectors // 8192)  # // 4096 measured slower, no better recall
        self._chunks.create_index("vector", config=IvfHnswSq(distance_type="cosine", num_partitions=partitions),
                                  replace=True)
        return True

    def compaction_due(self, writes: int = 50) -> bool:
        """Whether enough has been written since the last compaction to need one: ``writes`` in this
        process, or as many small fragments left by any process (a command-line edit at a time
        never stays long enough to compact; the next process sees its fragments)."""
        if self.writes_since_optimize >= writes:
            return True
        try:
            return int(self._chunks.stats()["fragment_stats"]["num_small_fragments"]) >= writes
        except (KeyError, TypeError, ValueError, RuntimeError, OSError):
            return False

    def version(self) -> int:
        """The chunk table's current version (cheap: no listing of old versions)."""
        return int(self._chunks.version)

    def disk_versions(self) -> int:
        """Versions kept on disk (lists them all: for benchmarks and tests, not for every command)."""
        return len(self._chunks.list_versions())
