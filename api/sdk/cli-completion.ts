// Shell completion for the command-line client (docs/sdk.md "Shell completion"): `custody completion
// bash` or `zsh` prints a script that completes the command words from the list it carries (every
// command of the client, the platform's included) and the options every command takes. The list is in
// the script, so completing starts no process.

/** The script for `shell`; `commands` are the command lines (`payments list`, `vault get`, ...). */
export function completionScript(shell: 'bash' | 'zsh', commands: readonly string[], program = 'custody'): string {
  const fn = `_${program.replace(/[^A-Za-z0-9_]/g, '_')}_complete`;
  const list = [...new Set(commands)].sort().join('\n');
  const bash = `${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  local typed="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ "$w" == -* ]] && break
    typed+="$w "
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "--json --table --profile --help --body-file --query --header --idempotency-key --limit --cursor --all" -- "$cur"))
    return
  fi
  local next
  next=$(printf '%s\\n' "$${fn}_commands" | awk -v typed="$typed" '
    index($0 " ", typed) == 1 { rest = substr($0 " ", length(typed) + 1); split(rest, parts, " "); if (parts[1] != "") print parts[1] }' | sort -u)
  COMPREPLY=($(compgen -W "$next" -- "$cur"))
}
${fn}_commands='${list}'
complete -F ${fn} ${program}
`;
  if (shell === 'bash') return `# bash completion for ${program}: eval "$(${program} completion bash)"\n${bash}`;
  // zsh runs the same function through its bash-completion layer.
  return `# zsh completion for ${program}: eval "$(${program} completion zsh)"\nautoload -U +X bashcompinit && bashcompinit\n${bash}`;
}
