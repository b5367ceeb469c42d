"""Kelvin's conversation loop (issue 3): what memory adds to a turn, whether the prompt stays flat
over a long session, and how fast a recall-mode answer is on a 100k store.

1. **overhead**: the retrieve + pack part of a turn (``Conversation._point``, then the
   ``Ingredients`` and ``pack()`` exactly as ``Conversation._answer`` builds them) on a store of N
   messages with real all-MiniLM-L6-v2 vectors, after ``maintain()``. Variants, alternated question by
   question: the query vector precomputed (``MemoryService._query_vector`` answers from a table, so
   ``_point`` runs unchanged minus the embedding), the real local model embedding each question, and
   "as in ask()" (the question is committed first, so the writer embeds it while the turn searches).
   Baselines from the same run: ``svc.search(q, k=5)`` and the search ``_point`` makes.
2. **session**: 500 real turns through ``Conversation.ask`` against the Ollama-protocol test server
   (tests/support/ollama_server.py: real HTTP and the real client, but a fake model: no compute,
   scripted replies, ``prompt_eval_count`` = prompt characters // 4). Generated artist questions,
   replies of varied length, a long log paste every 50 turns. Estimated window (``window.total``)
   and the server's prompt tokens at turns 10/100/250/500 and the max, against num_ctx - reserve.
3. **recall**: ``Conversation`` in ``Mode.RECALL`` on the largest store, ``ask()`` end to end
   (commits the question and the answer to the queue, searches, composes the quote), embedder
   ``none`` (a store built without vectors) and ``st:all-MiniLM-L6-v2``.

Between turns (untimed) the writer is drained and its idle upkeep is run to the end, as happens
while an artist reads an answer (upkeep starts after 1.5 s without writes).

    python bench/conversation.py > bench/results/conversation.json 2> bench/results/conversation.err
    python bench/conversation.py --sizes 2000 --turns 60 --questions 40 --warmup 5 --recall-questions 20  # smoke
"""
from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import common as c

PROJECT = "bench"
DISCARD_HOST = "http://127.0.0.1:9"  # recall mode: nothing answers there, nothing is asked
CHECKPOINTS = (10, 100, 250, 500)

BRIEF = """# Master Project Brief — Nike Air spring campaign

Client: Nike EU. Agency: Studio North. Deliverables: 12 product stills (6000 x 4000, 16-bit TIFF, ACEScg
-> sRGB), 3 turntables (1920 x 1080, 25 fps, 8 s each), 1 hero animation (3840 x 2160, 25 fps, 20 s).

Look: clean studio, soft top light, warm rim, subtle floor reflection, no visible fireflies on the mesh.
Renderer: Octane 2024.1 in Cinema 4D 2025. Farm: 6 x RTX 4090, 24 GB each. Max 12 min per 4K frame.

Naming: NK_<shot>_<version>_<pass>.exr. AOVs: beauty, diffuse, reflection, refraction, emission, crypto
material, crypto object, z-depth, motion vectors. Colour: ACEScg working space, OCIO config v2.1.

Reviews: Tuesday and Friday 15:00 CET with the AD (Anna) and the client producer (Marc).
Deadline: first stills on 14 November, animation on 28 November.
"""


