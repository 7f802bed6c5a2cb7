# forge-state.sh — forge's evidence on the real repository: .forge/ with the
# breaker state, the timeline, per-run logs and per-change reports (SPEC 3.3,
# 3.4). All updates go through the forge-state helper (flock + atomic rename).
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_state_init ROOT: sets forge_state_dir to ROOT/.forge and makes sure it
# exists with its runs/ and changes/ folders; the first time, adds /.forge/ to
# info/exclude. Exits 73 when the folder cannot be created.
forge_state_init() {
	forge_state_dir=$1/.forge
	[ -d "$forge_state_dir/runs" ] && [ -d "$forge_state_dir/changes" ] && return 0
	forge_exclude_forge_dir "$1" ||
		forge_die 73 "cannot add /.forge/ to the repository's info/exclude"
	mkdir -p -- "$forge_state_dir/runs" "$forge_state_dir/changes" 2>/dev/null ||
		forge_die 73 "cannot create $forge_state_dir"
}

# forge_run_begin: starts a run: sets forge_run_id, forge_run_dir, forge_ts
# and forge_ms, creates the run's log folder and prunes all but the last
# 20 runs.
forge_run_begin() {
	forge_clock
	forge_run_id=$forge_stamp-$$
	forge_run_dir=$forge_state_dir/runs/$forge_run_id
	mkdir -- "$forge_run_dir" 2>/dev/null ||
		forge_die 73 "cannot create $forge_run_dir"
	forge_runs_prune
}

# forge_runs_prune: removes the oldest run folders beyond the last 20. Run
# ids start with a UTC timestamp, so the glob's order is their age.
forge_runs_prune() {
	set -- "$forge_state_dir"/runs/*/
	forge_prune_n=$(($# - 20))
	while [ "$forge_prune_n" -gt 0 ]; do
		rm -rf -- "$1" 2>/dev/null || true
		shift
		forge_prune_n=$((forge_prune_n - 1))
	done
}

# forge_breaker_read: sets forge_streak from .forge/breaker (0 when absent).
forge_breaker_read() {
	forge_streak=$(forge_state get "$forge_state_dir/breaker" streak 0) ||
		forge_die "$?" "cannot read $forge_state_dir/breaker"
	forge_is_uint "$forge_streak" ||
		forge_die 65 "$forge_state_dir/breaker: key streak: not a count: $forge_streak"
}

# forge_breaker_state STREAK THRESHOLD: sets forge_breaker to "open" when
# STREAK has reached THRESHOLD, else "closed".
forge_breaker_state() {
	if [ "$1" -ge "$2" ]; then forge_breaker=open; else forge_breaker=closed; fi
}

# forge_breaker_update VERDICT THRESHOLD: applies a verdict to the streak and
# sets forge_streak and forge_breaker. FAIL counts up atomically (so N
# concurrent failures give exactly N), PASS resets, ERROR leaves it alone.
forge_breaker_update() {
	forge_breaker_file=$forge_state_dir/breaker
	forge_verdict=$1 forge_threshold=$2
	set --
	case $forge_verdict in
	FAIL)
		forge_streak=$(forge_state incr "$forge_breaker_file" streak) ||
			forge_die "$?" "cannot update $forge_breaker_file" ;;
	PASS)
		forge_streak=0
		set -- streak=0 ;;
	*)
		forge_breaker_read ;;
	esac
	forge_state set "$forge_breaker_file" "$@" threshold="$forge_threshold" \
		last_verdict="$forge_verdict" last_run="$forge_run_id" updated="$forge_ts" ||
		forge_die "$?" "cannot update $forge_breaker_file"
	forge_breaker_state "$forge_streak" "$forge_threshold"
}

# forge_breaker_reset: sets the streak to 0 and logs a breaker-reset event.
forge_breaker_reset() {
	forge_breaker_read
	forge_clock
	forge_state set "$forge_state_dir/breaker" streak=0 updated="$forge_ts" ||
		forge_die "$?" "cannot update $forge_state_dir/breaker"
	forge_timeline_append "$(jq -n -c --arg ts "$forge_ts" --argjson was "$forge_streak" \
		'{ts: $ts, event: "breaker-reset", streak: 0, previous_streak: $was, breaker: "closed"}')"
}

# forge_timeline_append LINE: appends one JSON line to the timeline, whole.
forge_timeline_append() {
	forge_state append "$forge_state_dir/timeline.jsonl" "$1" ||
		forge_die "$?" "cannot append to $forge_state_dir/timeline.jsonl"
}

# forge_record VERDICT ISOLATED CHANGE HEAD TREE [NAME RUN EXIT MS REASON]...:
# records a verification: updates the breaker (forge_breaker_update must know
# forge_threshold), appends the timeline event, writes the change report.
# forge_record_sandbox is the "sandbox" value (JSON; null when unset). Sets
# forge_record_json to the event.
forge_record() {
	forge_breaker_update "$1" "$forge_threshold"
	# shellcheck disable=SC2016 # a jq program, not shell
	forge_record_json=$(jq -n -c \
		--arg ts "$forge_ts" --arg run "$forge_run_id" --arg verdict "$1" \
		--argjson isolated "$2" --arg change "$3" --arg head "$4" --arg tree "$5" \
		--argjson streak "$forge_streak" --arg breaker "$forge_breaker" \
		--argjson sandbox "${forge_record_sandbox:-null}" \
		'def nullable: if . == "" then null else . end;
		 ($ARGS.positional[5:] | [range(0; length; 5) as $i | .[$i:$i + 5]
		   | {name: .[0], run: .[1], exit: (.[2] | tonumber), ms: (.[3] | tonumber),
		      reason: (.[4] | nullable),
		      log: ".forge/runs/\($run)/\($i / 5 + 1)-\(.[0] | gsub("[^A-Za-z0-9._-]"; "_")).log"}]) as $steps
		 | {ts: $ts, event: "verify", run: $run, verdict: $verdict, isolated: $isolated, sandbox: $sandbox,
		    change: ($change | nullable), head: ($head | nullable), tree: ($tree | nullable),
		    steps: $steps, streak: $streak, breaker: $breaker}' --args "$@") ||
		forge_die 70 "jq failed while recording the verdict"
	forge_timeline_append "$forge_record_json"
	[ -n "$3" ] || return 0
	forge_change_file=$forge_state_dir/changes/$3.json
	if ! { printf '%s\n' "$forge_record_json" >"$forge_change_file.$$.tmp" &&
		mv -f -- "$forge_change_file.$$.tmp" "$forge_change_file"; }; then
		rm -f -- "$forge_change_file.$$.tmp"
		forge_die 73 "cannot write $forge_change_file"
	fi
}
