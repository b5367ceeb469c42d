"""The terminal face of the conversation loop (``kelvin chat``: the loop, or one answer with
``--once``), and how a command leaves on SIGTERM or SIGHUP.

Thin: they print what the services do. Ctrl+C during a reply stops the reply (it is kept,
marked as stopped); Ctrl+C or Ctrl+D at the prompt leaves.
"""
from __future__ import annotations

import json
import signal
import sys
import threading
from contextlib import contextmanager

from app.cli.console import ReaderGone, silence_stdout
from app.core.commands import CommandError
from app.core.records import RecordError, clean_output

EXIT_OK, EXIT_ERROR = 0, 1
_KIND_HINT = {
    "not_running": "use --mode recall to answer from memory without a model",
    "model_missing": "pull or load it, or use --mode recall to answer from memory",
    "context": "load the model with a larger context, or use --mode recall to answer from memory",
    "out_of_memory": "try --mode cpu, a smaller model, or wait for the render to finish",
}


QUIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``timeout``, a closed terminal, a logout): Kelvin leaves as on Ctrl+C at
    the prompt, after storing what was said — never killed mid-write."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def leave_on_quit_signals() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` in the main thread, so the command unwinds:
    the writer drains, projects are released (the default would end the process on the spot)."""
    def raise_terminated(signum, frame):
        raise Terminated(signum)

    if threading.current_thread() is threading.main_thread():
        for sig in QUIT_SIGNALS:
            signal.signal(sig, raise_terminated)


@contextmanager
def _ctrl_c_cancels(conversation):
    """While a reply streams, Ctrl+C stops the reply instead of killing Kelvin; SIGTERM and SIGHUP
    stop it too (the partial reply is stored as stopped) and are raised again once the turn is in
    the store, as :class:`Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    quit_signal: list[int] = []

    def on_signal(signum, frame):
        if signum == signal.SIGINT:
            conversation.cancel()
        else:
            quit_signal.append(signum)
            conversation.cancel(f"Kelvin was closed ({signal.Signals(signum).name})")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, *QUIT_SIGNALS)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if quit_signal:
        raise Terminated(quit_signal[0])


def _footer(result) -> str:
    bits = []
    if result.recalled:
        bits.append(f"{len(result.recalled)} past message{'s' if len(result.recalled) != 1 else ''}")
    if result.memories:
        bits.append(f"{len(result.memories)} kept memor{'ies' if len(result.memories) != 1 else 'y'}")
    if result.settings:
        bits.append(f"{len(result.settings)} setting{'s' if len(result.settings) != 1 else ''}")
    looked = ("looked at " + ", ".join(bits)) if bits else "nothing relevant in memory"
    tokens = f" · prompt {result.prompt_tokens:,} tokens" if result.prompt_tokens else (
        f" · prompt ≈{result.window.total:,} tokens" if result.window else "")
    tools = "".join(f"\n  · {line}" for line in result.tool_log)
    return f"  ({result.mode.value} · {looked}{tokens}){tools}"


def result_json(result) -> dict:
    return {
        "status": result.status, "mode": result.mode.value, "text": result.text, "error": result.error or None,
        "question_id": result.question.id if result.question else None,
        "answer_id": result.answer.id if result.answer else None,
        "prompt_tokens": result.prompt_tokens, "prompt_tokens_estimated": result.window.total if result.window else None,
        # how much of the window is retrieved content (every piece distinct), and what was left out as a repeat
        "window": None if result.window is None else {
            "retrieved_tokens": result.window.tokens.get("memories", 0),
            "retrieved_share": round(result.window.retrieved_share, 3), "repeats_left_out": result.window.repeats},
        "looked_at": {"messages": [m.to_json() for m in result.recalled],
                      "memories": [m.to_json() for m in result.memories], "settings": list(result.settings)},
        "tools": result.tool_log,
    }


def chat_once(conversation, question: str, as_json: bool = False) -> int:
    streamed = []
    screen = {"open": True}

    def show(token: str) -> None:
        streamed.append(token)
        if as_json or not screen["open"]:
            return
        try:
            sys.stdout.write(token)
            sys.stdout.flush()
        except (ReaderGone, OSError):  # `kelvin chat --once … | head`: the reader left; the turn is kept
            screen["open"] = False
            silence_stdout()

    try:
        with _ctrl_c_cancels(conversation):
            result = conversation.ask(question, show, fallback=False)
    except Terminated:
        _wait_stored(result)  # (bound: the signal is raised again only once ask() has returned)
        raise
    stored_ok = _wait_stored(result)
    if not screen["open"]:
        return EXIT_OK if result.answered and stored_ok else EXIT_ERROR
    if as_json:
        print(json.dumps(result_json(result), ensure_ascii=False, indent=1))
    elif streamed:
        print()  # end the streamed line
    elif result.answered:
        print(clean_output(result.text))
    if not stored_ok:
        for problem in conversation.commit_problems:
            sys.stderr.write(f"kelvin: {problem}\n")
        return EXIT_ERROR
    if result.answered:
        return EXIT_OK
    if result.status == "cancelled":
        sys.stderr.write("kelvin: stopped; the question and the partial answer are kept\n")
    else:
        hint = _KIND_HINT.get(result.error_kind, "")
        sys.stderr.write(f"kelvin: {result.error}" + (f" ({hint})" if hint else "") + "\n")
    return EXIT_ERROR


def _wait_stored(result, timeout: float = 60.0) -> bool:
    """A one-shot process exits right after: make sure the turn is on disk first."""
    ok = True
    for stored in result.stored:
        try:
            stored.result(timeout=timeout)
        except Exception:  # noqa: BLE001 — reported through commit_problems
            ok = False
    return ok


def chat_loop(conversation, read=input) -> int:
    c = conversation
    print(f"Kelvin — project {c.project} · mode {c.mode.value} · {c.model} at {c.settings.model_host}")
    print("Type a question. /help lists commands; Ctrl+C stops a reply (at the prompt: clears the line); "
          "/quit or Ctrl+D leaves.")
    hello = c.greeting()
    if hello:
        print(f"\n{hello}")
    while True:
        try:
            text = read(f"\n[{c.project}] you ▸ ")
        except Terminated:
            raise
        except KeyboardInterrupt:  # Ctrl+C at the prompt clears the line, as in a shell; it never leaves
            continue
        except EOFError:
            print()
            return EXIT_OK
        if not text.strip():
            continue
        try:
            result = _turn(c, text)
        except (CommandError, RecordError) as exc:
            print(f"  {exc}")
            continue
        if result.status == "command" and text.strip().lower() in ("/quit", "/exit", "/q"):
            return EXIT_OK
        if result.greeting:
            print(f"  {result.greeting}")
        while c.commit_problems:  # a commit failed in the background: say so, once
            print(f"  ! {c.commit_problems.pop(0)}")
        if result.error_kind == "model_missing" and c.backend.can_pull and _offer_pull(c, read):
            continue


def _turn(c, text):
    print("kelvin ▸ ", end="", flush=True)
    streamed = []

    def show(token: str) -> None:
        streamed.append(token)
        sys.stdout.write(token)
        sys.stdout.flush()

    with _ctrl_c_cancels(c):
        result = c.ask(text, show)
    if result.status in ("recall", "command") or not streamed:
        print(clean_output(result.text))
    else:
        print()
    if result.status == "cancelled":
        print("  (stopped — the partial answer is kept)")
    elif result.status in ("cut", "failed"):
        print(f"  ({result.error})")
    if result.status != "command":
        print(_footer(result))
    return result


def _offer_pull(c, read) -> bool:
    try:
        yes = read(f"  Pull {c.model} now? It can take a while. [y/N] ").strip().lower() in ("y", "yes")
    except (EOFError, KeyboardInterrupt):
        return False
    if not yes:
        return False
    from app.llm.errors import OllamaUnavailable

    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: cancel.set()) \
        if threading.current_thread() is threading.main_thread() else None
    try:
        c.backend.pull(c.model, _pull_progress, cancel=cancel)
        if cancel.is_set():
            print("\n  pull stopped; Ollama resumes it next time")
            return False
        print(f"\n  {c.model} is ready; ask again.")
        return True
    except OllamaUnavailable as exc:
        print(f"\n  pull failed: {exc}")
        return False
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _pull_progress(p) -> None:
    if p.total:
        sys.stderr.write(f"\r  {p.status[:30]:30} {100 * (p.completed or 0) / p.total:5.1f}%")
    else:
        sys.stderr.write(f"\r  {p.status[:40]:40}        ")
    sys.stderr.flush()