# ---- scripted content ----------------------------------------------------------------------------
def artist_questions(n: int, seed: int) -> list[str]:
    """Varied rendering questions as an artist types them: recall of settled values, why-questions,
    troubleshooting, comparisons, exact settings, short follow-ups."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name, engine, values, unit, alt, problem, para = rng.choice(c.PARAMS)
        scene = rng.choice(c.SCENES)
        v1, v2 = rng.sample(values, 2)
        eng = engine or rng.choice(["Octane", "Redshift", "V-Ray", "Arnold", "Cycles"])
        kind = i % 10
        if kind == 0:
            q = rng.choice(c.FINAL_Q).format(n=rng.choice(["the " + name, alt]), scene=scene)
        elif kind == 1:
            q = rng.choice(c.WHY_Q).format(para=para, scene=scene)
        elif kind == 2:
            q = rng.choice(c.FIRST_Q).format(n=rng.choice(["the " + name, alt]), scene=scene)
        elif kind == 3:
            q = (f"The {scene} render still has {problem}. I'm on {eng}. What should I try first, "
                 f"and did we already touch {alt} on this project?")
        elif kind == 4:
            q = f"Is {name} {c._fmt(v1)}{unit} too much for the {scene}? {para[0].upper() + para[1:]} again."
        elif kind == 5:
            q = f"{name} {c._fmt(v1)}{unit}"
        elif kind == 6:
            q = (f"Compare {name} {c._fmt(v1)}{unit} and {c._fmt(v2)}{unit} for the {scene} stills: which one did the "
                 f"client prefer last time, and what did it cost in render time?")
        elif kind == 7:
            q = rng.choice(["what next?", "ok, and the shadows?", "remind me what we changed today",
                            "thanks, next shot", "what was the last thing we tried?", "why?"])
        elif kind == 8:
            q = (f"{eng} runs out of VRAM on the {scene} at 4K since this morning. We had {name} at "
                 f"{c._fmt(v1)}{unit} yesterday and it was fine. Could {alt} be the cause, or is it the textures?")
        else:
            q = f"how did we deal with {para} before? the {scene} has the same issue now"
        out.append(q)
    return out


def render_log(rng: random.Random, lines: int) -> str:
    """A pasted render log: timestamps, progress, warnings, an error near the end."""
    scene = rng.choice(c.SCENES).replace(" ", "_")
    out = [f"Render crashed overnight on the {scene.replace('_', ' ')}, here's the whole log. What's going on?", ""]
    t = 0
    for i in range(lines):
        t += rng.randint(1, 40)
        stamp = f"2026-11-02 {2 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
        r = rng.random()
        if r < 0.55:
            out.append(f"[{stamp}] INFO  Octane: frame {1000 + i // 20} tile {i % 20 + 1}/20 "
                       f"samples {rng.randint(64, 4096)}/4096 ({rng.random() * 100:.1f}%), "
                       f"{rng.uniform(0.5, 9.0):.2f} Ms/s, VRAM {rng.uniform(9, 23.9):.1f}/24.0 GB")
        elif r < 0.75:
            out.append(f"[{stamp}] INFO  Loading texture tex/{scene}/{rng.choice(['wood', 'metal', 'fabric', 'decal'])}"
                       f"_{rng.randint(1, 99):02d}_{rng.choice(['diff', 'rough', 'nrm', 'disp'])}.exr "
                       f"({rng.randint(4, 180)} MB, {rng.choice([2048, 4096, 8192])}px)")
        elif r < 0.92:
            out.append(f"[{stamp}] WARN  texture cache full ({rng.choice([4096, 8192])} MB), evicting "
                       f"{rng.randint(1, 40)} tiles; out-of-core memory {rng.uniform(1, 12):.1f} GB")
        else:
            out.append(f"[{stamp}] WARN  mesh NK_sole_v{rng.randint(1, 9)} has {rng.randint(1, 900)} "
                       "degenerate triangles; displacement subdivision clamped to level 4")
    out.append(f"[2026-11-02 05:{rng.randint(10, 59)}:00] ERROR CUDA error 700 (an illegal memory access was "
               "encountered) in kernel pathTracing; device 0 out of memory while allocating 1.2 GB")
    out.append("[2026-11-02 05:59:59] FATAL render aborted, 0 frames written")
    return "\n".join(out)


def reply_text(rng: random.Random, words: int) -> str:
    """A scripted assistant reply of about ``words`` words, in Kelvin's register."""
    parts: list[str] = []
    while sum(len(p.split()) for p in parts) < words:
        p = rng.choice(c.PARAMS)
        parts.append(c._assistant(rng, p))
        if rng.random() < 0.2:
            parts.append(f"\n\n1. Set {p[0]} to {c._fmt(rng.choice(p[2]))}{p[3]}.\n2. Render a crop of the worst area."
                         "\n3. Compare with the previous frame before changing anything else.\n\n")
    words_out = " ".join(parts).split(" ")
    return " ".join(words_out[:max(3, words)]).strip()


