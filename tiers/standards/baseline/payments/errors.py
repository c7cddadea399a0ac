"""Exceptions of the payments package."""


class ValidationError(ValueError):
    """An event's payload is invalid; the dispatcher answers it with the message."""
