#!/usr/bin/env bats
# The opencode integration (SPEC 4.7) against the REAL opencode, pinned to
# the version build-aux/install-deps installs from the npm registry
# (OPENCODE_VERSION below; to move it, change both and rerun this file).
# No model: opencode serves on 127.0.0.1, its "shell" is forge-shell, forge's
# plugin (opencode/forge.js) is linked into its plugins folder, and it runs
# with FORGE_SANDBOX_REQUIRED=1. Its agent is driven by a scripted
# OpenAI-compatible endpoint on loopback that answers one bash tool call,
# then a final message. Every command must run in a real namespace sandbox.
load test_helper
load sandbox_helper

OPENCODE_VERSION=1.18.33

setup() {
	sandbox_setup
	unset FORGE_SANDBOX_REQUIRED FORGE_SANDBOX_BACKEND FORGE_SANDBOX_STATE
	if ! bwrap --unshare-user --unshare-net --ro-bind / / true 2>/dev/null; then
		[ "${CI:-}" != true ] || fail "bwrap cannot create user namespaces on this CI host"
		skip "this host cannot create user namespaces (bwrap --unshare-user fails)"
	fi
	OPENCODE=${FORGE_OPENCODE:-$(command -v opencode || :)}
	if [ -z "$OPENCODE" ]; then
		[ "${CI:-}" != true ] || fail "opencode is required in CI (build-aux/install-deps installs opencode-ai@$OPENCODE_VERSION)"
		skip "opencode not installed (build-aux/install-deps installs it; or set FORGE_OPENCODE)"
	fi
	[ "$("$OPENCODE" --version)" = "$OPENCODE_VERSION" ] ||
		fail "$OPENCODE is opencode $("$OPENCODE" --version), not the pinned $OPENCODE_VERSION"
	mkdir -p "$XDG_CONFIG_HOME/forge"
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}\n' >"$XDG_CONFIG_HOME/forge/config.json"
	NAME=$(forge-sandbox up "$REPO" 2>/dev/null) || fail "forge-sandbox up failed"
	OC_PID='' LLM_PID='' BG_PID=''
}

teardown() {
	# Only the processes this test started, by their ids.
	[ -z "${OC_PID:-}" ] || { kill "$OC_PID" 2>/dev/null; wait "$OC_PID" 2>/dev/null; } || :
	[ -z "${LLM_PID:-}" ] || { kill "$LLM_PID" 2>/dev/null; wait "$LLM_PID" 2>/dev/null; } || :
	[ -z "${BG_PID:-}" ] || { kill "$BG_PID" 2>/dev/null; wait "$BG_PID" 2>/dev/null; } || :
	[ -z "${REPO:-}" ] || forge-sandbox rm "$REPO" >/dev/null 2>&1 || :
	forge_test_teardown
}

# llm_start COMMAND [JSON]: a scripted OpenAI-compatible chat endpoint on loopback.
# The first request that offers tools gets one call of the bash tool running
# COMMAND (with the arguments in the JSON object added, a timeout say); any other (the turn after it, a title) gets "done". Every request body is logged, one JSON per line, to $LLM_LOG.
llm_start() {
	LLM_LOG=$SCRATCH/llm.log
	cat >"$SCRATCH/llm.py" <<'EOF'
import http.server, json, sys
port_file, log, command, extra = sys.argv[1:5]
calls = 0
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with open(log, "a") as f:
            f.write(json.dumps(body) + "\n")
        global calls
        if body.get("tools") and calls == 0:
            calls += 1
            args = json.dumps(dict({"command": command, "description": "probe"}, **json.loads(extra)))
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                         "function": {"name": "bash", "arguments": args}}]}
            finish = "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": "done"}, "stop"
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if body.get("stream"):
            chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}]
            out = b"".join(b"data: " + json.dumps(dict(c, id="c1", object="chat.completion.chunk", created=0,
                                                       model="scripted")).encode() + b"\n\n" for c in chunks)
            out += b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            out = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "scripted",
                              "choices": [{"index": 0, "message": delta, "finish_reason": finish}],
                              "usage": usage}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
