#!/usr/bin/env bash
# The bash completion of code-interpreter: sources cli/completion/code-interpreter.bash and checks COMPREPLY
# exactly for a list of command lines (the word being completed is the last one). File-name completion is not
# checked: it depends on the directory.
# Usage: completion_test.sh COMPLETION_SCRIPT
set -u
source "$1"
failed=0

# expect "EXPECTED WORDS" word0 word1 ... (the last word is the one being completed)
expect() {
  local expected="$1"
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _code_interpreter
  local got="${COMPREPLY[*]}"
  if [[ "$got" != "$expected" ]]; then
    echo "FAIL [$*]: expected [$expected], got [$got]"
    failed=1
  else
    echo "ok   [$*] -> [$got]"
  fi
}

expect "run repl backends list kill sweep packages mcp help" code-interpreter ""
expect "run repl" code-interpreter r
expect "sweep" code-interpreter sw
expect "--help --version" code-interpreter --
expect "--backend" code-interpreter run --b
expect "pyodide e2b bedrock" code-interpreter run --backend ""
expect "e2b" code-interpreter repl --backend e
expect "e2b bedrock" code-interpreter list --backend ""
expect "--config --backend --template --interpreter --timeout -c --help" code-interpreter run -
expect "--config --backend --template --interpreter --timeout --examples --help" code-interpreter repl --
expect "--tag" code-interpreter list --t
expect "" code-interpreter run --timeout ""
expect "run repl" code-interpreter help r
expect "" code-interpreter help run ""
expect "--help" code-interpreter backends -
expect "--config --backend --template --interpreter --timeout --max-timeout --max-sandboxes --max-message-bytes --help" code-interpreter mcp -
expect "mcp" code-interpreter mc
expect "" code-interpreter mcp --max-sandboxes ""
expect "packages" code-interpreter pa
expect "fetch list" code-interpreter packages ""
expect "--dir --lock --runtime --base-url --help" code-interpreter packages fetch -
expect "--dir --lock --runtime --help" code-interpreter packages list -
exit $failed
