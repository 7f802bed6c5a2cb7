# forge-msb.sh — the msb backend (SPEC 4.1): finding and calling the
# microsandbox CLI msb and reading its JSON answers (msb ls / images /
# inspect --format json) with jq, an answer that is not what msb documents
# refused, never guessed at; and its renderer, the create argv from the plan
# (forge-plan.jq). The sandbox's lifecycle is forge-msb-lifecycle.sh's.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_msb_find: sets forge_msb to the msb program: $FORGE_MSB when set
# (an absolute path), else msb on PATH by forge_find_program, forge-shell's
# rule. Returns 1 when there is none (or it is not executable).
forge_msb_find() {
	if [ -n "${FORGE_MSB:-}" ]; then
		forge_msb=$FORGE_MSB
		case $forge_msb in /*) ;; *) return 1 ;; esac
		# An explicit status: a bare return in an EXIT trap gives bash's
		# exit status, not this test's.
		[ -f "$forge_msb" ] && [ -x "$forge_msb" ] && return 0
		return 1
	fi
	forge_find_program msb || return 1
	forge_msb=$forge_program
}

# forge_msb_require: forge_msb_find, or exit 69 with the install hint.
forge_msb_require() {
	forge_msb_find && return 0
	forge_msb_missing
	exit 69
}

# forge_msb_missing: reports that msb cannot be found, with how to install it.
forge_msb_missing() {
	if [ -n "${FORGE_MSB:-}" ]; then
		case $FORGE_MSB in
		/*) forge_error "msb not found: FORGE_MSB=$FORGE_MSB is not an executable file" ;;
		*) forge_error "msb not found: FORGE_MSB=$FORGE_MSB is not an absolute path" ;;
		esac
	else
		forge_error "msb not found on PATH (and FORGE_MSB is not set)"
	fi
	forge_say "install it with: npm install @superradcompany/microsandbox-linux-x64-gnu@0.6.18"
	forge_say "then set FORGE_MSB=\$PWD/node_modules/@superradcompany/microsandbox-linux-x64-gnu/bin/msb (or put msb on PATH)"
}

# forge_msb_doctor: runs "msb doctor" bounded by FORGE_SANDBOX_DOCTOR_TIMEOUT
# (30) seconds and sets forge_msb_doctor to available (exit 0), missing (no
# msb), indeterminate (no answer in time) or unsupported (any other exit),
# and forge_msb_doctor_said to msb's explanation: its "error:" lines with
# their hints and its failed checks.
forge_msb_doctor() {
	local out
	forge_msb_doctor_said=
	forge_msb_doctor_secs=${FORGE_SANDBOX_DOCTOR_TIMEOUT:-30}
	forge_is_uint "$forge_msb_doctor_secs" ||
		forge_die 64 "FORGE_SANDBOX_DOCTOR_TIMEOUT must be a whole number of seconds, not '$forge_msb_doctor_secs'"
	if ! forge_msb_find; then
		forge_msb_doctor=missing
		return 0
	fi
	forge_helper_path forge-timeout
	forge_msb_doctor_rc=0
	out=$("$forge_helper" -k 2 "$forge_msb_doctor_secs" "$forge_msb" doctor </dev/null 2>&1) ||
		forge_msb_doctor_rc=$?
	case $forge_msb_doctor_rc in
	0) forge_msb_doctor=available ;;
	124) forge_msb_doctor=indeterminate ;;
	126 | 127) forge_msb_doctor=missing ;;
	*)
		forge_msb_doctor=unsupported
		forge_msb_doctor_said=$(printf '%s\n' "$out" | awk '
			/^error:/ { shown = 1; print; next }
			shown && /^[ \t]/ { print; next }
			{ shown = 0 }
			/\342\234\227/ { print }')
		[ -n "$forge_msb_doctor_said" ] ||
			forge_msb_doctor_said=$(printf '%s\n' "$out" | tail -n 10)
		;;
	esac
}

# forge_msb_doctor_report: reports a doctor outcome other than available on
# stderr (after forge_msb_doctor).
forge_msb_doctor_report() {
	case $forge_msb_doctor in
	missing) forge_msb_missing ;;
	indeterminate)
		forge_error "msb doctor gave no answer within ${forge_msb_doctor_secs}s: whether this host can run microVMs is indeterminate"
		;;
	unsupported)
		forge_error "host unsupported: msb cannot run microVMs here (msb doctor exited $forge_msb_doctor_rc):"
		printf '%s\n' "$forge_msb_doctor_said" | forge_printable_lines '    ' >&2
		forge_say "run 'msb doctor --fix' to apply the fixes msb supports, then try again"
		;;
	esac
}

# forge_msb_status NAME: sets forge_msb_status to sandbox NAME's status from
# "msb ls --format json" (empty when there is no such sandbox). Exits 69
# when msb fails or answers anything but an array of sandboxes.
forge_msb_status() {
	forge_msb_ls
	forge_msb_status=$(printf '%s' "$forge_msb_ls_json" |
		jq -r --arg n "$1" 'first(.[] | select(.name == $n) | .status) // ""') ||
		forge_die 70 "jq failed while reading msb ls"
}

# forge_msb_ls: sets forge_msb_ls_json to the output of
# "msb ls --format json", checked to be an array of {name, status} objects.
forge_msb_ls() {
	forge_msb_ls_json=$("$forge_msb" ls --format json </dev/null) ||
		forge_die 69 "msb ls failed"
	# Slurped: exactly one document, or it is refused.
	printf '%s' "$forge_msb_ls_json" | jq -se 'length == 1 and (.[0] | type == "array" and
		all(.[]; type == "object" and (.name | type) == "string" and (.status | type) == "string"))' \
		>/dev/null 2>&1 ||
		forge_die 69 "msb ls --format json did not print a JSON array of sandboxes; refusing to guess"
}

# forge_msb_forge_names: sets forge_msb_names to the forge-* sandboxes msb
# knows, "NAME" one per line, and forge_msb_ls_json (see forge_msb_ls).
forge_msb_forge_names() {
	forge_msb_ls
	forge_msb_names=$(printf '%s' "$forge_msb_ls_json" |
		jq -r '.[] | select(.name | startswith("forge-")) | .name') ||
		forge_die 70 "jq failed while reading msb ls"
	[ -z "$forge_msb_names" ] || forge_msb_names=$forge_msb_names'
'
}

# forge_msb_image_cached REF: true when msb's image cache holds REF
# ("msb images --format json"; references compared with Docker's defaults
# filled in: docker.io/library/ and :latest). Exits 69 when msb fails or
# answers anything but an array of images.
forge_msb_image_cached() {
	local images verdict
	images=$("$forge_msb" images --format json </dev/null) ||
		forge_die 69 "msb images failed"
	verdict=$(printf '%s' "$images" | jq -rs --arg r "$1" '
		def norm: (if test("^[^/]+[.:][^/]*/") or startswith("localhost/") then . else
		             (if test("/") then "docker.io/" + . else "docker.io/library/" + . end) end)
		          | if test("@") or test(":[^/]*$") then . else . + ":latest" end;
		if length == 1 and (.[0] | type == "array" and all(.[]; type == "object" and (.reference | type) == "string"))
		then (if any(.[0][]; (.reference | norm) == ($r | norm)) then "yes" else "no" end)
		else "bad" end') || verdict=bad
	case $verdict in
	yes) return 0 ;;
	no) return 1 ;;
	esac
	forge_die 69 "msb images --format json did not print a JSON array of images; refusing to guess"
}

