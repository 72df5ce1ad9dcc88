"""Exception types raised by ieqa.

Every error ieqa raises on purpose derives from :class:`IeqaError`, so callers can
catch the library's errors without catching unrelated bugs.
"""

from __future__ import annotations


class IeqaError(Exception):
    """Base class of every error ieqa raises deliberately."""


class RunStopped(IeqaError):
    """A run stopped on purpose before its end (a judge that failed too many requests in a
    row, or never answered one): never recorded as one row's error, always raised to the
    caller, whose message says what happened and how to resume."""


class UnknownDimensionError(IeqaError, ValueError):
    """A dimension name is neither canonical nor a registered alias."""


class OptionError(IeqaError, ValueError):
    """An input or option of a command's Python function cannot be used as given; ``option``
    names the command-line argument to change (``SCORES``, ``--scale``, ...), so that the
    command reports it as a usage error on that argument."""

    def __init__(self, message: str, *, option: str) -> None:
        super().__init__(message)
        self.option = option


class TrainDataError(IeqaError, ValueError):
    """Training targets, pairs or sampling orders cannot be built from the given inputs."""


class LossInputError(IeqaError, ValueError):
    """A loss or a combination of dimensions received an argument it cannot use (wrong
    shape or dtype, bad parameter)."""


class ManifestError(IeqaError, ValueError):
    """A manifest file is malformed or uses an unsupported format."""


class ImageLoadError(IeqaError, OSError):
    """An image could not be loaded. ``path`` names the file (or ``"<memory>"``)."""

    def __init__(self, path: object, message: str) -> None:
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")

    def __str__(self) -> str:
        return str(self.args[0])


class ImageNotFoundError(ImageLoadError, FileNotFoundError):
    """The image file does not exist."""


class ImageDecodeError(ImageLoadError):
    """The file exists but is not a readable image (corrupt, truncated or unknown format)."""


class ImageTooLargeError(ImageLoadError):
    """The image has more pixels than the configured limit (decompression-bomb guard)."""
