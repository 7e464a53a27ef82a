# bash completion for rakazo(1)                                -*- sh -*-
# Install as /usr/share/bash-completion/completions/rakazo (make install).
#
# The words come from `rakazo --complete-helper [CMD [VERB...]]`, which reads
# the command table; the static table below is the same list for when the
# binary cannot be run, and tests/cli/completion.bats checks it stays whole.

_rakazo_static() {
	local words=
	case "$1" in
	"") words="computer screen checkpoint run doctor worker help version tui serve mcp pair browser secret memory approval space" ;;
	"computer") words="create list show pause resume stop delete execution exec input resize kill sessions history file export import lease job release image providers grant revoke rights" ;;
	"computer create") words="--provider --name --mode --team --private --no-desktop --pause-after --revisions --options --screen --memory --cpus --pids --command-key --wait --timeout --json --help --org" ;;
	"computer list") words="--json --help" ;;
	"computer show") words="--json --help" ;;
	"computer pause") words="--command-key --wait --timeout --json --help" ;;
	"computer resume") words="--command-key --wait --timeout --json --help" ;;
	"computer stop") words="--command-key --wait --timeout --json --help" ;;
	"computer delete") words="--command-key --wait --timeout --json --help" ;;
	"computer execution") words="show list events cancel decide" ;;
	"computer execution show") words="--json --help" ;;
	"computer execution list") words="--json --help" ;;
	"computer execution events") words="--after-sequence --follow --json --help" ;;
	"computer execution cancel") words="--json --help" ;;
	"computer execution decide") words="--outcome --json --help" ;;
	"computer exec") words="--cwd --env --tty --rows --cols --yield-ms --max-output --bot --fence --json --help" ;;
	"computer input") words="--yield-ms --max-output --bot --fence --json --help" ;;
	"computer resize") words="--rows --cols --bot --fence --json --help" ;;
	"computer kill") words="--bot --fence --json --help" ;;
	"computer sessions") words="--json --help" ;;
	"computer history") words="--session --after --limit --follow --json --help" ;;
	"computer file") words="list read write remove" ;;
	"computer file list") words="--bot --fence --json --help" ;;
	"computer file read") words="--output --max-bytes --encoding --bot --fence --json --help" ;;
	"computer file write") words="--executable --base64 --bot --fence --json --help" ;;
	"computer file remove") words="--bot --fence --json --help" ;;
	"computer export") words="--output --json --help" ;;
	"computer import") words="--json --help" ;;
	"computer lease") words="acquire renew release write show" ;;
	"computer lease acquire") words="--bot --holder --ttl-ms --fence --what --json --help" ;;
	"computer lease renew") words="--bot --holder --ttl-ms --fence --what --json --help" ;;
	"computer lease release") words="--bot --holder --ttl-ms --fence --what --json --help" ;;
	"computer lease write") words="--bot --holder --ttl-ms --fence --what --json --help" ;;
	"computer lease show") words="--bot --holder --ttl-ms --fence --what --json --help" ;;
	"computer job") words="--kind --json --help" ;;
	"computer release") words="--json --help" ;;
	"computer image") words="build tag" ;;
	"computer image build") words="--json --help" ;;
	"computer image tag") words="--json --help" ;;
	"computer providers") words="--json --help" ;;
	"screen") words="shot act info watch close list release takeover release-control share revoke shares gateway" ;;
	"screen shot") words="--display --bot --fence --output --max-width --max-height --consumer --json --help" ;;
	"screen act") words="--display --bot --fence --actions --settle-ms --no-observe --output --max-width --max-height --consumer --json --help" ;;
	"browser") words="navigate snapshot act" ;;
	"browser navigate") words="--display --bot --fence --timeout-ms --profile --json --help" ;;
	"browser snapshot") words="--display --bot --fence --screenshot --output --profile --json --help" ;;
	"browser act") words="--display --bot --fence --action --profile --json --help" ;;
	"computer grant") words="--bot --json --help" ;;
	"computer revoke") words="--bot --json --help" ;;
	"computer rights") words="--json --help" ;;
	"screen info") words="--display --json --help" ;;
	"screen watch") words="--display --interval-ms --mode --json --help" ;;
	"screen close") words="--display --json --help" ;;
	"screen list") words="--json --help" ;;
	"screen release") words="--bot --fence --json --help" ;;
	"screen takeover") words="--bot --ttl-ms --json --help" ;;
	"screen release-control") words="--bot --json --help" ;;
	"screen share") words="--display --bot --view --control --ttl --json --help" ;;
	"screen revoke") words="--all --computer --json --help" ;;
	"screen shares") words="--all --computer --json --help" ;;
	"screen gateway") words="--listen --web --public --json --help" ;;
	"checkpoint") words="create list show restore export import verify gc" ;;
	"checkpoint create") words="--reason --no-quiesce --json --help" ;;
	"checkpoint list") words="--json --help" ;;
	"checkpoint show") words="--revision --json --help" ;;
	"checkpoint restore") words="--revision --json --help" ;;
	"checkpoint export") words="--output --revision --no-compress --json --help" ;;
	"checkpoint import") words="--json --help" ;;
	"checkpoint verify") words="--revision --deep --all --json --help" ;;
	"checkpoint gc") words="--json --help" ;;
	"run") words="--computer --bot --thread --model --api --base-url --model-base-url --model-retries --no-stream --max-steps --max-wall --max-tokens --max-cost --trigger --no-auto-resume --limit --detach --follow --after --wait --note --older-than --dry-run --json --help" ;;
	"tui") words="--computer --json --help" ;;
	"mcp") words="--max-image-bytes --max-image-edge --json --help" ;;
	"serve") words="--listen --public --providers --token-file --url-file --bot --json --help token routes" ;;
	"pair") words="--token --name --root --once --json --help" ;;
	"secret") words="set list rm" ;;
	"secret set") words="--origin --auth --bot --space --json --help" ;;
	"secret list") words="--space --json --help" ;;
	"secret rm") words="--bot --space --json --help" ;;
	"memory") words="read write search history" ;;
	"memory read") words="--bot --space --json --help" ;;
	"memory write") words="--content --expected-revision --bot --space --json --help" ;;
	"memory search") words="--limit --bot --space --json --help" ;;
	"memory history") words="--bot --space --json --help" ;;
	"space") words="list create" ;;
	"space list") words="--json --help" ;;
	"space create") words="--description --json --help" ;;
	"approval") words="set list rm pending" ;;
	"approval set") words="--effect --match --value --shared --space --json --help" ;;
	"approval list") words="--space --json --help" ;;
	"approval rm") words="--space --json --help" ;;
	"approval pending") words="--space --json --help" ;;
	"doctor") words="--json --help" ;;
	"worker") words="--once --idle-exit --join --json --help" ;;
	"help") words="--json --help" ;;
	"version") words="--json --help" ;;
	esac
	printf '%s\n' $words
}

