# forge-plan.jq — the sandbox plan (SPEC 4.1-4.3, forge(7) "The sandbox
# plan"): one backend-neutral JSON value built from the merged configuration,
# and msb's rendering of it: a jq module, defs only. forge-plan.sh runs one
# stage_<STAGE> of it (forge_plan_jq):
#   entries the sandbox.network.allow entries for forge-netrule ("A<TAB>"
#           lines) and every secret host for forge-netrule --secret-hosts
#           ("H<TAB>" lines)
#   plan    the plan without its mounts, as "P<TAB>JSON", preceded by
#           "W<TAB>warning" lines and followed by the keys the mount plan
#           reads ("C<TAB>" lines), or a single "D<TAB>code<TAB>message"
#           (a configuration error) instead
#   finish  the plan (the input) with its mounts
#   msb     msb's rendering of the plan (the input): its argv, one a line
#   size    the size $v (no input: jq -n) in msb's syntax as "S<TAB>SIZE", or "D<TAB>..." 
# Values with a newline or NUL byte never reach forge-netrule (its input is
# lines): the plan warns about them and counts them as configured.

def bad: explode | any(. == 0 or . == 10);
def str: if type == "string" then . else tojson end;
def trim: sub("^[ \t\n\u000b\f\r]+"; "") | sub("[ \t\n\u000b\f\r]+$"; "");
def fail($msg): error({forge_code: 65, forge_msg: $msg});
def blank: test("^[ \t]*$");
def whole($key): if (str | bad) then fail("configuration key \($key): contains a newline or NUL byte") else . end;
def envname: test("^[A-Za-z_][A-Za-z0-9_]*$");
# forge-netrule's quoting of an entry in its messages: printable ASCII as
# is, backslash and quote escaped, every other byte as \xNN.
def quoted:
  [explode[] | if . == 92 or . == 39 then "\\" + ([.] | implode)
    elif . >= 32 and . < 127 then [.] | implode
    else [.] | implode | @uri | gsub("%(?<h>..)"; "\\x" + (.h | ascii_downcase)) end] | add // "";
def unique_by_first(f): reduce .[] as $x ([]; if any(.[]; f == ($x | f)) then . else . + [$x] end);

# --- sizes and cpus ------------------------------------------------------------

def pow($b; $e): reduce range(0; $e) as $i (1; . * $b);
def val($p): if . == 0 then 99 else [recurse(if . % $p == 0 then . / $p else empty end)] | length - 1 end;
def nozeros_lead: sub("^0+"; "");