EOF
	python3 "$SCRATCH/llm.py" "$SCRATCH/llm.port" "$LLM_LOG" "$1" "${2:-"{}"}" </dev/null >"$SCRATCH/llm.out" 2>&1 &
	LLM_PID=$!
	for _ in $(seq 100); do [ -s "$SCRATCH/llm.port" ] && break; sleep 0.1; done
	LLM_PORT=$(cat "$SCRATCH/llm.port") || fail "the scripted endpoint did not start: $(cat "$SCRATCH/llm.out")"
}

# oc_start [PLUGIN]: opencode serve on 127.0.0.1 in $REPO, its shell
# forge-shell, PLUGIN (default: forge's, from the build tree) linked into
# its plugins folder, the scripted endpoint (when started) as its model,
# FORGE_SANDBOX_REQUIRED=1. Sets OC_URL.
oc_start() {
	local dir=$XDG_CONFIG_HOME/opencode provider=''
	mkdir -p "$dir/plugins" "$dir/node_modules"
	ln -s "${1:-$abs_top_builddir/opencode/forge.js}" "$dir/plugins/forge.js"
	# opencode adds @opencode-ai/plugin to a config folder with plugins in
	# the background, from the npm registry; the lock file says it is there
	# (forge's plugin imports nothing), so the test reaches no registry.
	printf '{}\n' >"$dir/package.json"
	printf '{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "%s"}}}}\n' "$OPENCODE_VERSION" >"$dir/package-lock.json"
	if [ -n "${LLM_PORT:-}" ]; then
		provider='"provider": {"scripted": {"npm": "@ai-sdk/openai-compatible", "name": "Scripted",
			"options": {"baseURL": "http://127.0.0.1:'"$LLM_PORT"'/v1", "apiKey": "none"},
			"models": {"scripted": {"name": "Scripted", "tool_call": true}}}},
			"model": "scripted/scripted", "small_model": "scripted/scripted",'
	fi
	# forge-sandbox as the plugin runs it, each call logged.
	printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec "%s" "$@"\n' "$SCRATCH/plugin-calls" \
		"$abs_top_builddir/bin/forge-sandbox" >"$SCRATCH/forge-sandbox-logged"
	chmod +x "$SCRATCH/forge-sandbox-logged"
	printf '{%s "shell": "%s", "autoupdate": false, "share": "disabled"}\n' \
		"$provider" "$abs_top_builddir/helpers/forge-shell" >"$dir/opencode.json"
	(
		cd "$REPO" || exit 1
		export FORGE_SANDBOX_REQUIRED=1 FORGE_SANDBOX_PROGRAM="$SCRATCH/forge-sandbox-logged"
		export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1
		export OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_CLAUDE_CODE=1
		# OC_HOST=1: opencode started with the explicit way to the host.
		if [ -n "${OC_HOST:-}" ]; then export FORGE_SANDBOX_CONTAINER=host; else unset FORGE_SANDBOX_CONTAINER; fi
		exec "$OPENCODE" serve --hostname 127.0.0.1 --port 0
	) </dev/null >"$SCRATCH/opencode.log" 2>&1 &
	OC_PID=$!
	for _ in $(seq 600); do grep -q 'listening on http' "$SCRATCH/opencode.log" && break; sleep 0.1; done
	OC_URL=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$SCRATCH/opencode.log")
	[ -n "$OC_URL" ] || fail "opencode serve did not start: $(cat "$SCRATCH/opencode.log")"
}

# oc_post PATH JSON: POST to opencode's server for $REPO; the answer in $output.
oc_post() {
	run curl -sS --max-time 300 -X POST -H 'Content-Type: application/json' -d "$2" "$OC_URL$1?directory=$REPO"
	assert_success
}

