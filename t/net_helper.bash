# Shared by t/egress.bats, t/egress-live.bats and t/sandbox-net.bats (the
# last two load sandbox_helper first): a test network built
# entirely inside network namespaces the test makes (no address or route of
# the host changes, no traffic leaves the machine).

# The test servers (server.py, dns.py).
F=$BATS_TEST_DIRNAME/egress-fixtures

# net_setup_file PREFIX: the start of a network file's setup_file. Not as
# root: exports NET_SKIP (net_skip then skips each test, or fails it in CI)
# and returns 1. As root: NET, a fresh folder PREFIX.XXXXXX that holds the
# hosts file from stdin and a resolv.conf naming 127.0.0.53; the scenario
# (net_build); a test CA and a server certificate (net_test_cert). The
# caller then starts its servers (net_bg, net_servers).
net_setup_file() {
	if [ "$(id -u)" != 0 ]; then
		export NET_SKIP='needs root (network namespaces, nsenter)'
		cat >/dev/null
		return 1
	fi
	NET=$(mktemp -d "${BATS_TMPDIR:-/tmp}/$1.XXXXXX")
	export NET
	chmod 755 "$NET"
	cat >"$NET/hosts"
	printf 'nameserver 127.0.0.53\n' >"$NET/resolv.conf"
	net_build
	# A test CA and a certificate for api.public.test (the secrets tests).
	net_test_cert DNS:api.public.test,DNS:www.public.test,DNS:evil.test
}

# net_skip: in setup, skips the test when setup_file could not build the
# network (NET_SKIP); in CI (CI=true, as root) fails it instead.
net_skip() {
	[ -n "${NET_SKIP:-}" ] || return 0
	[ "${CI:-}" != true ] || fail "CI=true but $NET_SKIP"
	skip "$NET_SKIP"
}

# net_teardown_file: stops every process net_bg started and removes NET.
net_teardown_file() {
	[ -n "${NET:-}" ] || return 0
	while read -r pid; do kill "$pid" 2>/dev/null || :; done <"$NET/pids"
	rm -rf "$NET"
}

# net_bg COMMAND...: COMMAND in the background, its PID appended to
# $NET/pids for net_teardown_file. COMMAND is a program (nsenter), never a
# function: $! is then the program itself, not a subshell.
net_bg() {
	"$@" >/dev/null 2>&1 3>&- &
	echo "$!" >>"$NET/pids"
}

# net_servers: the web servers, each logging every request it gets: PUB's
# :80 ($NET/public.log) and :443 (TLS, $NET/public-tls.log), LAN's :80
# ($NET/lan.log), S's 127.0.0.1:8080 ($NET/loopback.log) and S's every
# address :8081 ($NET/host.log). Returns once PUB's, LAN's and S's loopback
# server answer from S, with every log empty (the tests read them).
net_servers() {
	net_bg nsenter --target "$PUB" --net -- python3 "$F/server.py" 0.0.0.0 80 "$NET/public.log"
	net_bg nsenter --target "$PUB" --net -- python3 "$F/server.py" 0.0.0.0 443 "$NET/public-tls.log" \
		"$NET/srv.pem" "$NET/srv.key"
	net_bg nsenter --target "$LAN" --net -- python3 "$F/server.py" 0.0.0.0 80 "$NET/lan.log"
	net_bg nsenter --target "$S" --net --mount -- python3 "$F/server.py" 127.0.0.1 8080 "$NET/loopback.log"
	net_bg nsenter --target "$S" --net --mount -- python3 "$F/server.py" 0.0.0.0 8081 "$NET/host.log"
	for _ in $(seq 1 100); do
		in_s curl -s -o /dev/null --max-time 1 http://198.51.100.10/ready &&
			in_s curl -s -o /dev/null --max-time 1 http://10.9.0.10/ready &&
			in_s curl -s -o /dev/null --max-time 1 http://127.0.0.1:8080/ready && break
		sleep 0.1
	done
	# (A server logs a request before it answers: the lines of these are in.)
	for log in public public-tls lan loopback host; do
		: >"$NET/$log.log"
	done
}

# net_sandbox_setup LOG...: the setup of a file of real namespace sandboxes
# in the test network: net_skip, sandbox_setup, and bwrap must make user
# namespaces here; NAME, the sandbox's name for REPO, and STATE, its state
# folder; the servers' logs $NET/LOG.log are emptied.
net_sandbox_setup() {
	local log
	net_skip
	sandbox_setup
	if ! bwrap --unshare-user --unshare-net --ro-bind / / true 2>/dev/null; then
		fail "bwrap cannot create user namespaces on this host, as root"
	fi
	NAME=$(expected_name "$REPO")
	# shellcheck disable=SC2034 # the test's
	STATE=$XDG_STATE_HOME/forge/bwrap/$NAME
	for log in "$@"; do
		: >"$NET/$log.log"
	done
}

