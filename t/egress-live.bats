#!/usr/bin/env bats
# Live egress of REAL namespace sandboxes (SPEC 4.8): the reasons a refusal
# carries, forge-sandbox log, and allow/deny on a running sandbox. The test
# network is built inside network namespaces this file creates (no address
# or route of the host changes, no traffic leaves the machine):
#   S   — the "host" where forge-sandbox up runs (its own mount namespace:
#         /etc/hosts and resolv.conf replaced there);
#   PUB — a "public" host, 198.51.100.10 (TEST-NET), a web server on :80;
#         S has 198.51.100.1 towards it;
#   LAN — a "LAN" host 10.9.0.10:80; S has 10.9.0.1 towards it.
load test_helper
load sandbox_helper
load net_helper

setup_file() {
	# No DNS server there: a name outside /etc/hosts does not resolve.
	net_setup_file forge-egress-live <<-'EOF' || return 0
	127.0.0.1 localhost
	198.51.100.10 api.public.test www.public.test evil.public.test
	10.9.0.10 lan.public.test
	EOF
	in_s ip route add default via 198.51.100.10
	net_bg nsenter --target "$PUB" --net -- python3 "$F/server.py" 0.0.0.0 80 "$NET/public.log"
	net_bg nsenter --target "$LAN" --net -- python3 "$F/server.py" 0.0.0.0 80 "$NET/lan.log"
	for _ in $(seq 1 100); do
		in_s curl -s -o /dev/null --max-time 1 http://198.51.100.10/ready && break
		sleep 0.1
	done
}

teardown_file() { net_teardown_file; }

setup() {
	load_support
	net_sandbox_setup public lan
	HELD='' FOLLOW=
}

teardown() {
	[ -z "${NET_SKIP:-}" ] || return 0
	[ -z "${HELD:-}" ] || kill "$HELD" 2>/dev/null || :
	# forge-sandbox log --follow runs in a process group of its own (setsid).
	[ -z "${FOLLOW:-}" ] || kill -- "-$FOLLOW" 2>/dev/null || :
	[ -z "${REPO:-}" ] || forge-sandbox rm "$REPO" >/dev/null 2>&1 || :
	forge_test_teardown
}

# code URL: the HTTP status curl gets inside for URL.
code() { in_sandbox curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$@"; }

# raw REQUEST: sends the raw REQUEST (printf format) through the proxy from
# inside and prints the answer with CRs shown as \r.
raw() {
	in_sandbox bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128 || exit; printf "$1" >&3; cat <&3' sh "$1" | sed 's/\r/\\r/g'
}

# grants: the live entries forge-sandbox ls --json shows for the sandbox.
grants() { forge-sandbox ls --json | jq -c --arg n "$NAME" '.[] | select(.name == $n) | .grants'; }


@test "a refusal's 403 body and X-Forge-Egress header name the host, the port, the rule and the command that allows it" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	run in_sandbox curl -sS --max-time 10 -i http://www.public.test/x
	assert_line --partial 'HTTP/1.1 403 Forbidden'
	assert_line --partial 'X-Forge-Egress: decision=deny; host=www.public.test; port=80; address=-; rule="not in the allow-list"; allow="forge-sandbox allow www.public.test"'
	assert_line 'forge-egress: refused www.public.test port 80: not in the allow-list; to allow it: forge-sandbox allow www.public.test'
	# CONNECT (HTTPS): the same answer to the CONNECT itself.
	run raw 'CONNECT www.public.test:443 HTTP/1.1\r\nHost: www.public.test:443\r\n\r\n'
	assert_line --index 0 'HTTP/1.1 403 Forbidden\r'
	assert_line 'X-Forge-Egress: decision=deny; host=www.public.test; port=443; address=-; rule="not in the allow-list"; allow="forge-sandbox allow www.public.test"\r'
	assert_line 'forge-egress: refused www.public.test port 443: not in the allow-list; to allow it: forge-sandbox allow www.public.test'
	run cat "$NET/public.log"
	assert_output ''
}

