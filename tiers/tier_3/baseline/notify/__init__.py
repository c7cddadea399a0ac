"""Outgoing customer and staff notifications."""

from notify.outbox import CHANNELS, Envelope, Message, Outbox
from notify.templates import placeholders, render

__all__ = ["CHANNELS", "Envelope", "Message", "Outbox", "placeholders", "render"]
