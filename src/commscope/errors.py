"""The one exception type users see: its message is a single clear line."""


class CommscopeError(Exception):
    """An error worth one line on stderr and a non-zero exit."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
