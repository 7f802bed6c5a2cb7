# forge-config.sh — configuration: defaults < user file < forge.json <
# $FORGE_CONFIG < --config, merged key by key with jq (SPEC section 6);
# the repository's forge.json cannot widen the sandbox.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_config_texts: sets the schema, the defaults and the verify values
# the defaults hold.
# (Assigned when called, so that sourcing forge.sh defines functions only.)
forge_config_texts() {
	local keep threshold timeout warm
	# The schema: every known key with its type. "T[]" is an array of T; object
	# members of array elements are listed under "key[].member".
	forge_config_schema='{
	  "verify": "object",
	  "verify.steps": "object[]",
	  "verify.steps[].name": "string",
	  "verify.steps[].run": "string",
	  "verify.steps[].timeout": "seconds",
	  "verify.timeout": "seconds",
	  "verify.breaker": "object",
	  "verify.breaker.threshold": "count",
	  "verify.isolated": "object",
	  "verify.isolated.warm": "boolean",
	  "verify.isolated.keep": "keeppath[]",
	  "verify.isolated.setup": "object[]",
	  "verify.isolated.setup[].name": "string",
	  "verify.isolated.setup[].run": "string",
	  "verify.isolated.setup[].timeout": "seconds",
	  "verify.isolated.setupKey": "relpath[]",
	  "verify.keepRuns": "count",
	  "verify.sandbox": "boolean",
	  "verify.buildOnly": "boolean",
	  "verify.reuse": "reuse",
	  "verify.reuse.enabled": "boolean",
	  "verify.reuse.env": "string[]",
	  "verify.reuse.trust": "string[]",
	  "sandbox": "object",
	  "sandbox.image": "string",
	  "sandbox.backend": "string",
	  "sandbox.bwrap": "object",
	  "sandbox.bwrap.rootfs": "string",
	  "sandbox.resources": "object",
	  "sandbox.resources.memory": "size",
	  "sandbox.resources.cpus": "size",
	  "sandbox.resources.dockerDisk": "size",
	  "sandbox.resources.cacheDisk": "size",
	  "sandbox.mountProjectReadonly": "boolean",
	  "sandbox.mounts": "object[]",
	  "sandbox.mounts[].host": "string",
	  "sandbox.mounts[].readonly": "boolean",
	  "sandbox.toolOutputDir": "string",
	  "sandbox.scratchDir": "string",
	  "sandbox.network": "object",
	  "sandbox.network.allow": "string[]",
	  "sandbox.network.env": "string[]",
	  "sandbox.network.secrets": "object[]",
	  "sandbox.network.secrets[].env": "string",
	  "sandbox.network.secrets[].hosts": "string[]",
	  "loop": "object",
	  "loop.allowExternalDirectories": "string[]"
	}'
	
	# The verify defaults, also used as they are when no file exists at all.
	# (The fifth, verify.sandbox, has no default in the merged configuration.)
	timeout=1800 threshold=3 warm=false keep=20
	forge_config_verify_values="$timeout $threshold $warm $keep false"
	forge_config_defaults='{
	  "verify": {"timeout": '"$timeout"', "breaker": {"threshold": '"$threshold"'}, "isolated": {"warm": '"$warm"'},
	             "keepRuns": '"$keep"'},
	  "sandbox": {
	    "image": "oc-forge-sandbox:latest",
	    "backend": "auto",
	    "bwrap": {"rootfs": "image"},
	    "resources": {"memory": "8g", "cpus": "4", "dockerDisk": "16g", "cacheDisk": "16g"},
	    "mountProjectReadonly": true,
	    "mounts": [],
	    "network": {"allow": [], "env": [], "secrets": []}
	  },
	  "loop": {"allowExternalDirectories": []}
	}'
}