# oc_session: a new session; its id in SESSION.
oc_session() {
	oc_post /session '{}'
	SESSION=$(jq -r .id <<<"$output")
	[ -n "$SESSION" ] && [ "$SESSION" != null ] || fail "no session: $output"
}

# inside_group PGID: the processes of process group PGID inside the sandbox,
# one "PID STATE" a line, as the sandbox's own /proc shows them (zombies
# not yet reaped included).
inside_group() {
	# shellcheck disable=SC2016 # expanded by the shell inside
	forge-sandbox exec "$REPO" -- sh -c 'for f in /proc/[0-9]*/stat; do
		s=$(cat "$f" 2>/dev/null) || continue
		set -- ${s##*) }
		[ "$3" != "$0" ] || echo "${f#/proc/}" "$1"
	done' "$1"
}

# await_group PGID COUNT: waits (at most 30 s) until inside_group PGID lists
# COUNT processes; the list in $output.
await_group() {
	for _ in $(seq 300); do
		run inside_group "$1"
		[ "${#lines[@]}" -ne "$2" ] || return 0
		sleep 0.1
	done
}

# oc_post_bg WHAT BODY: POSTs BODY to the session's WHAT endpoint in the
# background ($BG_PID; the answer in $SCRATCH/WHAT.out).
oc_post_bg() {
	curl -sS --max-time 300 -X POST -H 'Content-Type: application/json' -d "$2" \
		"$OC_URL/session/$SESSION/$1?directory=$REPO" >"$SCRATCH/$1.out" 2>&1 &
	BG_PID=$!
}

# await_probe_group: the probe command (in the background, $BG_PID) wrote its
# process group's number to $REPO/pgid: PG, holding three processes inside.
await_probe_group() {
	await_file "$REPO/pgid"
	PG=$(cat "$REPO/pgid")
	await_group "$PG" 3
	assert_equal "${#lines[@]}" 3
}

# probe_group_gone: once the request in the background has ended, nothing
# is left of the group PG inside.
probe_group_gone() {
	wait "$BG_PID"
	BG_PID=''
	await_group "$PG" 0
	assert_output ''
}

# await_file FILE: waits (at most 60 s) until FILE is not empty.
await_file() {
	for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done
	fail "$1 did not appear"
}

@test "opencode's session shell (the TUI's !cmd): the command runs inside the worktree's sandbox" {
	oc_start
	oc_session
	oc_post "/session/$SESSION/shell" '{"agent": "build", "command": "hostname; id -u; test ! -e /etc/shadow && echo no-shadow"}'
	[ "$(jq -r '.parts[0].state.output' <<<"$output")" = "$NAME
1000
no-shadow" ]
	# The directory's sandbox was looked up once, not per command.
	oc_post "/session/$SESSION/shell" '{"agent": "build", "command": "hostname"}'
	[ "$(jq -r '.parts[0].state.output' <<<"$output")" = "$NAME" ]
	run cat "$SCRATCH/plugin-calls"
	assert_output "env -- $REPO"
	# Removed under the harness: forge-shell's own answer, never a host run
	# or msb's "not found".
	forge-sandbox rm "$REPO" >/dev/null
	oc_post "/session/$SESSION/shell" '{"agent": "build", "command": "echo ran >ran-here"}'
	[[ $(jq -r '.parts[0].state.output' <<<"$output") == "forge-shell: error: the namespace sandbox $NAME is not there "* ]]
	[ ! -e "$REPO/ran-here" ]
}

@test "opencode started with FORGE_SANDBOX_CONTAINER=host: the explicit opt-out runs on the host, even in required mode" {
	OC_HOST=1 oc_start
	oc_session
	oc_post "/session/$SESSION/shell" '{"agent": "build", "command": "hostname; test -e /etc/shadow && echo shadow"}'
	[ "$(jq -r '.parts[0].state.output' <<<"$output")" = "$(hostname)
shadow" ]
	[ ! -e "$SCRATCH/plugin-calls" ]
}

@test "opencode's agent bash tool, driven by a scripted model on loopback: the command runs inside" {
	llm_start 'hostname; id -u; test ! -e /etc/shadow && echo no-shadow'
	oc_start
	oc_session
	oc_post "/session/$SESSION/message" '{"parts": [{"type": "text", "text": "run the probe"}], "model": {"providerID": "scripted", "modelID": "scripted"}}'
	[ "$(jq -r '.parts[] | select(.type == "text") | .text' <<<"$output")" = done ]
	# What the bash tool gave back to the model, from inside the sandbox.
	run jq -r 'select(.tools) | .messages[] | select(.role == "tool") | .content' "$LLM_LOG"
	assert_output "$NAME
1000
no-shadow"
	run jq -r '.parts[] | select(.type == "tool") | .state.metadata.exit' < <(curl -sS "$OC_URL/session/$SESSION/message?directory=$REPO" | jq -c '.[]')
	assert_output 0
}

@test "a plugin that fails to load, with FORGE_SANDBOX_REQUIRED=1: nothing runs on the host, the agent sees 127" {
	{ printf 'throw new Error("this plugin fails to load")\n'; cat "$abs_top_builddir/opencode/forge.js"; } >"$SCRATCH/broken.js"
	# A file in the worktree (a path outside it would make opencode ask
	# for permission): it appears if the command ran anywhere at all.
	llm_start 'echo ran >ran-here; hostname'
	oc_start "$SCRATCH/broken.js"
	oc_session
	oc_post "/session/$SESSION/shell" '{"agent": "build", "command": "echo ran >ran-here; hostname"}'
	[ "$(jq -r '.parts[0].state.output' <<<"$output")" = 'forge-shell: error: no sandbox for this session; refusing to run on the host' ]
	[ ! -e "$REPO/ran-here" ]
	oc_post "/session/$SESSION/message" '{"parts": [{"type": "text", "text": "run the probe"}], "model": {"providerID": "scripted", "modelID": "scripted"}}'
	# The tool part of the agent's turn (the session shell's has no exit).
	run jq -r '.parts[] | select(.type == "tool" and .tool == "bash") | .state.metadata.exit // empty' < <(curl -sS "$OC_URL/session/$SESSION/message?directory=$REPO" | jq -c '.[]')
	assert_output 127
	run jq -r 'select(.tools) | .messages[-1] | select(.role == "tool") | .content' "$LLM_LOG"
	assert_output 'forge-shell: error: no sandbox for this session; refusing to run on the host'
	[ ! -e "$REPO/ran-here" ]
}

@test "opencode's abort of a session shell command: its whole process group inside the sandbox is gone" {
	oc_start
	oc_session
	# The command's process group (the sandbox's numbering), read by cut
	# (in that group: no job control), then a child in the background and
	# one in the foreground.
	oc_post_bg shell '{"agent": "build", "command": "cut -d\" \" -f5 /proc/self/stat >pgid; sleep 271 & sleep 272; echo not-aborted >after"}'
	# bash and its two sleeps, running inside.
	await_probe_group
	oc_post "/session/$SESSION/abort" '{}'
	assert_output true
	probe_group_gone
	[ ! -e "$REPO/after" ]
}

@test "opencode's timeout of the agent's bash tool: a command that ignores SIGTERM is killed with its process group inside" {
	# It ignores SIGTERM (so do its children): opencode's SIGKILL of
	# forge-shell, 3 s later, must take the group inside with it.
	llm_start 'trap "" TERM; cut -d" " -f5 /proc/self/stat >pgid; sleep 273 & sleep 274; echo not-killed >after' '{"timeout": 5000}'
	oc_start
	oc_session
	oc_post_bg message '{"parts": [{"type": "text", "text": "run the probe"}], "model": {"providerID": "scripted", "modelID": "scripted"}}'
	await_probe_group
	probe_group_gone
	[ ! -e "$REPO/after" ]
	run jq -r 'select(.tools) | .messages[] | select(.role == "tool") | .content' "$LLM_LOG"
	assert_output --partial 'shell tool terminated command after exceeding timeout 5000 ms'
}

@test "opencode's agent bash tool: a failing command's exit status and output reach the model" {
	llm_start 'echo failing >&2; exit 7'
	oc_start
	oc_session
	oc_post "/session/$SESSION/message" '{"parts": [{"type": "text", "text": "run the probe"}], "model": {"providerID": "scripted", "modelID": "scripted"}}'
	run jq -r '.parts[] | select(.type == "tool" and .tool == "bash") | .state.metadata.exit' < <(curl -sS "$OC_URL/session/$SESSION/message?directory=$REPO" | jq -c '.[]')
	assert_output 7
	run jq -r 'select(.tools) | .messages[] | select(.role == "tool") | .content' "$LLM_LOG"
	assert_output failing
}

# shell_in SESSION COMMAND: COMMAND through SESSION's shell; its output in $output.
shell_in() {
	oc_post "/session/$1/shell" "$(jq -cn --arg c "$2" '{agent: "build", command: $c}')"
	output=$(jq -r '.parts[0].state.output' <<<"$output")
}

@test "per-session host opt-out: only a session or directory named in the user's ~/.config/forge/opencode-host runs on the host" {
	oc_start
	oc_session
	A=$SESSION
	oc_session
	B=$SESSION
	optout=$XDG_CONFIG_HOME/forge/opencode-host
	printf 'session %s\n' "$A" >"$optout"
	chmod 600 "$optout"
	shell_in "$A" hostname
	assert_output "$(hostname)"
	shell_in "$B" hostname
	assert_output "$NAME"
	# Read for every command: a removed line counts no more.
	: >"$optout"
	shell_in "$A" hostname
	assert_output "$NAME"
	# A directory: every session's commands in it or below it.
	printf 'directory %s\n' "$REPO" >"$optout"
	shell_in "$B" hostname
	assert_output "$(hostname)"
	# Writable by others: ignored.
	chmod 620 "$optout"
	shell_in "$B" hostname
	assert_output "$NAME"
	run grep -c "forge: ignoring $optout: writable by group or others" "$SCRATCH/opencode.log"
	assert_output 1
	# A symlink to a file in the worktree, which the sandbox writes: ignored.
	printf 'session %s\n' "$A" >"$REPO/optout"
	chmod 600 "$REPO/optout"
	rm "$optout"
	ln -s "$REPO/optout" "$optout"
	shell_in "$A" hostname
	assert_output "$NAME"
	run grep -c "forge: ignoring $optout: a symlink" "$SCRATCH/opencode.log"
	assert_output 1
	# The folder a symlink into the worktree: ignored too.
	mv "$XDG_CONFIG_HOME/forge" "$REPO/forge-config"
	rm "$REPO/forge-config/opencode-host"
	cp -p "$REPO/optout" "$REPO/forge-config/opencode-host"
	ln -s "$REPO/forge-config" "$XDG_CONFIG_HOME/forge"
	shell_in "$A" hostname
	assert_output "$NAME"
	run grep -c "forge: ignoring $optout: inside the command's directory" "$SCRATCH/opencode.log"
	assert_output 1
	# A FIFO there (a read would block opencode): ignored, and nothing waits.
	rm "$REPO/forge-config/opencode-host"
	mkfifo -m 600 "$REPO/forge-config/opencode-host"
	rm "$XDG_CONFIG_HOME/forge"
	mv "$REPO/forge-config" "$XDG_CONFIG_HOME/forge"
	shell_in "$A" hostname
	assert_output "$NAME"
	run grep -c "forge: ignoring $optout: not a regular file" "$SCRATCH/opencode.log"
	assert_output 1
}
