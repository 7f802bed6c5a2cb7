# forge-vars.sh — every global of the library: the settings a program gives
# it and the results its functions leave for their callers, each under the
# part that sets it and with what it holds. Everything else a function uses
# is local. Loading forge.sh empties every result, whatever the caller's
# environment holds; t/lint.bats keeps this list and the code in step.
# Each part names this file for shellcheck (shellcheck -x then knows these
# names when it checks the part on its own).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)

: "${forge_vars_loaded:=1}" # forge.sh has loaded this list

# Settings a program sets (forge_prog before sourcing forge.sh).
: "${forge_prog=forge}" # the program's name in messages
: "${forge_quiet=0}" # 1: no warnings, no progress
: "${forge_verbose=0}" # 1: steps' output on the terminal as they run
: "${forge_parts=all}" # "verify": forge.sh leaves the sandbox's parts for forge_sandbox_parts_load

# Results: each part's start empty (unset: not from the environment).

# forge.sh.in
unset forge_helper forge_libexec forge_release
: "${forge_helper=}" # set by forge_helper_path: the path of the C helper it was given (in bindir, or FORGE_HELPERDIR)
: "${forge_libexec=}" # set by forge_libexec_path: the path of the internal helper it was given (in pkglibexecdir, or FORGE_HELPERDIR)
: "${forge_release=}" # set by forge_version: forge's version

# forge-core.sh
unset forge_mono_ms forge_ms forge_plain_chars forge_printable_jq \
	forge_program forge_stamp forge_ts forge_xdg
: "${forge_mono_ms=}" # set by forge_clock, forge_ms_now: milliseconds of a clock that never goes back (for durations), at the last reading
: "${forge_ms=}" # set by forge_clock: wall-clock milliseconds since the epoch, at the last reading
: "${forge_plain_chars=}" # set by forge_printable_def: the characters a message may hold and be printed as it is (printable ASCII and tab)
: "${forge_printable_jq=}" # set by forge_printable_def: the jq definition of printable (a string to a string shown, not obeyed)
: "${forge_program=}" # set by forge_find_program: the path of the program found in an absolute PATH element; empty: none
: "${forge_stamp=}" # set by forge_clock: the last reading as a compact, sortable UTC time (YYYYmmddTHHMMSSZ)
: "${forge_ts=}" # set by forge_clock: the last reading as an RFC 3339 UTC time
: "${forge_xdg=}" # set by forge_bwrap_state, forge_check_place, forge_xdg_dir, forge_bwrap_image_rootfs, forge_mounts_state_check, forge_mounts_plan, forge_sandbox_registry: the absolute base folder of the XDG kind asked for (state, cache, config, data); empty: no absolute home

# forge-config.sh
unset forge_config forge_config_defaults forge_config_files \
	forge_config_sandbox forge_config_schema forge_config_verify_values \
	forge_default_timeout forge_keep_runs forge_threshold forge_warm
: "${forge_config=}" # set by forge_config_load: the merged configuration (JSON)
: "${forge_config_defaults=}" # set by forge_config_texts: the default configuration (JSON), what every file is merged onto
: "${forge_config_files=}" # set by forge_config_load: how many configuration files were read (0: the defaults alone)
: "${forge_config_sandbox=}" # set by forge_config_verify: verify.sandbox, true or false
: "${forge_config_schema=}" # set by forge_config_texts: every known key with its type (a JSON object)
: "${forge_config_verify_values=}" # set by forge_config_load, forge_config_texts: the verify values as words: timeout, threshold, warm, keepRuns, sandbox (and reuse.enabled, once files were read)
: "${forge_default_timeout=}" # set by forge_config_verify: verify.timeout, the seconds a step may run unless it says otherwise
: "${forge_keep_runs=}" # set by forge_config_verify: verify.keepRuns, how many finished runs retention keeps
: "${forge_threshold=}" # set by forge_config_verify: verify.breaker.threshold, the streak of failures that opens the breaker
: "${forge_warm=}" # set by forge_config_verify: verify.isolated.warm, true or false

# forge-fs.sh
unset forge_file forge_item forge_list forge_real
: "${forge_file=}" # set by forge_read_file, forge_pool_repo: the whole content of the file read, less its final newline
: "${forge_item=}" # set by forge_list_next: the entry it took off forge_list
: "${forge_list=}" # set by forge_evidence_keep, forge_list_next, forge_pool_dir_modes, forge_pool_keep_check, forge_pool_reset, forge_reuse_find, forge_reuse_key, forge_reuse_key_config, forge_isolated_setup_run, forge_isolated_stamp: the newline-separated entries forge_list_next has yet to hand out
: "${forge_real=}" # set by forge_real_dir: the physical path of the folder

