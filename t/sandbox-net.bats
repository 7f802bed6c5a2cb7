#!/usr/bin/env bats
# Egress of REAL namespace sandboxes (SPEC 4.5): `forge-sandbox up` starts
# forge-egress and the relay inside (allow-list) or slirp4netns and nft (no
# allow-list), and rm stops them. Everything runs in a test network built
# inside network namespaces this file creates (no address or route of the
# host changes, no traffic leaves the machine):
#   S   — the "host" where forge-sandbox up runs (its own mount namespace:
#         /etc/hosts and resolv.conf replaced there); a loopback service on
#         127.0.0.1:8080 and a service on every address of S on :8081;
#   PUB — a "public" host, 198.51.100.10 (TEST-NET), a web server on :80
#         and on :443 (TLS, a certificate of a test CA);
#         S has 198.51.100.1 towards it;
#   LAN — a "LAN" host 10.9.0.10:80; S has 10.9.0.1 towards it.
load test_helper
load sandbox_helper
load net_helper

setup_file() {
	net_setup_file forge-sandbox-net <<-'EOF' || return 0
	127.0.0.1 localhost
	198.51.100.10 api.public.test www.public.test
	127.0.0.1 loop.public.test
	10.9.0.10 lan.public.test
	EOF
	in_s ip route add default via 198.51.100.10
	net_servers
}

teardown_file() { net_teardown_file; }

setup() {
	load_support
	net_sandbox_setup public lan loopback host
}

teardown() {
	[ -z "${NET_SKIP:-}" ] || return 0
	[ -z "${REPO:-}" ] || forge-sandbox rm "$REPO" >/dev/null 2>&1 || :
	forge_test_teardown
}

# slirp_for PID: the PIDs of the slirp4netns processes attached to the
# network namespace of the sandbox whose init is PID (by command line: one
# pgrep, as in running_with).
slirp_for() {
	pgrep -f -- "^slirp4netns .*/proc/$1/ns/net " || :
}

# net_pids PIDFILE...: the PIDs these files hold (none when they are gone).
net_pids() { cat -- "$@" 2>/dev/null || :; }

@test "allow-list: only lo; an allowed name is reached through the relay; a denied name gets 403; nothing without the proxy" {
	net_config '{"allow": ["api.public.test", "loop.public.test"]}'
	run --separate-stderr up_in_s
	assert_success
	[[ $stderr != *'no network'* ]]
	run in_sandbox sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	assert_output lo
	# curl honours HTTP_PROXY, set inside.
	run in_sandbox curl -sS --max-time 10 http://api.public.test/allowed
	assert_success
	assert_output '198.51.100.10 host=api.public.test path=/allowed auth=-'
	run in_sandbox curl -sS --max-time 10 -o /dev/null -w '%{http_code}' http://www.public.test/denied
	assert_output 403
	# HTTPS goes through CONNECT: a denied name gets 403 too.
	run in_sandbox curl -sS --max-time 10 https://www.public.test/
	assert_failure
	assert_output --partial 403
	# Without the proxy: no route, no name.
	run in_sandbox curl -sS --noproxy '*' --max-time 5 http://198.51.100.10/direct
	assert_failure
	run in_sandbox curl -sS --noproxy '*' --max-time 5 http://api.public.test/direct
	assert_failure
	run cat "$NET/public.log"
	assert_output '198.51.100.10 host=api.public.test path=/allowed auth=-'
	grep -q '"method":"GET","host":"api.public.test","port":80,"address":"198.51.100.10","decision":"allow"' "$STATE/egress.log"
	grep -q '"method":"GET","host":"www.public.test","port":80,"address":null,"decision":"deny"' "$STATE/egress.log"
}

@test "allow-list: the host's loopback is unreachable, by an allowed name or directly" {
	net_config '{"allow": ["loop.public.test"]}'
	up_in_s 2>/dev/null
	run in_sandbox curl -sS --max-time 10 -o /dev/null -w '%{http_code}' http://loop.public.test:8080/
	assert_output 403
	run in_sandbox curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:8080/
	assert_failure
	run cat "$NET/loopback.log"
	assert_output ''
}

