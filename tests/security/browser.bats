#!/usr/bin/env bats
# fill_secret against hostile pages (issue 20, High 2: "fill_secret trusts
# page JavaScript").
#
# A real Chromium in one docker computer serves the whole file, as in
# tests/cli/browser.bats: tests/fixtures/pages is served inside it on
# 127.0.0.1:8000, which is also http://localhost:8000, another origin. The
# secret pw is for http://127.0.0.1:8000. Each hostile page sends whatever it
# gets hold of to POST /collect (pages/collected.txt in the computer), and
# the tests read that back: the secret must never be there, except where the
# page is of its origin and the value was typed into it.

load helper

SECRET='Zq9-hostile-K3y'

setup_file() { rk_file_setup; }
setup() { rk_file_test_setup; }
teardown() { :; }
teardown_file() { rk_file_teardown h; }

# The computer h with the pages served and the secret stored, made once for
# the file; the collector starts empty.
pages() {
	docker_or_skip
	if ! rk computer show h >/dev/null 2>&1; then
		rk computer create --name h --wait --json >/dev/null
		local f
		for f in "$BATS_TEST_DIRNAME"/../fixtures/pages/*; do
			rk computer file write h "pages/${f##*/}" <"$f"
		done
		printf '%s' "$SECRET" | rk secret set pw --origin http://127.0.0.1:8000 --auth bearer >/dev/null
	fi
	if ! serving; then
		rk computer exec h -- 'cd pages && setsid -f python3 serve.py 8000 </dev/null >/dev/null 2>&1' >/dev/null
		wait_for serving 20
	fi
	rk computer exec h -- 'rm -f pages/collected.txt' >/dev/null
}

serving() {
	[ "$(rk computer exec h -- "python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:8000/form.html\"); print(\"up\")'" 2>/dev/null)" = up ]
}

# What the pages collected.
collected() {
	rk computer exec h -- 'cat pages/collected.txt 2>/dev/null || true'
}

# Opens url and asks fill_secret to type pw into its Password field: run's
# $status and $output.
fill() {
	rk browser navigate h "$1" >/dev/null
	local ref
	ref=$(rk browser snapshot h | grep -m1 '^textbox "Password"' | sed -n 's/.*\[ref=\(e[0-9]*\)\].*/\1/p')
	[ -n "$ref" ]
	run rk browser act h -a "{\"action\":\"fill_secret\",\"ref\":\"$ref\",\"name\":\"pw\"}"
}

@test "fill_secret: a page of another origin that defines window.__rk first gets nothing" {
	pages
	fill http://localhost:8000/hostile_rk.html
	[ "$status" -eq 8 ]
	[[ $output == *"secret 'pw' is for http://127.0.0.1:8000, and the page is http://localhost:8000: refused"* ]]
	# its fake field never got the value (it would have put it in the title at once)
	[ "$(rk browser snapshot h --json | rk_json 'd["title"]')" = "Hostile refs" ]
	[[ "$(collected)" != *"$SECRET"* ]]
}

@test "fill_secret: a page of another origin that overrides setters, defineProperty and toLowerCase gets nothing" {
	pages
	fill http://localhost:8000/hostile_setters.html
	[ "$status" -eq 8 ]
	[[ $output == *"secret 'pw' is for http://127.0.0.1:8000, and the page is http://localhost:8000: refused"* ]]
	run rk browser snapshot h
	[[ $output == *'textbox "Password" [ref='*'] value=""'* ]]
	[[ "$(collected)" != *"$SECRET"* ]]
}

@test "fill_secret: the same page of the secret's origin gets the value typed, and none of its overrides is called" {
	pages
	fill http://127.0.0.1:8000/hostile_setters.html
	[ "$status" -eq 0 ]
	[[ $output != *"$SECRET"* ]]
	run rk browser snapshot h
	[[ $output == *'textbox "Password" [ref='*'] value="[secret]"'* ]]
	# typed as input: the page's input listener saw the whole value, and no
	# setter, descriptor, defineProperty, execCommand, dispatchEvent or focus
	# of the page's world was called by rakazo
	wait_for '[[ "$(collected)" == *" input $SECRET"* ]]' 20
	[ "$(collected)" = "http://127.0.0.1:8000 input $SECRET" ]
}

@test "fill_secret: focus moved into a frame of another origin as the field takes it is refused, nothing typed" {
	pages
	local mode
	for mode in sync timer grab; do
		fill "http://127.0.0.1:8000/hostile_focus.html?mode=$mode"
		[ "$status" -eq 8 ]
		[[ $output == *"the focus moved to a frame of another origin (http://localhost:8000/hostile_frame.html"*") before secret 'pw' was typed: refused"* ]]
	done
	# a move a little later lands before the check (refused) or after the typing (the field has it)
	fill "http://127.0.0.1:8000/hostile_focus.html?mode=late&ms=10"
	[ "$status" -eq 0 ] || [ "$status" -eq 8 ]
	rk browser snapshot h >/dev/null
	[[ "$(collected)" != *"$SECRET"* ]]
}

@test "fill_secret: a page that navigates to another origin during the fill never hands it the secret" {
	pages
	local mode
	for mode in sync timer; do
		rk computer exec h -- 'rm -f pages/collected.txt' >/dev/null
		fill "http://127.0.0.1:8000/hostile_nav.html?mode=$mode"
		[ "$status" -eq 8 ]
		[[ $output == *"the page started to go to http://localhost:8000/hostile_catch.html before secret 'pw' was typed: refused"* ]]
		# the navigation goes on once the fill is over, and its page gets nothing
		wait_for '[[ "$(collected)" == *"http://localhost:8000 arrived"* ]]' 20
		[[ "$(collected)" != *"$SECRET"* ]]
	done
	# a navigation a little later comes after the typing: the secret's own page had it
	rk computer exec h -- 'rm -f pages/collected.txt' >/dev/null
	fill "http://127.0.0.1:8000/hostile_nav.html?mode=late"
	[ "$status" -eq 0 ] || [ "$status" -eq 8 ]
	wait_for '[[ "$(collected)" == *"http://localhost:8000 arrived"* ]]' 20
	rk browser snapshot h >/dev/null
	[[ "$(collected)" != *"$SECRET"* ]]
}
