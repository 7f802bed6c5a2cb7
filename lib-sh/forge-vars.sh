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

# Results: each part's start empty (unset: not from the environment).

# forge.sh.in
unset forge_helper forge_libexec
: "${forge_helper=}" # set by forge_helper_path
: "${forge_libexec=}" # set by forge_libexec_path

# forge-core.sh
unset forge_mono_ms forge_ms forge_plain_chars forge_printable_jq \
	forge_program forge_stamp forge_ts forge_xdg
: "${forge_mono_ms=}" # set by forge_clock, forge_ms_now
: "${forge_ms=}" # set by forge_clock
: "${forge_plain_chars=}" # set by forge_printable_def
: "${forge_printable_jq=}" # set by forge_printable_def
: "${forge_program=}" # set by forge_find_program
: "${forge_stamp=}" # set by forge_clock
: "${forge_ts=}" # set by forge_clock
: "${forge_xdg=}" # set by forge_bwrap_state, forge_check_place, forge_xdg_dir, forge_bwrap_image_rootfs, forge_mounts_state_check, forge_mounts_plan, forge_sandbox_registry

# forge-config.sh
unset forge_config forge_config_defaults forge_config_files forge_config_jq \
	forge_config_sandbox forge_config_schema forge_config_verify_values \
	forge_default_timeout forge_keep_runs forge_threshold forge_warm
: "${forge_config=}" # set by forge_config_load
: "${forge_config_defaults=}" # set by forge_config_texts
: "${forge_config_files=}" # set by forge_config_load
: "${forge_config_jq=}" # set by forge_config_texts
: "${forge_config_sandbox=}" # set by forge_config_verify
: "${forge_config_schema=}" # set by forge_config_texts
: "${forge_config_verify_values=}" # set by forge_config_load, forge_config_texts
: "${forge_default_timeout=}" # set by forge_config_verify
: "${forge_keep_runs=}" # set by forge_config_verify
: "${forge_threshold=}" # set by forge_config_verify
: "${forge_warm=}" # set by forge_config_verify

# forge-fs.sh
unset forge_file forge_item forge_list forge_real
: "${forge_file=}" # set by forge_read_file, forge_pool_repo
: "${forge_item=}" # set by forge_list_next
: "${forge_list=}" # set by forge_evidence_keep, forge_list_next, forge_pool_dir_modes, forge_pool_keep_check, forge_pool_reset, forge_reuse_find, forge_reuse_key, forge_reuse_key_config, forge_isolated_setup_run, forge_isolated_stamp
: "${forge_real=}" # set by forge_real_dir

# forge-proc.sh
unset forge_proc_start
: "${forge_proc_start=}" # set by forge_proc_start

# forge-git.sh
unset forge_common_dir forge_common_of forge_git_dir forge_head \
	forge_head_of forge_root
: "${forge_common_dir=}" # set by forge_git_common_dir, forge_git_dirs_physical, forge_repo_root
: "${forge_common_of=}" # set by forge_git_common_dir, forge_repo_root
: "${forge_git_dir=}" # set by forge_git_common_dir, forge_git_dirs_physical, forge_repo_root
: "${forge_head=}" # set by forge_head, forge_repo_root
: "${forge_head_of=}" # set by forge_head, forge_repo_root
: "${forge_root=}" # set by forge_repo_root, forge_image_build

# forge-state.sh
unset forge_breaker forge_run_dir forge_run_id forge_run_log \
	forge_runs_finished forge_runs_found forge_runs_kept forge_state_dir \
	forge_state_refusal forge_streak
: "${forge_breaker=}" # set by forge_breaker_state
: "${forge_run_dir=}" # set by forge_run_begin
: "${forge_run_id=}" # set by forge_run_begin
: "${forge_run_log=}" # set by forge_run_log
: "${forge_runs_finished=}" # set by forge_runs_finished
: "${forge_runs_found=}" # set by forge_record, forge_runs_prune
: "${forge_runs_kept=}" # set by forge_record, forge_record_kept, forge_record_sh, forge_record_split, forge_runs_kept_ids, forge_runs_prune
: "${forge_state_dir=}" # set by forge_sandbox_record_safe, forge_state_init
: "${forge_state_refusal=}" # set by forge_state_path
: "${forge_streak=}" # set by forge_breaker_read, forge_breaker_update