# forge-proc.sh
unset forge_proc_start
: "${forge_proc_start=}" # set by forge_proc_start: the start time of the process (from /proc); empty: no such process

# forge-git.sh
unset forge_common_dir forge_common_of forge_git_dir forge_head \
	forge_head_of forge_root
: "${forge_common_dir=}" # set by forge_git_common_dir, forge_git_dirs_physical, forge_repo_root: the physical git common dir of the worktree (shared by its linked worktrees)
: "${forge_common_of=}" # set by forge_git_common_dir, forge_repo_root: the worktree forge_git_dir and forge_common_dir are of (forge_git_common_dir asks git again for any other)
: "${forge_git_dir=}" # set by forge_git_common_dir, forge_git_dirs_physical, forge_repo_root: the physical git dir of the worktree
: "${forge_head=}" # set by forge_head, forge_repo_root: the commit at HEAD; empty: no commit yet
: "${forge_head_of=}" # set by forge_head, forge_repo_root: the worktree forge_head was read from
: "${forge_root=}" # set by forge_repo_root, forge_image_build: the top of the worktree

# forge-state.sh
unset forge_breaker forge_run_dir forge_run_id forge_run_log \
	forge_runs_finished forge_runs_kept forge_state_dir forge_state_refusal \
	forge_streak
: "${forge_breaker=}" # set by forge_breaker_state: the breaker, open or closed
: "${forge_run_dir=}" # set by forge_run_begin: this run's log folder, .forge/runs/<run ID>
: "${forge_run_id=}" # set by forge_run_begin: this run's ID, <forge_stamp>-<PID>
: "${forge_run_log=}" # set by forge_run_log: the log file of the step about to run, in the run's folder
: "${forge_runs_finished=}" # set by forge_runs_finished: the IDs of the finished runs, each after a space
: "${forge_runs_kept=}" # set by forge_record, forge_record_kept, forge_record_sh, forge_record_split, forge_runs_kept_ids, forge_runs_prune: the run IDs retention keeps, one per line between newlines (a line ?unknown: not known, prune nothing); empty: not read yet
: "${forge_state_dir=}" # set by forge_sandbox_record_safe, forge_state_init: the repository's .forge folder (absolute)
: "${forge_state_refusal=}" # set by forge_state_path: why it refused the path (the message of the exit 73)
: "${forge_streak=}" # set by forge_breaker_read, forge_breaker_update: the breaker's streak of consecutive failures

# forge-record.sh
unset forge_record_json forge_record_log_name
: "${forge_record_json=}" # set by forge_record_sh, forge_record_split, forge_reuse_replay: the run's timeline event (one line of JSON), also its change report
: "${forge_record_log_name=}" # set by forge_record_log_name: a step's name as its log file's name holds it ([^A-Za-z0-9._-] made _)

# forge-copy.sh
unset forge_common_real forge_copy_dir forge_copy_stores forge_copy_tmp \
	forge_root_real
: "${forge_common_real=}" # set by forge_copy_require_head, forge_prune: the physical path of the source's git common dir
: "${forge_copy_dir=}" # set by forge_copy_create, forge_pool_acquire: the copy's root folder (a cold copy's or a warm slot's), where the steps run
: "${forge_copy_stores=}" # set by forge_copy_repo, forge_copy_store: the object stores the copy borrows (its alternates), physical paths one a line, for the copy's sandbox to mount
: "${forge_copy_tmp=}" # set by forge_copy_create, forge_copy_destroy: the cold copy's temporary folder, empty when there is none; clean-up state, removed by forge_copy_destroy from the EXIT trap
: "${forge_root_real=}" # set by forge_copy_require_head, forge_prune: the physical path of the source's work tree

# forge-copy-fill.sh
unset forge_copy_scan_pid forge_copy_tree
: "${forge_copy_scan_pid=}" # set by forge_copy_scan, forge_copy_scan_reap, forge_copy_scan_wait: the PID of the background scan of the source, empty once waited for; clean-up state, reaped from the EXIT trap (forge_copy_destroy, forge_pool_release)
: "${forge_copy_tree=}" # set by forge_copy_snapshot_tree: the tree object of the verified snapshot (HEAD, the uncommitted changes and the untracked files)

# forge-pool.sh
unset forge_pool_base forge_pool_held forge_pool_index_ready forge_pool_state \
	forge_repo_id
