"""A tiny package installed from a local wheel by the Pyodide tests."""

GREETING = "hello from a local wheel"


def greet(name):
    return f"hello, {name}"