# size_mib($key): a configured size <number>[k|m|g|t][i][b] (case-insensitive,
# powers of 1024; a bare number MiB, a bare "b" suffix bytes) as whole MiB.
def size_mib($key):
  str as $orig
  | {sz: $orig, unit: "", bytes: false}
  | if (.sz | test("^[bB]$")) then .sz = ""
    elif (.sz | test("[bB]$")) then .sz |= .[:-1] | .bytes = true else . end
  | if (.sz | test("[kKmMgGtT][iI]$")) then .sz |= .[:-1] | .bytes = false
    elif (.sz | test("[iI]$")) then .sz = "" else . end
  | if (.sz | test("[kKmMgGtT]$")) then .unit = (.sz[-1:] | ascii_downcase) | .sz |= .[:-1] | .bytes = false else . end
  | if (.sz == "" or .sz == "." or (.sz | test("[^0-9.]")) or (.sz | test("\\..*\\."))) then
      fail("configuration key \($key): invalid size '\($orig)' (expected <number>[k|m|g|t][i][b], e.g. 8g or 512m)")
    else . end
  | (.sz | split(".")) as $parts
  | ($parts[0] | nozeros_lead) as $int
  | (($parts[1] // "") | sub("0+$"; "")) as $frac
  | if ($int | length) + ($frac | length) > 12 then fail("configuration key \($key): size '\($orig)' is too large") else . end
  # MiB = mant * 2^p / 10^f, exactly: divisible when 5^f and 2^(f-p) divide mant.
  | ((($int + $frac) | nozeros_lead) as $m | if $m == "" then 0 else $m | tonumber end) as $mant
  | ($frac | length) as $f
  | ({t: 20, g: 10, k: -10, m: 0}[.unit] // (if .bytes then -20 else 0 end)) as $p
  | if $mant == 0 then 0
    elif ($mant | val(5)) >= $f and ($mant | val(2)) + $p >= $f then
      ($mant / pow(5; $f)) as $q | if $p >= $f then $q * pow(2; $p - $f) else $q / pow(2; $f - $p) end
    elif $mant * pow(2; $p + 20) < pow(10; $f) * pow(2; 20) then
      fail("configuration key \($key): size '\($orig)' is below 1 MiB")
    else fail("configuration key \($key): size '\($orig)' is not a whole number of MiB") end
  | if . < 1 then fail("configuration key \($key): size '\($orig)' is below 1 MiB")
    elif . > 1073741824 then fail("configuration key \($key): size '\($orig)' is too large")
    else . end;

# cpus($key): a configured cpu count floored, at least 1.
def cpus($key):
  str as $orig
  | ($orig | sub("^-"; "")) as $c
  | if ($c == "" or $c == "." or ($c | test("[^0-9.]")) or ($c | test("\\..*\\."))) then
      fail("configuration key \($key): invalid cpu count '\($orig)' (expected a number)")
    else . end
  | ($c | split(".")[0] | nozeros_lead) as $n
  | if ($n | length) > 6 then fail("configuration key \($key): cpu count '\($orig)' is too large") else . end
  | if ($orig | startswith("-")) or $n == "" then 1 else $n | tonumber end;

# An image reference forge passes on: a letter or digit first, then only
# [A-Za-z0-9._/:@+-] (docker's reference grammar; '+' separates digest
# algorithm components). The shell's forge_image_ref_valid is the same rule.
def image_ref: test("^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$");

# --- the plan ------------------------------------------------------------------

# A forge-netrule --json answer for the entries given ($nr), or none.
def rules($nr): ($nr // {rules: []}).rules | map(ltrimstr("allow@"));

def secrets($nr; $set):
  ($nr // {rules: [], rejected: []}) as $nr
  | reduce ((.sandbox.network.secrets // []) | to_entries[]) as $e ({warn: [], out: [], hosts: []};
      "sandbox.network.secrets[\($e.key)]" as $key
      | ($e.value.env // "" | str) as $env
      | if ($env | bad) then .warn += ["\($key): the env name contains a newline; skipped"]
        elif ($env | test("[^ \t]") | not) then .warn += ["\($key): no env name; skipped"]
        elif ($env | envname | not) then .warn += ["\($key): '\($env)' is not a valid environment variable name; skipped"]
        else
          ([($e.value.hosts // []) | to_entries[] | select(.value | str | bad)
              | "\($key).hosts[\(.key)]: contains a newline; skipped"]) as $nl
          | .warn += $nl
          | if any(.out[]; .env == $env) then .warn += ["\($key): \($env) is configured twice; skipped"]
            else
              ([($e.value.hosts // [])[] | str | select(bad | not) | trim]
                | unique_by_first(ascii_downcase)) as $hs
              | ([$hs[] | ascii_downcase | select(. as $h | $nr.rules | index(["allow@" + $h]))]) as $ok
              | .warn += [$hs[] | ascii_downcase as $l | select($nr.rules | index(["allow@" + $l]) | not)
                  | . as $h | first($nr.rejected[] | select(.entry | ascii_downcase == $l)) as $r
                  | "\($key) (\($env)): rejected '\($h | quoted)': \($r.reason)"]
              | if ($ok | length) == 0 then .warn += ["\($key): \($env) has no valid host; skipped"]
                else .out += [{env: $env, hosts: $ok}] | .hosts += $ok end
            end
        end);

def egress($nr; $secrets):
  [(.sandbox.network.allow // [])[] | str] as $entries
  | (($entries | map(select(bad | not)) | length) + ($secrets.hosts | length)) as $passed
  | ((($entries | length) + ((.sandbox.network.secrets // []) | length)) > 0) as $configured
  | {warn: ([(.sandbox.network.allow // []) | to_entries[] | select(.value | str | bad)
        | "sandbox.network.allow[\(.key)]: contains a newline; rejected"]
      + [($nr // {rejected: []}).rejected[] | "egress: rejected '\(.entry | quoted)': \(.reason)"])}
  | if $passed == 0 then
      if $configured then .warn += ["egress: every configured entry was rejected; egress is fully denied"] | .egress = {mode: "deny", hosts: []}
      else .egress = {mode: "open", hosts: []} end
    elif ($nr // {mode: "default"}).mode == "open" then .egress = {mode: "open", hosts: []}
    else (rules($nr) + $secrets.hosts | unique_by_first(.)) as $hosts
      | if ($hosts | length) == 0 then .warn += ["egress: every entry was rejected; egress is fully denied"] | .egress = {mode: "deny", hosts: []}
        else .egress = {mode: "allow", hosts: $hosts} end
    end;

def envs($set; $secrets):
  reduce ((.sandbox.network.env // []) | to_entries[]) as $e ({warn: [], out: [], seen: []};
    "sandbox.network.env[\($e.key)]" as $key
    | ($e.value | str) as $n
    | if ($n | bad) then .warn += ["\($key): contains a newline; dropped"]
      elif ($n | test("=")) then .warn += ["\($key): '\($n)' contains '='; dropped"]
      elif ($n | test("[^ \t]") | not) then .
      elif ($n | envname | not) then .warn += ["\($key): '\($n)' is not a valid environment variable name; dropped"]
      elif (.seen | index([$n])) then .
      else .seen += [$n]
        | if any($secrets.out[]; .env == $n) then .warn += ["\($key): \($n) is a secret; not passed (the sandbox sees $MSB_\($n))"]
          elif ($set | index([$n])) then .out += [$n]
          else .warn += ["\($key): \($n) is not set on the host; not passed"] end
      end);

# The keys the mount plan reads (forge_mounts_plan, forge_sandbox_cfg_value):
# one "TAG<TAB>KEY<TAB>VALUE" line each, KEY naming it for messages; a value
# with a newline or NUL byte as "X<TAB>TAG<TAB>KEY", never split.
def mount_config:
  def out($tag; $key; $v):
    ($v | str) as $s
    | if ($s | bad) then "X\t\($tag)\t\($key)" else "\($tag)\t\($key)\t\($s)" end;
  .sandbox as $s
  | out("projro"; "sandbox.mountProjectReadonly"; $s.mountProjectReadonly),
    (if $s.toolOutputDir == null then empty else out("toolout"; "sandbox.toolOutputDir"; $s.toolOutputDir) end),
    (if $s.scratchDir == null then empty else out("scratch"; "sandbox.scratchDir"; $s.scratchDir) end),
    ($s.mounts // [] | to_entries[] | .key as $i | .value
      | out(if .readonly == false then "mount_rw" else "mount_ro" end; "sandbox.mounts[\($i)]"; .host // "")),
    (.loop.allowExternalDirectories // [] | to_entries[]
      | out("ext"; "loop.allowExternalDirectories[\(.key)]"; .value));

def plan:
  ($ARGS.named.envset | split("\n") | map(select(. != ""))) as $set
  | .sandbox as $s
  | ($s.image | whole("sandbox.image") | str) as $image
  | if ($image | image_ref | not) then fail("configuration key sandbox.image: invalid image reference '\($image)'") else . end
  | ($s.resources.cpus // "4" | whole("sandbox.resources.cpus") | cpus("sandbox.resources.cpus")) as $cpus
  | ($s.resources.memory // "8g" | whole("sandbox.resources.memory") | size_mib("sandbox.resources.memory")) as $memory
  | ($s.resources.dockerDisk // "16g" | whole("sandbox.resources.dockerDisk") | size_mib("sandbox.resources.dockerDisk")) as $docker
  | ($s.resources.cacheDisk // "16g" | whole("sandbox.resources.cacheDisk") | size_mib("sandbox.resources.cacheDisk")) as $cache
  | secrets($ARGS.named.shosts; $set) as $secrets
  | egress($ARGS.named.allow; $secrets) as $egress
  | envs($set; $secrets) as $env
  | (($secrets.warn + $egress.warn + $env.warn)[] | "W\t\(.)"),
    ([$secrets.out[] | select(.env as $e | $set | index([$e]) | not) | .env] as $unset
    | "P\t" + ({name: $ARGS.named.name, backend: $ARGS.named.backend, image: $image, cpus: $cpus, memory: $memory,
        disks: {docker: $docker, cache: $cache}, mounts: [], project: null,
        env: $env.out, secrets: $secrets.out, egress: $egress.egress, unset: $unset} | tojson)),
    (mount_config | "C\t" + .);

# --- msb's rendering --------------------------------------------------------------

# A size in msb's syntax: whole GiB as "<n>g", else "<n>m".
def msb_size: if . % 1024 == 0 then "\(. / 1024)g" else "\(.)m" end;

def msb_argv:
  ["msb", "create", .image, "--name", .name, "--quiet", "-c", (.cpus | tostring), "-m", (.memory | msb_size)]
  + [.mounts[] | "-v", (if .ro then "\(.path):\(.path):ro" else "\(.path):\(.path)" end)]
  + ["--mount-named", "\(.name)-docker-data:/var/lib/docker:kind=disk,size=\(.disks.docker | msb_size)",
     "--mount-named", "\(.name)-cache-data:/opt/forge/.cache:kind=disk,size=\(.disks.cache | msb_size)"]
  + (if .egress.mode == "open" then [] else ["--net-default", "deny"] + [.egress.hosts[] | "--net-rule", "allow@\(.)"] end)
  + [.env[] | "-e", .]
  + [.secrets[] | "--secret", "\(.env)@\(.hosts | join(","))"];

# The shell's view of a plan (forge_plan_view): one "KEY<TAB>VALUE" line each.
def view:
  def size: msb_size;
  "image\t\(.image)", "cpus\t\(.cpus)", "memory\t\(.memory)",
  "resources\tcpus=\(.cpus) memory=\(.memory | size) dockerDisk=\(.disks.docker | size) cacheDisk=\(.disks.cache | size)",
  "mode\t\(.egress.mode)", "egress\t" + (if .egress.mode == "open" then "" else
    (["--net-default deny"] + [.egress.hosts[] | "--net-rule allow@\(.)"] | join(" ")) end),
  "project\t\(.project // "")",
  (.egress.hosts[] | "host\t\(.)"), (.secrets[] | "secret\t\(.env)@\(.hosts | join(","))"),
  (.env[] | "env\t\(.)"), (.unset[] | "unset\t\(.)"),
  (.mounts[] | "mount\t" + (if .ro then "ro " else "rw " end) + .path),
  (if .backend == "msb" then msb_argv[] | "argv\t" + . else empty end);

def finish:
  .mounts = ([$ARGS.named.mounts, $ARGS.named.why] | map(split("\n") | map(select(. != ""))) | transpose
    | map(select(.[0] != null) | {path: (.[0] | sub("^r[ow] "; "")), ro: (.[0] | startswith("ro ")), why: .[1]}))
  | .project = (if $ARGS.named.project == "" then null else $ARGS.named.project end);

# --- the stages forge-plan.sh runs (forge_plan_jq STAGE): one entry each, so
# that jq compiles only what the stage needs ------------------------------------

def stage_entries:
  ((.sandbox.network.allow // [])[] | str | select(bad | not) | "A\t" + .),
  ((.sandbox.network.secrets // [])[] | (.hosts // [])[] | str | select(bad | not) | "H\t" + .);
def stage_size:
  try ("S\t" + ($ARGS.named.v | size_mib($ARGS.named.key) | msb_size)) catch (if type == "object" and .forge_code then "D\t\(.forge_code)\t\(.forge_msg)" else error end);
def stage_plan:
  try plan catch (if type == "object" and .forge_code then "D\t\(.forge_code)\t\(.forge_msg)" else error end);
def stage_finish: finish | "P\t" + tojson, view;
def stage_view: view;
def stage_msb: msb_argv[];