: "${forge_pool_base=}" # set by forge_pool_base: the folder of every repository's warm pool, forge/pool in the XDG cache folder
: "${forge_pool_held=}" # set by forge_pool_acquire, forge_pool_release: 1 while this run holds a warm slot's lock (fd 9); clean-up state, released by forge_pool_release from the EXIT trap
: "${forge_pool_index_ready=}" # set by forge_pool_reset: 1 when the reset left in the scratch folder the slot's index of HEAD to build the snapshot's tree in, else empty
: "${forge_pool_state=}" # set by forge_pool_acquire: the warm slot's folder of forge's own files (clean index, setup stamp, objects, scratch), outside the copy
: "${forge_repo_id=}" # set by forge_repo_id: the name of this repository's pool, 16 hex digits of the SHA-256 of its git common dir

# forge-prune.sh
unset forge_prune_kib
: "${forge_prune_kib=}" # set by forge_prune, forge_prune_note: the KiB forge_prune has freed so far (with --dry-run, would free)

# forge-setup.sh
unset forge_exec_dir forge_isolated_keep forge_isolated_key \
	forge_isolated_setup
: "${forge_exec_dir=}" # set by forge_isolated_setup_run, forge_verify_execute: the folder the steps (forge_step) run in
: "${forge_isolated_keep=}" # set by forge_isolated_settings: the keep paths, one a line, that a warm slot's reset leaves in place (verify.isolated.keep, else detected)
: "${forge_isolated_key=}" # set by forge_isolated_settings: the setup's key files, one a line, whose content decides whether a warm slot sets up again (verify.isolated.setupKey, else detected)
: "${forge_isolated_setup=}" # set by forge_isolated_settings: the setup steps, a JSON array (verify.isolated.setup, else detected)

# forge-detect.sh
unset forge_detect_files forge_detect_keep forge_detect_keep_list \
	forge_detect_key forge_detect_key_list forge_detect_looked \
	forge_detect_setup forge_make_target forge_step_run forge_steps \
	forge_steps_pick forge_steps_tested
: "${forge_detect_files=}" # set by forge_detect_list, forge_isolated_detect: the paths detection looks among (files a copy would contain), one a line
: "${forge_detect_keep=}" # set by forge_isolated_detect: the detected keep paths, a JSON array
: "${forge_detect_keep_list=}" # set by forge_isolated_detect: the detected keep paths, one a line
: "${forge_detect_key=}" # set by forge_isolated_detect: the detected setup key files, a JSON array
: "${forge_detect_key_list=}" # set by forge_isolated_detect: the detected setup key files, one a line
: "${forge_detect_looked=}" # set by forge_steps_detect: what detection looked at, for the message when no tests are found
: "${forge_detect_setup=}" # set by forge_isolated_detect: the detected setup steps, a JSON array
: "${forge_make_target=}" # set by forge_makefile_test_target, forge_step_pick, forge_steps_detect: the makefile's test target, test or check, or empty
: "${forge_step_run=}" # set by forge_step_pick, forge_step_next: the shell command of the step about to run
: "${forge_steps=}" # set by forge_steps_detect, forge_steps_select: the verify steps, a JSON array of {name, run}, or empty when none was found
: "${forge_steps_pick=}" # set by forge_steps_detect, forge_steps_select: the 0-based index of the detected step whose make target forge_step_pick chooses once the Makefile exists, or empty
: "${forge_steps_tested=}" # set by forge_step_pick, forge_steps_detect, forge_steps_select: true when the steps run tests, false for a build alone, null for configured steps

# forge-steps.sh
unset forge_evidence_shown forge_limit_ms forge_quoted forge_signal \
	forge_status_pid forge_step_exit forge_step_file forge_step_hint \
	forge_step_log forge_step_ms forge_step_name forge_step_pid \
	forge_step_queue forge_step_reason forge_step_result forge_step_timeout
