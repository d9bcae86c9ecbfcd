#!/usr/bin/env bash
# slurm-local.sh — manage a real single-node Slurm cluster for Tessera tests.
#
# Usage:
#   scripts/slurm-local.sh install STATE_DIR
#   scripts/slurm-local.sh start   STATE_DIR
#   scripts/slurm-local.sh stop    STATE_DIR
#
# install installs slurm-wlm and munge if needed and writes
#        /etc/slurm/slurm.conf if there is none, without starting anything:
#        enough for `scontrol show hostnames`.
# start  installs slurm-wlm and munge if needed (Debian/Ubuntu, root only),
#        starts munged, writes /etc/slurm/slurm.conf with all state, spool,
#        pid and log files inside STATE_DIR, (re)starts slurmctld and slurmd
#        and waits until the node is idle. It is idempotent: running it twice
#        restarts the daemons. Prints "slurm ready" on success.
# stop   stops the daemons recorded in STATE_DIR's pid files.
#
# Exit codes: 0 ok, 1 failure, 2 usage error, 3 not root.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
READY_TIMEOUT=60
STOP_TIMEOUT=30

usage() {
	echo "usage: $0 {install|start|stop} STATE_DIR" >&2
	exit 2
}

log() { echo "slurm-local: $*" >&2; }

tail_file() {
	local f=$1
	if [[ -f $f ]]; then
		echo "----- tail of $f -----" >&2
		tail -n 40 "$f" >&2 || true
	else
		echo "----- $f: missing -----" >&2
	fi
}

# pid_alive PID: PID is running and is a slurm daemon (guards against reuse).
# Zombies count as gone: in containers PID 1 may be slow to reap them.
pid_alive() {
	local pid=$1 comm stat
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
	[[ $comm == slurmctld || $comm == slurmd ]] || return 1
	stat=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ ${stat%% *} != Z ]]
}

# live_procs NAME...: "pid name" of live (non-zombie) processes named NAME.
live_procs() {
	ps -e -o pid=,stat=,comm= | awk -v names=" $* " \
		'$2 !~ /^Z/ && index(names, " " $3 " ") { print $1, $3 }'
}

# stop_pidfile FILE: terminate the slurm daemon named in FILE and wait.
stop_pidfile() {
	local f=$1 pid i
	[[ -f $f ]] || return 0
	pid=$(tr -d '[:space:]' <"$f" 2>/dev/null || true)
	if pid_alive "$pid"; then
		log "stopping $(cat "/proc/$pid/comm" 2>/dev/null || echo daemon) (pid $pid, from $f)"
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
			pid_alive "$pid" || break
			sleep 0.1
		done
		if pid_alive "$pid"; then
			log "pid $pid did not exit after ${STOP_TIMEOUT}s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				pid_alive "$pid" || break
				sleep 0.1
			done
		fi
	fi
	rm -f "$f"
}

# conf_value KEY: value of KEY in the current slurm.conf, if any.
conf_value() {
	[[ -f $CONF ]] || return 0
	sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p" "$CONF" | tail -n 1
}

stop_daemons() {
	local state=$1
	stop_pidfile "$state/slurmd.pid"
	stop_pidfile "$state/slurmctld.pid"
}

install_slurm() {
	local state=$1 logf=$1/install.log
	if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 &&
		command -v munged >/dev/null 2>&1; then
		return 0
	fi
	log "installing slurm-wlm and munge (log: $logf)"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get update -q >"$logf" 2>&1; then
		log "apt-get update failed"
		tail_file "$logf"
		exit 1
	fi
	if ! apt-get install -y -q slurm-wlm munge >>"$logf" 2>&1; then
		log "apt-get install slurm-wlm munge failed"
		tail_file "$logf"
		exit 1
	fi
	hash -r
}

start_munge() {
	if [[ ! -f /etc/munge/munge.key ]]; then
		log "creating munge key"
		mungekey -c
	fi
	if id munge >/dev/null 2>&1; then
		chown munge:munge /etc/munge/munge.key
		chmod 0400 /etc/munge/munge.key
	fi
	mkdir -p /run/munge
	if id munge >/dev/null 2>&1; then
		chown munge:munge /run/munge
	fi
	if [[ -z $(live_procs munged) ]]; then
		log "starting munged"
		if id munge >/dev/null 2>&1 && command -v runuser >/dev/null 2>&1; then
			runuser -u munge -- munged --force
		else
			munged --force
		fi
	fi
	local i
	for ((i = 0; i < 50; i++)); do
		if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	log "munge does not work (munge -n | unmunge failed)"
	munge -n | unmunge >&2 || true
	exit 1
}

