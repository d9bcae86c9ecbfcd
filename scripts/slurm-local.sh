#!/usr/bin/env bash
# slurm-local.sh — manage a real single-node Slurm cluster for Tessera tests.
#
# Usage:
#   scripts/slurm-local.sh install STATE_DIR
#   scripts/slurm-local.sh start   STATE_DIR
#   scripts/slurm-local.sh stop    STATE_DIR
#
# install installs slurm-wlm and munge if needed (Debian/Ubuntu, root
#        only), without configuring or starting anything.
# start  installs them if needed and starts a private cluster that lives
#        entirely in STATE_DIR: its own munged (key, socket, pid, log),
#        its own STATE_DIR/slurm.conf on ports of its own, and slurmctld and
#        slurmd with all state, spool, pid and log files there. It waits
#        until the node is idle and prints "slurm ready". Clients reach it
#        with SLURM_CONF=STATE_DIR/slurm.conf. Running it twice restarts the
#        private daemons.
# stop   stops the daemons recorded in STATE_DIR's pid files.
#
# Nothing outside STATE_DIR is written, and no daemon it did not start is
# stopped: a site's own slurm and munge go on as they were.
#
# Exit codes: 0 ok, 1 failure, 2 usage error, 3 not root.
set -euo pipefail
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

# pid_alive PID NAME...: PID is running, is one of NAMEs (guards against
# reuse) and is not a zombie (in containers PID 1 may be slow to reap).
pid_alive() {
	local pid=$1 comm stat
	shift
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
	[[ " $* " == *" $comm "* ]] || return 1
	stat=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ ${stat%% *} != Z ]]
}

# stop_pidfile FILE NAME: terminate the daemon NAME whose pid FILE holds,
# and wait for it.
stop_pidfile() {
	local f=$1 name=$2 pid i
	[[ -f $f ]] || return 0
	pid=$(tr -d '[:space:]' <"$f" 2>/dev/null || true)
	if pid_alive "$pid" "$name"; then
		log "stopping $name (pid $pid, from $f)"
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
			pid_alive "$pid" "$name" || break
			sleep 0.1
		done
		if pid_alive "$pid" "$name"; then
			log "pid $pid did not exit after ${STOP_TIMEOUT}s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				pid_alive "$pid" "$name" || break
				sleep 0.1
			done
		fi
	fi
	rm -f "$f"
}

stop_daemons() {
	local state=$1
	stop_pidfile "$state/slurmd.pid" slurmd
	stop_pidfile "$state/slurmctld.pid" slurmctld
	stop_pidfile "$state/munge/munged.pid" munged
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

# start_munge STATE: a munged of this cluster's own, with its key, socket,
# pid, log and seed files in STATE/munge.
start_munge() {
	local m=$1/munge i
	mkdir -p "$m"
	chmod 0700 "$m"
	[[ -f $m/munge.key ]] || mungekey -c -k "$m/munge.key"
	log "starting munged (socket $m/munge.socket)"
	munged --force --key-file="$m/munge.key" --socket="$m/munge.socket" \
		--pid-file="$m/munged.pid" --log-file="$m/munged.log" --seed-file="$m/munged.seed"
	for ((i = 0; i < 50; i++)); do
		if munge -S "$m/munge.socket" -n 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	log "munge does not work (munge -n | unmunge on $m/munge.socket failed)"
	tail_file "$m/munged.log"
	exit 1
}

# free_ports N: N TCP ports on this machine that nothing listens on.
free_ports() {
	python3 -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

write_conf() {
	local state=$1 hn=$2 cpus=$3 ctld=$4 slurmd=$5
	cat >"$state/slurm.conf.tmp" <<CONF
ClusterName=tessera
SlurmctldHost=$hn
SlurmctldPort=$ctld
SlurmdPort=$slurmd
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
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
CONF
	chmod 0644 "$state/slurm.conf.tmp"
	mv -f "$state/slurm.conf.tmp" "$state/slurm.conf"
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
	local state=$1 hn cpus since ports
	if [[ $(id -u) -ne 0 ]]; then
		echo "slurm-local: start needs root (may install packages; runs slurmd as root)" >&2
		exit 3
	fi
	mkdir -p "$state"
	state=$(cd "$state" && pwd -P)

	install_slurm "$state"
	stop_daemons "$state"
	start_munge "$state"

	hn=$(hostname -s)
	cpus=$(slurmd -C 2>/dev/null | grep -o 'CPUs=[0-9]*' | head -n 1 | cut -d= -f2 || true)
	if [[ -z $cpus ]]; then
		log "could not read CPUs from 'slurmd -C'"
		slurmd -C >&2 || true
		exit 1
	fi
	read -r -a ports <<<"$(free_ports 2)"

	mkdir -p "$state/state" "$state/spool"
	write_conf "$state" "$hn" "$cpus" "${ports[0]}" "${ports[1]}"
	export SLURM_CONF=$state/slurm.conf

	log "starting slurmctld (port ${ports[0]}) and slurmd (port ${ports[1]}) on $hn ($cpus CPUs), all state in $state"
	since=$(date +%Y-%m-%dT%H:%M:%S)
	if ! slurmctld -f "$SLURM_CONF"; then
		log "slurmctld failed to start"
		tail_file "$state/slurmctld.log"
		exit 1
	fi
	if ! slurmd -f "$SLURM_CONF"; then
		log "slurmd failed to start"
		tail_file "$state/slurmd.log"
		exit 1
	fi
	wait_ready "$state" "$hn" "$since"
}

cmd_install() {
	local state=$1
	if [[ $(id -u) -ne 0 ]]; then
		echo "slurm-local: install needs root (installs packages)" >&2
		exit 3
	fi
	mkdir -p "$state"
	state=$(cd "$state" && pwd -P)
	install_slurm "$state"
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