def session_script(turns: int, seed: int = 3) -> list[tuple[str, str]]:
    """(question, scripted reply) per turn: mostly short questions and 20–250-word replies; every 50
    turns (at 25, 75, …) a pasted render log of 80–500 lines; every 50 turns (at 40, 90, …) a long
    reply of 700–1000 words."""
    rng = random.Random(seed)
    qs = artist_questions(turns, seed + 100)
    script = []
    for t in range(1, turns + 1):
        q = render_log(rng, rng.randint(80, 500)) if t % 50 == 25 else qs[t - 1]
        words = rng.randint(700, 1000) if t % 50 == 40 else int(rng.choice([20, 40, 60, 90, 140, 250]) * rng.uniform(0.7, 1.3))
        script.append((q, reply_text(rng, words)))
    return script


# ---- the test server, answering the background summary calls too --------------------------------
def bench_server():
    """OllamaTestServer whose summary requests (Conversation's background overflow summaries) get a
    short summary instead of taking the next turn's scripted reply (by default the server answers
    the next queued reply, or echoes the whole long message)."""
    from app.services.overflow_summaries import SUMMARY_PROMPT
    from tests.support import ollama_server as ts

    class Handler(ts._Handler):
        def _complete(self, owner, body, chat):  # the /api/chat route calls this with the handler
            msgs = body.get("messages") or []
            if chat and msgs and msgs[0].get("content") == SUMMARY_PROMPT:
                owner.summaries += 1
                with owner._lock:
                    owner._replies.appendleft({"text": (
                        "Overnight render of the shot crashed: CUDA error 700, device 0 out of memory (24 GB) "
                        "while allocating 1.2 GB; texture cache full (8192 MB) with out-of-core use up to 12 GB; "
                        "degenerate triangles on NK_sole, displacement clamped to level 4; 0 frames written."),
                        "tool_calls": []})
            super()._complete(owner, body, chat)

    class Server(ts.OllamaTestServer):
        summaries = 0

        def start(self):
            if self._httpd is None:
                self._stopping.clear()
                self._httpd = ts._HTTPServer(self._bind, Handler, self)
                self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                                name="bench-ollama-test-server", daemon=True)
                self._thread.start()
            return self

    return Server()


# ---- Kelvin ----------------------------------------------------------------------------------------
def build_store(folder: Path, msgs: list[dict], vecs: np.ndarray | None) -> dict:
    """Import ``msgs`` through Kelvin's write path (with their cached MiniLM vectors, or embedder
    none), then maintain(). The store is closed afterwards."""
    if vecs is not None:
        table = {m["text"]: vecs[i] for i, m in enumerate(msgs)}
        svc = c.make_service(folder, c.ST_SPEC, PROJECT, embedder_obj=c.LookupEmbedder(table))
    else:
        svc = c.make_service(folder, "none", PROJECT)
    try:
        t0 = time.perf_counter()
        svc.import_items(c.to_items(msgs, PROJECT))
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        svc.maintain()
        maintain_s = time.perf_counter() - t0
        time.sleep(3.0)  # the writer's one idle upkeep pass
        ix = svc.store().index
        out = {"messages": len(msgs), "vectors": "all-MiniLM-L6-v2" if vecs is not None else None,
               "build_s": round(build_s, 2), "maintain_s": round(maintain_s, 2),
               "indexes": sorted(f"{i.index_type}({','.join(i.columns)})" for i in ix._chunks.list_indices())}
    finally:
        svc.close()
    return out


def open_conversation(folder: Path, embedder: str, host: str, mode):
    from app.services.conversation import BRIEF_FILE, Conversation
    from app.services.memory import MemoryService
    from app.config import load

    settings = load({"data_dir": str(folder), "project": PROJECT, "embedder": embedder, "ollama_host": host})
    svc = MemoryService(settings)
    conv = Conversation(settings, svc, mode=mode)
    (svc.store(conv.project).folder / BRIEF_FILE).write_text(BRIEF, encoding="utf-8")
    if embedder != "none":
        svc.embedder.dim()  # load the model now, not in the first timed call
    return svc, conv


def settle(svc) -> None:
    """What happens while the artist reads: the writer drains, then its idle upkeep runs to the end."""
    svc.flush()
    while svc.writer.call(svc._upkeep).result()[0]:
        pass


def window_for(conv, turn, question: str, question_id: str, recent, point):
    """The window exactly as Conversation._answer packs it (Conversation._window)."""
    recalled, memories, settings, *repeats = point  # older Kelvins return no count of repeats
    return conv._window(turn, question, question_id, recent, recalled, memories, settings, *repeats)