# net_config NETWORK-JSON: the user's configuration: a bwrap sandbox on the
# host's root filesystem with this sandbox.network.
net_config() {
	mkdir -p "$XDG_CONFIG_HOME/forge"
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": %s}}\n' "$1" \
		>"$XDG_CONFIG_HOME/forge/config.json"
}

# up_in_s [ARG...]: forge-sandbox up ARG... in the scenario namespace (where
# the sandbox's egress then goes out), from the repository.
# shellcheck disable=SC2016 # a script for sh, with its arguments
up_in_s() { in_s sh -c 'cd "$1" && shift && exec forge-sandbox up "$@"' sh "$REPO" "$@"; }

# assert_no_lan_nor_host SECONDS RUNNER...: through RUNNER (the command that
# runs its arguments in the sandbox), curl reaches neither the LAN host nor
# S's service on :8081 at any of S's addresses (each given SECONDS).
assert_no_lan_nor_host() {
	local secs=$1 addr
	shift
	run "$@" curl -sS --max-time "$secs" http://10.9.0.10/
	assert_failure
	for addr in 198.51.100.1 10.9.0.1 10.0.2.2 127.0.0.1; do
		run "$@" curl -sS --max-time "$secs" "http://$addr:8081/"
		assert_failure
	done
}

# wait_log DIR N: waits (bounded) until DIR/egress.log has N lines: an
# allowed connection's line is written when the connection ends.
wait_log() {
	for _ in $(seq 1 100); do
		[ "$(grep -c . "$1/egress.log" 2>/dev/null)" -lt "$2" ] || return 0
		sleep 0.05
	done
}

# in_s CMD...: runs CMD in the scenario's network and mount namespaces.
in_s() { nsenter --target "$S" --net --mount -- "$@"; }

# net_build: from $NET/hosts and $NET/resolv.conf (written by the caller),
# makes the scenario S (network and mount namespaces of its own, those two
# files bound over /etc/hosts and /etc/resolv.conf there), the "public" host
# PUB (198.51.100.10; S has 198.51.100.1 towards it) and the "LAN" host LAN
# (10.9.0.10; S has 10.9.0.1), each held by a sleep whose PID is appended to
# $NET/pids. Exports S, PUB and LAN.
net_build() {
	unshare --net --mount --propagation private -- sleep 3600 >/dev/null 2>&1 3>&- &
	S=$!
	export S
	echo "$S" >"$NET/pids"
	ns_ready "$S"
	in_s mount --bind "$NET/hosts" /etc/hosts
	in_s mount --bind "$NET/resolv.conf" /etc/resolv.conf
	in_s ip link set lo up
	for h in PUB LAN; do
		nsenter --target "$S" --net --mount -- unshare --net -- sleep 3600 >/dev/null 2>&1 3>&- &
		eval "$h=\$!"
		echo "$!" >>"$NET/pids"
	done
	export PUB LAN
	ns_ready "$PUB" "$LAN"
	in_s ip link add vpub type veth peer name eth0 netns "$PUB"
	in_s ip addr add 198.51.100.1/24 dev vpub
	in_s ip link set vpub up
	nsenter --target "$PUB" --net -- sh -c 'ip link set lo up && ip addr add 198.51.100.10/24 dev eth0 &&
		ip link set eth0 up && ip route add default via 198.51.100.1'
	in_s ip link add vlan type veth peer name eth0 netns "$LAN"
	in_s ip addr add 10.9.0.1/24 dev vlan
	in_s ip link set vlan up
	nsenter --target "$LAN" --net -- sh -c 'ip link set lo up && ip addr add 10.9.0.10/24 dev eth0 &&
		ip link set eth0 up && ip route add default via 10.9.0.1'
}

# net_test_cert SAN: a test CA ($NET/ca.pem) and a server certificate for
# api.public.test ($NET/srv.pem, $NET/srv.key) with subjectAltName SAN.
net_test_cert() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=forge-test-ca \
		-keyout "$NET/ca.key" -out "$NET/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj /CN=api.public.test \
		-keyout "$NET/srv.key" -out "$NET/srv.csr" 2>/dev/null
	printf 'subjectAltName=%s\n' "$1" >"$NET/ext"
	openssl x509 -req -in "$NET/srv.csr" -CA "$NET/ca.pem" -CAkey "$NET/ca.key" -CAcreateserial \
		-days 2 -extfile "$NET/ext" -out "$NET/srv.pem" 2>/dev/null
}