@test "a name resolving to a private address says so, with the address; one that does not resolve or answer gets 502 with the reason" {
	net_config '{"allow": ["*.public.test"]}'
	up_in_s 2>/dev/null
	run in_sandbox curl -sS --max-time 10 -i http://lan.public.test/
	assert_line --partial 'HTTP/1.1 403 Forbidden'
	assert_line --partial 'X-Forge-Egress: decision=deny; host=lan.public.test; port=80; address=10.9.0.10; rule="resolves to 10.9.0.10, which is not public (private (RFC 1918))"'
	assert_line 'forge-egress: refused lan.public.test port 80 (10.9.0.10): resolves to 10.9.0.10, which is not public (private (RFC 1918))'
	run in_sandbox curl -sS --max-time 20 -i http://nx.public.test/
	assert_line --partial 'HTTP/1.1 502 Bad Gateway'
	assert_line --partial 'forge-egress: cannot reach nx.public.test port 80: cannot resolve the name ('
	run in_sandbox curl -sS --max-time 20 -i http://api.public.test:81/
	assert_line --partial 'HTTP/1.1 502 Bad Gateway'
	assert_line --partial 'X-Forge-Egress: decision=error; host=api.public.test; port=81; address=198.51.100.10; rule="cannot connect (Connection refused)"'
	run cat "$NET/lan.log"
	assert_output ''
}

@test "a malformed or hostile request's answer injects nothing: one header block, printable bytes only" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	run raw 'CONNECT a\033]0;x\007.public.test:443 HTTP/1.1\r\nHost: a\r\n\r\n'
	assert_line --index 0 'HTTP/1.1 400 Bad Request\r'
	assert_line 'forge-egress: malformed request target'
	run grep -c 'X-Forge-Egress' <<<"$output"
	assert_output 1
	run raw 'CONNECT a\033]0;x\007.public.test:443 HTTP/1.1\r\nHost: a\r\n\r\n'
	refute_output --regexp $'[\x01-\x08\x0b-\x1f\x7f]'
	# The log keeps it as JSON: escaped, never raw.
	run grep -c $'\033' "$STATE/egress.log"
	assert_output 0
}

@test "log --denied --json lists exactly the refused requests; log prints each decision; no path, header or body is kept" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	# up's containment probes made refusals of their own.
	before=$(grep -c . "$STATE/egress.log")
	denied=$(grep -c '"decision":"deny"' "$STATE/egress.log")
	in_sandbox curl -sS --max-time 10 -o /dev/null -H 'Authorization: Bearer tok-hdr' 'http://api.public.test/one?tok=tok-query'
	in_sandbox curl -sS --max-time 10 -o /dev/null http://www.public.test/denied
	in_sandbox curl -sS --max-time 10 -o /dev/null -d 'tok-body' http://api.public.test/two
	in_sandbox curl -sS --max-time 10 -o /dev/null https://evil.public.test/ || :
	wait_log "$STATE" $((before + 4))
	run forge-sandbox log "$REPO" --denied --json
	assert_success
	assert_equal "${#lines[@]}" $((denied + 2))
	run jq -c '[.method, .host, .port, .address, .decision, .rule, .bytes]' <<<"$output"
	assert_line --index "$denied" '["GET","www.public.test",80,null,"deny","not in the allow-list",0]'
	assert_line --index $((denied + 1)) '["CONNECT","evil.public.test",443,null,"deny","not in the allow-list",0]'
	run forge-sandbox log "$REPO" --json
	assert_equal "${#lines[@]}" $((before + 4))
	run jq -r '.ts' <<<"$output"
	assert_line --index 0 --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$'
	# The human form, from the worktree (DIR defaults to it).
	run sh -c 'cd "$1" && forge-sandbox log' sh "$REPO"
	assert_success
	assert_line --regexp '^[0-9T:-]+Z  allow  GET api\.public\.test:80  198\.51\.100\.10  the allow-list entry api\.public\.test  \([0-9]+ bytes\)$'
	assert_line --regexp '^[0-9T:-]+Z  deny  CONNECT evil\.public\.test:443  -  not in the allow-list$'
	run grep -c tok- "$STATE/egress.log"
	assert_output 0
}