# forge-record.sh
unset forge_record_json forge_record_log_name
: "${forge_record_json=}" # set by forge_record_sh, forge_record_split, forge_reuse_replay
: "${forge_record_log_name=}" # set by forge_record_log_name

# forge-copy.sh
unset forge_alt forge_carried_config forge_carry_config_sh forge_common_real \
	forge_copy_dir forge_copy_index_ready forge_copy_stores forge_copy_tmp \
	forge_links_check_sh forge_objects_dir forge_root_real forge_tmp_base
: "${forge_alt=}" # set by forge_alt_line
: "${forge_carried_config=}" # set by forge_copy_texts
: "${forge_carry_config_sh=}" # set by forge_copy_texts
: "${forge_common_real=}" # set by forge_copy_require_head, forge_prune
: "${forge_copy_dir=}" # set by forge_copy_create, forge_pool_acquire
: "${forge_copy_index_ready=}" # set by forge_copy_create, forge_pool_reset
: "${forge_copy_stores=}" # set by forge_copy_repo, forge_copy_store
: "${forge_copy_tmp=}" # set by forge_copy_create, forge_copy_destroy
: "${forge_links_check_sh=}" # set by forge_copy_texts
: "${forge_objects_dir=}" # set by forge_copy_require_head
: "${forge_root_real=}" # set by forge_copy_require_head, forge_prune
: "${forge_tmp_base=}" # set by forge_copy_tmp_base

# forge-copy-fill.sh
unset forge_copy_scan_pid forge_copy_tree
: "${forge_copy_scan_pid=}" # set by forge_copy_scan, forge_copy_scan_reap, forge_copy_scan_wait
: "${forge_copy_tree=}" # set by forge_copy_snapshot_tree

# forge-pool.sh
unset forge_pool forge_pool_base forge_pool_held forge_pool_state \
	forge_repo_id
: "${forge_pool=}" # set by forge_pool_repo
: "${forge_pool_base=}" # set by forge_pool_base
: "${forge_pool_held=}" # set by forge_pool_acquire, forge_pool_release
: "${forge_pool_state=}" # set by forge_pool_acquire
: "${forge_repo_id=}" # set by forge_repo_id

# forge-prune.sh
unset forge_prune_dry forge_prune_kib forge_prune_verbose
: "${forge_prune_dry=}" # set by forge_prune
: "${forge_prune_kib=}" # set by forge_prune, forge_prune_note
: "${forge_prune_verbose=}" # set by forge_prune

# forge-setup.sh
unset forge_exec_dir forge_isolated_keep forge_isolated_key \
	forge_isolated_setup
: "${forge_exec_dir=}" # set by forge_isolated_setup_run, forge_verify_execute
: "${forge_isolated_keep=}" # set by forge_isolated_settings
: "${forge_isolated_key=}" # set by forge_isolated_settings
: "${forge_isolated_setup=}" # set by forge_isolated_settings

# forge-detect.sh
unset forge_detect_files forge_detect_keep forge_detect_keep_list \
	forge_detect_key forge_detect_key_list forge_detect_looked \
	forge_detect_setup forge_make_target forge_step_run forge_steps \
	forge_steps_pick forge_steps_tested
: "${forge_detect_files=}" # set by forge_detect_list, forge_isolated_detect
: "${forge_detect_keep=}" # set by forge_isolated_detect
: "${forge_detect_keep_list=}" # set by forge_isolated_detect
: "${forge_detect_key=}" # set by forge_isolated_detect
: "${forge_detect_key_list=}" # set by forge_isolated_detect
: "${forge_detect_looked=}" # set by forge_steps_detect
: "${forge_detect_setup=}" # set by forge_isolated_detect
: "${forge_make_target=}" # set by forge_makefile_test_target, forge_step_pick, forge_steps_detect
: "${forge_step_run=}" # set by forge_step_pick, forge_step_next
: "${forge_steps=}" # set by forge_steps_detect, forge_steps_select
: "${forge_steps_pick=}" # set by forge_steps_detect, forge_steps_select
: "${forge_steps_tested=}" # set by forge_step_pick, forge_steps_detect, forge_steps_select