: "${forge_evidence_shown=}" # set by forge_evidence_keep, forge_step_report: the lines that say which files the step's output named were kept as evidence; empty: none, or -q
: "${forge_limit_ms=}" # set by forge_secs_to_ms: the seconds given, in whole milliseconds; empty: not a plain number
: "${forge_quoted=}" # set by forge_shell_quote: the arguments as one line of shell that gives them back when pasted
: "${forge_signal=}" # set by forge_interrupt, forge_signal_untrapped: the signal that interrupted the run (HUP, INT, TERM); empty: none
: "${forge_status_pid=}" # set by forge_status_start, forge_status_stop: the PID of the subshell drawing the status line; empty: none
: "${forge_step_exit=}" # set by forge_step_exec: the exit status of the step that just ran
: "${forge_step_file=}" # set by forge_step_next: the next step's name reduced to [A-Za-z0-9._-], for its log file
: "${forge_step_hint=}" # set by forge_step, forge_step_classify, forge_step_npm_missing: the one-line hint for a step's broken environment; empty: none
: "${forge_step_log=}" # set by forge_step_exec: the log file of the step that just ran
: "${forge_step_ms=}" # set by forge_step_exec: how long the step that just ran took, in milliseconds
: "${forge_step_name=}" # set by forge_step_next: the next step's name (control characters made spaces)
: "${forge_step_pid=}" # set by forge_step_exec: the PID of the step running in the background; empty: none
: "${forge_step_queue=}" # set by forge_step_next, forge_steps_queue: the steps forge_step_next has yet to hand out, each as a TIMEOUT, FILE, LINES, NAME line and its run text
: "${forge_step_reason=}" # set by forge_step_exec, forge_step_classify, forge_step_npm_missing: why the step that just ran failed (exit, timeout, not found, not executable, interrupted, ...); empty: it succeeded
: "${forge_step_result=}" # set by forge_step_result: how the step ended as its report says it: ok, FAIL exit N, ERROR REASON, ...
: "${forge_step_timeout=}" # set by forge_step_next: the next step's time limit, in seconds

# forge-evidence.sh
unset forge_evidence_size
: "${forge_evidence_size=}" # set by forge_evidence_file: the size in bytes of the file it kept

# forge-verify.sh
unset forge_exec_isolated forge_record_tested forge_recorded \
	forge_step_missing forge_step_module forge_step_module_dir forge_verdict
: "${forge_exec_isolated=}" # set by forge_verify_execute: the run's "isolated" (false, "cold" or "warm", as JSON), for forge_step to classify failures by
: "${forge_record_tested=}" # set by forge_verify_execute: the record's "tested" (true, false or null), also for the ERROR record of a run stopped before its verdict was recorded
: "${forge_recorded=}" # set by forge_reuse_replay, forge_verify_execute: 1 once the run's verdict is on the record
: "${forge_step_missing=}" # set by forge_step_missing: the command the step's log says was not found; empty: none named
: "${forge_step_module=}" # set by forge_step_own_module: the project's own Python package the step's log says cannot be imported; empty: none
: "${forge_step_module_dir=}" # set by forge_step_own_module: where that package is, relative to the folder: "" (its root) or /src
: "${forge_verdict=}" # set by forge_reuse_replay, forge_verify_execute, forge_verify_judge: the run's verdict, PASS, FAIL or ERROR

# forge-reuse.sh
unset forge_record_key forge_reuse_age forge_reuse_key forge_reuse_on \
	forge_reuse_path forge_reuse_prog forge_reuse_text forge_reuse_trust
: "${forge_record_key=}" # set by forge_reuse_config: emptied; forge-verify puts the key there for the record
: "${forge_reuse_age=}" # set by forge_reuse_age: the age of a reused verdict (42s, 5m, 3h, 2d)
: "${forge_reuse_key=}" # set by forge_reuse_key: the reuse key, 64 hex digits
: "${forge_reuse_on=}" # set by forge_reuse_config: 1 when verdicts are reused, else 0
: "${forge_reuse_path=}" # set by forge_reuse_path: PATH as the key holds it (git's exec-path left out)
: "${forge_reuse_prog=}" # set by forge_reuse_program: the file a step's first word runs, or empty
: "${forge_reuse_text=}" # set by forge_reuse_key: the text the key is the SHA-256 of
: "${forge_reuse_trust=}" # set by forge_reuse_key, forge_reuse_key_config: the trusted notes refs, one a line

# forge-reuse-tree.sh
unset forge_reuse_fp forge_reuse_programs forge_reuse_tree
: "${forge_reuse_fp=}" # set by forge_reuse_fingerprint: 32 hex digits naming the kept index (.forge/reuse/index-FP)
: "${forge_reuse_programs=}" # set by forge_reuse_fingerprint: "program PATH SIZE MTIME INODE" lines of the programs it was given
: "${forge_reuse_tree=}" # set by forge_reuse_tree, forge_reuse_clean, forge_reuse_rebuild: the snapshot's tree

# forge-reuse-notes.sh
unset forge_reuse_epoch forge_reuse_fan2 forge_reuse_fan4 forge_reuse_from \
	forge_reuse_host forge_reuse_run forge_reuse_verdict
