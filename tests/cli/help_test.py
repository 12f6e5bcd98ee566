#!/usr/bin/env python3
"""code-interpreter's help texts against docs/cli.md, and its answers to bad usage: exact text and exit status.

Usage: help_test.py CODE_INTERPRETER DOCS_CLI_MD VERSION
"""
import re
import subprocess
import sys

CLI, DOCS, VERSION = sys.argv[1], sys.argv[2], sys.argv[3]
SUBCOMMANDS = ["run", "repl", "backends", "list", "kill", "sweep", "packages", "mcp", "help"]
failures = []


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    return p.returncode, p.stdout, p.stderr


def check(name, got, expected):
    if got != expected:
        failures.append(name)
        print(f"FAIL {name}:\n  expected {expected!r}\n  got      {got!r}")
    else:
        print(f"ok   {name}")


with open(DOCS, encoding="utf-8") as f:
    docs = f.read()
blocks = dict(re.findall(r"<!-- help:([a-z-]+) -->\n```text\n(.*?)```\n", docs, re.S))
check("docs/cli.md shows every help", sorted(blocks), sorted(SUBCOMMANDS + ["code-interpreter"]))

check("--help is the page's text", run("--help"), (0, blocks["code-interpreter"], ""))
check("help alone is the tool's help", run("help"), (0, blocks["code-interpreter"], ""))
for name in SUBCOMMANDS:
    check(f"help {name} is the page's text", run("help", name), (0, blocks[name], ""))
    if name != "help":
        check(f"{name} --help is the same", run(name, "--help"), (0, blocks[name], ""))
check("--version", run("--version"), (0, f"code-interpreter {VERSION}\n", ""))

TOOL_USAGE = "usage: code-interpreter [--help | --version] SUBCOMMAND [ARGS]\n"


def usage_of(name):
    text = blocks[name]
    return text[: text.index("\n\n") + 1] + f"'code-interpreter help {name}' describes it.\n"


check("no subcommand", run(), (64, "", "code-interpreter: no subcommand given\n" + TOOL_USAGE))
check("an unknown subcommand", run("frob"), (64, "", "code-interpreter: unknown subcommand 'frob'\n" + TOOL_USAGE))
check("an unknown option before the subcommand", run("--frob"),
      (64, "", "code-interpreter: unknown option --frob\n" + TOOL_USAGE))
check("a long unknown subcommand is cut, control characters hidden", run("x" * 40 + "\x1b"),
      (64, "", "code-interpreter: unknown subcommand '" + "x" * 32 + "...'\n" + TOOL_USAGE))
check("help of an unknown subcommand", run("help", "frob"),
      (64, "", "code-interpreter: unknown subcommand 'frob'\n" + usage_of("help")))
check("mcp: an unknown option", run("mcp", "--frob"),
      (64, "", "code-interpreter: unknown option --frob\n" + usage_of("mcp")))
check("mcp: --max-sandboxes out of range", run("mcp", "--max-sandboxes", "0"),
      (64, "", "code-interpreter: --max-sandboxes takes a whole number from 1 to 1000\n" + usage_of("mcp")))
check("mcp: --timeout above --max-timeout", run("mcp", "--timeout", "60", "--max-timeout", "10"),
      (64, "", "code-interpreter: --timeout must not be more than --max-timeout\n" + usage_of("mcp")))
check("mcp: a backend the factory refuses", run("mcp", "--backend", "frob"),
      (64, "", "code-interpreter: configuration: unknown backend in 'backend' (known: pyodide, e2b, bedrock)\n"
       + usage_of("mcp")))
check("run: an unknown option", run("run", "--frob", "-c", "1"),
      (64, "", "code-interpreter: unknown option --frob\n" + usage_of("run")))
check("run: a long unknown option is cut", run("run", "--" + "k" * 40, "-c", "1"),
      (64, "", "code-interpreter: unknown option --" + "k" * 30 + "...\n" + usage_of("run")))
check("run: a missing value", run("run", "-c"), (64, "", "code-interpreter: -c needs a value\n" + usage_of("run")))
check("run: --backend without a value", run("run", "--backend"),
      (64, "", "code-interpreter: --backend needs a value\n" + usage_of("run")))
check("run: no code", run("run"), (64, "", "code-interpreter: no code given\n" + usage_of("run")))
check("repl: an unknown option", run("repl", "--frob"),
      (64, "", "code-interpreter: unknown option --frob\n" + usage_of("repl")))
check("repl: a missing value", run("repl", "--timeout"),
      (64, "", "code-interpreter: --timeout needs a value\n" + usage_of("repl")))
check("repl: an operand", run("repl", "prog.py"),
      (64, "", "code-interpreter: repl takes no program: it reads its input from the terminal\n" + usage_of("repl")))
check("repl: an unreadable examples file", run("repl", "--examples", "/nonexistent/examples.json"),
      (64, "", "code-interpreter: cannot read /nonexistent/examples.json\n" + usage_of("repl")))
check("repl: an unknown backend", run("repl", "--backend", "nowhere"),
      (64, "", "code-interpreter: configuration: unknown backend in 'backend' (known: pyodide, e2b, bedrock)\n"
       + usage_of("repl")))
check("backends: an operand", run("backends", "extra"),
      (64, "", "code-interpreter: backends takes no argument\n" + usage_of("backends")))
check("packages: no command", run("packages"),
      (64, "", "code-interpreter: packages needs fetch or list\n" + usage_of("packages")))
check("packages: an unknown command", run("packages", "frob"),
      (64, "", "code-interpreter: unknown packages command 'frob' (fetch or list)\n" + usage_of("packages")))
check("packages fetch: no name", run("packages", "fetch", "--dir", "/nonexistent"),
      (64, "", "code-interpreter: fetch needs at least one package name\n" + usage_of("packages")))
check("packages fetch: --base-url without a value", run("packages", "fetch", "numpy", "--base-url"),
      (64, "", "code-interpreter: --base-url needs a value\n" + usage_of("packages")))
check("packages list: --base-url is fetch's only", run("packages", "list", "--base-url", "http://x/"),
      (64, "", "code-interpreter: unknown option --base-url\n" + usage_of("packages")))
check("packages list: an invalid name", run("packages", "list", "--dir", "/nonexistent", "../x"),
      (64, "", "code-interpreter: '../x' is not a valid package name\n" + usage_of("packages")))

if failures:
    print(f"{len(failures)} failed")
    sys.exit(1)
