# Shared by t/egress.bats and t/sandbox-net.bats: a test network built
# entirely inside network namespaces the test makes (no address or route of
# the host changes, no traffic leaves the machine).

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
