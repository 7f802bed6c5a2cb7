# forge-doctor.sh — choosing the sandbox backend (sandbox.backend, auto:
# msb where it runs microVMs, else bwrap where it works) and forge-sandbox
# doctor, which reports both backends (SPEC 4.1, 4.5).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_bwrap_probe: sets forge_bwrap_probe to available when bwrap can make
# a user and a network namespace here, else to why not.
forge_bwrap_probe() {
	local out
	if ! command -v bwrap >/dev/null 2>&1; then
		forge_bwrap_probe='bwrap (bubblewrap) is not installed'
		return 0
	fi
	if out=$(bwrap --unshare-user --unshare-net --ro-bind / / true 2>&1 </dev/null); then
		forge_bwrap_probe=available
	else
		forge_bwrap_probe="bwrap cannot create user and network namespaces here: ${out:-no message}"
	fi
}

# forge_sandbox_backend [BACKEND]: sets forge_backend to msb or bwrap: BACKEND
# when given (plan --backend), else sandbox.backend (forge_config_load
# first). auto: msb when msb doctor says the host runs microVMs, else bwrap
# when it works, else exit 69 naming both.
forge_sandbox_backend() {
	forge_backend=${1:-}
	if [ -z "$forge_backend" ]; then
		forge_backend=$(forge_config_get sandbox.backend) || forge_die 70 "jq failed while reading sandbox.backend"
		[ -n "$forge_backend" ] || forge_backend=auto
	fi
	case $forge_backend in
	msb | bwrap) return 0 ;;
	auto) ;;
	*) forge_die 65 "configuration key sandbox.backend: '$forge_backend' is not auto, msb or bwrap" ;;
	esac
	forge_msb_doctor
	if [ "$forge_msb_doctor" = available ]; then
		forge_backend=msb
		return 0
	fi
	forge_bwrap_probe
	if [ "$forge_bwrap_probe" = available ]; then
		forge_backend=bwrap
		return 0
	fi
	forge_error "no sandbox backend works on this host:"
	forge_error "  msb: $forge_msb_doctor (see forge-sandbox doctor)"
	forge_error "  bwrap: $forge_bwrap_probe"
	exit 69
}

# forge_sandbox_doctor: reports both backends (msb's verdict as before; the
# namespace backend with how its limits are set) and exits: 0 when the
# backend sandbox.backend selects is available (auto: either), else 69 (75
# when msb is selected and its doctor gave no answer). Reads the
# configuration of the worktree in the current directory, if any.
forge_sandbox_doctor() {
	local limits root want
	root=
	! forge_sandbox_locate . 2>/dev/null || root=$forge_sandbox_root
	forge_config_load "$root"
	want=$(forge_config_get sandbox.backend) || forge_die 70 "jq failed while reading sandbox.backend"
	case ${want:=auto} in
	auto | msb | bwrap) ;;
	*) forge_die 65 "configuration key sandbox.backend: '$want' is not auto, msb or bwrap" ;;
	esac
	forge_msb_doctor
	if [ "$forge_msb_doctor" = available ]; then
		printf 'available: %s can run microVMs on this host\n' "$forge_msb"
	elif [ "$want" = msb ]; then
		forge_msb_doctor_report
	else
		# Not the selected backend: its state is information, not an error.
		forge_sandbox_doctor_msb_note
	fi
	# The namespace backend's report goes to stderr, beside msb's.
	forge_bwrap_probe
	forge_bwrap_cgroups forge-doctor
	if forge_bwrap_limits_possible; then
		limits="memory and cpu limits through cgroup $forge_bwrap_cgroup_kind, plus CPU affinity"
	else
		limits="no writable cgroup (${forge_bwrap_cgroup_kind:-none found}): CPU affinity only, no memory limit"
	fi
	if [ "$forge_bwrap_probe" = available ]; then
		forge_say "bwrap: available: namespace sandboxes work on this host; $limits"
	else
		forge_say "bwrap: unavailable: $forge_bwrap_probe"
	fi
	if ! forge_net_open_check; then
		forge_say "bwrap: open egress (no allow-list): unavailable: needs $forge_net_missing; up refuses a namespace sandbox with open egress and no secrets (an allow-list, or secrets, go through forge's proxy and work)"
	else
		forge_say "bwrap: open egress (no allow-list): available (slirp4netns, nft; with secrets, through forge's proxy instead)"
	fi
	forge_say "sandbox.backend: $want"
	case $want/$forge_msb_doctor/$forge_bwrap_probe in
	msb/available/* | auto/available/*) forge_say "selected: msb (microVMs)" ;;
	bwrap/*/available) forge_say "selected: bwrap (namespace sandboxes), as sandbox.backend says" ;;
	auto/*/available) forge_say "selected: bwrap (namespace sandboxes): auto picks it because msb cannot run microVMs here" ;;
	msb/*) forge_say "selected: none: sandbox.backend is msb, which cannot run here" ;;
	bwrap/*) forge_say "selected: none: sandbox.backend is bwrap, which cannot run here" ;;
	*) forge_say "selected: none: neither backend can run here" ;;
	esac
	case $want/$forge_msb_doctor/$forge_bwrap_probe in
	msb/available/* | bwrap/*/available | auto/available/* | auto/*/available) exit 0 ;;
	msb/indeterminate/* | auto/indeterminate/*) exit 75 ;;
	esac
	exit 69
}

# forge_sandbox_doctor_msb_note: msb's state when it is not the selected
# backend, as plain information on stderr (its doctor's lines indented).
forge_sandbox_doctor_msb_note() {
	case $forge_msb_doctor in
	missing) forge_say "msb: not installed (FORGE_MSB unset or not executable, no msb on PATH)" ;;
	indeterminate) forge_say "msb: indeterminate: msb doctor gave no answer within ${forge_msb_doctor_secs}s" ;;
	*)
		forge_say "msb: unavailable: it cannot run microVMs on this host (msb doctor exited $forge_msb_doctor_rc):"
		printf '%s\n' "$forge_msb_doctor_said" | forge_printable_lines '    ' >&2
		;;
	esac
}

# forge_sandbox_msb_needed: true when ls and prune must have msb: the
# configuration (of the worktree in the current directory, if any) selects
# the msb backend. Otherwise they skip msb where it is missing.
forge_sandbox_msb_needed() {
	local root
	root=
	! forge_sandbox_locate . 2>/dev/null || root=$forge_sandbox_root
	forge_config_load "$root"
	[ "$(forge_config_get sandbox.backend)" = msb ]
}
