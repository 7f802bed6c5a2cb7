# forge-net.sh — the network of a namespace (bwrap) sandbox, SPEC 4.5: the
# egress proxy, open mode's slirp4netns and nft, the secrets proxy. How the
# namespace backend wires them into a sandbox is forge-net-bwrap.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"
#
# The interface forge-net-bwrap.sh uses (every STATEDIR is the sandbox's state
# folder, owned by the invoker; every function exits with SPEC 2's codes):
#
# Restricted mode (an allow-list, or any secret): the sandbox has only `lo`.
#   forge_net_proxy_start STATEDIR RULESFILE
#       Starts forge-egress in the background, serving STATEDIR/egress.sock
#       (owner-only) with the entries of RULESFILE (one per line, as
#       forge-netrule reads them; an empty file denies everything), one JSON
#       line per decision in STATEDIR/egress.log, live grants on the
#       host-side STATEDIR/egress.ctl, its PID in STATEDIR/egress.pid.
#       Returns once the socket is there; 69 (with forge-egress's message)
#       when it could not start.
#   forge_net_proxy_stop STATEDIR
#       Stops it and removes egress.sock and egress.pid; fine when not running.
#   forge_net_relay_path
#       Sets forge_net_relay to forge-relay (static). Run it inside the
#       sandbox as: forge-relay 127.0.0.1:3128 SOCKET, where SOCKET is where
#       STATEDIR/egress.sock is bind-mounted (a read-only bind is fine).
#   forge_net_proxy_env [STATEDIR]
#       Prints the NAME=VALUE lines to set inside (HTTP_PROXY and friends;
#       with the secrets proxy's token when STATEDIR has one).
#
# Open mode (no allow-list): slirp4netns + nft rules in the sandbox's netns.
#   forge_net_open_check
#       0 when slirp4netns, nft, nsenter and ip (and, not as root, python3)
#       are installed; else 1 with
#       forge_net_missing naming the missing programs (for doctor).
#   forge_net_open_start NETNS_PID STATEDIR
#       Installs the nft rules in the network namespace of NETNS_PID (every
#       non-public destination and this host's addresses rejected, DNS to
#       slirp4netns's forwarder 10.0.2.3 allowed), then attaches slirp4netns
#       (tap0, 10.0.2.100/24, PID in STATEDIR/slirp.pid). 69 naming what is
#       missing. The sandbox's resolv.conf must say "nameserver 10.0.2.3".
#   forge_net_open_stop STATEDIR
#       Stops slirp4netns; fine when not running.
#   forge_net_rules_install NETNS_PID
#       Only the nft rules (open_start runs it first).
#   Not as root, both act as root of the user namespace that owns the
#   sandbox's network namespace (bwrap's outer one maps the invoker to root).
#
# Secrets (sandbox.network.secrets): TLS interception in front of forge-egress.
#   forge_net_secrets_start STATEDIR RULESFILE SECRETSFILE
#       Like forge_net_proxy_start (same STATEDIR/egress.sock, which the
#       relay uses unchanged), with mitmdump and lib-sh/forge-secrets.py in
#       front: SECRETSFILE holds ENV@HOST[,HOST...] lines (names only; the
#       values stay in the environment of the calling process, which
#       mitmdump inherits). RULESFILE must include the secret hosts. A
#       per-sandbox CA is made in STATEDIR/mitm/ at the first start: the
#       sandbox must trust STATEDIR/mitm/mitmproxy-ca-cert.pem. Clients
#       authenticate with a per-sandbox token: use forge_net_proxy_env
#       STATEDIR. 69 naming mitmdump when it is not installed.
#       FORGE_SECRETS_UPSTREAM_CA: an extra CA file to trust upstream.
#   forge_net_secrets_stop STATEDIR

# forge_net_pid_stop FILE: TERM the process whose PID FILE holds, wait up to
# 5 s for it to go, then remove FILE. A missing or stale FILE is fine.
forge_net_pid_stop() {
	local pid n
	[ -f "$1" ] || return 0
	pid=$(cat -- "$1") || pid=
	case $pid in
	'' | *[!0-9]*) ;;
	*)
		if kill -TERM "$pid" 2>/dev/null; then
			n=0
			while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 50 ]; do
				sleep 0.1
				n=$((n + 1))
			done
			kill -KILL "$pid" 2>/dev/null || :
		fi
		;;
	esac
	rm -f -- "$1"
}