# forge_config_load ROOT [FILE]: loads and merges the configuration for the
# repository at ROOT (may be empty: no forge.json) plus an explicit FILE
# (--config). Sets forge_config to the merged JSON. Exits 65 naming the file
# and key on invalid JSON or a wrong type; warns about unknown keys, and
# about the keys ROOT/forge.json may not set (every sandbox.* and loop.*
# key, verify.sandbox false, verify.reuse.trust), which it ignores.
forge_config_load() {
	local bad cli f line nl out repo root user
	root=$1
	cli=${2:-}
	set --
	# The user's file, in the XDG configuration folder (a relative
	# XDG_CONFIG_HOME is ignored: it would name a file of the current
	# directory, maybe a hostile work tree, as the user's own).
	user=/nonexistent/.config/forge/config.json
	! forge_xdg_dir config || user=$forge_xdg/forge/config.json
	[ -f "$user" ] && set -- "$@" "$user"
	# The repository's own forge.json is untrusted: repo is its
	# index among the files (-1: none). $FORGE_CONFIG and --config are the
	# user's choice, whatever file they name.
	repo=-1
	if [ -n "$root" ] && [ -f "$root/forge.json" ]; then
		repo=$#
		set -- "$@" "$root/forge.json"
	fi
	[ -n "${FORGE_CONFIG:-}" ] && set -- "$@" "$FORGE_CONFIG"
	[ -n "$cli" ] && set -- "$@" "$cli"
	# How many files were read: none means the defaults, known without jq.
	forge_config_files=$#
	for f in "$@"; do
		if [ ! -r "$f" ] || [ -d "$f" ]; then
			forge_die 65 "$f: cannot read config file"
		fi
	done
	if [ "$#" -eq 0 ]; then
		# Nothing to read: the defaults, without starting jq.
		forge_config_texts
		forge_config=$forge_config_defaults
		return 0
	fi
	# Each file is passed as a name and its text; jq parses the text itself so
	# an error can name the file.
	out=$(forge_config_run "$user" "$repo" "$@") ||
		forge_die 70 "jq failed while reading the configuration"
	forge_config=
	bad=
	nl='
'
	while [ -n "$out" ]; do
		# The merged configuration comes last, on one line: take it whole
		# rather than scanning a possibly huge string for newlines.
		case $out in
		"C	"*) forge_config=${out#??}; break ;;
		esac
		line=${out%%"$nl"*}
		case $out in
		*"$nl"*) out=${out#*"$nl"} ;;
		*) out= ;;
		esac
		case $line in
		"W	"*) forge_warn "${line#??}" ;;
		"E	"*) forge_error "${line#??}"; bad=1 ;;
		"V	"*) forge_config_verify_values=${line#??} ;;
		esac
	done
	[ -z "$bad" ] || exit 65
	[ -n "$forge_config" ] || forge_die 70 "configuration produced no result"
}

