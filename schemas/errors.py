"""The project's error for bad input, which every layer raises and the `vhd` command reports as one line.

`UserError` is a mistake of whoever gave the input (an option out of range, an unknown family, a warehouse that is
not there, a file that is not JSON): its message names the problem and the fix, and `vhd` prints it as one
`error: ...` line with exit code 2. Any other exception is a bug and keeps its traceback, a stray `ValueError`
included. It subclasses ValueError, so callers that catch ValueError (pydantic validators, library users) still do.
This module imports nothing, so every package can raise it.
"""


class UserError(ValueError):
    """Bad input: the message is one line that names the problem and how to fix it."""