: "${forge_reuse_epoch=}" # set by forge_reuse_find: when the reused verdict was recorded (seconds)
: "${forge_reuse_fan2=}" # set by forge_reuse_fanout: the tree's note path fanned out once (ab/cd...)
: "${forge_reuse_fan4=}" # set by forge_reuse_fanout: the tree's note path fanned out twice (ab/cd/ef...)
: "${forge_reuse_from=}" # set by forge_reuse_find: the notes ref the reused verdict came from
: "${forge_reuse_host=}" # set by forge_reuse_find, forge_reuse_host: the host of the reused verdict, or this host
: "${forge_reuse_run=}" # set by forge_reuse_find: the run ID of the reused verdict
: "${forge_reuse_verdict=}" # set by forge_reuse_find: the reused verdict, PASS or FAIL

# forge-mounts.sh
unset forge_canon forge_mounts forge_mounts_backend forge_mounts_project_held \
	forge_mounts_project_holds forge_mounts_reserved forge_mounts_why \
	forge_path_why
: "${forge_canon=}" # set by forge_canon_dir, forge_canon_future, forge_mounts_scratch_allowed: the physical absolute path of the directory last resolved (for forge_canon_future, of one that may not exist yet)
: "${forge_mounts=}" # set by forge_mounts_candidate, forge_mounts_custom, forge_mounts_git_folder, forge_mounts_plan: the mount plan: one "rw PATH" or "ro PATH" line each (canonical), in the order the mounts are given
: "${forge_mounts_backend=}" # set by forge_mounts_plan: the backend the plan is made for, msb or bwrap (forge_path_unsafe, forge_mounts_git and forge_mounts_state_check follow it)
: "${forge_mounts_project_held=}" # set by forge_mounts_plan: the read-only project when it holds a read-write mount: left out of forge_mounts (msb cannot mount it around one), the plan's project instead; else empty
: "${forge_mounts_project_holds=}" # set by forge_mounts_holds_rw, forge_mounts_plan: the first read-write mount inside that held project (for up's note); else empty
: "${forge_mounts_reserved=}" # set by forge_mounts_candidate, forge_mounts_git_folder, forge_mounts_plan: the paths offered as forge's own mounts (kept or dropped) and the held project, one a line: no custom mount may overlap one, no scratch dir hold one
: "${forge_mounts_why=}" # set by forge_mounts_candidate, forge_mounts_custom, forge_mounts_git_folder, forge_mounts_plan: what each mount of forge_mounts is ("worktree", "git dir", a configuration key, ...), one a line in the same order
: "${forge_path_why=}" # set by forge_path_unsafe: why the backend cannot mount the path it refused, for a message

# forge-mounts-trust.sh
unset forge_mounts_hidden forge_overlap forge_walk_dir forge_walk_links \
	forge_walk_rest
: "${forge_mounts_hidden=}" # set by forge_mounts_hidden_set: what an isolated copy's sandbox must not see (the source worktree, its git dir and common dir), one path a line; empty for a worktree's own plan
: "${forge_overlap=}" # set by forge_path_overlaps: the first path of the list that the path is, holds or lies in
: "${forge_walk_dir=}" # set by forge_path_walk: the deepest existing folder the walk reached (physical)
: "${forge_walk_links=}" # set by forge_path_walk: every symbolic link on the way, one physical path a line
: "${forge_walk_rest=}" # set by forge_path_walk: what of the path is left below forge_walk_dir (empty when the path exists)

# forge-plan.sh
unset forge_plan forge_plan_mounts forge_plan_msb_argv forge_plan_project \
	forge_plan_viewed forge_sandbox_cfg forge_sandbox_cpus forge_sandbox_egress \
	forge_sandbox_egress_hosts forge_sandbox_egress_mode forge_sandbox_env \
	forge_sandbox_image forge_sandbox_memory_mib forge_sandbox_resources \
	forge_sandbox_secrets forge_size
