"""Answers to identical requests, kept by the digest of the endpoint and the request's
canonical JSON (keys sorted), least recently used dropped first."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import orjson


def request_key(endpoint: str, request: dict[str, Any]) -> str:
    """The content digest identical requests share, however their keys were ordered."""
    canonical = orjson.dumps(request, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(endpoint.encode() + b"\0" + canonical).hexdigest()


class AnswerCache:
    """A bounded LRU map from request digests to (status, media type, body) answers."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[int, str, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> tuple[int, str, bytes] | None:
        answer = self._entries.get(key)
        if answer is not None:
            self._entries.move_to_end(key)
        return answer

    def put(self, key: str, answer: tuple[int, str, bytes]) -> None:
        if self.capacity <= 0:
            return
        self._entries[key] = answer
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
