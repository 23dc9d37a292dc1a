"""The one exception type the command line turns into a one-line message and exit status 2."""


class InputError(Exception):
    """Bad input from the user (a path, a file, an argument): say it in one line, exit 2."""
