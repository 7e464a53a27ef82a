#!/usr/bin/env bats
# Targets (issue 21): one resolver for every command. A computer by name,
# id or a unique id prefix; COMPUTER:BOT for a bot's screen and COMPUTER:.N
# for a display (rakazo(1), TARGETS). Fake provider only.

load helper
load model

teardown() {
	stop_server
	rk_kill_all
}

@test "target: a unique id prefix names the computer wherever a computer is taken" {
	rk_fake web
	local id
	id=$(rk_id web)
	[ "$(rk computer show "${id:0:8}" --json | rk_json 'd["name"]')" = web ]
	[ "$(rk screen info "${id:0:10}" --json | rk_json 'd["width"]')" = 1280 ]
	# too short to be a prefix: a name, and there is none
	expect_json_error 3 not_found rk computer show "${id:0:5}" --json
	# a prefix is of an id, never of a name
	expect_json_error 3 not_found rk computer show we --json
}

@test "target: an ambiguous prefix is invalid_argument (exit 2) and lists the candidates" {
	rk_fake a
	rk_fake b
	rk_fake c
	local ida idb idc
	ida=$(rk_id a)
	idb=$(rk_id b)
	idc=$(rk_id c)
	# shorter than 6 characters is never a prefix
	expect_json_error 3 not_found rk computer show cmp_ --json
	# give two of them a shared start
	rk_sql "UPDATE computers SET id = 'cmp_zz' || substr(id, 7) WHERE id IN ('$ida', '$idb')"
	rk_sql "UPDATE computer_access SET computer_id = 'cmp_zz' || substr(computer_id, 7) WHERE computer_id IN ('$ida', '$idb')"
	run rk computer show cmp_zz --json
	[ "$status" -eq 2 ]
	[[ $output == *'"code":"invalid_argument"'* ]]
	[[ $output == *"(a)"* && $output == *"(b)"* && $output != *"(c)"* ]]
	run rk computer show cmp_zz
	[ "$status" -eq 2 ]
	[[ $output == *"give more of one"* ]]
	# a longer prefix is unique again
	local za
	za=$(rk computer list --json | rk_json '[c["id"] for c in d if c["name"] == "a"][0]')
	[ "$(rk computer show "${za:0:12}" --json | rk_json 'd["name"]')" = a ]
	[ "$(rk computer show "${idc:0:10}" --json | rk_json 'd["name"]')" = c ]
}

@test "target: COMPUTER:BOT is the bot's screen, the same as --bot" {
	rk computer create --provider fake --name t --team --wait --json >/dev/null
	[ "$(rk screen shot t:alpha --json | rk_json '[d["bot_id"], d["slot"]]')" = '["alpha", 1]' ]
	[ "$(rk screen shot t --bot alpha --json | rk_json 'd["slot"]')" = 1 ]
	local id
	id=$(rk_id t)
	[ "$(rk screen shot "${id:0:9}:beta" --json | rk_json '[d["bot_id"], d["slot"]]')" = '["beta", 2]' ]
	# the same bot both ways is fine, two different ones a usage error
	rk screen shot t:alpha --bot alpha --json >/dev/null
	expect_json_error 2 usage rk screen shot t:alpha --bot beta --json
	# a screen form where a whole computer is meant is refused
	expect_json_error 2 invalid_argument rk computer show t:alpha --json
	# malformed screens
	expect_json_error 2 invalid_argument rk screen shot 't:' --json
	expect_json_error 2 invalid_argument rk screen shot ':alpha' --json
	expect_json_error 2 invalid_argument rk screen shot 't:a b' --json
}

@test "target: COMPUTER:.N is display N, the same as --display N" {
	rk_fake t
	[ "$(rk screen info t:.0 --json | rk_json 'd["width"]')" = 1280 ]
	expect_json_error 2 invalid_argument rk screen shot t:.64 --json
	expect_json_error 2 invalid_argument rk screen shot t:.x --json
	expect_json_error 2 usage rk screen shot t:.1 --display 2 --json
	# a display and a bot do not mix
	expect_json_error 2 usage rk screen shot t:.1 --bot alpha --json
}

@test "target: a run by the 13 characters the TUI shows, or any unique prefix" {
	rk_fake t
	start_server run_answer.json
	rk run --computer t "what is the answer" >/dev/null 2>&1
	server_ok
	local id
	id=$(rk run list --json | rk_json 'd[0]["id"]')
	[ "$(rk run show "${id:0:13}" --json | rk_json 'd["id"]')" = "$id" ]
	[ "$(rk run show "${id:0:7}" --json | rk_json 'd["task"]')" = "what is the answer" ]
	# shorter than 6 characters is never a prefix
	expect_json_error 3 not_found rk run show "${id:0:5}" --json
	# two runs sharing a start: invalid_argument, both named
	rk_sql "INSERT INTO runs (id, task, state, created_at) VALUES ('${id:0:10}zzzz', 'x', 'completed', 1)"
	run rk run show "${id:0:10}" --json
	[ "$status" -eq 2 ]
	[[ $output == *'"code":"invalid_argument"'* && $output == *"$id"* && $output == *"${id:0:10}zzzz"* ]]
	# what acts on a run by prefix acts on the whole id
	[ "$(rk run rm "${id:0:13}" --json | rk_json 'd["removed"]')" = "[\"$id\"]" ]
	expect_json_error 3 not_found rk run show "$id" --json
}