: "${forge_plan=}" # set by forge_plan: the sandbox plan, one line of JSON (forge(7))
: "${forge_plan_mounts=}" # set by forge_plan_view: the plan's mounts, "rw PATH" or "ro PATH" lines in order
: "${forge_plan_msb_argv=}" # set by forge_plan_view: for an msb plan, msb create's argv, one argument a line (forge_msb_render takes it); else empty
: "${forge_plan_project=}" # set by forge_plan_view: the project the plan holds read-only around its mounts, or empty
: "${forge_plan_viewed=}" # set by forge_plan_view: the plan its view was last made from (a plan is viewed once)
: "${forge_sandbox_cfg=}" # set by forge_plan: the configuration keys the mount plan reads, one "TAG<tab>KEY<tab>VALUE" line each (forge-plan.jq's mount_config; forge_sandbox_cfg_split)
: "${forge_sandbox_cpus=}" # set by forge_plan_view: the plan's cpu count
: "${forge_sandbox_egress=}" # set by forge_plan_view: the egress as the record keeps it: empty when open, else "--net-default deny[ --net-rule allow@HOST...]"
: "${forge_sandbox_egress_hosts=}" # set by forge_plan_view: the hosts egress allows, one a line
: "${forge_sandbox_egress_mode=}" # set by forge_plan_view: the egress mode: open, allow or deny
: "${forge_sandbox_env=}" # set by forge_plan_view: the names of the host variables passed in, one a line
: "${forge_sandbox_image=}" # set by forge_plan_view: the image reference
: "${forge_sandbox_memory_mib=}" # set by forge_plan_view: the memory limit in MiB
: "${forge_sandbox_resources=}" # set by forge_plan_view: "cpus=N memory=S dockerDisk=S cacheDisk=S", sizes in msb's syntax, as the record keeps it
: "${forge_sandbox_secrets=}" # set by forge_plan_view: the secrets, one "ENV@HOST,..." a line
: "${forge_size=}" # set by forge_size_mib: the size in msb's syntax, "<n>g" or "<n>m"

# forge-msb.sh
unset forge_msb forge_msb_absent forge_msb_bound forge_msb_doctor \
	forge_msb_doctor_rc forge_msb_doctor_said forge_msb_doctor_secs \
	forge_msb_ls_json forge_msb_names forge_msb_status forge_sandbox_plan
: "${forge_msb=}" # set by forge_msb_find: the msb program to run
: "${forge_msb_absent=}" # set by forge_msb_rm, forge_msb_volume_rm: 1 when there was nothing to remove, else empty
: "${forge_msb_bound=}" # set by forge_msb_bound_secrets: the env names of a sandbox's bound secrets, a newline before and after each (empty: none)
: "${forge_msb_doctor=}" # set by forge_msb_doctor: available, missing, indeterminate or unsupported
: "${forge_msb_doctor_rc=}" # set by forge_msb_doctor: msb doctor's exit status
: "${forge_msb_doctor_said=}" # set by forge_msb_doctor: msb's explanation of unsupported (its error lines and failed checks)
: "${forge_msb_doctor_secs=}" # set by forge_msb_doctor: the seconds msb doctor is given (FORGE_SANDBOX_DOCTOR_TIMEOUT)
: "${forge_msb_ls_json=}" # set by forge_msb_ls: msb ls --format json, checked to be an array of {name, status}
: "${forge_msb_names=}" # set by forge_msb_forge_names: the forge-* sandboxes msb knows, one a line
: "${forge_msb_status=}" # set by forge_sandbox_up, forge_msb_status: a sandbox's status in msb ls (empty: no such sandbox)
: "${forge_sandbox_plan=}" # set by forge_msb_render: the msb create argv, one argument a line, "msb" first (forge_msb_argv_print)

# forge-msb-lifecycle.sh
unset forge_sandbox_removed forge_sandbox_secrets_pending
: "${forge_sandbox_removed=}" # set by forge_sandbox_remove: what there was to remove: sandbox, volumes or empty (nothing)
: "${forge_sandbox_secrets_pending=}" # set by forge_sandbox_secrets_converge: the secrets' env names bound from the next start, space-separated

# forge-cgroup.sh
unset forge_bwrap_cgroup_dirs forge_bwrap_cgroup_kind forge_bwrap_join
: "${forge_bwrap_cgroup_dirs=}" # set by forge_bwrap_cgroups: the sandbox's cgroup folders, one a line (v2: one; v1: one for each of memory, pids and cpu the host has), which may not exist yet
: "${forge_bwrap_cgroup_kind=}" # set by forge_bwrap_cgroups: the host's cgroups: v2, v1, or empty when it has none
: "${forge_bwrap_join=}" # set by forge_bwrap_limits_set: the cgroup.procs files of the cgroups whose limits were set, one a line, which the sandbox's init joins

# forge-bwrap-render.sh
unset forge_bwrap_env_names forge_bwrap_init forge_bwrap_netmode \
	forge_bwrap_plan forge_bwrap_rootfs forge_bwrap_rootfs_kind
: "${forge_bwrap_env_names=}" # set by forge_bwrap_render: the sandbox.network.env names whose values travel with each exec, one a line
: "${forge_bwrap_init=}" # set by forge_bwrap_render: forge-sandbox-init's host path (bound in, and run by forge_bwrap_start)
: "${forge_bwrap_netmode=}" # set by forge_bwrap_render: restricted or open (forge_net_mode)
: "${forge_bwrap_plan=}" # set by forge_bwrap_add, forge_bwrap_render: bwrap's options, one a line as printf's %b reads it (forge_bwrap_argv_print writes the argv NUL-separated)
: "${forge_bwrap_rootfs=}" # set by forge_bwrap_render, forge_bwrap_image_rootfs: the image's exported root filesystem (empty: none, or rootfs host)
: "${forge_bwrap_rootfs_kind=}" # set by forge_bwrap_rootfs_config: image or host (sandbox.bwrap.rootfs)

