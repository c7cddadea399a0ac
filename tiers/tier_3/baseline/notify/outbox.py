"""An in-memory outbox with delivery bookkeeping."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["CHANNELS", "Message", "Envelope", "Outbox"]

CHANNELS = ("email", "sms")


@dataclass(frozen=True)
class Message:
    channel: str
    to: str
    subject: str
    body: str

    def __post_init__(self) -> None:
        if self.channel not in CHANNELS:
            raise ValueError(f"unknown channel: {self.channel}")


@dataclass
class Envelope:
    id: int
    message: Message
    queued_at: datetime
    attempts: int = 0
    last_failure: datetime | None = None
    sent: bool = False


class Outbox:
    def __init__(self) -> None:
        self._envelopes: dict[int, Envelope] = {}

    def enqueue(self, message: Message, at: datetime) -> int:
        envelope_id = len(self._envelopes) + 1
        self._envelopes[envelope_id] = Envelope(envelope_id, message, at)
        return envelope_id

    def get(self, envelope_id: int) -> Envelope:
        try:
            return self._envelopes[envelope_id]
        except KeyError:
            raise KeyError(f"no envelope {envelope_id}") from None

    def mark_sent(self, envelope_id: int) -> None:
        self.get(envelope_id).sent = True

    def mark_failed(self, envelope_id: int, at: datetime) -> None:
        envelope = self.get(envelope_id)
        envelope.attempts += 1
        envelope.last_failure = at

    def pending(self) -> list[Envelope]:
        return [e for _, e in sorted(self._envelopes.items()) if not e.sent]

    def __len__(self) -> int:
        return len(self._envelopes)