# forge-steps.sh
unset forge_evidence_shown forge_limit_ms forge_quoted forge_signal \
	forge_status_pid forge_step_exit forge_step_file forge_step_hint \
	forge_step_log forge_step_ms forge_step_name forge_step_pid \
	forge_step_queue forge_step_reason forge_step_result forge_step_timeout
: "${forge_evidence_shown=}" # set by forge_evidence_keep, forge_step_report
: "${forge_limit_ms=}" # set by forge_secs_to_ms
: "${forge_quoted=}" # set by forge_shell_quote
: "${forge_signal=}" # set by forge_interrupt, forge_signal_untrapped
: "${forge_status_pid=}" # set by forge_status_start, forge_status_stop
: "${forge_step_exit=}" # set by forge_step_exec
: "${forge_step_file=}" # set by forge_step_next
: "${forge_step_hint=}" # set by forge_step, forge_step_classify, forge_step_npm_missing
: "${forge_step_log=}" # set by forge_step_exec
: "${forge_step_ms=}" # set by forge_step_exec
: "${forge_step_name=}" # set by forge_step_next
: "${forge_step_pid=}" # set by forge_step_exec
: "${forge_step_queue=}" # set by forge_step_next, forge_steps_queue
: "${forge_step_reason=}" # set by forge_step_exec, forge_step_classify, forge_step_npm_missing
: "${forge_step_result=}" # set by forge_step_result
: "${forge_step_timeout=}" # set by forge_step_next

# forge-evidence.sh
unset forge_evidence_jq forge_evidence_size
: "${forge_evidence_jq=}" # set by forge_evidence_def
: "${forge_evidence_size=}" # set by forge_evidence_file

# forge-verify.sh
unset forge_exec_isolated forge_record_argc forge_record_tested \
	forge_recorded forge_step_missing forge_step_module forge_step_module_dir \
	forge_verdict
: "${forge_exec_isolated=}" # set by forge_verify_execute
: "${forge_record_argc=}" # set by forge_verify_execute
: "${forge_record_tested=}" # set by forge_verify_execute
: "${forge_recorded=}" # set by forge_reuse_replay, forge_verify_execute
: "${forge_step_missing=}" # set by forge_step_missing
: "${forge_step_module=}" # set by forge_step_own_module
: "${forge_step_module_dir=}" # set by forge_step_own_module
: "${forge_verdict=}" # set by forge_reuse_replay, forge_verify_execute, forge_verify_judge

# forge-reuse.sh
unset forge_record_key forge_reuse_age forge_reuse_key forge_reuse_on \
	forge_reuse_path forge_reuse_prog forge_reuse_text forge_reuse_tree \
	forge_reuse_trust
: "${forge_record_key=}" # set by forge_reuse_config
: "${forge_reuse_age=}" # set by forge_reuse_age
: "${forge_reuse_key=}" # set by forge_reuse_key
: "${forge_reuse_on=}" # set by forge_reuse_config
: "${forge_reuse_path=}" # set by forge_reuse_path
: "${forge_reuse_prog=}" # set by forge_reuse_program
: "${forge_reuse_text=}" # set by forge_reuse_key
: "${forge_reuse_tree=}" # set by forge_reuse_tree
: "${forge_reuse_trust=}" # set by forge_reuse_key, forge_reuse_key_config

# forge-reuse-notes.sh
unset forge_reuse_epoch forge_reuse_fan2 forge_reuse_fan4 forge_reuse_from \
	forge_reuse_host forge_reuse_run forge_reuse_verdict
: "${forge_reuse_epoch=}" # set by forge_reuse_find
: "${forge_reuse_fan2=}" # set by forge_reuse_fanout
: "${forge_reuse_fan4=}" # set by forge_reuse_fanout
: "${forge_reuse_from=}" # set by forge_reuse_find
: "${forge_reuse_host=}" # set by forge_reuse_find, forge_reuse_host
: "${forge_reuse_run=}" # set by forge_reuse_find
: "${forge_reuse_verdict=}" # set by forge_reuse_find

# forge-mounts.sh
unset forge_canon forge_mounts forge_mounts_backend forge_mounts_custom \
	forge_mounts_from forge_mounts_project_held forge_mounts_project_holds \
	forge_mounts_reserved forge_mounts_why forge_path_why