# forge-bwrap.sh
unset forge_bwrap_data forge_bwrap_dir forge_bwrap_home \
	forge_bwrap_init_path forge_bwrap_ls_json forge_bwrap_names \
	forge_bwrap_owner forge_bwrap_pid forge_bwrap_root forge_bwrap_seccomp_fd \
	forge_bwrap_sock_fd forge_bwrap_status_fd
: "${forge_bwrap_data=}" # set by forge_bwrap_owner, forge_bwrap_remove: the folder of the sandbox's private folders (its state folder, or its owner's)
: "${forge_bwrap_dir=}" # set by forge_bwrap_state: the sandbox's state folder
: "${forge_bwrap_home=}" # set by forge_bwrap_state: HOME inside every namespace sandbox
: "${forge_bwrap_init_path=}" # set by forge_bwrap_state: forge-sandbox-init's path inside
: "${forge_bwrap_ls_json=}" # set by forge_bwrap_list, forge_live_ls_json: the namespace sandboxes, a JSON array of {name, backend, status, image, created_at}
: "${forge_bwrap_names=}" # set by forge_bwrap_names: the namespace sandboxes, one a line
: "${forge_bwrap_owner=}" # set by forge_bwrap_owner, forge_bwrap_remove: UID:GID the sandbox runs as when root starts another user's, else empty
: "${forge_bwrap_pid=}" # set by forge_bwrap_running, forge_bwrap_start: the host pid of the sandbox's init (empty: not running)
: "${forge_bwrap_root=}" # set by forge_bwrap_state: the folder of the namespace sandboxes' state folders
: "${forge_bwrap_seccomp_fd=}" # set by forge_bwrap_state: the fd bwrap reads the seccomp filter from
: "${forge_bwrap_sock_fd=}" # set by forge_bwrap_state: the fd the exec socket is on inside
: "${forge_bwrap_status_fd=}" # set by forge_bwrap_state: the fd bwrap writes its JSON status to

# forge-sandbox.sh
unset forge_cfg_key forge_cfg_tag forge_cfg_val forge_sandbox_cache_volume \
	forge_sandbox_docker_volume forge_sandbox_name forge_sandbox_registry_dir \
	forge_sandbox_registry_file forge_sandbox_root
: "${forge_cfg_key=}" # set by forge_sandbox_cfg_split: the key a forge_sandbox_cfg line names, for messages (for an "X" line, its tag)
: "${forge_cfg_tag=}" # set by forge_sandbox_cfg_split: that line's tag (projro, toolout, scratch, mount_ro, mount_rw, ext; "X" for a value with a newline or NUL byte)
: "${forge_cfg_val=}" # set by forge_sandbox_cfg_split: that line's value (for an "X" line, its key)
: "${forge_sandbox_cache_volume=}" # set by forge_sandbox_volumes: the name of the sandbox's cache volume, NAME-cache-data
: "${forge_sandbox_docker_volume=}" # set by forge_sandbox_volumes: the name of the sandbox's docker volume, NAME-docker-data
: "${forge_sandbox_name=}" # set by forge_sandbox_name_of: the sandbox's name, forge-<slug>-<h> (forge_sandbox_locate sets it too)
: "${forge_sandbox_registry_dir=}" # set by forge_sandbox_registry: the registry of sandboxes, forge/sandboxes in the XDG state folder, where the bring-up locks are too
: "${forge_sandbox_registry_file=}" # set by forge_sandbox_registry: the sandbox's entry in it (its worktree, backend and mounts)
: "${forge_sandbox_root=}" # set by forge_sandbox_locate: the physical root of the worktree found

# forge-sandbox-record.sh
unset forge_sandbox_record
: "${forge_sandbox_record=}" # set by forge_sandbox_record_file: the file that records what the sandbox was created with, ROOT/.forge/sandbox/NAME

# forge-sandbox-lock.sh
unset forge_sandbox_wait
: "${forge_sandbox_wait=}" # set by forge_sandbox_wait_setting: how many seconds up waits for a busy sandbox or its lock (FORGE_SANDBOX_WAIT, default 30)

