#!/usr/bin/env bats
# Egress of the namespace backend (SPEC 4.5): forge-egress, forge-relay and
# lib-sh/forge-net.sh, against a test network built entirely inside network
# namespaces this file creates (no address or route of the host changes, no
# traffic leaves the machine):
#   scenario netns S (its own mount namespace: /etc/hosts and resolv.conf
#   replaced there) — the "host": forge-egress, slirp4netns, a loopback
#   service on 127.0.0.1:8080, a service on every address of S on :8081, a
#   rebinding DNS server on 127.0.0.53;
#   PUB  — a "public" host: 198.51.100.10 and 203.0.113.10 (TEST-NET), web
#          servers on :80 (and TLS on :443 and :8443, one log);
#          S has 198.51.100.1 towards it;
#   LAN  — a "LAN" host 10.9.0.10:80;           S has 10.9.0.1 towards it;
#   a sandbox netns per test with only `lo` (or slirp4netns in open mode).
load test_helper
load net_helper

setup_file() {
	net_setup_file forge-egress <<-'EOF' || return 0
	127.0.0.1 localhost
	198.51.100.10 api.public.test www.public.test public.test deep.a.public.test
	198.51.100.10 exact.test www.exact.test sfx.test a.sfx.test xsfx.test
	203.0.113.10 evil.test
	127.0.0.1 loop.public.test
	10.9.0.10 lan.public.test
	100.64.1.1 cgnat.public.test
	198.51.100.1 self.public.test
	fec0::10 sitelocal.public.test
	2002:c633:640a::1 sixtofour.public.test
	2001:0:c633:640a::1 teredo.public.test
	198.18.0.10 bench.public.test
	EOF
	nsenter --target "$PUB" --net -- ip addr add 203.0.113.10/32 dev eth0
	in_s ip route add 203.0.113.0/24 via 198.51.100.10
	# Besides net_servers': TLS on PUB's :8443 too, and the rebinding DNS servers.
	net_bg nsenter --target "$PUB" --net -- python3 "$F/server.py" 0.0.0.0 8443 "$NET/public-tls.log" \
		"$NET/srv.pem" "$NET/srv.key"
	net_bg nsenter --target "$LAN" --net -- python3 "$F/dns.py" 10.9.0.10 rebind.public.test 198.51.100.10 "$NET/lan-dns.log"
	net_bg nsenter --target "$S" --net --mount -- python3 "$F/dns.py" 127.0.0.53 rebind.public.test 198.51.100.10 "$NET/dns.log"
	touch "$NET/dns.log" "$NET/lan-dns.log"
	net_servers
}

teardown_file() { net_teardown_file; }

setup() {
	load_support
	net_skip
	forge_test_setup
	# shellcheck source=/dev/null
	. "$abs_top_builddir/lib-sh/forge.sh"
	ST=$NET/state-$BATS_TEST_NUMBER
	mkdir -m 700 "$ST"
	SB='' RELAY=''
}

teardown() {
	[ -z "${NET_SKIP:-}" ] || return 0
	[ -z "$RELAY" ] || kill "$RELAY" 2>/dev/null || :
	[ -z "$SB" ] || kill "$SB" 2>/dev/null || :
	[ ! -d "${ST:-}" ] || in_s sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_secrets_stop '$ST'; forge_net_open_stop '$ST'"
	forge_test_teardown
}

# proxy RULE...: starts forge-egress in S with these allow-list entries, and
# a sandbox netns (only lo) with forge-relay on 127.0.0.1:3128.
proxy() {
	printf '%s\n' "$@" >"$ST/rules"
	in_s env FORGE_LIBDIR="$FORGE_LIBDIR" FORGE_HELPERDIR="$FORGE_HELPERDIR" sh -c \
		". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_proxy_start '$ST' '$ST/rules'"
	nsenter --target "$S" --net --mount -- unshare --net -- sh -c 'ip link set lo up && exec sleep 600' >/dev/null 2>&1 3>&- &
	SB=$!
	ns_ready "$SB"
	nsenter --target "$SB" --net --mount -- "$abs_top_builddir/helpers/forge-relay" 127.0.0.1:3128 "$ST/egress.sock" >/dev/null 2>&1 3>&- &
	RELAY=$!
	for _ in $(seq 1 50); do
		nsenter --target "$SB" --net -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/3128' 2>/dev/null && break
		sleep 0.05
	done
}

