# What the comparison scripts share; sourced, not run.

# guarded_config MAX_SESSIONS SERVER_LINE prints the config every
# comparison runs aqlguard serve with: transparent, every call through the
# evaluator and the audit log and allowed, the step limit raised so it
# does not end the run, one server "ts" given by SERVER_LINE, its tools
# trusted at first sight (without it, since 2026-11-28, they wait for a
# human's review and every call fails). LEGACY=1 leaves that key out,
# for a binary that predates it.
guarded_config() {
	cat <<TOML
mode = "transparent"
[serve]
auth = "none"
max_sessions = $1
[safety]
max_autonomous_steps = 100000000
auto_approve = ["*"]
[[servers]]
name = "ts"
$2
TOML
	if [ "${LEGACY:-}" != 1 ]; then
		echo 'trust_first_sight = true'
	fi
}

# wait_port PORT waits up to 5 s for something to listen on 127.0.0.1:PORT
# (what then fails to connect says so itself).
wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
		sleep 0.05
	done
}