: "${forge_canon=}" # set by forge_mounts_scratch_allowed, forge_canon_dir, forge_canon_future
: "${forge_mounts=}" # set by forge_mounts_git_folder, forge_mounts_candidate, forge_mounts_custom, forge_mounts_plan
: "${forge_mounts_backend=}" # set by forge_mounts_plan
: "${forge_mounts_custom=}" # set by forge_mounts_custom, forge_mounts_plan
: "${forge_mounts_from=}" # set by forge_mounts_plan
: "${forge_mounts_project_held=}" # set by forge_mounts_plan
: "${forge_mounts_project_holds=}" # set by forge_mounts_holds_rw, forge_mounts_plan
: "${forge_mounts_reserved=}" # set by forge_mounts_git_folder, forge_mounts_candidate, forge_mounts_plan
: "${forge_mounts_why=}" # set by forge_mounts_git_folder, forge_mounts_candidate, forge_mounts_custom, forge_mounts_plan
: "${forge_path_why=}" # set by forge_path_unsafe

# forge-mounts-trust.sh
unset forge_mounts_hidden forge_overlap forge_owner_name forge_owner_uid \
	forge_walk_dir forge_walk_links forge_walk_rest
: "${forge_mounts_hidden=}" # set by forge_mounts_hidden_set
: "${forge_overlap=}" # set by forge_path_overlaps
: "${forge_owner_name=}" # set by forge_mounts_owner_of
: "${forge_owner_uid=}" # set by forge_mounts_owner_of
: "${forge_walk_dir=}" # set by forge_path_walk
: "${forge_walk_links=}" # set by forge_path_walk
: "${forge_walk_rest=}" # set by forge_path_walk

# forge-plan.sh
unset forge_plan forge_plan_mounts forge_plan_msb_argv forge_plan_project \
	forge_plan_unset forge_plan_viewed forge_sandbox_cfg forge_sandbox_cpus \
	forge_sandbox_egress forge_sandbox_egress_hosts forge_sandbox_egress_mode \
	forge_sandbox_env forge_sandbox_image forge_sandbox_memory_mib \
	forge_sandbox_resources forge_sandbox_secrets forge_size
: "${forge_plan=}" # set by forge_plan
: "${forge_plan_mounts=}" # set by forge_plan_view
: "${forge_plan_msb_argv=}" # set by forge_plan_view
: "${forge_plan_project=}" # set by forge_plan_view
: "${forge_plan_unset=}" # set by forge_plan_view
: "${forge_plan_viewed=}" # set by forge_plan_view
: "${forge_sandbox_cfg=}" # set by forge_plan
: "${forge_sandbox_cpus=}" # set by forge_plan_view
: "${forge_sandbox_egress=}" # set by forge_plan_view
: "${forge_sandbox_egress_hosts=}" # set by forge_plan_view
: "${forge_sandbox_egress_mode=}" # set by forge_plan_view
: "${forge_sandbox_env=}" # set by forge_plan_view
: "${forge_sandbox_image=}" # set by forge_plan_view
: "${forge_sandbox_memory_mib=}" # set by forge_plan_view
: "${forge_sandbox_resources=}" # set by forge_plan_view
: "${forge_sandbox_secrets=}" # set by forge_plan_view
: "${forge_size=}" # set by forge_size_mib

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
: "${forge_bwrap_cgroup_dirs=}" # set by forge_bwrap_cgroups
: "${forge_bwrap_cgroup_kind=}" # set by forge_bwrap_cgroups
: "${forge_bwrap_join=}" # set by forge_bwrap_limits_set

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
unset forge_cfg_key forge_cfg_tag forge_cfg_val forge_cfg_value \
	forge_sandbox_cache_volume forge_sandbox_docker_volume forge_sandbox_name \
	forge_sandbox_registry_dir forge_sandbox_registry_file forge_sandbox_root