forge_net_proxy_start() {
	forge_net_egress_start "$1" "$2" egress
}

# forge_net_egress_start STATEDIR RULESFILE NAME: forge-egress on
# STATEDIR/NAME.sock, its PID in STATEDIR/NAME.pid.
forge_net_egress_start() {
	local dir n name pid rules
	dir=$1 rules=$2 name=$3
	if [ ! -d "$dir" ] || [ -L "$dir" ]; then
		forge_die 73 "$dir: not a folder"
	fi
	[ -f "$rules" ] || forge_die 65 "$rules: the allow-list file is missing"
	forge_helper_path forge-egress
	forge_net_pid_stop "$dir/$name.pid"
	# A socket left by a killed run would look ready at once.
	if [ -S "$dir/$name.sock" ]; then rm -f -- "$dir/$name.sock"; fi
	# --control: live grants (forge-egress-live.sh) on STATEDIR/egress.ctl.
	"$forge_helper" --log "$dir" --control "$dir" -- "$dir/$name.sock" "$rules" \
		</dev/null >/dev/null 2>"$dir/$name.err" &
	printf '%s\n' "$!" >"$dir/$name.pid"
	pid=$! n=0
	while [ ! -S "$dir/$name.sock" ]; do
		if ! kill -0 "$pid" 2>/dev/null || [ "$n" -ge 100 ]; then
			forge_net_pid_stop "$dir/$name.pid"
			forge_die 69 "forge-egress did not start: $(cat -- "$dir/$name.err" 2>/dev/null)"
		fi
		sleep 0.05
		n=$((n + 1))
	done
}

forge_net_proxy_stop() {
	forge_net_pid_stop "$1/egress.pid"
	if [ -S "$1/egress.sock" ]; then rm -f -- "$1/egress.sock"; fi
}

forge_net_relay_path() {
	forge_helper_path forge-relay
	forge_net_relay=$forge_helper
}

forge_net_proxy_env() {
	local auth name
	auth=
	if [ -n "${1:-}" ] && [ -f "$1/mitm/token" ]; then
		auth="forge:$(cat -- "$1/mitm/token")@"
	fi
	for name in HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy; do
		printf '%s=http://%s127.0.0.1:3128\n' "$name" "$auth"
	done
	printf 'NO_PROXY=localhost,127.0.0.1,::1\nno_proxy=localhost,127.0.0.1,::1\n'
}

forge_net_open_check() {
	local tool tools
	forge_net_missing=
	tools='slirp4netns nft nsenter ip'
	# Not root: python3 finds the user namespace that owns the sandbox's network.
	if [ "$(id -u)" != 0 ]; then tools="$tools python3"; fi
	for tool in $tools; do
		command -v "$tool" >/dev/null 2>&1 ||
			forge_net_missing="${forge_net_missing:+$forge_net_missing, }$tool"
	done
	# slirp4netns opens it as the invoker (some hosts make it root-only).
	if [ "$(id -u)" != 0 ] && { [ ! -r /dev/net/tun ] || [ ! -w /dev/net/tun ]; }; then
		forge_net_missing="${forge_net_missing:+$forge_net_missing, }read-write access to /dev/net/tun"
	fi
	[ -z "$forge_net_missing" ]
}

