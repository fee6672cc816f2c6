"""``Batcher``: dynamic batching of one model's concurrent requests, run off the event loop, answered one by one.

Requests wait in a bounded queue. The worker takes the first, then gathers the requests that arrive within
``max_delay_ms`` and share its batch key (the request's ``params``) until ``max_batch_size`` inputs, runs them as
one call in a thread, and hands each request its own slice of the results. A lone request after a batch of one
(no concurrent traffic) runs at once instead of waiting out the delay: a client alone pays no batching delay,
and under load the requests that queue while a batch runs form the next one. A batch that fails is re-run request by
request, so that one request's bad input never fails the others and no answer depends on its batch-mates.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

#: runs one batch: ``(inputs, key) -> one result per input``; called in a worker thread, one batch at a time
BatchFn = Callable[[list[Any], Hashable], Sequence[Any]]


class QueueFull(Exception):
    """The model's queue holds ``max_queue`` requests; the app answers 503 with ``Retry-After``."""

    def __init__(self, model: str, max_queue: int, retry_after: int = 1) -> None:
        super().__init__(f"model {model!r} has {max_queue} requests waiting (--max-queue); retry after "
                         f"{retry_after} s or raise --max-queue")
        self.retry_after = retry_after


class BatcherStopped(Exception):
    """The server is shutting down and takes no new requests."""


@dataclass
class _Request:
    inputs: list[Any]
    key: Hashable
    future: asyncio.Future = field(repr=False)


class Batcher:
    """Gathers concurrent requests to one model into batches.

    Example::

        batcher = Batcher("digits", run, max_batch_size=16, max_delay_ms=5, max_queue=256)
        batcher.start()
        results, size = await batcher.submit([image_a, image_b])  # one result per input
        await batcher.stop()                                          # drains what is queued

    Args:
        name: the model's name, for messages.
        run: runs one batch (see :data:`BatchFn`).
        max_batch_size: the most inputs in one call (a request with more runs alone, whole).
        max_delay_ms: how long the first request of a batch waits for others.
        max_queue: the most requests waiting; one more raises :class:`QueueFull`.
        on_batch: called with each batch's input count (metrics).
    """

    def __init__(self, name: str, run: BatchFn, *, max_batch_size: int = 16, max_delay_ms: float = 5.0,
                 max_queue: int = 256, on_batch: Callable[[int], None] | None = None) -> None:
        self.name, self.run = name, run
        self.max_batch_size, self.max_delay = int(max_batch_size), float(max_delay_ms) / 1000.0
        self.max_queue = int(max_queue)
        self.on_batch = on_batch
        self._queue: collections.deque[_Request] = collections.deque()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._last_requests = 2  # requests in the last batch: until one ran alone, expect company

    @property
    def depth(self) -> int:
        """Requests waiting (not yet taken into a batch)."""
        return len(self._queue)

    def start(self) -> None:
        """Start the worker on the running event loop."""
        self._wake = asyncio.Event()
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._work(), name=f"batcher-{self.name}")

    async def stop(self) -> None:
        """Refuse new requests, answer every queued one, then end the worker."""
        self._stopping = True
        if self._task is not None:
            assert self._wake is not None
            self._wake.set()
            await self._task
            self._task = None

    async def submit(self, inputs: Sequence[Any], key: Hashable = ()) -> tuple[list[Any], int]:
        """Queue one request's inputs; returns their results in order and the size of the batch that ran them
        (the exception of a failed request raises).

        Raises:
            QueueFull: ``max_queue`` requests are already waiting.
            BatcherStopped: the server is shutting down.
        """
        if self._stopping or self._task is None:
            raise BatcherStopped(f"model {self.name!r} is not taking requests (the server is stopping)")
        if len(self._queue) >= self.max_queue:
            raise QueueFull(self.name, self.max_queue, retry_after=max(1, math.ceil(self.max_delay * 4)))
        request = _Request(list(inputs), key, asyncio.get_running_loop().create_future())
        self._queue.append(request)
        assert self._wake is not None
        self._wake.set()
        return await request.future

    async def _next(self) -> bool:
        """Wait until the queue holds a request; ``False`` once stopping with nothing left to answer."""
        assert self._wake is not None
        while not self._queue and not self._stopping:
            self._wake.clear()
            await self._wake.wait()
        return bool(self._queue)

    def _waiting_inputs(self) -> int:
        """Inputs queued under the head request's key (what the next batch could hold)."""
        key = self._queue[0].key
        return sum(len(r.inputs) for r in self._queue if r.key == key)

    def _gather(self) -> list[_Request]:
        """The requests of the next batch from the head of the queue: the first, then those of its key that fit."""
        first = self._queue.popleft()
        batch, size, kept = [first], len(first.inputs), collections.deque()
        while self._queue and size < self.max_batch_size:
            request = self._queue.popleft()
            if request.key == first.key and size + len(request.inputs) <= self.max_batch_size:
                batch.append(request)
                size += len(request.inputs)
            else:
                kept.append(request)  # another key, or too big for this batch: first of a later one
        self._queue.extendleft(reversed(kept))
        return batch

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._wake is not None
        while await self._next():
            deadline = loop.time() + self.max_delay
            alone = self._last_requests == 1 and len(self._queue) == 1
            while not alone and not self._stopping and self._waiting_inputs() < self.max_batch_size:
                left = deadline - loop.time()
                if left <= 0:
                    break
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), left)
                except asyncio.TimeoutError:
                    break
            batch = self._gather()
            self._last_requests = len(batch)
            await self._run(batch)

    async def _run(self, batch: list[_Request]) -> None:
        inputs = [x for request in batch for x in request.inputs]
        if self.on_batch is not None:
            self.on_batch(len(inputs))
        try:
            results = await asyncio.to_thread(self.run, inputs, batch[0].key)
            if len(results) != len(inputs):
                raise RuntimeError(f"model {self.name!r} returned {len(results)} results for {len(inputs)} inputs")
        except Exception as err:  # noqa: BLE001  (re-run alone: only the guilty request gets its error)
            if len(batch) == 1:
                _settle(batch[0], error=err)
                return
            logger.info("batch of %d requests to %s failed (%s); answering them one by one", len(batch), self.name,
                        err)
            for request in batch:
                await self._run([request])
            return
        start = 0
        for request in batch:
            _settle(request, results=(list(results[start:start + len(request.inputs)]), len(inputs)))
            start += len(request.inputs)


def _settle(request: _Request, *, results: tuple[list[Any], int] | None = None,
            error: BaseException | None = None) -> None:
    if request.future.done():  # the client went away
        return
    if error is not None:
        request.future.set_exception(error)
    else:
        request.future.set_result(results)
