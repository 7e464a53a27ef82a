# fish completion for rakazo(1). Install as
# ~/.config/fish/completions/rakazo.fish (or the vendor completions dir).
#
# Static lines from `rakazo --complete-helper` (the command table); the test
# tests/cli/completion.bats checks every word is here.

# the words on the line after "rakazo", options left out
function __rakazo_path
    set -l toks (commandline -opc)
    set -e toks[1]
    for t in $toks
        string match -q -- '-*' $t; or echo $t
    end
end

# true when the words so far are exactly $argv
function __rakazo_at
    set -l p (__rakazo_path)
    test (count $p) -eq (count $argv); or return 1
    for i in (seq (count $argv))
        test "$p[$i]" = "$argv[$i]"; or return 1
    end
end

complete -c rakazo -f
complete -c rakazo -l provider -s p -xa "docker fake e2b daytona box"
complete -c rakazo -l mode -xa "team private"
complete -c rakazo -l outcome -xa "succeeded failed"
complete -c rakazo -l encoding -xa "utf8 base64"

complete -c rakazo -n "__rakazo_at" -a "computer screen checkpoint run doctor worker help version tui serve mcp pair browser secret memory approval space"
complete -c rakazo -n "__rakazo_at computer" -a "create list show pause resume stop delete execution exec input resize kill sessions history file export import lease job release image providers grant revoke rights"
complete -c rakazo -n "__rakazo_at computer create" -l provider
complete -c rakazo -n "__rakazo_at computer create" -l name
complete -c rakazo -n "__rakazo_at computer create" -l mode
complete -c rakazo -n "__rakazo_at computer create" -l team
complete -c rakazo -n "__rakazo_at computer create" -l private
complete -c rakazo -n "__rakazo_at computer create" -l no-desktop
complete -c rakazo -n "__rakazo_at computer create" -l pause-after
complete -c rakazo -n "__rakazo_at computer create" -l revisions
complete -c rakazo -n "__rakazo_at computer create" -l options
complete -c rakazo -n "__rakazo_at computer create" -l screen
complete -c rakazo -n "__rakazo_at computer create" -l memory
complete -c rakazo -n "__rakazo_at computer create" -l cpus
complete -c rakazo -n "__rakazo_at computer create" -l pids
complete -c rakazo -n "__rakazo_at computer create" -l org
complete -c rakazo -n "__rakazo_at computer create" -l command-key
complete -c rakazo -n "__rakazo_at computer create" -l wait
complete -c rakazo -n "__rakazo_at computer create" -l timeout
complete -c rakazo -n "__rakazo_at computer create" -l json
complete -c rakazo -n "__rakazo_at computer create" -l help
complete -c rakazo -n "__rakazo_at computer list" -l json
complete -c rakazo -n "__rakazo_at computer list" -l help
complete -c rakazo -n "__rakazo_at computer show" -l json
complete -c rakazo -n "__rakazo_at computer show" -l help
complete -c rakazo -n "__rakazo_at computer pause" -l command-key
complete -c rakazo -n "__rakazo_at computer pause" -l wait
complete -c rakazo -n "__rakazo_at computer pause" -l timeout
complete -c rakazo -n "__rakazo_at computer pause" -l json
complete -c rakazo -n "__rakazo_at computer pause" -l help
complete -c rakazo -n "__rakazo_at computer resume" -l command-key
complete -c rakazo -n "__rakazo_at computer resume" -l wait
complete -c rakazo -n "__rakazo_at computer resume" -l timeout
complete -c rakazo -n "__rakazo_at computer resume" -l json
complete -c rakazo -n "__rakazo_at computer resume" -l help
complete -c rakazo -n "__rakazo_at computer stop" -l command-key
complete -c rakazo -n "__rakazo_at computer stop" -l wait
complete -c rakazo -n "__rakazo_at computer stop" -l timeout
complete -c rakazo -n "__rakazo_at computer stop" -l json
complete -c rakazo -n "__rakazo_at computer stop" -l help
complete -c rakazo -n "__rakazo_at computer delete" -l command-key
complete -c rakazo -n "__rakazo_at computer delete" -l wait
complete -c rakazo -n "__rakazo_at computer delete" -l timeout
complete -c rakazo -n "__rakazo_at computer delete" -l json
complete -c rakazo -n "__rakazo_at computer delete" -l help
complete -c rakazo -n "__rakazo_at computer execution" -a "show list events cancel decide"
complete -c rakazo -n "__rakazo_at computer execution show" -l json
complete -c rakazo -n "__rakazo_at computer execution show" -l help
complete -c rakazo -n "__rakazo_at computer execution list" -l json
complete -c rakazo -n "__rakazo_at computer execution list" -l help
complete -c rakazo -n "__rakazo_at computer execution events" -l after-sequence
complete -c rakazo -n "__rakazo_at computer execution events" -l follow
complete -c rakazo -n "__rakazo_at computer execution events" -l json
complete -c rakazo -n "__rakazo_at computer execution events" -l help
complete -c rakazo -n "__rakazo_at computer execution cancel" -l json
complete -c rakazo -n "__rakazo_at computer execution cancel" -l help
complete -c rakazo -n "__rakazo_at computer execution decide" -l outcome
complete -c rakazo -n "__rakazo_at computer execution decide" -l json
complete -c rakazo -n "__rakazo_at computer execution decide" -l help
complete -c rakazo -n "__rakazo_at computer exec" -l cwd
complete -c rakazo -n "__rakazo_at computer exec" -l env
complete -c rakazo -n "__rakazo_at computer exec" -l tty
complete -c rakazo -n "__rakazo_at computer exec" -l rows
complete -c rakazo -n "__rakazo_at computer exec" -l cols
complete -c rakazo -n "__rakazo_at computer exec" -l yield-ms
complete -c rakazo -n "__rakazo_at computer exec" -l max-output
complete -c rakazo -n "__rakazo_at computer exec" -l bot
complete -c rakazo -n "__rakazo_at computer exec" -l fence
complete -c rakazo -n "__rakazo_at computer exec" -l json
complete -c rakazo -n "__rakazo_at computer exec" -l help
complete -c rakazo -n "__rakazo_at computer input" -l yield-ms
complete -c rakazo -n "__rakazo_at computer input" -l max-output
complete -c rakazo -n "__rakazo_at computer input" -l bot
complete -c rakazo -n "__rakazo_at computer input" -l fence
complete -c rakazo -n "__rakazo_at computer input" -l json
complete -c rakazo -n "__rakazo_at computer input" -l help
complete -c rakazo -n "__rakazo_at computer resize" -l rows
complete -c rakazo -n "__rakazo_at computer resize" -l cols
complete -c rakazo -n "__rakazo_at computer resize" -l bot
complete -c rakazo -n "__rakazo_at computer resize" -l fence
complete -c rakazo -n "__rakazo_at computer resize" -l json
complete -c rakazo -n "__rakazo_at computer resize" -l help
complete -c rakazo -n "__rakazo_at computer kill" -l bot
complete -c rakazo -n "__rakazo_at computer kill" -l fence
complete -c rakazo -n "__rakazo_at computer kill" -l json
complete -c rakazo -n "__rakazo_at computer kill" -l help
complete -c rakazo -n "__rakazo_at computer sessions" -l json
complete -c rakazo -n "__rakazo_at computer sessions" -l help
complete -c rakazo -n "__rakazo_at computer history" -l session
complete -c rakazo -n "__rakazo_at computer history" -l after
complete -c rakazo -n "__rakazo_at computer history" -l limit
complete -c rakazo -n "__rakazo_at computer history" -l follow
complete -c rakazo -n "__rakazo_at computer history" -l json
complete -c rakazo -n "__rakazo_at computer history" -l help
complete -c rakazo -n "__rakazo_at computer file" -a "list read write remove"
complete -c rakazo -n "__rakazo_at computer file list" -l bot
complete -c rakazo -n "__rakazo_at computer file list" -l fence
complete -c rakazo -n "__rakazo_at computer file list" -l json
complete -c rakazo -n "__rakazo_at computer file list" -l help
complete -c rakazo -n "__rakazo_at computer file read" -l output
complete -c rakazo -n "__rakazo_at computer file read" -l max-bytes
complete -c rakazo -n "__rakazo_at computer file read" -l encoding
complete -c rakazo -n "__rakazo_at computer file read" -l bot
complete -c rakazo -n "__rakazo_at computer file read" -l fence
complete -c rakazo -n "__rakazo_at computer file read" -l json
complete -c rakazo -n "__rakazo_at computer file read" -l help
complete -c rakazo -n "__rakazo_at computer file write" -l executable
complete -c rakazo -n "__rakazo_at computer file write" -l base64
complete -c rakazo -n "__rakazo_at computer file write" -l bot
complete -c rakazo -n "__rakazo_at computer file write" -l fence
complete -c rakazo -n "__rakazo_at computer file write" -l json
complete -c rakazo -n "__rakazo_at computer file write" -l help
complete -c rakazo -n "__rakazo_at computer file remove" -l bot
complete -c rakazo -n "__rakazo_at computer file remove" -l fence
complete -c rakazo -n "__rakazo_at computer file remove" -l json
complete -c rakazo -n "__rakazo_at computer file remove" -l help
complete -c rakazo -n "__rakazo_at computer export" -l output
complete -c rakazo -n "__rakazo_at computer export" -l json
complete -c rakazo -n "__rakazo_at computer export" -l help
complete -c rakazo -n "__rakazo_at computer import" -l json
complete -c rakazo -n "__rakazo_at computer import" -l help
complete -c rakazo -n "__rakazo_at computer lease" -a "acquire renew release write show"
complete -c rakazo -n "__rakazo_at computer lease acquire" -l bot
complete -c rakazo -n "__rakazo_at computer lease acquire" -l holder
complete -c rakazo -n "__rakazo_at computer lease acquire" -l ttl-ms
complete -c rakazo -n "__rakazo_at computer lease acquire" -l fence
complete -c rakazo -n "__rakazo_at computer lease acquire" -l what
complete -c rakazo -n "__rakazo_at computer lease acquire" -l json
complete -c rakazo -n "__rakazo_at computer lease acquire" -l help
complete -c rakazo -n "__rakazo_at computer lease renew" -l bot
complete -c rakazo -n "__rakazo_at computer lease renew" -l holder
complete -c rakazo -n "__rakazo_at computer lease renew" -l ttl-ms
complete -c rakazo -n "__rakazo_at computer lease renew" -l fence
complete -c rakazo -n "__rakazo_at computer lease renew" -l what
complete -c rakazo -n "__rakazo_at computer lease renew" -l json
complete -c rakazo -n "__rakazo_at computer lease renew" -l help
complete -c rakazo -n "__rakazo_at computer lease release" -l bot
complete -c rakazo -n "__rakazo_at computer lease release" -l holder
complete -c rakazo -n "__rakazo_at computer lease release" -l ttl-ms
complete -c rakazo -n "__rakazo_at computer lease release" -l fence
complete -c rakazo -n "__rakazo_at computer lease release" -l what
complete -c rakazo -n "__rakazo_at computer lease release" -l json
complete -c rakazo -n "__rakazo_at computer lease release" -l help
complete -c rakazo -n "__rakazo_at computer lease write" -l bot
complete -c rakazo -n "__rakazo_at computer lease write" -l holder
complete -c rakazo -n "__rakazo_at computer lease write" -l ttl-ms
complete -c rakazo -n "__rakazo_at computer lease write" -l fence
complete -c rakazo -n "__rakazo_at computer lease write" -l what
complete -c rakazo -n "__rakazo_at computer lease write" -l json
complete -c rakazo -n "__rakazo_at computer lease write" -l help
complete -c rakazo -n "__rakazo_at computer lease show" -l bot
complete -c rakazo -n "__rakazo_at computer lease show" -l holder
complete -c rakazo -n "__rakazo_at computer lease show" -l ttl-ms
complete -c rakazo -n "__rakazo_at computer lease show" -l fence
complete -c rakazo -n "__rakazo_at computer lease show" -l what
complete -c rakazo -n "__rakazo_at computer lease show" -l json
complete -c rakazo -n "__rakazo_at computer lease show" -l help
complete -c rakazo -n "__rakazo_at computer job" -l kind
complete -c rakazo -n "__rakazo_at computer job" -l json
complete -c rakazo -n "__rakazo_at computer job" -l help
complete -c rakazo -n "__rakazo_at computer release" -l json
complete -c rakazo -n "__rakazo_at computer release" -l help
complete -c rakazo -n "__rakazo_at computer image" -a "build tag"
complete -c rakazo -n "__rakazo_at computer image build" -l json
complete -c rakazo -n "__rakazo_at computer image build" -l help
complete -c rakazo -n "__rakazo_at computer image tag" -l json
complete -c rakazo -n "__rakazo_at computer image tag" -l help
complete -c rakazo -n "__rakazo_at computer providers" -l json
complete -c rakazo -n "__rakazo_at computer providers" -l help
complete -c rakazo -n "__rakazo_at screen" -a "shot act info watch close list release takeover release-control share revoke shares gateway"
complete -c rakazo -n "__rakazo_at screen shot" -l display
complete -c rakazo -n "__rakazo_at screen shot" -l bot
complete -c rakazo -n "__rakazo_at screen shot" -l fence
complete -c rakazo -n "__rakazo_at screen shot" -l output
complete -c rakazo -n "__rakazo_at screen shot" -l max-width
complete -c rakazo -n "__rakazo_at screen shot" -l max-height
complete -c rakazo -n "__rakazo_at screen shot" -l consumer
complete -c rakazo -n "__rakazo_at screen shot" -l json
complete -c rakazo -n "__rakazo_at screen shot" -l help
complete -c rakazo -n "__rakazo_at screen act" -l display
complete -c rakazo -n "__rakazo_at screen act" -l bot
complete -c rakazo -n "__rakazo_at screen act" -l fence
complete -c rakazo -n "__rakazo_at screen act" -l actions
complete -c rakazo -n "__rakazo_at screen act" -l settle-ms
complete -c rakazo -n "__rakazo_at screen act" -l no-observe
complete -c rakazo -n "__rakazo_at screen act" -l output
complete -c rakazo -n "__rakazo_at screen act" -l max-width
complete -c rakazo -n "__rakazo_at screen act" -l max-height
complete -c rakazo -n "__rakazo_at screen act" -l consumer
complete -c rakazo -n "__rakazo_at screen act" -l json
complete -c rakazo -n "__rakazo_at screen act" -l help
complete -c rakazo -n "__rakazo_at browser" -a "navigate snapshot act"
complete -c rakazo -n "__rakazo_at browser navigate" -l display
complete -c rakazo -n "__rakazo_at browser navigate" -l bot
complete -c rakazo -n "__rakazo_at browser navigate" -l fence
complete -c rakazo -n "__rakazo_at browser navigate" -l timeout-ms
complete -c rakazo -n "__rakazo_at browser navigate" -l profile
complete -c rakazo -n "__rakazo_at browser navigate" -l json
complete -c rakazo -n "__rakazo_at browser navigate" -l help
complete -c rakazo -n "__rakazo_at browser snapshot" -l display
complete -c rakazo -n "__rakazo_at browser snapshot" -l bot
complete -c rakazo -n "__rakazo_at browser snapshot" -l fence
complete -c rakazo -n "__rakazo_at browser snapshot" -l screenshot
complete -c rakazo -n "__rakazo_at browser snapshot" -l output
complete -c rakazo -n "__rakazo_at browser snapshot" -l profile
complete -c rakazo -n "__rakazo_at browser snapshot" -l json
complete -c rakazo -n "__rakazo_at browser snapshot" -l help
complete -c rakazo -n "__rakazo_at browser act" -l display
complete -c rakazo -n "__rakazo_at browser act" -l bot
complete -c rakazo -n "__rakazo_at browser act" -l fence
complete -c rakazo -n "__rakazo_at browser act" -l action
complete -c rakazo -n "__rakazo_at browser act" -l profile
complete -c rakazo -n "__rakazo_at browser act" -l json
complete -c rakazo -n "__rakazo_at browser act" -l help
complete -c rakazo -n "__rakazo_at screen info" -l display
complete -c rakazo -n "__rakazo_at screen info" -l json
complete -c rakazo -n "__rakazo_at screen info" -l help
complete -c rakazo -n "__rakazo_at screen watch" -l display
complete -c rakazo -n "__rakazo_at screen watch" -l interval-ms
complete -c rakazo -n "__rakazo_at screen watch" -l mode
complete -c rakazo -n "__rakazo_at screen watch" -l json
complete -c rakazo -n "__rakazo_at screen watch" -l help
complete -c rakazo -n "__rakazo_at screen close" -l display
complete -c rakazo -n "__rakazo_at screen close" -l json
complete -c rakazo -n "__rakazo_at screen close" -l help
complete -c rakazo -n "__rakazo_at screen list" -l json
complete -c rakazo -n "__rakazo_at screen list" -l help
complete -c rakazo -n "__rakazo_at screen release" -l bot
complete -c rakazo -n "__rakazo_at screen release" -l fence
complete -c rakazo -n "__rakazo_at screen release" -l json
complete -c rakazo -n "__rakazo_at screen release" -l help
complete -c rakazo -n "__rakazo_at screen takeover" -l bot
complete -c rakazo -n "__rakazo_at screen takeover" -l ttl-ms
complete -c rakazo -n "__rakazo_at screen takeover" -l json
complete -c rakazo -n "__rakazo_at screen takeover" -l help
complete -c rakazo -n "__rakazo_at screen release-control" -l bot
complete -c rakazo -n "__rakazo_at screen release-control" -l json
complete -c rakazo -n "__rakazo_at screen release-control" -l help
complete -c rakazo -n "__rakazo_at screen share" -l display
complete -c rakazo -n "__rakazo_at screen share" -l bot
complete -c rakazo -n "__rakazo_at screen share" -l view
complete -c rakazo -n "__rakazo_at screen share" -l control
complete -c rakazo -n "__rakazo_at screen share" -l ttl
complete -c rakazo -n "__rakazo_at screen share" -l json
complete -c rakazo -n "__rakazo_at screen share" -l help
complete -c rakazo -n "__rakazo_at screen revoke" -l all
complete -c rakazo -n "__rakazo_at screen revoke" -l computer
complete -c rakazo -n "__rakazo_at screen revoke" -l json
complete -c rakazo -n "__rakazo_at screen revoke" -l help
complete -c rakazo -n "__rakazo_at screen shares" -l all
complete -c rakazo -n "__rakazo_at screen shares" -l computer
complete -c rakazo -n "__rakazo_at screen shares" -l json
complete -c rakazo -n "__rakazo_at screen shares" -l help
complete -c rakazo -n "__rakazo_at screen gateway" -l listen
complete -c rakazo -n "__rakazo_at screen gateway" -l web
complete -c rakazo -n "__rakazo_at screen gateway" -l public
complete -c rakazo -n "__rakazo_at screen gateway" -l json
complete -c rakazo -n "__rakazo_at screen gateway" -l help
complete -c rakazo -n "__rakazo_at checkpoint" -a "create list show restore export import verify gc"
complete -c rakazo -n "__rakazo_at checkpoint create" -l reason
complete -c rakazo -n "__rakazo_at checkpoint create" -l no-quiesce
complete -c rakazo -n "__rakazo_at checkpoint create" -l json
complete -c rakazo -n "__rakazo_at checkpoint create" -l help
complete -c rakazo -n "__rakazo_at checkpoint list" -l json
complete -c rakazo -n "__rakazo_at checkpoint list" -l help
complete -c rakazo -n "__rakazo_at checkpoint show" -l revision
complete -c rakazo -n "__rakazo_at checkpoint show" -l json
complete -c rakazo -n "__rakazo_at checkpoint show" -l help
complete -c rakazo -n "__rakazo_at checkpoint restore" -l revision
complete -c rakazo -n "__rakazo_at checkpoint restore" -l json
complete -c rakazo -n "__rakazo_at checkpoint restore" -l help
complete -c rakazo -n "__rakazo_at checkpoint export" -l output
complete -c rakazo -n "__rakazo_at checkpoint export" -l revision
complete -c rakazo -n "__rakazo_at checkpoint export" -l no-compress
complete -c rakazo -n "__rakazo_at checkpoint export" -l json
complete -c rakazo -n "__rakazo_at checkpoint export" -l help
complete -c rakazo -n "__rakazo_at checkpoint import" -l json
complete -c rakazo -n "__rakazo_at checkpoint import" -l help
complete -c rakazo -n "__rakazo_at checkpoint verify" -l revision
complete -c rakazo -n "__rakazo_at checkpoint verify" -l deep
complete -c rakazo -n "__rakazo_at checkpoint verify" -l all
complete -c rakazo -n "__rakazo_at checkpoint verify" -l json
complete -c rakazo -n "__rakazo_at checkpoint verify" -l help
complete -c rakazo -n "__rakazo_at checkpoint gc" -l json
complete -c rakazo -n "__rakazo_at checkpoint gc" -l help
complete -c rakazo -n "__rakazo_at run" -l computer
complete -c rakazo -n "__rakazo_at run" -l bot
complete -c rakazo -n "__rakazo_at run" -l thread
complete -c rakazo -n "__rakazo_at run" -l model
complete -c rakazo -n "__rakazo_at run" -l api -x -a "messages responses chat"
complete -c rakazo -n "__rakazo_at run" -l base-url
complete -c rakazo -n "__rakazo_at run" -l model-base-url
complete -c rakazo -n "__rakazo_at run" -l model-retries
complete -c rakazo -n "__rakazo_at run" -l no-stream
complete -c rakazo -n "__rakazo_at run" -l max-steps
complete -c rakazo -n "__rakazo_at run" -l max-wall
complete -c rakazo -n "__rakazo_at run" -l max-tokens
complete -c rakazo -n "__rakazo_at run" -l max-cost
complete -c rakazo -n "__rakazo_at run" -l trigger
complete -c rakazo -n "__rakazo_at run" -l no-auto-resume
complete -c rakazo -n "__rakazo_at run" -l limit
complete -c rakazo -n "__rakazo_at run" -l detach
complete -c rakazo -n "__rakazo_at run" -l follow
complete -c rakazo -n "__rakazo_at run" -l after
complete -c rakazo -n "__rakazo_at run" -l wait
complete -c rakazo -n "__rakazo_at run" -l note
complete -c rakazo -n "__rakazo_at run" -l older-than
complete -c rakazo -n "__rakazo_at run" -l dry-run
complete -c rakazo -n "__rakazo_at run" -l json
complete -c rakazo -n "__rakazo_at run" -l help
complete -c rakazo -n "__rakazo_at tui" -l computer
complete -c rakazo -n "__rakazo_at tui" -l json
complete -c rakazo -n "__rakazo_at tui" -l help
complete -c rakazo -n "__rakazo_at mcp" -l max-image-bytes
complete -c rakazo -n "__rakazo_at mcp" -l max-image-edge
complete -c rakazo -n "__rakazo_at mcp" -l json
complete -c rakazo -n "__rakazo_at mcp" -l help
complete -c rakazo -n "__rakazo_at serve" -l listen
complete -c rakazo -n "__rakazo_at serve" -l public
complete -c rakazo -n "__rakazo_at serve" -l providers
complete -c rakazo -n "__rakazo_at serve" -l token-file
complete -c rakazo -n "__rakazo_at serve" -l url-file
complete -c rakazo -n "__rakazo_at serve" -l bot
complete -c rakazo -n "__rakazo_at serve" -l json
complete -c rakazo -n "__rakazo_at serve" -l help
complete -c rakazo -n "__rakazo_at serve" -a "token routes"
complete -c rakazo -n "__rakazo_at pair" -l token
complete -c rakazo -n "__rakazo_at pair" -l name
complete -c rakazo -n "__rakazo_at pair" -l root
complete -c rakazo -n "__rakazo_at pair" -l once
complete -c rakazo -n "__rakazo_at pair" -l json
complete -c rakazo -n "__rakazo_at pair" -l help
complete -c rakazo -n "__rakazo_at computer grant" -l bot
complete -c rakazo -n "__rakazo_at computer grant" -l json
complete -c rakazo -n "__rakazo_at computer grant" -l help
complete -c rakazo -n "__rakazo_at computer revoke" -l bot
complete -c rakazo -n "__rakazo_at computer revoke" -l json
complete -c rakazo -n "__rakazo_at computer revoke" -l help
complete -c rakazo -n "__rakazo_at computer rights" -l json
complete -c rakazo -n "__rakazo_at computer rights" -l help
complete -c rakazo -n "__rakazo_at secret" -a "set list rm"
complete -c rakazo -n "__rakazo_at secret set" -l origin
complete -c rakazo -n "__rakazo_at secret set" -l auth
complete -c rakazo -n "__rakazo_at secret set" -l bot
complete -c rakazo -n "__rakazo_at secret set" -l space
complete -c rakazo -n "__rakazo_at secret set" -l json
complete -c rakazo -n "__rakazo_at secret set" -l help
complete -c rakazo -n "__rakazo_at secret list" -l space
complete -c rakazo -n "__rakazo_at secret list" -l json
complete -c rakazo -n "__rakazo_at secret list" -l help
complete -c rakazo -n "__rakazo_at secret rm" -l bot
complete -c rakazo -n "__rakazo_at secret rm" -l space
complete -c rakazo -n "__rakazo_at secret rm" -l json
complete -c rakazo -n "__rakazo_at secret rm" -l help
complete -c rakazo -n "__rakazo_at memory" -a "read write search history"
complete -c rakazo -n "__rakazo_at memory read" -l bot
complete -c rakazo -n "__rakazo_at memory read" -l space
complete -c rakazo -n "__rakazo_at memory read" -l json
complete -c rakazo -n "__rakazo_at memory read" -l help
complete -c rakazo -n "__rakazo_at memory write" -l content
complete -c rakazo -n "__rakazo_at memory write" -l expected-revision
complete -c rakazo -n "__rakazo_at memory write" -l bot
complete -c rakazo -n "__rakazo_at memory write" -l space
complete -c rakazo -n "__rakazo_at memory write" -l json
complete -c rakazo -n "__rakazo_at memory write" -l help
complete -c rakazo -n "__rakazo_at memory search" -l limit
complete -c rakazo -n "__rakazo_at memory search" -l bot
complete -c rakazo -n "__rakazo_at memory search" -l space
complete -c rakazo -n "__rakazo_at memory search" -l json
complete -c rakazo -n "__rakazo_at memory search" -l help
complete -c rakazo -n "__rakazo_at memory history" -l bot
complete -c rakazo -n "__rakazo_at memory history" -l space
complete -c rakazo -n "__rakazo_at memory history" -l json
complete -c rakazo -n "__rakazo_at memory history" -l help
complete -c rakazo -n "__rakazo_at space" -a "list create"
complete -c rakazo -n "__rakazo_at space list" -l json
complete -c rakazo -n "__rakazo_at space list" -l help
complete -c rakazo -n "__rakazo_at space create" -l description
complete -c rakazo -n "__rakazo_at space create" -l json
complete -c rakazo -n "__rakazo_at space create" -l help
complete -c rakazo -n "__rakazo_at approval" -a "set list rm pending"
complete -c rakazo -n "__rakazo_at approval set" -l effect
complete -c rakazo -n "__rakazo_at approval set" -l match
complete -c rakazo -n "__rakazo_at approval set" -l value
complete -c rakazo -n "__rakazo_at approval set" -l shared
complete -c rakazo -n "__rakazo_at approval set" -l space
complete -c rakazo -n "__rakazo_at approval set" -l json
complete -c rakazo -n "__rakazo_at approval set" -l help
complete -c rakazo -n "__rakazo_at approval list" -l space
complete -c rakazo -n "__rakazo_at approval list" -l json
complete -c rakazo -n "__rakazo_at approval list" -l help
complete -c rakazo -n "__rakazo_at approval rm" -l space
complete -c rakazo -n "__rakazo_at approval rm" -l json
complete -c rakazo -n "__rakazo_at approval rm" -l help
complete -c rakazo -n "__rakazo_at approval pending" -l space
complete -c rakazo -n "__rakazo_at approval pending" -l json
complete -c rakazo -n "__rakazo_at approval pending" -l help
complete -c rakazo -n "__rakazo_at doctor" -l json
complete -c rakazo -n "__rakazo_at doctor" -l help
complete -c rakazo -n "__rakazo_at worker" -l once
complete -c rakazo -n "__rakazo_at worker" -l idle-exit
complete -c rakazo -n "__rakazo_at worker" -l join
complete -c rakazo -n "__rakazo_at worker" -l json
complete -c rakazo -n "__rakazo_at worker" -l help
complete -c rakazo -n "__rakazo_at help" -l json
complete -c rakazo -n "__rakazo_at help" -l help
complete -c rakazo -n "__rakazo_at version" -l json
complete -c rakazo -n "__rakazo_at version" -l help