# ---- 1. overhead -------------------------------------------------------------------------------------
def bench_overhead(folder: Path, questions: list[str], args, server) -> dict:
    from app.core.commands import Mode
    from app.core.records import new_id
    from app.services.retrieval import MEMORIES_K, NOT_FOR_RETRIEVAL, RETRIEVE_K

    svc, conv = open_conversation(folder, c.ST_SPEC, server.host, Mode.GPU)
    out: dict = {}
    try:
        project = conv.project
        t0 = time.perf_counter()
        vectors = dict(zip(questions, svc.embedder.embed(questions, kind="query")))
        out["batch_embed_questions_s"] = round(time.perf_counter() - t0, 2)
        # the store as maintain() left it, before any turn: the same search as search_latency.py
        fresh = [(q,) for q in questions]
        out["search_k5_before_any_turn_ms"] = c.time_calls(
            lambda q: svc.search(q, 5, project=project, query_vector=vectors[q]), fresh, args.warmup)
        # three real turns first, so the window carries recent turns and a calibration, as mid-session
        rng = random.Random(9)
        for q in artist_questions(3, 77):
            server.queue_reply(reply_text(rng, rng.randint(40, 160)))
            conv.ask(q)
        settle(svc)
        conv.wait_background()
        recent = conv.recent()
        turn = conv._new_turn()

        precomputed = {"on": False}
        real_query_vector = svc._query_vector

        def query_vector(query, stores):  # the embedding step of search, answered from the table
            return vectors[query] if precomputed["on"] else real_query_vector(query, stores)

        svc._query_vector = query_vector
        skip_n = len(recent) + 1

        def search_k5(q, qid):
            svc.search(q, 5, project=project, query_vector=vectors[q])

        def search_as_point(q, qid):
            svc.search(q, k=RETRIEVE_K + skip_n, project=project, drop_status=NOT_FOR_RETRIEVAL, query_vector=vectors[q])

        def search_memories(q, qid):
            svc.search_memories(q, k=MEMORIES_K, project=project)

        parts: dict[str, list[float]] = {"point_precomputed": [], "pack_precomputed": []}
        windows: list[int] = []
        recalled_n: list[int] = []

        def overhead_precomputed(q, qid):
            precomputed["on"] = True
            try:
                t0 = time.perf_counter()
                r = conv.recent()
                point = conv._point(turn, q, qid, r)
                t1 = time.perf_counter()
                w = window_for(conv, turn, q, qid, r, point)
                t2 = time.perf_counter()
            finally:
                precomputed["on"] = False
            if timing:
                parts["point_precomputed"].append(t1 - t0)
                parts["pack_precomputed"].append(t2 - t1)
                windows.append(w.total)
                recalled_n.append(len(w.recalled))

        def overhead_embedding(q, qid):
            r = conv.recent()
            window_for(conv, turn, q, qid, r, conv._point(turn, q, qid, r))

        def overhead_as_in_ask(q, qid):  # ask() commits the question before it searches
            question, _ = svc.commit(q, role="user", conversation_id=conv.conversation_id, turn_id=new_id("t"),
                                     project=project)
            r = conv.recent()
            window_for(conv, turn, q, question.id, r, conv._point(turn, q, question.id, r))

        rotating = {"search_k5": search_k5, "search_as_in_point": search_as_point, "search_memories": search_memories,
                    "turn_overhead_precomputed_vector": overhead_precomputed,
                    "turn_overhead_with_query_embedding": overhead_embedding}
        samples: dict[str, list[float]] = {k: [] for k in list(rotating) + ["turn_overhead_as_in_ask"]}
        names = list(rotating)
        timing = False
        c.log(f"  timing {len(questions)} questions × {len(samples)} variants (after {args.warmup} warm-up rounds) …")
        for i, q in enumerate(questions[: args.warmup] + questions):
            timing = i >= args.warmup
            qid = new_id("m")
            order = names[i % len(names):] + names[: i % len(names)]  # rotate who goes first
            for name in order:
                t0 = time.perf_counter()
                rotating[name](q, qid)
                if timing:
                    samples[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            overhead_as_in_ask(q, qid)
            if timing:
                samples["turn_overhead_as_in_ask"].append(time.perf_counter() - t0)
            settle(svc)  # the committed question is written (and embedded) before the next round
        svc._query_vector = real_query_vector
        out["latency_ms"] = {k: c.summary_ms(v) for k, v in samples.items()}
        out["latency_ms"].update({k: c.summary_ms(v) for k, v in parts.items()})
        lat = out["latency_ms"]
        base = lat["search_k5"]
        out["ratio_vs_search_k5"] = {k: {"p50": round(lat[k]["p50"] / base["p50"], 2),
                                         "p95": round(lat[k]["p95"] / base["p95"], 2)}
                                     for k in samples if k != "search_k5"}
        out["window_total_tokens"] = {"p50": int(np.percentile(windows, 50)), "max": int(max(windows)),
                                      "min": int(min(windows))}
        out["recalled_in_window"] = {"p50": float(np.percentile(recalled_n, 50)), "min": int(min(recalled_n))}
        out["recent_messages_in_window"] = len(recent)
        out["questions"] = len(questions)
        out["table_versions_at_end"] = svc.store().index.disk_versions()
    finally:
        conv.close()
        svc.close()
    return out


def bench_pastes(folder: Path, reps: int = 3) -> list[dict]:
    """Diagnosis: what one pasted render log costs each step of a turn on this store (the whole
    question is the search query and is embedded whole; the writer embeds it as a document).
    A turn pays the first call (a new paste: fuse's verbatim regex is compiled for it)."""
    from app.core.chunking import split
    from app.core.commands import Mode
    from app.core.fusion import Candidate, fuse
    from app.core.tokens import clip
    from app.services.retrieval import NOT_FOR_RETRIEVAL, RETRIEVE_K
    from app.services.memory import CANDIDATES_PER_K

    svc, conv = open_conversation(folder, c.ST_SPEC, DISCARD_HOST, Mode.RECALL)
    rng = random.Random(5)
    out = []
    try:
        ix = svc.store(conv.project).index
        limit = max(20, (RETRIEVE_K + 7) * CANDIDATES_PER_K)
        for lines in (100, 300, 500):
            paste = render_log(rng, lines)
            steps: dict[str, list[float]] = {}

            def timed(name, fn):
                t0 = time.perf_counter()
                r = fn()
                steps.setdefault(name, []).append(time.perf_counter() - t0)
                return r

            for _ in range(reps):
                v = timed("embed_as_query", lambda: svc.embedder.embed([paste], kind="query")[0])
                th = timed("fts_leg", lambda: ix.search_text(paste, "", limit))
                vh = timed("vector_leg", lambda: ix.search_vector(v, "", limit))
                cands = ([Candidate(x["message_id"], x["ts_ms"], x["text"], score=s) for x, s in th],
                         [Candidate(x["message_id"], x["ts_ms"], x["text"], score=1.0 - d) for x, d in vh])
                timed("fuse", lambda: fuse(*cands, paste))
                timed("memory_search_total", lambda: svc.search(paste, k=RETRIEVE_K + 7, project=conv.project,
                                                                drop_status=NOT_FOR_RETRIEVAL, query_vector=v))
                timed("search_memories", lambda: svc.search_memories(paste, k=4, project=conv.project))
                timed("clip_question_for_window", lambda: clip(paste, 2048, "x"))
            chunks = split(paste)
            timed("embed_as_document_on_writer", lambda: svc.embedder.embed(chunks))
            out.append({"chars": len(paste), "chunks": len(chunks),
                        "first_call_ms": {k: round(x[0] * 1000, 1) for k, x in steps.items()},
                        "median_ms": {k: round(float(np.median(x)) * 1000, 1) for k, x in steps.items()}})
    finally:
        conv.close()
        svc.close()
    return out


# ---- 2. session --------------------------------------------------------------------------------------
def bench_session(folder: Path, embedder: str, script: list[tuple[str, str]], server) -> dict:
    from app.core.commands import Mode
    from app.core.context import Budget

    svc, conv = open_conversation(folder, embedder, server.host, Mode.GPU)
    budget: Budget = conv.budget
    rows = []
    summaries0 = server.summaries
    try:
        for t, (q, reply) in enumerate(script, 1):
            server.queue_reply(reply)
            t0 = time.perf_counter()
            res = conv.ask(q)
            wall = time.perf_counter() - t0
            leftover = len(server._replies)
            if leftover:  # the reply was not taken by this turn's answer: never expected
                server._replies.clear()
            w = res.window
            rows.append({"turn": t, "status": res.status, "ask_ms": round(wall * 1000, 2),
                         "window_total": w.total if w else None, "sections": dict(w.tokens) if w else None,
                         "prompt_tokens": res.prompt_tokens, "question_chars": len(q), "reply_chars": len(reply),
                         "reply_matches": res.text == reply, "folded": len(w.folded) if w else 0,
                         "clipped": len(w.clipped) if w else 0, "recalled": len(w.recalled) if w else 0,
                         "num_predict": w.num_predict if w else None, "reply_left_in_queue": leftover,
                         **window_waste(w, q)})
            if t % 50 == 0:
                c.log(f"  turn {t}: window {rows[-1]['window_total']}, prompt_tokens {res.prompt_tokens}, "
                      f"ask {rows[-1]['ask_ms']:.0f} ms")
            settle(svc)
        versions = svc.store().index.disk_versions()
        ratio = conv.calibration[conv.model].ratio
    finally:
        conv.close()
        svc.close()
    return summarise_session(rows, budget, embedder, server.summaries - summaries0, versions, ratio)


def waste_summary(rows: list[dict]) -> dict:
    total = sum(r["total_tokens"] for r in rows)
    retrieved = sum(r["retrieved_tokens"] for r in rows)
    repeated = sum(r["repeated_tokens"] for r in rows)
    return {"retrieved_share_of_window": round(retrieved / total, 4) if total else 0.0,
            "distinct_retrieved_share_of_window": round((retrieved - repeated) / total, 4) if total else 0.0,
            "repeated_share_of_retrieved": round(repeated / retrieved, 4) if retrieved else 0.0,
            "turns_with_a_repeat": sum(r["repeated_pieces"] > 0 for r in rows),
            "repeated_pieces": sum(r["repeated_pieces"] for r in rows),
            "retrieved_pieces": sum(r["retrieved_pieces"] for r in rows)}


def window_waste(w, question: str) -> dict:
    """What of the window's retrieved content (memories and past messages) was there already or
    twice: the question itself, a text of the last turns, another retrieved piece with the same
    words. Computed from the window alone (any Kelvin version), not from Kelvin's own count."""
    import re

    if w is None:
        return {"retrieved_tokens": 0, "repeated_tokens": 0, "repeated_pieces": 0, "retrieved_pieces": 0,
                "total_tokens": 0}

    def words(text: str) -> str:
        return " ".join(re.findall(r"\w+", text.casefold()))

    seen = {words(question)} | {words(m["content"]) for m in w.messages[1:] if m.get("role") in ("user", "assistant")}
    pieces = [x.text for x in w.memories] + [x.text for x in w.recalled]
    repeated = chars = 0
    rep_chars = 0
    for text in pieces:
        key = words(text)
        chars += len(text)
        if key in seen:
            repeated += 1
            rep_chars += len(text)
        seen.add(key)
    retrieved = w.tokens.get("memories", 0)
    return {"retrieved_tokens": retrieved, "repeated_pieces": repeated, "retrieved_pieces": len(pieces),
            "repeated_tokens": round(retrieved * rep_chars / chars) if chars else 0, "total_tokens": w.total}


def summarise_session(rows: list[dict], budget, embedder: str, summaries: int, versions: int, ratio: float) -> dict:
    n = len(rows)
    limit = budget.num_ctx - budget.reserve
    totals = np.array([r["window_total"] for r in rows])
    ptoks = np.array([r["prompt_tokens"] or 0 for r in rows])
    walls = np.array([r["ask_ms"] for r in rows])
    at = {}
    for t in sorted({x for x in CHECKPOINTS if x <= n} | {n}):
        r = rows[t - 1]
        lo, hi = max(0, t - 6), min(n, t + 5)
        at[str(t)] = {"window_total": r["window_total"], "prompt_tokens": r["prompt_tokens"],
                      "sections": r["sections"], "ask_ms": r["ask_ms"],
                      "ask_ms_median_turns_%d_%d" % (lo + 1, hi): round(float(np.median(walls[lo:hi])), 2),
                      "question_chars": r["question_chars"], "reply_chars": r["reply_chars"]}
    buckets = []
    for lo in range(0, n, 50):
        sl = slice(lo, min(n, lo + 50))
        buckets.append({"turns": f"{lo + 1}-{min(n, lo + 50)}", "window_p50": int(np.median(totals[sl])),
                        "window_max": int(totals[sl].max()), "prompt_tokens_p50": int(np.median(ptoks[sl])),
                        "prompt_tokens_max": int(ptoks[sl].max()), "ask_ms_p50": round(float(np.median(walls[sl])), 2),
                        "ask_ms_max": round(float(walls[sl].max()), 2)})
    paste = [r for r in rows if r["question_chars"] > 4000]
    plain = [r for r in rows if r["question_chars"] <= 4000]
    return {
        "embedder": embedder, "turns": n, "num_ctx": budget.num_ctx, "answer_reserve": budget.reserve,
        "budget_for_prompt": limit,
        "statuses": {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})},
        "replies_not_matching_script": sum(not r["reply_matches"] for r in rows),
        "turns_with_reply_left_in_queue": sum(r["reply_left_in_queue"] > 0 for r in rows),
        "at_turn": at,
        "max": {"window_total": int(totals.max()), "window_total_turn": int(totals.argmax()) + 1,
                "window_sections_at_max": rows[int(totals.argmax())]["sections"],
                "prompt_tokens": int(ptoks.max()), "prompt_tokens_turn": int(ptoks.argmax()) + 1,
                "ask_ms": round(float(walls.max()), 2), "ask_ms_turn": int(walls.argmax()) + 1},
        "turns_over_budget": {"window_total": int((totals > limit).sum()), "prompt_tokens": int((ptoks > limit).sum()),
                              "prompt_tokens_over_num_ctx": int((ptoks > budget.num_ctx).sum())},
        "window_total_p50": int(np.median(totals)), "prompt_tokens_p50": int(np.median(ptoks)),
        "per_50_turns": buckets,
        "ask_ms": c.summary_ms([r["ask_ms"] / 1000 for r in rows]),
        "ask_ms_plain_questions": c.summary_ms([r["ask_ms"] / 1000 for r in plain]) if plain else None,
        "paste_turns": [{"turn": r["turn"], "question_chars": r["question_chars"], "ask_ms": r["ask_ms"],
                         "window_total": r["window_total"], "prompt_tokens": r["prompt_tokens"],
                         "sections": r["sections"], "clipped": r["clipped"]} for r in paste],
        "turns_with_folded_recent": sum(r["folded"] > 0 for r in rows),
        "turns_with_clipped_text": sum(r["clipped"] > 0 for r in rows),
        "recalled_in_window_p50": float(np.median([r["recalled"] for r in rows])),
        "window_waste": waste_summary(rows),
        "background_summary_calls": summaries,
        "calibration_ratio_at_end": round(ratio, 3),
        "table_versions_at_end": versions,
    }