@test "allow-list: the proxy variables are set inside, not taken from the host or sandbox.network.env" {
	net_config '{"allow": ["api.public.test"], "env": ["HTTP_PROXY", "https_proxy", "FORGE_T_KEPT"]}'
	HTTP_PROXY=http://10.9.0.10:80 https_proxy=http://10.9.0.10:80 FORGE_T_KEPT=yes run --separate-stderr up_in_s
	assert_success
	[[ $stderr == *'HTTP_PROXY is not passed on'* ]]
	HTTP_PROXY=http://10.9.0.10:80 https_proxy=http://10.9.0.10:80 FORGE_T_KEPT=yes \
		run in_sandbox sh -c 'env | grep -i -e _proxy= -e FORGE_T_KEPT | sort'
	assert_output "$(printf '%s\n' ALL_PROXY=http://127.0.0.1:3128 FORGE_T_KEPT=yes HTTPS_PROXY=http://127.0.0.1:3128 \
		HTTP_PROXY=http://127.0.0.1:3128 NO_PROXY=localhost,127.0.0.1,::1 all_proxy=http://127.0.0.1:3128 \
		http_proxy=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 no_proxy=localhost,127.0.0.1,::1 | sort)"
	# Of the host's folders only the egress socket is there.
	run in_sandbox ls -A /run/forge/net
	assert_output egress.sock
	run cat "$NET/lan.log"
	assert_output ''
}

@test "allow-list: rm stops forge-egress; a dead sandbox's proxy is replaced when up restarts it" {
	net_config '{"allow": ["api.public.test"]}'
	up_in_s 2>/dev/null
	old=$(net_pids "$STATE/egress.pid")
	[ -n "$old" ]
	kill -0 "$old"
	# The init dies: up restarts the sandbox with a new proxy and relay.
	kill -KILL "$(cut -d' ' -f1 "$STATE/pid")"
	run --separate-stderr up_in_s
	assert_success
	[[ $stderr == *"started $NAME"* ]]
	run kill -0 "$old"
	assert_failure
	new=$(net_pids "$STATE/egress.pid")
	kill -0 "$new"
	run in_sandbox curl -sS --max-time 10 http://api.public.test/again
	assert_output '198.51.100.10 host=api.public.test path=/again auth=-'
	forge-sandbox rm "$REPO" 2>/dev/null
	run kill -0 "$new"
	assert_failure
	[ ! -e "$STATE" ]
}

@test "open egress: the public host answers; the LAN, the host's addresses and its loopback do not" {
	net_config '{}'
	run --separate-stderr up_in_s
	assert_success
	[[ $stderr != *'no network'* ]]
	run in_sandbox curl -sS --max-time 10 http://198.51.100.10/open
	assert_success
	assert_output '198.51.100.10 host=198.51.100.10 path=/open auth=-'
	assert_no_lan_nor_host 5 in_sandbox
	run in_sandbox curl -sS --max-time 5 http://10.0.2.2:8080/
	assert_failure
	run cat "$NET/lan.log" "$NET/host.log" "$NET/loopback.log"
	assert_output ''
	# No proxy under open egress; the resolver is slirp4netns's.
	run in_sandbox sh -c 'env | grep -ci _proxy=; cat /etc/resolv.conf'
	assert_output "$(printf '0\nnameserver 10.0.2.3')"
	# uid 1000 inside cannot change the rules.
	run in_sandbox nft flush ruleset
	assert_failure
	run in_sandbox curl -sS --max-time 5 http://10.9.0.10/
	assert_failure
}

@test "open egress: rm leaves no slirp4netns; a dead sandbox's is replaced by up" {
	net_config '{}'
	up_in_s 2>/dev/null
	init=$(cut -d' ' -f1 "$STATE/pid")
	old=$(slirp_for "$init")
	[ -n "$old" ]
	# The PID file names slirp4netns itself (what rm stops).
	assert_equal "$(net_pids "$STATE/slirp.pid")" "$old"
	kill -KILL "$init"
	up_in_s 2>/dev/null
	run kill -0 "$old"
	assert_failure
	init2=$(cut -d' ' -f1 "$STATE/pid")
	new=$(slirp_for "$init2")
	[ -n "$new" ]
	run in_sandbox curl -sS --max-time 10 http://198.51.100.10/again
	assert_output '198.51.100.10 host=198.51.100.10 path=/again auth=-'
	forge-sandbox rm "$REPO" 2>/dev/null
	run slirp_for "$init2"
	assert_output ''
}