# forge_msb_bound_secrets NAME: sets forge_msb_bound to the env names of the
# secrets bound to sandbox NAME ("msb inspect NAME --format json",
# config.network.secrets.secrets[].env_var): empty when none, else a newline
# before and after each. Exits 69 when msb fails or its answer is not that.
forge_msb_bound_secrets() {
	local json
	json=$("$forge_msb" inspect "$1" --format json </dev/null) ||
		forge_die 69 "msb inspect $1 failed"
	forge_msb_bound=$(printf '%s' "$json" | jq -rs '
		if length == 1 and (.[0] | type) == "object" then
		  (.[0].config.network.secrets.secrets // [])
		  | if type == "array" then .[] | .env_var | select(type == "string") else error("bad") end
		else error("bad") end' 2>/dev/null) ||
		forge_die 69 "msb inspect $1 --format json did not print a sandbox's configuration; refusing to guess"
	[ -z "$forge_msb_bound" ] || forge_msb_bound='
'$forge_msb_bound'
'
}

# forge_msb_rm NAME: "msb rm --force NAME --quiet"; a missing sandbox is not
# an error (forge_msb_absent is then 1, else empty). Returns 1 (msb's
# message shown) when it fails. (--quiet silences msb's "sandbox not
# found", so a failure is checked against msb ls.)
forge_msb_rm() {
	local err
	forge_msb_absent=
	err=$("$forge_msb" rm --force "$1" --quiet </dev/null 2>&1 >/dev/null) && return 0
	forge_msb_absent=1
	case $err in
	*'sandbox not found'*) return 0 ;;
	esac
	forge_msb_status "$1"
	[ -n "$forge_msb_status" ] || return 0
	forge_msb_absent=
	[ -z "$err" ] || printf '%s\n' "$err" | forge_printable_lines >&2
	forge_error "could not remove sandbox $1; its volumes are left alone"
	return 1
}

# forge_msb_volume_rm NAME: "msb volume rm NAME --quiet"; a missing volume is
# not an error (checked against msb volume ls; forge_msb_absent is then 1,
# else empty). Returns 1 (msb's message shown) when it fails.
forge_msb_volume_rm() {
	local listed err
	forge_msb_absent=
	err=$("$forge_msb" volume rm "$1" --quiet </dev/null 2>&1 >/dev/null) && return 0
	forge_msb_absent=1
	case $err in
	*'volume not found'*) return 0 ;;
	esac
	listed=$("$forge_msb" volume ls --format json </dev/null 2>/dev/null |
		jq -rs --arg n "$1" 'if length == 1 and (.[0] | type) == "array"
			then (if any(.[0][]; .name? == $n) then "present" else "absent" end) else "bad" end' 2>/dev/null) ||
		listed=bad
	[ "$listed" != absent ] || return 0
	forge_msb_absent=
	[ -z "$err" ] || printf '%s\n' "$err" | forge_printable_lines >&2
	forge_error "could not remove volume $1"
	return 1
}

# --- msb's rendering of the plan ------------------------------------------------------

# forge_msb_render PLAN: msb's rendering of the plan PLAN (forge_plan's
# JSON; forge-plan.jq's msb_argv): sets forge_sandbox_plan to the msb create
# argv, one argument a line, "msb" first (forge_msb_argv_print writes it
# NUL-separated). No argument holds a newline, so lines carry it: msb's
# -v SRC:DEST[:OPTS] is a grammar of separators, and the mount plan refuses
# a path with ':', ',' or a newline for msb (forge-mounts.sh); names, env
# names, sizes, image and egress are validated by the plan.
forge_msb_render() {
	# Made with the view of the plan just built (forge_plan_view).
	if [ "$1" = "${forge_plan_viewed:-}" ] && [ -n "${forge_plan_msb_argv:-}" ]; then
		forge_sandbox_plan=$forge_plan_msb_argv
		return 0
	fi
	forge_sandbox_plan=$(printf '%s' "$1" | forge_plan_jq msb) ||
		forge_die 70 "jq failed while rendering the msb plan"
	forge_sandbox_plan=$forge_sandbox_plan'
'
}

# forge_msb_argv_print: writes the argv forge_msb_render made to standard
# output, each argument followed by a NUL byte, "msb" first.
forge_msb_argv_print() {
	printf '%s' "$forge_sandbox_plan" | tr '\n' '\000'
}