# forge_net_nft_rules: prints the nft ruleset of open mode: the ranges that
# forge-egress counts as not public (forge-egress(1); 240/4 holds the
# broadcast address; the IPv6 forms that embed an IPv4 address are rejected
# whole, nft cannot look inside them), and this host's own addresses (every
# interface, from `ip`).
forge_net_nft_rules() {
	local v4 v6
	v4=$(ip -o -4 addr show | awk '{ sub(/\/.*/, "", $4); printf "%s%s", sep, $4; sep = ", " }')
	v6=$(ip -o -6 addr show | awk '{ sub(/\/.*/, "", $4); printf "%s%s", sep, $4; sep = ", " }')
	cat <<EOF
table inet forge_egress {
	chain output {
		type filter hook output priority 0; policy accept;
		oifname "lo" accept
		ip daddr 10.0.2.3 udp dport 53 accept
		ip daddr 10.0.2.3 tcp dport 53 accept
		ip daddr { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, 192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/4, 240.0.0.0/4 } reject with icmp type admin-prohibited
		ip6 daddr { ::/96, ::ffff:0:0/96, ::ffff:0:0:0/96, 64:ff9b::/96, 64:ff9b:1::/48, 2001::/32, 2002::/16, fc00::/7, fe80::/10, fec0::/10, ff00::/8 } reject with icmpv6 type admin-prohibited
EOF
	[ -z "$v4" ] ||
		printf '\t\tip daddr { %s } reject with icmp type admin-prohibited\n' "$v4"
	[ -z "$v6" ] ||
		printf '\t\tip6 daddr { %s } reject with icmpv6 type admin-prohibited\n' "$v6"
	printf '\t}\n}\n'
}

# forge_net_owner_exec [--exec] PID CMD...: runs CMD in the user namespace
# that owns the network namespace of PID, as its root: bwrap's outer user
# namespace maps the invoker to root, and only there may the invoker change
# the sandbox's network. Root runs CMD as it is. With --exec, CMD (or the
# python3 that enters the namespace, then execs CMD) replaces the shell.
# (nsenter cannot name that user namespace: no process lives in it; ioctl
# NS_GET_USERNS finds it.)
forge_net_owner_exec() {
	local replace target
	replace=
	if [ "$1" = --exec ]; then
		replace='exec'
		shift
	fi
	target=$1
	shift
	if [ "$(id -u)" = 0 ]; then
		$replace "$@"
		return
	fi
	$replace python3 -c 'import ctypes, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
net = os.open("/proc/%s/ns/net" % sys.argv[1], os.O_RDONLY | os.O_CLOEXEC)
owner = fcntl.ioctl(net, 0xb701)  # NS_GET_USERNS
if libc.setns(owner, 0x10000000) != 0:  # CLONE_NEWUSER
    sys.exit("forge: error: cannot enter the sandbox user namespace: " + os.strerror(ctypes.get_errno()))
os.close(owner)
os.close(net)
os.execvp(sys.argv[2], sys.argv[2:])' "$target" "$@"
}

# forge_net_nsenter PID CMD...: runs CMD in the network namespace of PID.
forge_net_nsenter() {
	local pid
	pid=$1
	shift
	forge_net_owner_exec "$pid" nsenter --target "$pid" --net -- "$@"
}

# forge_net_rules_install PID: the nft rules of open mode, in the network
# namespace of PID (69 when they cannot be installed).
forge_net_rules_install() {
	forge_net_nft_rules | forge_net_nsenter "$1" nft -f - ||
		forge_die 69 "cannot install the egress rules in the sandbox's network namespace"
}

forge_net_open_start() {
	local dir n pid slirp
	pid=$1 dir=$2
	forge_net_open_check ||
		forge_die 69 "open egress needs $forge_net_missing (Debian: apt-get install slirp4netns nftables util-linux iproute2)"
	case $pid in '' | *[!0-9]*) forge_die 64 "not a PID: $pid" ;; esac
	[ -e "/proc/$pid/ns/net" ] || forge_die 69 "no process $pid"
	# The rules go in before the interface exists: no moment without them.
	forge_net_rules_install "$pid"
	forge_net_pid_stop "$dir/slirp.pid"
	# slirp4netns stays in this host's network namespace; its child joins the
	# sandbox's to make tap0.
	# --exec: the PID below is slirp4netns's own, which forge_net_open_stop
	# stops, not a subshell's that would leave it running.
	(forge_net_owner_exec --exec "$pid" slirp4netns --configure --mtu=65520 --disable-host-loopback \
		--enable-sandbox --enable-seccomp --netns-type=path "/proc/$pid/ns/net" tap0) \
		</dev/null >"$dir/slirp.log" 2>&1 &
	printf '%s\n' "$!" >"$dir/slirp.pid"
	slirp=$! n=0
	until forge_net_nsenter "$pid" ip -o -4 addr show dev tap0 2>/dev/null | grep -q ' 10\.0\.2\.100/'; do
		if ! kill -0 "$slirp" 2>/dev/null || [ "$n" -ge 100 ]; then
			forge_net_pid_stop "$dir/slirp.pid"
			forge_die 69 "slirp4netns did not start: $(tail -n 3 -- "$dir/slirp.log" 2>/dev/null)"
		fi
		sleep 0.05
		n=$((n + 1))
	done
}

forge_net_open_stop() {
	forge_net_pid_stop "$1/slirp.pid"
}

# forge_net_free_port: prints a TCP port of 127.0.0.1 free right now.
forge_net_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# forge_net_wait_port PID PORT: waits until 127.0.0.1:PORT accepts, while PID lives.
forge_net_wait_port() {
	local n
	n=0
	until python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$2" 2>/dev/null; do
		kill -0 "$1" 2>/dev/null && [ "$n" -lt 150 ] || return 1
		sleep 0.1
		n=$((n + 1))
	done
}

forge_net_secrets_start() {
	local dir front n rules secrets up
	dir=$1 rules=$2 secrets=$3
	command -v mitmdump >/dev/null 2>&1 ||
		forge_die 69 "secrets need mitmproxy's mitmdump (Debian: apt-get install mitmproxy)"
	[ -f "$secrets" ] || forge_die 65 "$secrets: the secrets file is missing"
	forge_net_secrets_stop "$dir"
	# 1. forge-egress decides, behind a TCP relay mitmdump can use as upstream.
	forge_net_egress_start "$dir" "$rules" upstream
	forge_net_relay_path
	up=$(forge_net_free_port) front=$(forge_net_free_port)
	"$forge_net_relay" "127.0.0.1:$up" "$dir/upstream.sock" </dev/null >/dev/null 2>&1 &
	printf '%s\n' "$!" >"$dir/relay-upstream.pid"
	# 2. mitmdump: a CA and a token per sandbox, owner-only, made once.
	(umask 077 && mkdir -p -- "$dir/mitm") || forge_die 73 "cannot create $dir/mitm"
	if [ ! -s "$dir/mitm/token" ]; then
		(umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/mitm/token") ||
			forge_die 73 "cannot write $dir/mitm/token"
	fi
	(umask 077 && printf 'proxyauth: "forge:%s"\n' "$(cat -- "$dir/mitm/token")" \
		>"$dir/mitm/config.yaml") || forge_die 73 "cannot write $dir/mitm/config.yaml"
	set -- --quiet --set confdir="$dir/mitm" --listen-host 127.0.0.1 --listen-port "$front" \
		--mode "upstream:http://127.0.0.1:$up" --set connection_strategy=eager \
		-s "$(forge_libsh_dir)/forge-secrets.py" --set forge_secrets="$secrets"
	if [ -n "${FORGE_SECRETS_UPSTREAM_CA:-}" ]; then
		set -- "$@" --set ssl_verify_upstream_trusted_ca="$FORGE_SECRETS_UPSTREAM_CA"
	fi
	mitmdump "$@" </dev/null >"$dir/mitm/mitmdump.log" 2>&1 &
	printf '%s\n' "$!" >"$dir/mitm.pid"
	forge_net_wait_port "$!" "$front" || {
		forge_net_secrets_stop "$dir"
		forge_die 69 "mitmdump did not start: $(tail -n 3 -- "$dir/mitm/mitmdump.log" 2>/dev/null)"
	}
	# 3. The socket the sandbox's relay connects to.
	"$forge_net_relay" --reverse "$dir/egress.sock" "127.0.0.1:$front" </dev/null >/dev/null 2>&1 &
	printf '%s\n' "$!" >"$dir/egress.pid"
	n=0
	until [ -S "$dir/egress.sock" ]; do
		[ "$n" -lt 100 ] || forge_die 69 "the secrets proxy's socket did not appear"
		sleep 0.05
		n=$((n + 1))
	done
}

forge_net_secrets_stop() {
	forge_net_proxy_stop "$1"
	forge_net_pid_stop "$1/mitm.pid"
	forge_net_pid_stop "$1/relay-upstream.pid"
	forge_net_pid_stop "$1/upstream.pid"
	if [ -S "$1/upstream.sock" ]; then rm -f -- "$1/upstream.sock"; fi
}
