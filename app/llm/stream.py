"""A streamed reply read on a thread of its own, that any thread can stop at once.

The reply is read by an asyncio task on a private daemon thread (its own event loop, its own async
HTTP client). ``cancel()`` cancels that task — asyncio's public ``Task.cancel`` through
``loop.call_soon_threadsafe`` — which ends a blocked read, a connect or the wait for the response
headers at once and closes the connection; the server sees the client go and stops generating. The
consumer is woken at the same moment, without waiting for the server.
"""
from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import TYPE_CHECKING, AsyncIterator, Callable, Iterator

if TYPE_CHECKING:
    from app.llm.model_server import ChatChunk

log = logging.getLogger("kelvin.model")

_END, _WAKE = object(), object()  # queue markers: the producer is done / cancel() woke the consumer


class _Failure:
    def __init__(self, exc: BaseException):
        self.exc = exc


class ChatStream:
    """Iterate for :class:`~app.llm.model_server.ChatChunk` objects as they arrive; ``text`` is the
    reply so far.

    ``produce`` is an async generator function yielding the chunks (the server kind's wire format);
    ``explain(exc, partial)`` turns what it raises into the plain-words error the consumer gets.
    ``cancel()`` (any thread) ends the iteration promptly and quietly; ``close()`` also waits
    (bounded) for the reader thread."""

    JOIN_S = 2.0

    def __init__(self, host: str, model: str, produce: Callable[[], AsyncIterator["ChatChunk"]],
                 explain: Callable[[BaseException, str], Exception]):
        self.host, self.model, self.text = host, model, ""
        self.notes: list[str] = []  # what the server did oddly but Kelvin coped with (said once, in the log)
        self._produce, self._explain = produce, explain
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._cancelled = self._ended = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._thread = threading.Thread(target=self._run, name="kelvin-model-stream", daemon=True)
        self._thread.start()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    # -- the reader thread ------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            asyncio.run(self._read())
        except Exception as exc:  # noqa: BLE001 — the loop itself failed: tell the consumer
            if not self._cancelled:
                self._queue.put(_Failure(exc))
        finally:
            self._queue.put(_END)

    async def _read(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        try:
            async for chunk in self._produce():
                if self._cancelled:
                    break
                self._queue.put(chunk)
        except asyncio.CancelledError:  # cancel(): the connection is closed on the way out
            pass
        except Exception as exc:  # noqa: BLE001 — handed to the consumer, which explains it
            if not self._cancelled:
                self._queue.put(_Failure(exc))
        finally:
            with self._lock:
                self._loop = self._task = None

    # -- the consumer -------------------------------------------------------------------------------
    def __iter__(self) -> Iterator["ChatChunk"]:
        return self

    def __next__(self) -> "ChatChunk":
        if self._ended or self._cancelled:
            raise StopIteration
        item = self._queue.get()
        if self._cancelled or item is _END or item is _WAKE:
            self._ended = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._ended = True
            log.debug("chat stream from %s failed", self.host, exc_info=item.exc)
            raise self._explain(item.exc, self.text) from None
        self.text += item.text
        self._ended = item.done  # a later cancel() changes nothing
        return item

    def cancel(self) -> None:
        """Stop now, from any thread: iteration ends without error and ``cancelled`` is True."""
        with self._lock:
            if self._ended or self._cancelled:
                return
            self._cancelled = True
            if self._loop is not None and self._task is not None:
                try:
                    self._loop.call_soon_threadsafe(self._task.cancel)
                except RuntimeError:  # the loop closed meanwhile: the reader is done anyway
                    pass
        self._queue.put(_WAKE)

    def close(self) -> None:
        """Cancel (if still running) and wait a bounded time for the reader thread."""
        self.cancel()
        if self._thread is not threading.current_thread():
            self._thread.join(self.JOIN_S)

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