# forge-doctor.sh
unset forge_backend forge_bwrap_probe
: "${forge_backend=}" # set by forge_sandbox_backend: the backend chosen, msb or bwrap
: "${forge_bwrap_probe=}" # set by forge_bwrap_probe: "available", or why bwrap cannot make user and network namespaces here

# forge-check.sh
unset forge_check_backend forge_check_escaped forge_check_place \
	forge_check_results forge_ck_bin forge_ck_listener forge_ck_work
: "${forge_check_backend=}" # set by forge_check_find: the backend of the running sandbox found, bwrap or msb
: "${forge_check_escaped=}" # set by forge_check: the names of the probes that got through, space-separated (empty when every probe held)
: "${forge_check_place=}" # set by forge_check_place: a folder outside every mount of the plan, where the canary's folder is made
: "${forge_check_results=}" # set by forge_check: one NAME<TAB>CLASS<TAB>held|escaped<TAB>DETAIL line per probe
: "${forge_ck_bin=}" # set by forge_check_run, forge_check_cleanup: the probe's copy in .forge; trap state (forge_check_cleanup, forge_check_run's EXIT trap, runs after the function has returned, and removes it)
: "${forge_ck_listener=}" # set by forge_check_run, forge_check_cleanup: the PID of forge-probe listening on the host; trap state (forge_check_cleanup stops it)
: "${forge_ck_work=}" # set by forge_check_run, forge_check_cleanup: the private folder of the canary and the listeners' files; trap state (forge_check_cleanup removes it)

# forge-verify-sandbox.sh
unset forge_contain_backend forge_contain_ephemeral forge_contain_name \
	forge_contain_shell forge_contain_up_pid forge_record_sandbox
: "${forge_contain_backend=}" # set by forge_contain_begin: the backend of the steps' sandbox, bwrap or msb
: "${forge_contain_ephemeral=}" # set by forge_contain_begin, forge_contain_end: the copy's sandbox, removed by forge_contain_end (empty: none, or removed); trap state (forge-verify's EXIT trap runs forge_contain_end)
: "${forge_contain_name=}" # set by forge_contain_begin: the sandbox the steps run in (empty: they run on the host)
: "${forge_contain_shell=}" # set by forge_contain_begin: the forge-shell client that runs a step in a namespace sandbox (bwrap only)
: "${forge_contain_up_pid=}" # set by forge_contain_begin, forge_contain_end: the PID of the sandbox's bring-up while it runs in the background; trap state (forge_contain_end stops it)
: "${forge_record_sandbox=}" # set by forge_contain_begin: the record's "sandbox" value, JSON {name, backend}

# forge-image.sh
unset forge_image_child forge_image_cols forge_image_follower \
	forge_image_start forge_image_ticker forge_image_tmp
: "${forge_image_child=}" # set by forge_image_run, forge_image_wait, forge_image_cleanup: the PID of the docker or msb command being waited for; trap state (forge_image_cleanup, the EXIT and signal traps of forge_image_run's subshell, kills it)
: "${forge_image_cols=}" # set by forge_image_run: the width the updating progress line is cut to; empty when progress goes as timestamped lines (stderr no terminal, or TERM dumb)
: "${forge_image_follower=}" # set by forge_image_run, forge_image_cleanup: the PID of forge_image_follow, which reads docker build's output; trap state (forge_image_cleanup kills it)
: "${forge_image_start=}" # set by forge_image_run: when the build started, in seconds since the epoch (forge_image_elapsed)
: "${forge_image_ticker=}" # set by forge_image_run, forge_image_ticker_start, forge_image_ticker_stop: the PID of the loop that redraws the progress line each second; trap state (forge_image_cleanup stops it)
: "${forge_image_tmp=}" # set by forge_image_run, forge_image_cleanup: the build's temporary folder (logs, FIFO, tar, current step); trap state (forge_image_cleanup removes it)

# forge-net.sh
unset forge_net_missing forge_net_relay
: "${forge_net_missing=}" # set by forge_net_open_check: what open egress lacks here, comma-separated (empty when nothing)
: "${forge_net_relay=}" # set by forge_net_relay_path: the path of forge-relay, the static relay a sandbox runs inside

# forge-net-bwrap.sh
unset forge_net_mode
: "${forge_net_mode=}" # set by forge_net_mode: the sandbox's network, restricted (every connection through forge's proxy) or open (slirp4netns and nft)

# forge-egress-live.sh
unset forge_live_name forge_live_state
: "${forge_live_name=}" # set by forge_live_find: the name of the namespace sandbox found
: "${forge_live_state=}" # set by forge_live_find: that sandbox's state folder (egress.log, egress.ctl, slirp.pid)