_rakazo() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local cmd=${COMP_WORDS[0]##*/} path=() i w
	# a link named rakazo-SUB is `rakazo SUB`
	case $cmd in rakazo-*) path=("${cmd#rakazo-}") ;; esac
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in -*) continue ;; esac
		[ ${#path[@]} -ge 3 ] && break
		path+=("$w")
	done
	# arguments of options that take one: files where that helps, else nothing
	case $prev in
	-o | --output)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-p | --provider)
		COMPREPLY=($(compgen -W "docker fake e2b daytona box" -- "$cur"))
		return ;;
	--mode)
		COMPREPLY=($(compgen -W "team private" -- "$cur"))
		return ;;
	--outcome)
		COMPREPLY=($(compgen -W "succeeded failed" -- "$cur"))
		return ;;
	--encoding)
		COMPREPLY=($(compgen -W "utf8 base64" -- "$cur"))
		return ;;
	--api)
		COMPREPLY=($(compgen -W "messages responses chat" -- "$cur"))
		return ;;
	esac
	local words
	words=$(command rakazo --complete-helper "${path[@]}" 2>/dev/null)
	[ -n "$words" ] || words=$(_rakazo_static "${path[*]}")
	# after a verb's words come its options; once past the verbs, only options
	case $cur in
	-*) words=$(printf '%s\n' $words | grep -- '^-') ;;
	*) printf '%s\n' $words | grep -q -- '^[^-]' || words= ;;
	esac
	COMPREPLY=($(compgen -W "$words" -- "$cur"))
}

complete -F _rakazo rakazo
complete -F _rakazo rakazo-computer rakazo-screen rakazo-checkpoint rakazo-run rakazo-serve rakazo-mcp rakazo-pair rakazo-doctor rakazo-worker
complete -F _rakazo rakazo-computer rakazo-screen rakazo-checkpoint rakazo-run rakazo-secret rakazo-memory rakazo-approval rakazo-doctor rakazo-worker
