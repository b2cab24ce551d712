"""Reading ahead on a thread, so that reading one file overlaps the Python work on another.

pyarrow decodes Parquet pages, zlib inflates and hashlib hashes with the interpreter's lock let
go; checking labels and the scoring kernel hold it. ``score`` reads the run on a second thread
from its start, while the labels are read and checked, holding at most a budget of what it
read: both cores of a small machine work, and memory stays bounded.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["ReadAhead"]

T = TypeVar("T")
_END = object()


class _Raised:
    """What the producer raised, to be raised again in the caller's thread."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class ReadAhead(Generic[T]):
    """``items`` in order, produced on a thread from the moment this is made, at most
    ``budget`` (by ``size``) ahead of the caller, always at least one item. What the producer
    raises is raised by ``next``, after the items before it. ``close`` (or leaving a ``with``)
    stops the producer, which finishes the item it is on: use it as a context manager, so
    that a caller that fails before it has read everything lets go of the thread and its file."""

    def __init__(self, items: Iterable[T], budget: int, size: Callable[[T], int]) -> None:
        self._ready: deque[tuple[Any, int]] = deque()
        self._held = 0
        self._stopped = False
        self._changed = threading.Condition()
        self._worker = threading.Thread(target=self._produce, args=(items, budget, size),
                                        name="goldkeeper-read-ahead", daemon=True)
        self._worker.start()

    def _produce(self, items: Iterable[T], budget: int, size: Callable[[T], int]) -> None:
        source = iter(items)
        outcome: Any = _END
        try:
            for item in source:
                weight = size(item)
                with self._changed:
                    while self._ready and self._held + weight > budget and not self._stopped:
                        self._changed.wait()
                    if self._stopped:
                        return
                    self._ready.append((item, weight))
                    self._held += weight
                    self._changed.notify_all()
        except BaseException as error:
            outcome = _Raised(error)
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()  # a generator's own cleanup (its open file), in its own thread
        with self._changed:
            self._ready.append((outcome, 0))
            self._changed.notify_all()

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        with self._changed:
            while not self._ready:
                self._changed.wait()
            item, weight = self._ready[0]
            if item is _END:
                raise StopIteration
            self._ready.popleft()
            self._held -= weight
            if isinstance(item, _Raised):
                self._ready.appendleft((_END, 0))
            self._changed.notify_all()
        if isinstance(item, _Raised):
            raise item.error
        return item

    def close(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        self._worker.join()

    def __enter__(self) -> ReadAhead[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