: "${forge_cfg_key=}" # set by forge_sandbox_cfg_split
: "${forge_cfg_tag=}" # set by forge_sandbox_cfg_split
: "${forge_cfg_val=}" # set by forge_sandbox_cfg_split
: "${forge_cfg_value=}" # set by forge_sandbox_cfg_value
: "${forge_sandbox_cache_volume=}" # set by forge_sandbox_volumes
: "${forge_sandbox_docker_volume=}" # set by forge_sandbox_volumes
: "${forge_sandbox_name=}" # set by forge_sandbox_name_of
: "${forge_sandbox_registry_dir=}" # set by forge_sandbox_registry
: "${forge_sandbox_registry_file=}" # set by forge_sandbox_registry
: "${forge_sandbox_root=}" # set by forge_sandbox_locate

# forge-sandbox-record.sh
unset forge_sandbox_env_list forge_sandbox_record forge_sandbox_secret_list
: "${forge_sandbox_env_list=}" # set by forge_sandbox_fixed_lists
: "${forge_sandbox_record=}" # set by forge_sandbox_record_file
: "${forge_sandbox_secret_list=}" # set by forge_sandbox_fixed_lists

# forge-sandbox-lock.sh
unset forge_sandbox_wait
: "${forge_sandbox_wait=}" # set by forge_sandbox_wait_setting

# forge-doctor.sh
unset forge_backend forge_bwrap_probe
: "${forge_backend=}" # set by forge_sandbox_backend
: "${forge_bwrap_probe=}" # set by forge_bwrap_probe

# forge-check.sh
unset forge_check_backend forge_check_escaped forge_check_place \
	forge_check_results forge_ck_bin forge_ck_listener forge_ck_want \
	forge_ck_work
: "${forge_check_backend=}" # set by forge_check_find
: "${forge_check_escaped=}" # set by forge_check
: "${forge_check_place=}" # set by forge_check_place
: "${forge_check_results=}" # set by forge_check
: "${forge_ck_bin=}" # set by forge_check_cleanup, forge_check_run
: "${forge_ck_listener=}" # set by forge_check_cleanup, forge_check_run
: "${forge_ck_want=}" # set by forge_check_probes
: "${forge_ck_work=}" # set by forge_check_cleanup, forge_check_run

# forge-verify-sandbox.sh
unset forge_contain_backend forge_contain_ephemeral forge_contain_name \
	forge_contain_shell forge_contain_up_pid forge_record_sandbox
: "${forge_contain_backend=}" # set by forge_contain_begin
: "${forge_contain_ephemeral=}" # set by forge_contain_begin, forge_contain_end
: "${forge_contain_name=}" # set by forge_contain_begin
: "${forge_contain_shell=}" # set by forge_contain_begin
: "${forge_contain_up_pid=}" # set by forge_contain_begin, forge_contain_end
: "${forge_record_sandbox=}" # set by forge_contain_begin

# forge-image.sh
unset forge_image_child forge_image_cols forge_image_follower \
	forge_image_start forge_image_ticker forge_image_tmp forge_image_tty \
	forge_image_waited
: "${forge_image_child=}" # set by forge_image_cleanup, forge_image_run, forge_image_wait
: "${forge_image_cols=}" # set by forge_image_run
: "${forge_image_follower=}" # set by forge_image_cleanup, forge_image_run
: "${forge_image_start=}" # set by forge_image_run
: "${forge_image_ticker=}" # set by forge_image_run, forge_image_ticker_start, forge_image_ticker_stop
: "${forge_image_tmp=}" # set by forge_image_cleanup, forge_image_run
: "${forge_image_tty=}" # set by forge_image_run
: "${forge_image_waited=}" # set by forge_image_wait

# forge-net.sh
unset forge_net_exec forge_net_missing forge_net_relay forge_secrets
: "${forge_net_exec=}" # set by forge_net_open_start
: "${forge_net_missing=}" # set by forge_net_open_check
: "${forge_net_relay=}" # set by forge_net_relay_path
: "${forge_secrets=}" # set by forge_net_secrets_start

# forge-net-bwrap.sh
unset forge_net_mode
: "${forge_net_mode=}" # set by forge_net_mode

# forge-egress-live.sh
unset forge_live_dir forge_live_name forge_live_seconds forge_live_shift \
	forge_live_state
: "${forge_live_dir=}" # set by forge_live_split_dir
: "${forge_live_name=}" # set by forge_live_find
: "${forge_live_seconds=}" # set by forge_live_change, forge_live_duration
: "${forge_live_shift=}" # set by forge_live_split_dir
: "${forge_live_state=}" # set by forge_live_find
