# forge-net.sh — the network of a namespace (bwrap) sandbox, SPEC 4.5.
#
# shellcheck shell=sh
# shellcheck disable=SC3043 # local: dash, bash and busybox ash all have it
#
# The interface forge-bwrap.sh uses (every STATEDIR is the sandbox's state
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
	[ -f "$1" ] || return 0
	forge_net_pid=$(cat -- "$1") || forge_net_pid=
	case $forge_net_pid in
	'' | *[!0-9]*) ;;
	*)
		if kill -TERM "$forge_net_pid" 2>/dev/null; then
			forge_net_n=0
			while kill -0 "$forge_net_pid" 2>/dev/null && [ "$forge_net_n" -lt 50 ]; do
				sleep 0.1
				forge_net_n=$((forge_net_n + 1))
			done
			kill -KILL "$forge_net_pid" 2>/dev/null || :
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

# forge_net_owner_exec PID CMD...: runs CMD in the user namespace that owns
# the network namespace of PID, as its root: bwrap's outer user namespace
# maps the invoker to root, and only there may the invoker change the
# sandbox's network. Root runs CMD as it is. (nsenter cannot name that user
# namespace: no process lives in it; ioctl NS_GET_USERNS finds it.)
forge_net_owner_exec() {
	local target
	target=$1
	shift
	if [ "$(id -u)" = 0 ]; then
		${forge_net_exec:-} "$@"
		return
	fi
	${forge_net_exec:-} python3 -c 'import ctypes, fcntl, os, sys
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
	# exec (forge_net_exec): the PID below is slirp4netns's own, which
	# forge_net_open_stop stops, not a subshell's that would leave it running.
	(forge_net_exec='exec' forge_net_owner_exec "$pid" slirp4netns --configure --mtu=65520 --disable-host-loopback \
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

# --- the namespace backend's wiring (forge-bwrap.sh calls these) ------------------
#
# Per sandbox, in its state folder STATEDIR (owner-only; net/ and
# ca-bundle.crt are in DATADIR, the folder of its private folders, which is
# STATEDIR except when root starts another user's sandbox):
#   net/            the only host folder a restricted sandbox sees
#                   (read-only, at /run/forge/net): egress.sock and
#                   nothing else, so no other host socket is reachable.
#   rules           the allow-list forge-egress enforces, one entry a line
#                   (from the egress flags recorded at create).
#   net/resolv.conf open mode: slirp4netns's DNS forwarder.
#   secrets         with secrets: their ENV@HOST,... lines (names only).
#   ca-bundle.crt   with secrets: the CA bundle inside (the root
#                   filesystem's plus the sandbox's mitmproxy CA).
#   proxy.args      with secrets: the proxy variables, which hold the
#                   secrets proxy's token, as bwrap --setenv arguments
#                   (NUL-separated), read through a descriptor (--args 6)
#                   so that the token is on no command line.

# forge_net_mode EGRESS SECRETS: sets forge_net_mode to what the sandbox's
# network is, from the plan's egress mode EGRESS (open, allow or deny) and
# its SECRETS (ENV@HOST,... lines): "restricted" when every connection goes
# through forge's proxy (an allow-list; or open egress with secrets, whose
# values only a proxy can substitute: SPEC 4.5, then forge-egress allows
# every public destination), "open" otherwise (slirp4netns and nft).
forge_net_mode() {
	if [ "$1" != open ] || [ -n "$2" ]; then forge_net_mode=restricted; else forge_net_mode=open; fi
}

# forge_net_bwrap_render DATADIR MODE SECRETS: adds the bwrap arguments
# of MODE (restricted or open) to forge_bwrap_plan: what the sandbox must
# see at start. Writes nothing (plan uses it too).
forge_net_bwrap_render() {
	local line name rest
	case $2 in
	restricted)
		forge_net_relay_path
		forge_bwrap_add --ro-bind "$1/net" /run/forge/net \
			--ro-bind "$forge_net_relay" /run/forge/forge-relay
		if [ -n "$3" ]; then
			# The proxy variables from fd 6 (proxy.args); the CA trusted.
			forge_bwrap_add --args 6 --ro-bind "$1/ca-bundle.crt" /etc/ssl/certs/ca-certificates.crt
			for name in SSL_CERT_FILE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS; do
				forge_bwrap_add --setenv "$name" /etc/ssl/certs/ca-certificates.crt
			done
			# Each secret's variable holds its placeholder, as under msb.
			rest=$3
			while [ -n "$rest" ]; do
				line=${rest%%'
'*}
				rest=${rest#"$line"}
				rest=${rest#'
'}
				[ -z "$line" ] ||
					forge_bwrap_add --setenv "${line%%@*}" "\$MSB_${line%%@*}"
			done
			return 0
		fi
		# Set inside, never taken from the host.
		for line in $(forge_net_proxy_env ""); do
			forge_bwrap_add --setenv "${line%%=*}" "${line#*=}"
		done
		;;
	open) forge_bwrap_add --ro-bind "$1/net/resolv.conf" /etc/resolv.conf ;;
	esac
}

# forge_net_bwrap_prepare STATEDIR MODE EGRESS HOSTS SECRETS CABUNDLE DATADIR:
# before the sandbox starts: stops what a previous run left, refuses (69)
# when MODE cannot be enforced here, makes STATEDIR/net, and for restricted
# starts forge-egress with the plan's egress: EGRESS its mode (open, allow or
# deny), HOSTS its allowed hosts one a line (open: "*", every public
# destination through the proxy), or with SECRETS (ENV@HOST,... lines) the
# secrets proxy in front of it, and moves the socket into STATEDIR/net.
# CABUNDLE: the root filesystem's CA bundle, which ca-bundle.crt extends.
# Files in DATADIR are written as forge_bwrap_owner (forge_bwrap_as_owner);
# an allow-list in a sandbox root starts for another user is refused (69):
# forge-egress would run as root, with a socket the sandbox's user cannot use.
forge_net_bwrap_prepare() {
	local line
	forge_net_bwrap_stop "$1"
	rm -f -- "$1/proxy.args" "$1/secrets"
	(umask 077 && : >"$1/proxy.args") || forge_die 73 "cannot write $1/proxy.args"
	if [ "$2" = open ]; then
		forge_net_open_check ||
			forge_die 69 "open egress (no allow-list) in a namespace sandbox needs $forge_net_missing (Debian: apt-get install slirp4netns nftables util-linux iproute2); or configure sandbox.network.allow"
	fi
	if [ "$2" = restricted ] && [ -n "${forge_bwrap_owner:-}" ]; then
		forge_die 69 "an egress allow-list or secrets are not supported when root starts the namespace sandbox of another user's worktree: start it as that user"
	fi
	# As the owner: no link or other file of the owner's making is followed.
	# shellcheck disable=SC2016 # a script for sh, with its arguments
	forge_bwrap_as_owner sh -c '
		umask 077
		for f in "$1/net" "$1/ca-bundle.crt"; do
			[ ! -L "$f" ] || { echo "$f is a symlink" >&2; exit 1; }
		done
		rm -f -- "$1/ca-bundle.crt" && mkdir -p -- "$1/net" && [ -d "$1/net" ] || exit
		rm -f -- "$1/net/resolv.conf" || exit
		[ "$2" != open ] || printf "nameserver 10.0.2.3\n" >"$1/net/resolv.conf"' sh "$7" "$2" ||
		forge_die 73 "cannot prepare $7/net for the sandbox's network"
	case $2 in
	restricted)
		# The allowed hosts, one a line; deny: none; open egress with
		# secrets: every public host.
		if [ "$3" = open ]; then
			printf '*\n' >"$1/rules"
		else
			printf '%s' "$4" >"$1/rules"
		fi || forge_die 73 "cannot write $1/rules"
		# Closed: the lock (fd 8) and anything else the caller holds.
		if [ -z "$5" ]; then
			forge_net_proxy_start "$1" "$1/rules" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
		else
			(umask 077 && printf '%s' "$5" >"$1/secrets") || forge_die 73 "cannot write $1/secrets"
			forge_net_secrets_start "$1" "$1/rules" "$1/secrets" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
			[ -f "$6" ] || forge_die 69 "no CA bundle at $6 in the sandbox's root filesystem: cannot make it trust the secrets proxy"
			cat -- "$6" "$1/mitm/mitmproxy-ca-cert.pem" >"$7/ca-bundle.crt" ||
				forge_die 73 "cannot write $7/ca-bundle.crt"
			forge_net_proxy_env "$1" | while IFS= read -r line; do
				printf -- '--setenv\0%s\0%s\0' "${line%%=*}" "${line#*=}"
			done >"$1/proxy.args" || forge_die 73 "cannot write $1/proxy.args"
		fi
		mv -f -- "$1/egress.sock" "$7/net/egress.sock" || forge_die 73 "cannot move the egress socket into $7/net"
		;;
	esac
}

# forge_net_bwrap_start NAME PID STATEDIR MODE: once sandbox NAME runs (PID
# its init): restricted starts forge-relay inside on 127.0.0.1:3128 and
# returns once it listens; open installs the nft rules and attaches slirp4netns.
# Exits 69 when that fails (the caller stops the sandbox first).
forge_net_bwrap_start() {
	case $4 in
	restricted)
		forge_helper_path forge-shell
		# forge's own static relay, bound in by forge_net_bwrap_render, never
		# a program of the image (a distroless one has no sh): --daemon
		# exits 0 once 127.0.0.1:3128 listens, and the relay runs on in a
		# session of its own. From /, there for sure.
		(cd / && FORGE_SANDBOX_CONTAINER=$1 exec "$forge_helper" --exec \
			/run/forge/forge-relay --daemon 127.0.0.1:3128 /run/forge/net/egress.sock \
			</dev/null >/dev/null 2>&1 3>&- 8>&-) || return 69
		;;
	open)
		(forge_net_open_start "$2" "$3") 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- || return 69
		;;
	esac
}

# forge_net_bwrap_stop STATEDIR: stops every host process of the sandbox's
# network (forge-egress, the secrets proxy, slirp4netns); fine when none runs.
forge_net_bwrap_stop() {
	forge_net_secrets_stop "$1"
	forge_net_open_stop "$1"
	if [ -S "$1/net/egress.sock" ]; then rm -f -- "$1/net/egress.sock"; fi
}