# sb CMD...: runs CMD in the sandbox netns (with S's files).
sb() { nsenter --target "$SB" --net --mount -- "$@"; }


# get URL: curl through the relay, printing the status code then the body.
get() { sb curl -sS --max-time 20 -x http://127.0.0.1:3128 -w '\n%{http_code}\n' "$@"; }

@test "an allowed name is reached through the relay; the decision is logged" {
	proxy api.public.test
	run get http://api.public.test/hello
	assert_success
	assert_line --index 0 '198.51.100.10 host=api.public.test path=/hello auth=-'
	assert_line --index 1 200
	# The allowed connection's line is written when it ends.
	wait_log "$ST" 1
	run jq -c 'del(.ts, .bytes)' "$ST/egress.log"
	assert_output '{"method":"GET","host":"api.public.test","port":80,"address":"198.51.100.10","decision":"allow","rule":"the allow-list entry api.public.test"}'
	run jq '.bytes > 0' "$ST/egress.log"
	assert_output true
	run stat -c %a "$ST/egress.sock"
	assert_output 600
}

@test "a name not in the allow-list gets 403 with a one-line reason" {
	proxy api.public.test
	run get http://www.public.test/
	assert_line --index 0 'forge-egress: refused www.public.test port 80: not in the allow-list; to allow it: forge-sandbox allow www.public.test'
	assert_line --index 1 403
	run grep -c 'www.public.test' "$NET/public.log"
	assert_output 0
	run jq -c 'del(.ts)' "$ST/egress.log"
	assert_output '{"method":"GET","host":"www.public.test","port":80,"address":null,"decision":"deny","rule":"not in the allow-list","bytes":0}'
}

@test "CONNECT tunnels are checked the same way, then opaque" {
	proxy api.public.test
	run sb curl -sS --max-time 5 -x http://127.0.0.1:3128 --cacert "$NET/ca.pem" https://api.public.test/tls
	assert_success
	assert_output '198.51.100.10 host=api.public.test path=/tls auth=-'
	run sb curl -sS --max-time 5 -x http://127.0.0.1:3128 --cacert "$NET/ca.pem" https://www.public.test/
	assert_failure
	assert_output --partial '403'
}

@test "*.x and suffix=x match x and the names below it, label-aligned; a plain entry only itself" {
	proxy '*.public.test' suffix=sfx.test exact.test
	for url in http://public.test/ http://deep.a.public.test/ http://sfx.test/ http://a.sfx.test/ http://exact.test/; do
		run get "$url"
		assert_line --index 1 200
	done
	for url in http://xsfx.test/ http://www.exact.test/ http://evil.test/; do
		run get "$url"
		assert_line --index 1 403
	done
}

@test "odd case and a trailing dot are the same host; NUL bytes and junk are refused" {
	proxy api.public.test
	run get http://API.Public.TEST./x
	assert_line --index 0 '198.51.100.10 host=api.public.test path=/x auth=-'
	# Raw requests, byte for byte, through the relay.
	printf 'CONNECT api.public.test\0.evil.test:80 HTTP/1.1\r\n\r\n' >"$ST/nul"
	run sb sh -c "curl -sS --max-time 5 telnet://127.0.0.1:3128 <'$ST/nul'"
	assert_output --partial '400 Bad Request'
	assert_output --partial 'NUL byte'
	printf 'GET http://api.public.test%%2fevil.test/ HTTP/1.1\r\n\r\n' >"$ST/pct"
	run sb sh -c "curl -sS --max-time 5 telnet://127.0.0.1:3128 <'$ST/pct'"
	assert_output --partial '400 Bad Request'
	printf 'GET http://api.public.test@evil.test/ HTTP/1.1\r\n\r\n' >"$ST/user"
	run sb sh -c "curl -sS --max-time 5 telnet://127.0.0.1:3128 <'$ST/user'"
	assert_output --partial 'user info'
}

@test "an absolute URI and a Host header that disagree are refused" {
	proxy api.public.test
	run get -H 'Host: evil.test' http://api.public.test/
	assert_line --index 0 'forge-egress: the Host header does not match the request target'
	assert_line --index 1 400
	run grep -c 'host=evil.test' "$NET/public.log"
	assert_output 0
}

@test "IP literals are refused, in every spelling, with CONNECT and plain HTTP" {
	proxy api.public.test '*.public.test'
	for target in 198.51.100.10:80 '[2001:db8::1]:443' '[::ffff:198.51.100.10]:80' 3325256714:80 0xc6.51.100.10:80; do
		printf 'CONNECT %s HTTP/1.1\r\n\r\n' "$target" >"$ST/req"
		run sb sh -c "curl -sS --max-time 5 telnet://127.0.0.1:3128 <'$ST/req'"
		assert_output --partial '403 Forbidden'
		assert_output --partial 'IP literal'
	done
	run get http://198.51.100.10/
	assert_line --index 1 403
}

@test "an allowed name that resolves to loopback, RFC 1918, CGNAT or this host is refused" {
	proxy '*.public.test'
	run get http://loop.public.test:8080/
	assert_line --index 0 'forge-egress: refused loop.public.test port 8080 (127.0.0.1): resolves to 127.0.0.1, which is not public (loopback)'
	assert_line --index 1 403
	run get http://lan.public.test/
	assert_line --index 0 'forge-egress: refused lan.public.test port 80 (10.9.0.10): resolves to 10.9.0.10, which is not public (private (RFC 1918))'
	run get http://cgnat.public.test/
	assert_line --index 1 403
	run get http://self.public.test/
	assert_line --index 0 'forge-egress: refused self.public.test port 80 (198.51.100.1): resolves to 198.51.100.1, which is not public (an address of this host)'
	run cat "$NET/loopback.log" "$NET/lan.log"
	assert_output ''
}

@test "an allowed name that resolves to a site-local, 6to4, Teredo or benchmarking address is refused" {
	proxy '*.public.test'
	run get http://sitelocal.public.test/
	assert_line --index 0 'forge-egress: refused sitelocal.public.test port 80 (fec0::10): resolves to fec0::10, which is not public (site-local (fec0::/10))'
	assert_line --index 1 403
	# 6to4 and Teredo embed IPv4 addresses (here a "public" one): refused whole.
	run get http://sixtofour.public.test/
	assert_line --index 0 'forge-egress: refused sixtofour.public.test port 80 (2002:c633:640a::1): resolves to 2002:c633:640a::1, which is not public (6to4 (2002::/16, embeds any IPv4 address))'
	run get http://teredo.public.test/
	assert_line --index 1 403
	run get http://bench.public.test/
	assert_line --index 1 403
	run grep -c 'not public' "$ST/egress.log"
	assert_output 4
}

@test "DNS rebinding cannot reach loopback: one resolution, and the checked address is the one connected to" {
	proxy '*.public.test'
	: >"$NET/dns.log"
	for _ in 1 2 3 4; do
		run get http://rebind.public.test:8080/
		# Either the public answer (where nothing listens on 8080: 502) or the
		# loopback answer (403); never the loopback service.
		assert_line --regexp '^(403|502)$'
	done
	run grep -c . "$NET/dns.log"
	assert_output 4
	run grep -c '^127.0.0.1$' "$NET/dns.log"
	assert_output 2
	run cat "$NET/loopback.log"
	assert_output ''
	run grep -c '"host":"rebind.public.test","port":8080,"address":"127.0.0.1","decision":"deny"' "$ST/egress.log"
	assert_output 2
}

@test "a second request on the same connection can only reach the host checked first" {
	proxy api.public.test
	printf 'GET http://api.public.test/one HTTP/1.1\r\nHost: api.public.test\r\n\r\nGET http://evil.test/two HTTP/1.1\r\nHost: evil.test\r\n\r\n' >"$ST/two"
	run sb sh -c "curl -sS --max-time 5 telnet://127.0.0.1:3128 <'$ST/two'"
	assert_output --partial 'path=/one'
	refute_output --partial '203.0.113.10'
	run grep -c 'evil.test' "$NET/public.log"
	assert_output 0
	run grep -c '^203.0.113.10 ' "$NET/public.log"
	assert_output 0
}

@test "without the proxy the sandbox has no route: direct connections fail" {
	proxy api.public.test
	run sb curl -sS --max-time 3 http://198.51.100.10/
	assert_failure
	run sb curl -sS --max-time 3 http://127.0.0.1:8080/
	assert_failure
	run cat "$NET/loopback.log"
	assert_output ''
}

@test "an empty allow-list denies everything; an invalid entry is ignored, never widening" {
	proxy 'x.com:443' 'localhost'
	run get http://api.public.test/
	assert_line --index 1 403
	run cat "$ST/egress.err"
	assert_output --partial 'ignoring an invalid allow-list entry'
}

@test "forge-egress: usage errors, a bad rules file, a non-socket in the way" {
	run forge-egress
	assert_failure 64
	run forge-egress "$ST/s" "$ST/missing"
	assert_failure 65
	touch "$ST/rules" "$ST/file"
	run forge-egress "$ST/file" "$ST/rules"
	assert_failure 73
	assert_output --partial 'exists and is not a socket'
	run forge-egress --max-conns 0 "$ST/s" "$ST/rules"
	assert_failure 64
	run forge-relay 127.0.0.1:99999 "$ST/s"
	assert_failure 64
}

@test "forge_net_proxy_stop stops the proxy and removes its socket and PID file" {
	proxy api.public.test
	pid=$(cat "$ST/egress.pid")
	in_s sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_proxy_stop '$ST'"
	run kill -0 "$pid"
	assert_failure
	[ ! -e "$ST/egress.sock" ]
	[ ! -e "$ST/egress.pid" ]
}

# open SBPID: attaches open-mode egress to the netns of SBPID.
open_egress() {
	in_s env FORGE_LIBDIR="$FORGE_LIBDIR" FORGE_HELPERDIR="$FORGE_HELPERDIR" sh -c \
		". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_open_start '$1' '$ST'"
}

@test "open mode: a public host answers; LAN, this host's addresses and its loopback are refused" {
	nsenter --target "$S" --net --mount -- unshare --net -- sh -c 'ip link set lo up && exec sleep 600' >/dev/null 2>&1 3>&- &
	SB=$!
	ns_ready "$SB"
	open_egress "$SB"
	run sb curl -sS --max-time 20 http://198.51.100.10/open
	assert_success
	assert_output '198.51.100.10 host=198.51.100.10 path=/open auth=-'
	run sb curl -sS --max-time 20 http://203.0.113.10/open2
	assert_success
	assert_no_lan_nor_host 3 sb
	run cat "$NET/lan.log" "$NET/host.log"
	assert_output ''
	# The sandbox's own loopback still works.
	# (Asked until the server listens: python's start took over a second under load.)
	run sb sh -c 'python3 -m http.server -b 127.0.0.1 8099 >/dev/null 2>&1 & p=$!
		for _ in $(seq 100); do
			code=$(curl -s -o /dev/null -w "%{http_code}" --max-time 3 http://127.0.0.1:8099/) && break
			sleep 0.1
		done
		kill $p; echo "$code"'
	assert_output 200
}

@test "open mode: the rules are in place before the interface, and uid 1000 inside cannot change them" {
	nsenter --target "$S" --net --mount -- unshare --net -- sh -c 'ip link set lo up && exec sleep 600' >/dev/null 2>&1 3>&- &
	SB=$!
	ns_ready "$SB"
	open_egress "$SB"
	run sb nft list table inet forge_egress
	assert_success
	assert_output --partial '10.0.0.0/8'
	assert_output --partial '198.51.100.1'
	run sb setpriv --reuid 1000 --regid 1000 --clear-groups nft flush ruleset
	assert_failure
	run sb setpriv --reuid 1000 --regid 1000 --clear-groups ip route add 10.9.0.0/24 dev tap0
	assert_failure
	run sb nft list table inet forge_egress
	assert_success
}

@test "open mode: site-local, 6to4, Teredo and IPv4-compatible destinations are rejected by the rules" {
	nsenter --target "$S" --net --mount -- unshare --net -- sh -c 'ip link set lo up && exec sleep 600' >/dev/null 2>&1 3>&- &
	SB=$!
	ns_ready "$SB"
	open_egress "$SB"
	# Routes of the test's own (the sandbox's) namespace, so packets are made at all.
	for net in fec0::/10 2002::/16 2001::/32 ::/96 2001:db8::/32; do
		sb ip -6 route add "$net" dev tap0
	done
	errno() {
		sb python3 -c 'import errno, socket, sys
s = socket.socket(socket.AF_INET6)
s.settimeout(2)
try:
    s.connect((sys.argv[1], 80))
    print("connected")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$1"
	}
	for addr in fec0::10 2002:c633:640a::1 2001:0:c633:640a::1 ::198.51.100.10; do
		run errno "$addr"
		assert_output EACCES
	done
	# A documentation address counts as public: not rejected (nothing answers).
	run errno 2001:db8::10
	refute_output EACCES
}

@test "open mode: names resolve through slirp4netns's DNS forwarder, the one DNS server the rules let through" {
	printf 'nameserver 10.0.2.3\n' >"$ST/resolv.conf"
	nsenter --target "$S" --net --mount -- unshare --net --mount --propagation private -- \
		sh -c "mount --bind '$ST/resolv.conf' /etc/resolv.conf && ip link set lo up && exec sleep 600" >/dev/null 2>&1 3>&- &
	SB=$!
	sleep 0.2
	open_egress "$SB"
	run sb getent hosts rebind.public.test
	assert_success
	assert_output --regexp '^(198\.51\.100\.10|127\.0\.0\.1) +rebind\.public\.test$'
	# A DNS server on the LAN (which slirp4netns could reach) is refused.
	printf 'nameserver 10.9.0.10\n' >"$ST/resolv.conf"
	run sb getent hosts rebind.public.test
	assert_failure
	run cat "$NET/lan-dns.log"
	assert_output ''
}

@test "open mode, not as root: the rules go in through the bwrap sandbox's outer user namespace; its user cannot change them" {
	# A sandbox as bwrap makes it for an unprivileged invoker (uid 1000 here).
	nsenter --target "$S" --net --mount -- setpriv --reuid 1000 --regid 1000 --clear-groups -- \
		bwrap --unshare-user --uid 1000 --gid 1000 --unshare-net --ro-bind / / --dev /dev --proc /proc \
		-- sleep 600 >/dev/null 2>&1 3>&- &
	B=$!
	for _ in $(seq 1 50); do SB=$(pgrep -P "$B" -x sleep) && break; sleep 0.1; done
	[ -n "$SB" ]
	run nsenter --target "$S" --net --mount -- setpriv --reuid 1000 --regid 1000 --clear-groups -- \
		env PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_rules_install '$SB'"
	kill "$B"
	assert_success
	run sb nft list table inet forge_egress
	assert_output --partial '192.168.0.0/16'
	# The sandbox's user, in its own user namespace, cannot flush them.
	run nsenter --target "$SB" --user --net --preserve-credentials -- nft flush ruleset
	assert_failure
	run sb nft list table inet forge_egress
	assert_success
}

@test "open mode without slirp4netns or nft: the check names them, start refuses with 69" {
	mkdir "$ST/bin"
	ln -s "$(command -v id)" "$ST/bin/id"
	run sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; PATH='$ST/bin'; forge_net_open_check; echo \"\$? \$forge_net_missing\""
	assert_output '1 slirp4netns, nft, nsenter, ip'
	run sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; PATH='$ST/bin'; forge_net_open_start 1 '$ST'"
	assert_failure 69
	assert_output --partial 'open egress needs slirp4netns, nft'
}

# secrets ENV@HOSTS RULE...: the secrets proxy in S (value of ENV in its
# environment only), and a sandbox with the relay.
secrets() {
	printf '%s\n' "$1" >"$ST/secrets"
	shift
	printf '%s\n' "$@" >"$ST/rules"
	in_s env FORGE_LIBDIR="$FORGE_LIBDIR" FORGE_HELPERDIR="$FORGE_HELPERDIR" TOKEN_X=s3cr3t-value \
		FORGE_SECRETS_UPSTREAM_CA="$NET/ca.pem" sh -c \
		". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_secrets_start '$ST' '$ST/rules' '$ST/secrets'"
	nsenter --target "$S" --net --mount -- unshare --net -- sh -c 'ip link set lo up && exec sleep 600' >/dev/null 2>&1 3>&- &
	SB=$!
	ns_ready "$SB"
	nsenter --target "$SB" --net --mount -- "$abs_top_builddir/helpers/forge-relay" 127.0.0.1:3128 "$ST/egress.sock" >/dev/null 2>&1 3>&- &
	RELAY=$!
	PROXY=$(sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; forge_net_proxy_env '$ST'" | sed -n 's/^HTTPS_PROXY=//p')
	# Trusted inside: the per-sandbox CA (intercepted) and the test CA (tunnelled).
	cat "$ST/mitm/mitmproxy-ca-cert.pem" "$NET/ca.pem" >"$ST/cas.pem"
}

# tls ARGS...: curl through the secrets proxy, trusting both CAs, with the
# placeholder in an Authorization header.
tls() {
	sb curl -sS --max-time 30 -x "$PROXY" --cacert "$ST/cas.pem" -H 'Authorization: Bearer $MSB_TOKEN_X' "$@"
}

# served PATH: the line the TLS server logged for PATH (what it received).
served() { grep -F " path=$1 " "$NET/public-tls.log"; }

@test "secrets: the placeholder is replaced on TLS to the secret's host only; the value is nowhere on disk" {
	secrets 'TOKEN_X@api.public.test' api.public.test www.public.test
	# The secret's host: intercepted (the sandbox trusts the per-sandbox CA).
	run sb curl -sS --max-time 30 -x "$PROXY" --cacert "$ST/mitm/mitmproxy-ca-cert.pem" \
		-H 'Authorization: Bearer $MSB_TOKEN_X' https://api.public.test/secret
	assert_success
	run served /secret
	assert_output '198.51.100.10 host=api.public.test path=/secret auth=Bearer s3cr3t-value'
	# Another allowed host: tunnelled untouched (its own certificate), no value.
	run sb curl -sS --max-time 30 -x "$PROXY" --cacert "$NET/ca.pem" \
		-H 'Authorization: Bearer $MSB_TOKEN_X' https://www.public.test/other
	assert_success
	assert_output '198.51.100.10 host=www.public.test path=/other auth=Bearer $MSB_TOKEN_X'
	# Plain HTTP to the secret's host: no substitution.
	run sb curl -sS --max-time 30 -x "$PROXY" -H 'Authorization: Bearer $MSB_TOKEN_X' http://api.public.test/plain
	assert_output '198.51.100.10 host=api.public.test path=/plain auth=Bearer $MSB_TOKEN_X'
	run grep -r -l s3cr3t-value "$ST"
	assert_output ''
	# -s: a process may end while grep reads the list (its file is gone).
	run grep -s -l s3cr3t-value /proc/[0-9]*/cmdline
	assert_output ''
}

@test "secrets: the allow-list and the address checks still apply (forge-egress decides)" {
	secrets 'TOKEN_X@api.public.test' api.public.test '*.public.test'
	run sb curl -sS --max-time 30 -x "$PROXY" --cacert "$NET/ca.pem" https://evil.test/
	assert_failure
	run sb curl -sS --max-time 30 -x "$PROXY" http://lan.public.test/
	assert_output --partial 'not public'
	run grep -c '"method":"CONNECT","host":"evil.test","port":443,"address":null,"decision":"deny"' "$ST/egress.log"
	assert_output 1
	run cat "$NET/lan.log"
	assert_output ''
	# Without the per-sandbox token, mitmdump does not serve (407).
	run sb curl -sS --max-time 10 -x http://127.0.0.1:3128 -o /dev/null -w '%{http_code}' http://api.public.test/
	assert_output 407
}

@test "secrets without mitmdump: 69 naming it" {
	printf 'X@a.example.com\n' >"$ST/secrets"
	: >"$ST/rules"
	run sh -c ". '$abs_top_builddir/lib-sh/forge.sh'; PATH=/nonexistent; forge_net_secrets_start '$ST' '$ST/rules' '$ST/secrets'"
	assert_failure 69
	assert_output --partial "mitmdump"
}

@test "secrets: a value the server echoes back is its placeholder again inside" {
	secrets 'TOKEN_X@api.public.test' api.public.test
	run tls https://api.public.test/echo
	assert_success
	assert_output '198.51.100.10 host=api.public.test path=/echo auth=Bearer $MSB_TOKEN_X'
	run served /echo
	assert_output '198.51.100.10 host=api.public.test path=/echo auth=Bearer s3cr3t-value'
}

@test "secrets: a Host header naming another host gets no value, inside a tunnel to the secret's host" {
	secrets 'TOKEN_X@api.public.test' api.public.test www.public.test
	run tls -H 'Host: www.public.test' https://api.public.test/other-host
	assert_success
	run served /other-host
	assert_output '198.51.100.10 host=www.public.test path=/other-host auth=Bearer $MSB_TOKEN_X'
	refute_output --partial s3cr3t-value
}

@test "secrets: an absolute-form target naming another host gets no value" {
	secrets 'TOKEN_X@api.public.test' api.public.test www.public.test
	run tls --request-target https://www.public.test/absolute https://api.public.test/
	assert_success
	run grep -F /absolute "$NET/public-tls.log"
	assert_output --partial 'auth=Bearer $MSB_TOKEN_X'
	refute_output --partial s3cr3t-value
}

@test "secrets: a placeholder in the query or the body is never replaced (only request headers are)" {
	secrets 'TOKEN_X@api.public.test' api.public.test
	run tls -d 'k=$MSB_TOKEN_X' 'https://api.public.test/query?t=$MSB_TOKEN_X'
	assert_success
	refute_output --partial s3cr3t-value
	run served '/query?t=$MSB_TOKEN_X'
	assert_output '198.51.100.10 host=api.public.test path=/query?t=$MSB_TOKEN_X auth=Bearer s3cr3t-value body=k=$MSB_TOKEN_X'
}

@test "secrets: a CONNECT to the secret's host on another port than 443 is tunnelled untouched" {
	secrets 'TOKEN_X@api.public.test' api.public.test
	run tls https://api.public.test:8443/port
	assert_success
	assert_output '198.51.100.10 host=api.public.test:8443 path=/port auth=Bearer $MSB_TOKEN_X'
	run served /port
	assert_output '198.51.100.10 host=api.public.test:8443 path=/port auth=Bearer $MSB_TOKEN_X'
}

@test "secrets: a Host header naming another port gets no value" {
	secrets 'TOKEN_X@api.public.test' api.public.test
	run tls -H 'Host: api.public.test:8443' https://api.public.test/other-port
	run served /other-port
	assert_output --partial 'auth=Bearer $MSB_TOKEN_X'
	refute_output --partial s3cr3t-value
}

@test "secrets: a ClientHello without SNI is tunnelled untouched" {
	secrets 'TOKEN_X@api.public.test' api.public.test
	token=${PROXY#http://forge:}
	token=${token%@*}
	printf 'GET /no-sni HTTP/1.1\r\nHost: api.public.test\r\nAuthorization: Bearer $MSB_TOKEN_X\r\nConnection: close\r\n\r\n' >"$ST/req"
	run sb sh -c "openssl s_client -quiet -noservername -CAfile '$ST/cas.pem' -proxy 127.0.0.1:3128 \
		-proxy_user forge -proxy_pass 'pass:$token' -connect api.public.test:443 <'$ST/req'"
	run served /no-sni
	assert_output '198.51.100.10 host=api.public.test path=/no-sni auth=Bearer $MSB_TOKEN_X'
}

@test "secrets: a *.x secret host is replaced for x and the names below it, not beside it" {
	secrets 'TOKEN_X@*.public.test' api.public.test evil.test
	run tls https://api.public.test/wild
	assert_success
	run served /wild
	assert_output '198.51.100.10 host=api.public.test path=/wild auth=Bearer s3cr3t-value'
	run tls https://evil.test/beside
	run served /beside
	assert_output '203.0.113.10 host=evil.test path=/beside auth=Bearer $MSB_TOKEN_X'
}

# connect_raw AUTHORITY: a CONNECT through the secrets proxy, by hand (with
# its token); prints the answer's status line, headers and body (CR dropped).
connect_raw() {
	cat >"$ST/connect.bash" <<-'EOF'
	exec 3<>/dev/tcp/127.0.0.1/3128 || exit
	printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n' "$1" "$1" "$2" >&3
	len=0
	while IFS= read -r -t 30 line <&3; do
		line=${line%$'\r'}
		[ -n "$line" ] || break
		printf '%s\n' "$line"
		case ${line,,} in content-length:*) len=${line#*:} len=${len// /} ;; esac
	done
	[ "$len" -eq 0 ] || { IFS= read -r -t 30 -N "$len" body <&3; printf '%s\n' "$body"; }
	EOF
	sb bash "$ST/connect.bash" "$1" "$(printf 'forge:%s' "$(cat "$ST/mitm/token")" | base64 -w0)"
}

@test "secrets: a CONNECT forge-egress refuses gets its 403 and one-line reason, never 200 first" {
	secrets 'TOKEN_X@api.public.test' api.public.test lan.public.test
	run connect_raw evil.test:443
	assert_line --index 0 'HTTP/1.1 403 Forbidden'
	assert_line 'forge-egress: refused evil.test port 443: not in the allow-list; to allow it: forge-sandbox allow evil.test'
	# The reason's header is passed on too.
	assert_line 'X-Forge-Egress: decision=deny; host=evil.test; port=443; address=-; rule="not in the allow-list"; allow="forge-sandbox allow evil.test"'
	refute_line --partial ' 200 '
	# An address refusal too.
	run connect_raw lan.public.test:443
	assert_line --index 0 'HTTP/1.1 403 Forbidden'
	assert_line --partial 'not public'
	# curl sees the 403 of the CONNECT itself.
	run sb curl -sS --max-time 30 -x "$PROXY" --cacert "$NET/ca.pem" -o /dev/null -w '%{http_connect}' https://evil.test/
	assert_output --partial 403
	# Each refused once: mitmdump sent no CONNECT of its own after.
	run grep -c '"method":"CONNECT","host":"evil.test","port":443,"address":null,"decision":"deny"' "$ST/egress.log"
	assert_output 2
}

@test "secrets: an allowed CONNECT still gets 200 and its tunnel, intercepted or not" {
	secrets 'TOKEN_X@api.public.test' api.public.test www.public.test
	run connect_raw www.public.test:443
	assert_line --index 0 'HTTP/1.1 200 Connection established'
	run tls https://api.public.test/after-check
	assert_success
	run served /after-check
	assert_output '198.51.100.10 host=api.public.test path=/after-check auth=Bearer s3cr3t-value'
}