# forge_config_run USER REPO FILE...: runs the jq merge over FILE...
# (internal): USER is the user's file, REPO the index among FILE... of the
# repository's own forge.json (-1: none). Each file goes in by name and raw
# text, so jq itself parses it and an error can name the file; nothing is
# limited by the size of an argument.
forge_config_run() {
	local f n repo user
	user=$1 repo=$2
	shift 2
	forge_config_texts
	n=0
	for f in "$@"; do
		set -- "$@" --arg "n$n" "$f" --rawfile "t$n" "$f"
		shift
		n=$((n + 1))
	done
	# Reads every file, checks JSON and types against the schema, merges.
	# Emits "W<TAB>msg" warnings, "E<TAB>msg" errors, then a "V<TAB>" line with
	# the verify values and, last, one "C<TAB>json" line. Numbers are bounded
	# so that the shell and forge-timeout take them as jq prints them (plain
	# decimals, never 1e-07 or 1e+20): seconds as forge_is_seconds, counts
	# as forge_is_count.
	jq -n -r --argjson schema "$forge_config_schema" --argjson defaults "$forge_config_defaults" \
		--argjson count "$n" --argjson repo "$repo" \
		--arg user "$user" "$@" '
	def show: tostring | gsub("[\u0000-\u001f]"; "?");
	def fits($t; $v):
	  if $t == "size" then ($v | type) == "string" or ($v | type) == "number"
	  elif $t == "seconds" then ($v | type) == "number" and $v >= 0.001 and $v < 1000000000
	  elif $t == "reuse" then ($v | type) == "boolean" or ($v | type) == "object"
	  elif $t == "count" then ($v | type) == "number" and $v >= 1 and $v <= 999999999 and ($v | floor) == $v
	  elif $t == "relpath" or $t == "keeppath" then ($v | type) == "string"
	    and ($v | test("^/|[\u0000-\u001f]") | not)
	    and ($v | split("/") | all(. != "" and . != "." and . != "..") and .[0] != ".git")
	    and ($t == "relpath" or ($v | test("^[A-Za-z0-9._@+/-]+$")))
	  else ($v | type) == $t end;
	def expected($t):
	  {size: "a string or number", seconds: "a number of seconds from 0.001 to 999999999",
	   count: "a whole number from 1 to 999999999", reuse: "true, false or an object",
	   relpath: "a relative path inside the repository",
	   keeppath: "a relative path inside the repository of [A-Za-z0-9._@+/-]"}[$t] // $t;
	def join($p; $k): if $p == "" then $k else "\($p).\($k)" end;
	# $prefix is the schema path ("a.b[].c"), $shown the path with indices.
	def check($file; $prefix; $shown; $v):
	  $v | to_entries[] | .key as $k | .value as $x
	  | join($prefix; $k) as $path | join($shown; $k) as $where
	  | ($schema[$path]) as $t
	  | if $t == null then "W\t\($file | show): unknown key \($where | show)"
	    elif ($t | endswith("[]")) then
	      if ($x | type) != "array" then "E\t\($file | show): key \($where): expected an array, got \($x | type)"
	      elif $path == "verify.steps" and ($x | length) == 0 then
	        "E\t\($file | show): key \($where): an empty list would run nothing; remove the key to detect the steps"
	      else ($t | rtrimstr("[]")) as $et
	        | $x | to_entries[] | .key as $i | .value as $e
	        | if fits($et; $e) | not then "E\t\($file | show): key \($where)[\($i)]: expected \(expected($et)), got \($e | tojson | .[:40] | show)"
	          elif $et == "object" then
	            (if $path == "verify.steps" and (($e | has("run") | not) or $e.run == "")
	             then "E\t\($file | show): key \($where)[\($i)].run: a non-empty shell command is required" else empty end),
	            check($file; "\($path)[]"; "\($where)[\($i)]"; $e)
	          else empty end
	      end
	    elif fits($t; $x) | not then
	      "E\t\($file | show): key \($where): expected \(expected($t)), got \($x | tojson | .[:40] | show)"
	    elif $t == "object" or ($t == "reuse" and ($x | type) == "object") then check($file; $path; $where; $x)
	    else empty end;
	# The keys with which a repository could widen its own sandbox or make it
	# cost more (SPEC 6): a repository is untrusted (SPEC section 2), so its
	# forge.json may not set them. That is every sandbox.* and loop.* key:
	# the image and the backend too (which files of the local image store
	# the sandbox sees, and how strong its wall is), and the whole network
	# object (env and secrets pass host values in; an allow-list is not
	# intersected, since matching patterns against patterns is a second
	# matcher whose every bug would widen egress). verify.reuse.trust would
	# let fetched notes stand for a run, verify.reuse.env would take
	# variables out of the key (an empty list: a changed PATH reuses the
	# verdict). t/config.bats holds this list to the schema.
	def widening: ["sandbox", "image"], ["sandbox", "backend"], ["sandbox", "bwrap", "rootfs"],
	  ["sandbox", "resources"], ["sandbox", "mountProjectReadonly"], ["sandbox", "mounts"],
	  ["sandbox", "toolOutputDir"], ["sandbox", "scratchDir"], ["sandbox", "network"],
	  ["loop", "allowExternalDirectories"], ["verify", "reuse", "trust"], ["verify", "reuse", "env"];
	def present($v; $p): ($v | (try getpath($p[:-1]) catch null) | type == "object" and has($p[-1]));
	# Of the repository file $v: the paths it may not set. verify.sandbox may
	# turn the sandbox on (true), never off.
	def refused($v): [widening | select(present($v; .))]
	  + (if present($v; ["verify", "sandbox"]) and $v.verify.sandbox != true then [["verify", "sandbox"]] else [] end);
	# verify.reuse: true is {"enabled": true}, so that files merge key by key.
	def reuse_object: if (.verify | type) == "object" and (.verify.reuse | type) == "boolean"
	  then .verify.reuse = {enabled: .verify.reuse} else . end;
	def refusal($f; $p):
	  "W\t\($f | show): key \($p | join(".")) is ignored in a repository'"'"'s forge.json"
	  + (if $p == ["verify", "sandbox"] then " (a repository cannot turn its sandbox off)"
	     elif $p == ["verify", "reuse", "trust"] then " (a repository cannot choose whose verdicts count)"
	     elif $p == ["verify", "reuse", "env"] then " (a repository cannot take variables out of what its verdicts are keyed on)"
	     else " (a repository cannot widen its own sandbox or make it cost more)" end)
	  + "; set it in \($user | show), $FORGE_CONFIG or --config";
	$ARGS.named as $a
	| [range(0; $count) | {file: $a["n\(.)"], text: $a["t\(.)"], repo: (. == $repo)}] as $files
	| [ $files[] | .file as $f | .repo as $untrusted
	    | (try {ok: (.text | fromjson)}
	       catch {err: "E\t\($f | show): invalid JSON: \(tostring | split(" (while parsing")[0] | .[:200] | show)"}) as $r
	    | if $r.err then {msgs: [$r.err]}
	      elif ($r.ok | type) != "object" then {msgs: ["E\t\($f | show): expected a JSON object at the top level, got \($r.ok | type)"]}
	      elif $untrusted then refused($r.ok) as $no
	        | {msgs: [check($f; ""; ""; $r.ok), ($no[] | refusal($f; .))],
	           value: ($r.ok | delpaths($no) | del(.sandbox, .loop) | reuse_object)}
	      else {msgs: [check($f; ""; ""; $r.ok)], value: ($r.ok | reuse_object)} end ] as $parsed
	| ($parsed | map(.msgs[])) as $msgs
	| $msgs[],
	  (if any($msgs[]; startswith("E\t")) then empty
	   else reduce ($parsed[] | .value // {}) as $v ($defaults; . * $v)
	     | "V\t\(.verify | "\(.timeout) \(.breaker.threshold) \(.isolated.warm) \(.keepRuns) \(.sandbox == true) \(.reuse.enabled == true)")", "C\t\(tojson)" end)
	'
}

# forge_config_get KEY: prints the merged value of a dotted KEY (strings raw,
# other values as JSON; nothing for null). Needs forge_config_load first.
forge_config_get() {
	printf '%s' "$forge_config" | jq -r --arg k "$1" \
		'getpath($k | split(".")) | if . == null then empty elif type == "string" then . else tojson end'
}

# forge_config_verify: sets forge_default_timeout, forge_threshold,
# forge_warm, forge_keep_runs and forge_config_sandbox (verify.sandbox: true
# or false) from the merged configuration (types and
# ranges were checked per file by forge_config_load, which also extracted
# them; checked here again in the form the shell will use them).
forge_config_verify() {
	local keep rest threshold timeout warm
	# The words of forge_config_verify_values, in their order.
	rest=$forge_config_verify_values
	timeout=${rest%% *} rest=${rest#* }
	threshold=${rest%% *} rest=${rest#* }
	warm=${rest%% *} rest=${rest#* }
	keep=${rest%% *} rest=${rest#* }
	forge_is_seconds "$timeout" || forge_die 65 "configuration: key verify.timeout: not a usable number of seconds: $timeout"
	forge_is_count "$threshold" || forge_die 65 "configuration: key verify.breaker.threshold: not a usable count: $threshold"
	forge_is_count "$keep" || forge_die 65 "configuration: key verify.keepRuns: not a usable count: $keep"
	forge_default_timeout=$timeout forge_threshold=$threshold forge_warm=$warm forge_keep_runs=$keep
	forge_config_sandbox=${rest%% *}
}
