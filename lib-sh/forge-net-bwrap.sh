# forge-net-bwrap.sh — the namespace backend's wiring of a sandbox's network
# (SPEC 4.5; forge-bwrap.sh and forge-bwrap-render.sh call these): its mode,
# its bwrap arguments, and the host processes started and stopped with it
# (forge-net.sh's proxy, secrets proxy, slirp4netns).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

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