# ---- 3. recall mode ----------------------------------------------------------------------------------
def bench_recall(folder: Path, embedder: str, questions: list[str], warmup: int) -> dict:
    from app.core.commands import Mode

    svc, conv = open_conversation(folder, embedder, DISCARD_HOST, Mode.RECALL)
    ask, committed, statuses = [], [], {}
    try:
        for i, q in enumerate(questions[:warmup] + questions):
            t0 = time.perf_counter()
            res = conv.ask(q)
            t1 = time.perf_counter()
            svc.flush()  # both commits (question, quoted answer) written
            t2 = time.perf_counter()
            if i >= warmup:
                ask.append(t1 - t0)
                committed.append(t2 - t0)
                statuses[res.status] = statuses.get(res.status, 0) + 1
            settle(svc)
        versions = svc.store().index.disk_versions()
    finally:
        conv.close()
        svc.close()
    half = len(ask) // 2
    return {"embedder": embedder, "questions": len(ask), "statuses": statuses,
            "ask_ms": c.summary_ms(ask), "ask_until_committed_ms": c.summary_ms(committed),
            "ask_p50_first_half_ms": round(float(np.median(ask[:half])) * 1000, 2) if half else None,
            "ask_p50_second_half_ms": round(float(np.median(ask[half:])) * 1000, 2),
            "table_versions_at_end": versions}