@test "open egress without slirp4netns: up refuses with 69 and starts nothing; doctor names it" {
	net_config '{}'
	# slirp4netns hidden (not executable) in a mount namespace of this test only.
	hide='mount --bind /dev/null "$(command -v slirp4netns)" && cd "$1" && shift && exec "$@"'
	run --separate-stderr in_s unshare --mount --propagation private -- sh -c "$hide" sh "$REPO" forge-sandbox up
	assert_failure 69
	[[ $stderr == *'needs slirp4netns'* ]]
	[ ! -e "$STATE/pid" ]
	run --separate-stderr in_s unshare --mount --propagation private -- sh -c "$hide" sh "$REPO" forge-sandbox doctor
	[[ $stderr == *'open egress (no allow-list): unavailable: needs slirp4netns;'* ]]
	[[ $stderr == *"needs slirp4netns; up refuses a namespace sandbox with open egress and no secrets (an allow-list, or secrets, go through forge's proxy and work)"* ]]
	run --separate-stderr forge-sandbox doctor
	[[ $stderr == *"open egress (no allow-list): available (slirp4netns, nft; with secrets, through forge's proxy instead)"* ]]
}

@test "secrets: the placeholder is replaced on TLS to the secret's host; the value and the token stay outside; rm stops mitmdump" {
	net_config '{"allow": ["www.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}]}'
	TOKEN_X=s3cr3t-value FORGE_SECRETS_UPSTREAM_CA=$NET/ca.pem run --separate-stderr up_in_s
	assert_success
	# The sandbox trusts the per-sandbox CA through the system bundle.
	run in_sandbox curl -sS --max-time 20 -H 'Authorization: Bearer $MSB_TOKEN_X' https://api.public.test/secret
	assert_success
	# The server got the value; its echo is the placeholder again inside.
	assert_output '198.51.100.10 host=api.public.test path=/secret auth=Bearer $MSB_TOKEN_X'
	run grep -F ' path=/secret ' "$NET/public-tls.log"
	assert_output '198.51.100.10 host=api.public.test path=/secret auth=Bearer s3cr3t-value'
	# Plain HTTP to an allowed host: untouched; a host not allowed: 403.
	run in_sandbox curl -sS --max-time 20 -H 'Authorization: Bearer $MSB_TOKEN_X' http://www.public.test/plain
	assert_output '198.51.100.10 host=www.public.test path=/plain auth=Bearer $MSB_TOKEN_X'
	run in_sandbox curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://lan.public.test/
	assert_output 403
	run in_sandbox sh -c 'env; cat /etc/ssl/certs/ca-certificates.crt >/dev/null; ls -A /run/forge/net'
	refute_output --partial s3cr3t-value
	# The proxy token is in the sandbox's environment, on no command line.
	run grep -lsF -f "$STATE/mitm/token" /proc/[0-9]*/cmdline
	assert_output ''
	mitm=$(net_pids "$STATE/mitm.pid")
	[ -n "$mitm" ]
	forge-sandbox rm "$REPO" 2>/dev/null
	run kill -0 "$mitm"
	assert_failure
}

@test "open egress with secrets: every connection goes through the substituting proxy; the value reaches only the secret's host" {
	net_config '{"allow": ["*"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}]}'
	TOKEN_X=s3cr3t-value FORGE_SECRETS_UPSTREAM_CA=$NET/ca.pem run --separate-stderr up_in_s
	assert_success
	run in_sandbox curl -sS --max-time 20 -H 'Authorization: Bearer $MSB_TOKEN_X' https://api.public.test/open-secret
	assert_success
	assert_output '198.51.100.10 host=api.public.test path=/open-secret auth=Bearer $MSB_TOKEN_X'
	run grep -F ' path=/open-secret ' "$NET/public-tls.log"
	assert_output '198.51.100.10 host=api.public.test path=/open-secret auth=Bearer s3cr3t-value'
	# Any other public host still answers, untouched; non-public ones do not.
	run in_sandbox curl -sS --max-time 20 -H 'Authorization: Bearer $MSB_TOKEN_X' http://www.public.test/open-other
	assert_output '198.51.100.10 host=www.public.test path=/open-other auth=Bearer $MSB_TOKEN_X'
	run in_sandbox curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://lan.public.test/
	assert_output 403
	run cat "$NET/lan.log"
	assert_output ''
	# Only lo: nothing leaves but through the proxy.
	run in_sandbox sh -c 'tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "'
	assert_output lo
	[ ! -e "$STATE/slirp.pid" ]
	run in_sandbox sh -c 'env; cat /proc/[0-9]*/environ'
	refute_output --partial s3cr3t-value
}

