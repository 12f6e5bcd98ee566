# bash completion for code-interpreter (docs/cli.md): subcommands, their options, backend names, and files where
# an option takes a file. Installed as share/bash-completion/completions/code-interpreter.

_code_interpreter() {
  local cur prev subcommand i
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  local subcommands="run repl backends list kill sweep packages mcp help"

  subcommand=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      -*) ;;
      *) subcommand="${COMP_WORDS[i]}"; break ;;
    esac
  done

  if [[ -z "$subcommand" ]]; then
    if [[ "$cur" == -* ]]; then
      COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
    fi
    return 0
  fi

  case "$prev" in
    --backend)
      case "$subcommand" in
        list|kill|sweep) COMPREPLY=($(compgen -W "e2b bedrock" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "pyodide e2b bedrock" -- "$cur")) ;;
      esac
      return 0 ;;
    --config|--examples|--lock)
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0 ;;
    --dir|--runtime)
      COMPREPLY=($(compgen -d -- "$cur"))
      return 0 ;;
    --base-url)
      return 0 ;;
    --template|--interpreter|--timeout|--tag|-c|--max-timeout|--max-sandboxes|--max-message-bytes)
      return 0 ;;   # a value of the user's own
  esac

  local options
  case "$subcommand" in
    run) options="--config --backend --template --interpreter --timeout -c --help" ;;
    repl) options="--config --backend --template --interpreter --timeout --examples --help" ;;
    backends) options="--help" ;;
    mcp) options="--config --backend --template --interpreter --timeout --max-timeout --max-sandboxes --max-message-bytes --help" ;;
    list) options="--config --backend --tag --help" ;;
    kill|sweep) options="--config --backend --help" ;;
    packages)
      if [[ $COMP_CWORD -eq $((i + 1)) ]]; then
        COMPREPLY=($(compgen -W "fetch list" -- "$cur"))
        return 0
      fi
      options="--dir --lock --runtime --help"
      [[ "${COMP_WORDS[i+1]}" == fetch ]] && options="--dir --lock --runtime --base-url --help" ;;
    help)
      if [[ $COMP_CWORD -eq $((i + 1)) ]]; then
        COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))
      fi
      return 0 ;;
    *) return 0 ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
  elif [[ "$subcommand" == run ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))   # the program's file
  fi
  return 0
}
complete -F _code_interpreter code-interpreter
