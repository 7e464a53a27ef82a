#!/usr/bin/env bats
# rakazo checkpoint with the S3 home store (issue 14), against a local s3rver
# on loopback (tests/s3/start.sh): create, list, verify and export go to the
# bucket, a lost machine and host dir come back from it, and a wrong setting
# is a clear error. Skips without node or s3rver, unless RAKAZO_REQUIRE_DOCKER=1.

load helper

setup_file() {
	export S3_DIR="$BATS_FILE_TMPDIR/s3"
	local out rc=0
	out=$(sh "$BATS_TEST_DIRNAME/../s3/start.sh" "$S3_DIR" rakazo-bats $$) || rc=$?
	if [ $rc -eq 0 ]; then
		export S3_ENDPOINT=$(echo "$out" | sed -n 's/^endpoint=//p')
		export S3_PID=$(echo "$out" | sed -n 's/^pid=//p')
	else
		export S3_MISSING=$rc
	fi
}

teardown_file() {
	if [ -n "${S3_PID:-}" ]; then kill "$S3_PID" 2>/dev/null || true; fi
}

setup() {
	rk_remote_setup
	if [ -z "${S3_ENDPOINT:-}" ]; then
		[ "${RAKAZO_REQUIRE_DOCKER:-}" = 1 ] && { echo "s3rver is required but did not start (sh tests/s3/setup.sh)" >&2; return 1; }
		skip "node or s3rver is missing (sh tests/s3/setup.sh installs s3rver)"
	fi
	export RAKAZO_HOME_STORE="s3://rakazo-bats/t$BATS_TEST_NUMBER"
	export RAKAZO_S3_ENDPOINT="$S3_ENDPOINT"
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
}

jget() {
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

home_of() {
	rk computer show "$1" --json | jget 'd["home_key"]'
}

# the keys under the test's prefix in the bucket (s3rver keeps them as files)
bucket_has() {
	find "$S3_DIR/data/rakazo-bats/t$BATS_TEST_NUMBER" -path "*$1*" | grep -q .
}

@test "s3: checkpoint create, list, verify and export go through the bucket" {
	rk computer create --provider fake --name a --wait --json >/dev/null
	printf 'first' | rk computer file write a notes.txt -
	run rk checkpoint create a --json
	[ "$status" -eq 0 ]
	# the S3 store keeps no markers: even one revision is a snapshot
	[ "$(echo "$output" | jget 'd["kind"]')" = snapshot ]
	r1=$(echo "$output" | jget 'd["id"]')
	bucket_has "homes/$(home_of a)/revs/$r1"
	bucket_has "homes/$(home_of a)/latest"
	bucket_has "objects/$(printf first | sha256sum | cut -c1-64)"
	run rk checkpoint list a --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'len(d)')" = 1 ]
	[ "$(echo "$output" | jget 'd[0]["id"]')" = "$r1" ]
	run rk checkpoint verify a --deep --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["ok"]')" = True ]
	rk checkpoint export a -o "$BATS_TEST_TMPDIR/ws.tar.zst"
	run tar --zstd -xOf "$BATS_TEST_TMPDIR/ws.tar.zst" notes.txt
	[ "$status" -eq 0 ]
	[ "$output" = first ]
	# gc keeps what the revision names
	run rk checkpoint gc --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'd["objects_removed"]')" = 0 ]
	[ "$(echo "$output" | jget 'd["objects_kept"]')" -ge 1 ]
	run rk checkpoint verify a --deep --json
	[ "$(echo "$output" | jget 'd["ok"]')" = True ]
	# nothing went to the local store
	[ ! -d "$RAKAZO_DATA_DIR/objects" ] || [ -z "$(find "$RAKAZO_DATA_DIR/objects" -type f -name '??????*' ! -name lock)" ]
}