@test "secrets: the secret's variable holds its placeholder inside; the value is in no environment there" {
	net_config '{"allow": ["www.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}]}'
	TOKEN_X=s3cr3t-value run --separate-stderr up_in_s
	assert_success
	TOKEN_X=s3cr3t-value run in_sandbox printenv TOKEN_X
	assert_output '$MSB_TOKEN_X'
	TOKEN_X=s3cr3t-value run in_sandbox sh -c 'env; cat /proc/[0-9]*/environ'
	refute_output --partial s3cr3t-value
}

@test "secrets: a secret listed in sandbox.network.env too is not passed in, with a warning" {
	net_config '{"allow": ["www.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}], "env": ["TOKEN_X"]}'
	TOKEN_X=s3cr3t-value run --separate-stderr up_in_s
	assert_success
	[[ $stderr == *'TOKEN_X is a secret; not passed'* ]]
	TOKEN_X=s3cr3t-value run in_sandbox printenv TOKEN_X
	assert_output '$MSB_TOKEN_X'
}

@test "secrets: a host variable unset at up: the warning says what happens on this backend (commands run, the placeholder goes out), and that is what happens; up --restart with it set fixes it" {
	net_config '{"allow": ["www.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}]}'
	unset TOKEN_X
	FORGE_SECRETS_UPSTREAM_CA=$NET/ca.pem run --separate-stderr up_in_s
	assert_success
	[[ $stderr == *'warning: secret TOKEN_X: the host variable TOKEN_X is not set; commands in the sandbox run, but its requests to the secret'"'"'s hosts carry the placeholder $MSB_TOKEN_X instead of a value'*'export it, then forge-sandbox up --restart'* ]]
	[[ $stderr != *'every command in the sandbox fails'* ]]
	run in_sandbox true
	assert_success
	run in_sandbox curl -sS --max-time 20 -H 'Authorization: Bearer $MSB_TOKEN_X' https://api.public.test/unset
	assert_success
	run grep -F ' path=/unset ' "$NET/public-tls.log"
	assert_output '198.51.100.10 host=api.public.test path=/unset auth=Bearer $MSB_TOKEN_X'
	# Exported later: the running proxy still has none; up --restart reads it.
	export TOKEN_X=s3cr3t-late
	FORGE_SECRETS_UPSTREAM_CA=$NET/ca.pem run in_s sh -c 'cd "$1" && exec forge-sandbox up --restart' sh "$REPO"
	assert_success
	run in_sandbox curl -sS --max-time 20 -H 'Authorization: Bearer $MSB_TOKEN_X' https://api.public.test/late
	run grep -F ' path=/late ' "$NET/public-tls.log"
	assert_output '198.51.100.10 host=api.public.test path=/late auth=Bearer s3cr3t-late'
}

@test "secrets on the namespace backend are fixed at create: adopting with other secret hosts warns as drift" {
	net_config '{"allow": ["www.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test"]}]}'
	TOKEN_X=v run --separate-stderr up_in_s
	assert_success
	[ "$(forge-state get "$REPO/.forge/sandbox/$NAME" secrets)" = TOKEN_X@api.public.test ]
	TOKEN_X=v run --separate-stderr up_in_s
	[[ $stderr != *differs* ]]
	net_config '{"allow": ["www.public.test"], "secrets": [{"env": "TOKEN_X", "hosts": ["api.public.test", "www.public.test"]}]}'
	TOKEN_X=v run --separate-stderr up_in_s
	assert_success
	[[ $stderr == *"warning: $NAME differs from the configuration in what is fixed when a sandbox is created"* ]]
	[[ $stderr == *'secrets: created with: TOKEN_X@api.public.test'*'secrets: configured:   TOKEN_X@api.public.test,www.public.test'* ]]
}