@test "log: bounded (rotated to egress.log.1, both read); --follow streams new decisions" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	# The proxy rotates at 1 MiB: a log just under it.
	head -c 1048500 /dev/zero | tr '\0' ' ' >"$STATE/egress.log"
	printf '\n' >>"$STATE/egress.log"
	in_sandbox curl -sS --max-time 10 -o /dev/null http://www.public.test/a
	in_sandbox curl -sS --max-time 10 -o /dev/null http://www.public.test/b
	[ -f "$STATE/egress.log.1" ]
	run stat -c %s "$STATE/egress.log"
	assert [ "$output" -lt 4096 ]
	run forge-sandbox log "$REPO" --json
	assert_equal "${#lines[@]}" 2
	setsid forge-sandbox log "$REPO" --follow --denied >"$SCRATCH/follow" 2>&1 3>&- &
	FOLLOW=$!
	in_sandbox curl -sS --max-time 10 -o /dev/null http://evil.public.test/c
	for _ in $(seq 1 100); do grep -q evil "$SCRATCH/follow" && break; sleep 0.05; done
	kill -- "-$FOLLOW"
	run grep -c 'deny  GET evil.public.test:80' "$SCRATCH/follow"
	assert_output 1
	run grep -c . "$SCRATCH/follow"
	assert_output 3
}

@test "allow makes the next request pass without a restart (same init); deny refuses it again and closes a tunnel held open" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	pid=$(init_pid)
	run code http://www.public.test/before
	assert_output 403
	run --separate-stderr forge-sandbox allow "$REPO" www.public.test
	assert_success
	[[ $stderr == *"allowed www.public.test"* ]]
	run code http://www.public.test/after
	assert_output 200
	assert_equal "$(init_pid)" "$pid"
	kill -0 "$pid"
	# A tunnel held open inside: it ends once deny returns.
	in_sandbox bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128; printf "CONNECT www.public.test:80 HTTP/1.1\r\n\r\n" >&3
		IFS= read -r line <&3; printf "%s\n" "$line" >"$1/tunnel"; cat <&3 >/dev/null; echo closed >>"$1/tunnel"' sh "$REPO" \
		</dev/null >/dev/null 2>&1 3>&- &
	HELD=$!
	for _ in $(seq 1 100); do grep -q 200 "$REPO/tunnel" 2>/dev/null && break; sleep 0.05; done
	run cat "$REPO/tunnel"
	assert_output --partial '200 Connection established'
	forge-sandbox deny "$REPO" www.public.test 2>/dev/null
	for _ in $(seq 1 40); do grep -q closed "$REPO/tunnel" && break; sleep 0.05; done
	run grep -c closed "$REPO/tunnel"
	assert_output 1
	run in_sandbox curl -sS --max-time 10 http://www.public.test/again
	assert_output 'forge-egress: refused www.public.test port 80: denied by forge-sandbox deny www.public.test; to allow it: forge-sandbox allow www.public.test'
	assert_equal "$(init_pid)" "$pid"
	# The tunnel's line says why it closed.
	run grep -c '"rule":"granted by forge-sandbox allow www.public.test; closed: denied by forge-sandbox deny www.public.test"' "$STATE/egress.log"
	assert_output 1
	# deny also narrows the configured list, live.
	forge-sandbox deny "$REPO" api.public.test 2>/dev/null
	run code http://api.public.test/
	assert_output 403
}