@test "s3: a lost machine and host dir come back from the bucket" {
	rk computer create --provider fake --name b --revisions 3 --wait --json >/dev/null
	printf 'precious' | rk computer file write b work/notes.txt -
	rk computer stop b --wait --json >/dev/null
	run rk checkpoint list b --json
	[ "$(echo "$output" | jget 'd[0]["reason"]')" = stop ]
	# the machine and everything on this host of the home are gone
	for f in "$RAKAZO_DATA_DIR"/fake/*/state; do echo gone >"$f"; done
	rm -rf "$RAKAZO_DATA_DIR/homes/$(home_of b)" "$RAKAZO_DATA_DIR/home-revisions" "$RAKAZO_DATA_DIR/objects"
	run rk computer resume b --wait --json
	[ "$status" -eq 0 ]
	[[ "$output" == *home_rebuilt* ]]
	[ "$(rk computer file read b work/notes.txt)" = precious ]
}

@test "s3: restore brings an older revision back" {
	rk computer create --provider fake --name c --revisions 3 --wait --json >/dev/null
	printf 'one' | rk computer file write c notes.txt -
	r1=$(rk checkpoint create c --json | jget 'd["id"]')
	printf 'two' | rk computer file write c notes.txt -
	rk computer stop c --wait --json >/dev/null
	run rk checkpoint restore c --revision "$r1" --json
	[ "$status" -eq 0 ]
	[ "$(cat "$RAKAZO_DATA_DIR/homes/$(home_of c)/notes.txt")" = one ]
}

@test "s3: a wrong setting is a clear error and changes nothing" {
	rk computer create --provider fake --name d --wait --json >/dev/null
	RAKAZO_HOME_STORE=gs://elsewhere run rk checkpoint create d
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid_argument"*"s3://"* ]]
	AWS_ACCESS_KEY_ID= run rk checkpoint create d
	[ "$status" -eq 2 ]
	[[ "$output" == *"AWS_ACCESS_KEY_ID"* ]]
	AWS_ACCESS_KEY_ID=WRONG AWS_SECRET_ACCESS_KEY=TOPSECRET-xyz run rk checkpoint create d
	[ "$status" -eq 8 ]
	[[ "$output" == *"InvalidAccessKeyId"* ]]
	[[ "$output" != *"TOPSECRET"* ]]
	RAKAZO_HOME_STORE=s3://no-such-bucket/x run rk checkpoint create d
	[ "$status" -eq 3 ]
	[[ "$output" == *"NoSuchBucket"* ]]
	run rk checkpoint list d --json
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jget 'len(d)')" = 0 ]
}

@test "s3: a store that cannot be read is never taken for an empty one: export and a rebuild fail, nothing starts empty" {
	rk computer create --provider fake --name e --wait --json >/dev/null
	printf 'kept' | rk computer file write e notes.txt -
	rk computer stop e --wait --json >/dev/null
	local home
	home="$RAKAZO_DATA_DIR/homes/$(home_of e)"
	rk_kill_all # the on-demand worker keeps the good endpoint in its environment
	# nothing listens on this loopback port: the store cannot say what its latest checkpoint is
	export RAKAZO_S3_ENDPOINT=http://127.0.0.1:9
	run rk checkpoint export e -o "$BATS_TEST_TMPDIR/e.tar"
	[ "$status" -ne 0 ]
	[[ "$output" == *"cannot read the latest checkpoint of 'e' from the s3 workspace store"* ]]
	# the machine and the host's copy of the home are gone: a replacement needs the store
	for f in "$RAKAZO_DATA_DIR"/fake/*/state; do echo gone >"$f"; done
	rm -rf "$home"
	RAKAZO_NO_WORKER=1 rk computer resume e --json >/dev/null
	run rk worker --once
	run rk computer execution list e --json
	[ "$(echo "$output" | jget 'd[-1]["op"] + " " + d[-1]["state"]')" = "resume failed" ]
	[[ "$(echo "$output" | jget 'd[-1]["error"]["message"]')" == *"cannot be rebuilt"* ]]
	[ ! -e "$home" ]
	# the store back: the same resume rebuilds the home from it
	export RAKAZO_S3_ENDPOINT=$S3_ENDPOINT
	run rk computer resume e --wait --json
	[ "$status" -eq 0 ]
	[[ "$output" == *home_rebuilt* ]]
	[ "$(rk computer file read e notes.txt)" = kept ]
}