# ---- main --------------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="store sizes for the overhead part (multiples of 100); "
                                                            "recall mode and the large-store session use the largest")
    ap.add_argument("--questions", type=int, default=200, help="timed questions per overhead variant")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--recall-questions", type=int, default=100)
    ap.add_argument("--parts", default="overhead,paste,recall,session")
    ap.add_argument("--workdir", help="where the stores go (default: a temp folder, removed afterwards)")
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    parts = set(args.parts.split(","))
    big = sizes[-1]
    doc: dict = {"benchmark": "conversation", "machine": c.machine_info(),
                 "setup": {"sizes": sizes, "questions": args.questions, "warmup": args.warmup, "turns": args.turns,
                           "recall_questions": args.recall_questions, "parts": sorted(parts),
                           "corpus": "common.scale_corpus (seed 11), every message with its real all-MiniLM-L6-v2 vector",
                           "between_turns": "untimed: writer drained, then idle upkeep run until it has nothing left",
                           "brief": f"Master_Project_Brief.md of {len(BRIEF)} characters in every project",
                           "model": "tests/support/ollama_server.OllamaTestServer (fake model: scripted replies, "
                                    "prompt_eval_count = prompt chars // 4, no compute time)"}}
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="kelvin-bench-conv-"))
    msgs = c.scale_corpus(conversations=big // 100, per_conversation=100)
    vecs = c.cached_vectors([m["text"] for m in msgs])
    server = bench_server().start()
    results: dict = {"stores": {}}
    try:
        questions = artist_questions(args.questions, 21)
        for n in sizes:
            if not ("overhead" in parts or (n == big and parts & {"paste", "recall", "session"})):
                continue
            folder = workdir / f"st-{n}"
            c.log(f"[{n:,}] building the store (cached MiniLM vectors) …")
            results["stores"][f"st_{n}"] = build_store(folder, msgs[:n], vecs[:n])
            if "overhead" in parts:
                c.log(f"[{n:,}] overhead per turn …")
                results.setdefault("overhead", {})[str(n)] = bench_overhead(folder, questions, args, server)
            if n == big and "paste" in parts:
                c.log(f"[{n:,}] pasted logs, step by step …")
                results["paste_steps"] = bench_pastes(folder)
        recall_qs = artist_questions(args.recall_questions, 31)
        rwarm = min(10, args.recall_questions)
        if "recall" in parts:
            c.log(f"[{big:,}] recall mode, embedder st …")
            results.setdefault("recall", {})["st"] = bench_recall(workdir / f"st-{big}", c.ST_SPEC, recall_qs, rwarm)
            c.log(f"[{big:,}] building a store without vectors (embedder none) …")
            results["stores"][f"none_{big}"] = build_store(workdir / f"none-{big}", msgs, None)
            c.log(f"[{big:,}] recall mode, embedder none …")
            results["recall"]["none"] = bench_recall(workdir / f"none-{big}", "none", recall_qs, rwarm)
        if "session" in parts:
            script = session_script(args.turns)
            results["session_script"] = {
                "turns": len(script), "question_chars_p50": int(np.median([len(q) for q, _ in script])),
                "pastes": [{"turn": t, "chars": len(q)} for t, (q, _) in enumerate(script, 1) if len(q) > 4000],
                "reply_words_p50": int(np.median([len(r.split()) for _, r in script])),
                "reply_words_max": max(len(r.split()) for _, r in script)}
            c.log(f"session: {len(script)} turns, new project, embedder none …")
            results.setdefault("session", {})["new_project_none"] = bench_session(workdir / "session-none", "none",
                                                                                  script, server)
            c.log(f"session: {len(script)} turns on the {big:,} store, embedder st …")
            results["session"][f"store_{big}_st"] = bench_session(workdir / f"st-{big}", c.ST_SPEC, script, server)
    finally:
        server.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    doc["results"] = results
    doc["bench_process_peak_rss_mib"] = c.peak_rss_mib()
    c.emit(doc)


if __name__ == "__main__":
    main()