@test "allow --for 2s expires by itself; a later command on the same host replaces the earlier one" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	forge-sandbox allow "$REPO" www.public.test --for 2s 2>/dev/null
	run code http://www.public.test/
	assert_output 200
	run grants
	run jq -c '.[] | [.host, .decision, (.until | type)]' <<<"$output"
	assert_output '["www.public.test","allow","string"]'
	for _ in $(seq 1 60); do [ "$(code http://www.public.test/)" = 403 ] && break; sleep 0.1; done
	run in_sandbox curl -sS --max-time 10 http://www.public.test/
	assert_output --partial 'not in the allow-list'
	run grants
	assert_output '[]'
	forge-sandbox allow "$REPO" --for=1h www.public.test 2>/dev/null
	forge-sandbox allow "$REPO" www.public.test 2>/dev/null
	run grants
	assert_output '[{"host":"www.public.test","decision":"allow","until":null}]'
}

@test "grants are recorded: ls --json and up's warning show them; up --recreate and rm end them" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	forge-sandbox allow "$REPO" www.public.test '*.other.test' 2>/dev/null
	run grants
	assert_output '[{"host":"www.public.test","decision":"allow","until":null},{"host":"*.other.test","decision":"allow","until":null}]'
	run --separate-stderr up_in_s
	assert_success
	[[ $stderr == *"$NAME has live egress changes that are not in the configuration"* ]]
	[[ $stderr == *'allow www.public.test'* ]]
	run --separate-stderr up_in_s --recreate
	assert_success
	run grants
	assert_output '[]'
	run code http://www.public.test/
	assert_output 403
	forge-sandbox allow "$REPO" www.public.test 2>/dev/null
	forge-sandbox rm "$REPO" 2>/dev/null
	[ ! -e "$STATE" ]
}

@test "allow and deny check each HOST as configuration is checked: a rejected one is 65 naming the reason, and nothing of the call applies" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	run --separate-stderr forge-sandbox allow "$REPO" www.public.test 'x.com:443'
	assert_failure 65
	[[ $stderr == *"x.com:443: contains ':'"* ]]
	run code http://www.public.test/
	assert_output 403
	run --separate-stderr forge-sandbox allow "$REPO" '*'
	assert_failure 65
	run --separate-stderr forge-sandbox allow "$REPO" '*.com'
	assert_failure 65
	run --separate-stderr forge-sandbox deny "$REPO" localhost
	assert_failure 65
	# A hostile name: refused, and printed without its control bytes.
	run --separate-stderr forge-sandbox allow "$REPO" $'a.com\r\nX-Evil: 1\033[2J'
	assert_failure 65
	[[ $stderr != *$'\r'* ]]
	[[ $stderr != *$'\033'* ]]
	run code http://api.public.test/
	assert_output 200
	run grants
	assert_output '[]'
}

@test "allow and deny: usage errors are 64; DIR is an operand with a '/'" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	run forge-sandbox allow "$REPO"
	assert_failure 64
	for d in 0s 5x 1.5m '' m -1s 999999999h; do
		run forge-sandbox allow "$REPO" www.public.test --for "$d"
		assert_failure 64
	done
	run forge-sandbox deny "$REPO" www.public.test --for 1m
	assert_failure 64
	run forge-sandbox allow "$REPO" --bogus www.public.test
	assert_failure 64
	run sh -c 'cd "$1" && forge-sandbox allow www.public.test' sh "$REPO"
	assert_success
	run code http://www.public.test/
	assert_output 200
}

@test "open egress: allow and deny are 64, there is no proxy to change" {
	net_config '{}'
	up_in_s 2>/dev/null
	run --separate-stderr forge-sandbox allow "$REPO" www.public.test
	assert_failure 64
	[[ $stderr == *'open egress (no allow-list): there is no proxy'* ]]
	run forge-sandbox deny "$REPO" www.public.test
	assert_failure 64
}

@test "msb: allow and deny are 69 naming forge-sandbox up --recreate" {
	use_stub
	run --separate-stderr forge-sandbox allow "$REPO" www.public.test
	assert_failure 69
	[[ $stderr == *'forge-sandbox up --recreate'* ]]
	run --separate-stderr forge-sandbox deny "$REPO" www.public.test
	assert_failure 69
	[[ $stderr == *'forge-sandbox up --recreate'* ]]
	run forge-sandbox log "$REPO"
	assert_failure 69
}

