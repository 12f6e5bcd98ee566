#!/usr/bin/env python3
"""code-interpreter backends: exact output with and without E2B_API_KEY; the key's value never appears.

Usage: backends_test.py CODE_INTERPRETER
Runs with an environment of its own: no AWS variables and an empty HOME (no shared AWS files), so the Bedrock line
is the same on every machine; the Pyodide runtime is the build tree's, beside the library.
"""
import subprocess
import sys
import tempfile

CLI = sys.argv[1]
SECRET = "e2b_0123456789abcdef-not-a-real-key"
failures = []

BEDROCK = ("bedrock: not available\n"
           "  missing: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\n"
           "  how: no AWS credentials: set BedrockOptions::credentials, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,"
           " or profile 'default' in the shared credentials file\n")


def check(name, got, expected):
    if got != expected:
        failures.append(name)
        print(f"FAIL {name}:\n  expected {expected!r}\n  got      {got!r}")
    else:
        print(f"ok   {name}")


with tempfile.TemporaryDirectory(prefix="ci-backends-") as home:
    def run(extra):
        p = subprocess.run([CLI, "backends"], capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin", "HOME": home, **extra})
        return p.returncode, p.stdout, p.stderr

    check("without E2B_API_KEY", run({}), (0, "pyodide: available\n"
                                             "e2b: not available\n"
                                             "  missing: E2B_API_KEY\n"
                                             "  how: set E2B_API_KEY to an API key of your E2B team"
                                             " (or pass E2BOptions::api_key)\n" + BEDROCK, ""))
    with_key = run({"E2B_API_KEY": SECRET})
    check("with E2B_API_KEY", with_key, (0, "pyodide: available\ne2b: available\n" + BEDROCK, ""))
    check("the key's value is never printed", SECRET in with_key[1] + with_key[2], False)
    check("an empty E2B_API_KEY is missing", run({"E2B_API_KEY": ""})[1].splitlines()[1], "e2b: not available")

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
