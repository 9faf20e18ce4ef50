"""The error raised for bytes that are not a usable compiled kernel object."""


class CorruptObjectError(ValueError):
    """A compiled object that cannot be read (wrong format, truncated, altered); the message is one line."""