write_conf() {
	local state=$1 hn=$2 cpus=$3 tmp
	mkdir -p "$(dirname "$CONF")"
	tmp=$(mktemp "$CONF.XXXXXX")
	cat >"$tmp" <<EOF
ClusterName=local
SlurmctldHost=$hn
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/slurmctld.log
SlurmdLogFile=$state/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$hn CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$hn Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
	chmod 0644 "$tmp"
	mv -f "$tmp" "$CONF"
}

# wait_ready STATE HOST SINCE: wait until HOST is idle and its slurmd has
# registered at or after SINCE (slurmctld restores "idle" from saved state
# before the new slurmd has registered).
wait_ready() {
	local state=$1 hn=$2 since=$3 st sst deadline resumed=0
	deadline=$((SECONDS + READY_TIMEOUT))
	while ((SECONDS < deadline)); do
		st=$(sinfo -h -o %t 2>/dev/null | head -n 1 | tr -d '[:space:]' || true)
		case $st in
		idle)
			sst=$(scontrol show node -o "$hn" 2>/dev/null |
				grep -o 'SlurmdStartTime=[^ ]*' | cut -d= -f2 || true)
			if [[ $sst =~ ^[0-9]{4}- && ! $sst < $since ]]; then
				echo "slurm ready"
				return 0
			fi
			;;
		down* | drain* | fail*)
			if ((resumed < 5)); then
				log "node state '$st'; resuming $hn"
				scontrol update nodename="$hn" state=resume >/dev/null 2>&1 || true
				resumed=$((resumed + 1))
			fi
			;;
		esac
		sleep 1
	done
	log "node $hn not idle after ${READY_TIMEOUT}s (last state: '${st:-none}')"
	sinfo >&2 || true
	tail_file "$state/slurmctld.log"
	tail_file "$state/slurmd.log"
	exit 1
}

cmd_start() {
	local state=$1 hn cpus old since
	if [[ $(id -u) -ne 0 ]]; then
		echo "slurm-local: start needs root (installs packages, writes $CONF, runs slurmd as root)" >&2
		exit 3
	fi
	mkdir -p "$state"
	state=$(cd "$state" && pwd -P)

	install_slurm "$state"
	start_munge

	# Stop daemons from a previous start, whichever state dir it used.
	for old in "$(conf_value SlurmdPidFile)" "$(conf_value SlurmctldPidFile)"; do
		[[ -n $old ]] && stop_pidfile "$old"
	done
	stop_daemons "$state"
	if [[ -n $(live_procs slurmctld slurmd) ]]; then
		log "slurmctld/slurmd running without a known pid file; stop them first:"
		live_procs slurmctld slurmd >&2
		exit 1
	fi

	hn=$(hostname -s)
	cpus=$(slurmd -C 2>/dev/null | grep -o 'CPUs=[0-9]*' | head -n 1 | cut -d= -f2 || true)
	if [[ -z $cpus ]]; then
		log "could not read CPUs from 'slurmd -C'"
		slurmd -C >&2 || true
		exit 1
	fi

	mkdir -p "$state/state" "$state/spool"
	write_conf "$state" "$hn" "$cpus"

	log "starting slurmctld and slurmd on $hn ($cpus CPUs), state in $state"
	since=$(date +%Y-%m-%dT%H:%M:%S)
	if ! slurmctld; then
		log "slurmctld failed to start"
		tail_file "$state/slurmctld.log"
		exit 1
	fi
	if ! slurmd; then
		log "slurmd failed to start"
		tail_file "$state/slurmd.log"
		exit 1
	fi
	wait_ready "$state" "$hn" "$since"
}

cmd_install() {
	local state=$1 cpus
	if [[ $(id -u) -ne 0 ]]; then
		echo "slurm-local: install needs root (installs packages, writes $CONF)" >&2
		exit 3
	fi
	mkdir -p "$state"
	state=$(cd "$state" && pwd -P)
	install_slurm "$state"
	if [[ ! -f $CONF ]]; then
		cpus=$(slurmd -C 2>/dev/null | grep -o 'CPUs=[0-9]*' | head -n 1 | cut -d= -f2 || true)
		write_conf "$state" "$(hostname -s)" "${cpus:-1}"
	fi
	echo "slurm installed"
}

cmd_stop() {
	local state=$1
	if [[ ! -d $state ]]; then
		log "state dir $state does not exist; nothing to stop"
		return 0
	fi
	state=$(cd "$state" && pwd -P)
	stop_daemons "$state"
	echo "slurm stopped"
}

[[ $# -eq 2 ]] || usage
case $1 in
install) cmd_install "$2" ;;
start) cmd_start "$2" ;;
stop) cmd_stop "$2" ;;
*) usage ;;
esac