@test "a sandboxed process cannot reach the control socket; the proxy's own socket takes no control request" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	[ -S "$STATE/egress.ctl" ]
	run stat -c %a "$STATE/egress.ctl"
	assert_output 600
	run in_sandbox test -e "$STATE/egress.ctl"
	assert_failure
	run in_sandbox python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])' "$STATE/egress.ctl"
	assert_failure
	run in_sandbox ls -A /run/forge/net
	assert_output egress.sock
	# Nor the log, or the record of the grants.
	run in_sandbox test -e "$STATE/egress.log"
	assert_failure
	run in_sandbox test -e "$STATE/egress-grants.jsonl"
	assert_failure
	# The control protocol sent where the sandbox can send: a bad request.
	run raw 'allow 0 www.public.test\r\n\r\n'
	assert_output --partial '400 Bad Request'
	run code http://www.public.test/
	assert_output 403
}

@test "a flood of grants and requests in parallel never lets a request through a list it was not on" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	# Host side: www.public.test and *.other.test granted and denied, over and over.
	(
		for i in $(seq 1 25); do
			forge-sandbox allow "$REPO" www.public.test '*.other.test' "w$i.public.test"
			forge-sandbox deny "$REPO" www.public.test
		done
	) >/dev/null 2>&1 3>&- &
	flood=$!
	# Inside: evil.public.test is on no list ever; api.public.test always is.
	in_sandbox sh -c 'i=0; while [ $i -lt 60 ]; do
			curl -s -o /dev/null --max-time 10 -w "evil %{http_code}\n" http://evil.public.test/
			curl -s -o /dev/null --max-time 10 -w "api %{http_code}\n" http://api.public.test/
			curl -s -o /dev/null --max-time 10 -w "www %{http_code}\n" http://www.public.test/
			i=$((i + 1))
		done' >"$SCRATCH/codes" 2>&1 &
	reqs=$!
	wait "$reqs"
	wait "$flood"
	run grep -c '^evil 403$' "$SCRATCH/codes"
	assert_output 60
	run grep -c '^api 200$' "$SCRATCH/codes"
	assert_output 60
	# 000: a connection a deny closed while its answer was on the way.
	run grep -c -E '^www (200|403|000)$' "$SCRATCH/codes"
	assert_output 60
	run grep -c 'evil.public.test' "$NET/public.log"
	assert_output 0
	run grep -c '"host":"evil.public.test","port":80,"address":"198.51.100.10","decision":"allow"' "$STATE/egress.log"
	assert_output 0
	# The last command won: www denied.
	run code http://www.public.test/
	assert_output 403
}

@test "with secrets (mitmdump in front): the refusal's reasons reach the client, and allow/deny change what forge-egress decides behind it" {
	net_config '{"allow": ["api.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}]}'
	TOKEN_X=s3cr3t-value up_in_s 2>/dev/null
	run in_sandbox curl -sS --max-time 20 -i http://www.public.test/plain
	assert_line --partial 'HTTP/1.1 403 Forbidden'
	assert_line --partial 'X-Forge-Egress: decision=deny; host=www.public.test; port=80; address=-; rule="not in the allow-list"'
	assert_line 'forge-egress: refused www.public.test port 80: not in the allow-list; to allow it: forge-sandbox allow www.public.test'
	forge-sandbox allow "$REPO" www.public.test 2>/dev/null
	run in_sandbox curl -sS --max-time 20 http://www.public.test/plain
	assert_output '198.51.100.10 host=www.public.test path=/plain auth=-'
	forge-sandbox deny "$REPO" www.public.test 2>/dev/null
	# A CONNECT: mitmdump passes forge-egress's refusal on as its answer.
	run --separate-stderr in_sandbox curl -sS --max-time 20 -o /dev/null -w '%{http_connect}' https://www.public.test/
	assert_output 403
	run grep -c 's3cr3t-value' "$STATE/egress.log"
	assert_output 0
}
