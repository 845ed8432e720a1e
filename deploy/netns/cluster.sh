#!/usr/bin/env bash
# A cluster of cosched agents on one host, each in its own network namespace
# with its own address: real separate network stacks, without machines.
#
#   sudo deploy/netns/cluster.sh up N [agent flags...]   # e.g. up 4 --mode bcs --slice 10ms --mpl 2
#   sudo deploy/netns/cluster.sh status
#   sudo deploy/netns/cluster.sh down
#
# up creates namespaces NAME-ns0 … NAME-ns{N-1}, each with loopback and an
# eth0 at SUBNET.1 … SUBNET.N/24 whose veth peer (NAME-v0 …) is enslaved to
# the bridge NAME-br (SUBNET.254 in the root namespace, so this host reaches
# every agent). It then starts one agent per namespace: n0 in NAME-ns0 runs
# the controller, the others join it. Agent flags after N go to every agent
# (the controller's settings, --mode, --slice, --mpl, --policy, only matter
# on n0). Every agent offers 1 processor unless the flags say otherwise.
# down stops the agents (SIGTERM, SIGKILL after a grace period, then any
# process left in a namespace), deletes the namespaces (and so the veths)
# and the bridge; it is safe to run twice.
#
# Environment (default):
#   COSCHED               the binary (cosched on PATH)
#   COSCHED_NETNS_NAME    prefix of namespaces and links, at most 9 of [a-z0-9] (cosched)
#   COSCHED_NETNS_SUBNET  the /24 as its first three octets (10.77.0)
#   COSCHED_NETNS_STATE   state directory: agent logs, ready files, rank output (/run/cosched-netns)
#   COSCHED_NETNS_TIMEOUT seconds to wait for the agents (30); COSCHED_NETNS_GRACE seconds they get to stop (10)
# The agents gossip on port 7946 and serve the API on port 8080 of their
# address: export COSCHED_ADDR=SUBNET.1:8080 to use the cosched commands.
set -euo pipefail

name=${COSCHED_NETNS_NAME:-cosched}
subnet=${COSCHED_NETNS_SUBNET:-10.77.0}
state=${COSCHED_NETNS_STATE:-/run/cosched-netns}
timeout=${COSCHED_NETNS_TIMEOUT:-30}
grace=${COSCHED_NETNS_GRACE:-10}
cosched=${COSCHED:-cosched}
bridge=$name-br
gossip_port=7946
api_port=8080

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

usage() {
	echo "usage: cluster.sh up N [agent flags...] | status | down" >&2
	exit 2
}

[[ $name =~ ^[a-z][a-z0-9]{0,8}$ ]] || die "COSCHED_NETNS_NAME '$name': want 1 to 9 of [a-z0-9], starting with a letter (link names are at most 15 bytes)"
[[ $subnet =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "COSCHED_NETNS_SUBNET '$subnet': want the first three octets of a /24, e.g. 10.77.0"

# namespaces lists this cluster's namespaces, in index order.
namespaces() {
	ip netns list | awk -v p="$name-ns" 'index($1, p) == 1 && substr($1, length(p) + 1) ~ /^[0-9]+$/ { print substr($1, length(p) + 1), $1 }' |
		sort -n | cut -d ' ' -f 2
}

# agent_pid prints the pid in an agent's ready file if it is a live cosched agent.
agent_pid() {
	local ready=$1 pid
	[[ -f $ready ]] || return 1
	pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$ready")
	[[ -n $pid ]] && is_agent "$pid" && echo "$pid"
}

is_agent() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat:0:1} != Z ]] && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q ' agent '
}

field() { # field KEY FILE: a string value of a ready file
	sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" "$2"
}

# up_count prints how many agents the controller sees up.
up_count() {
	"$cosched" nodes --addr "$subnet.1:$api_port" 2>/dev/null | awk '$2 == "up" { n++ } END { print n + 0 }'
}

start_agent() { # start_agent INDEX FLAGS...
	local i=$1 ns=$name-ns$1 dir=$state/n$1
	shift
	mkdir -p "$dir"
	rm -f "$dir/ready.json"
	ip netns exec "$ns" setsid "$cosched" agent --name "n$i" --bind "$subnet.$((i + 1)):$gossip_port" --api-port "$api_port" \
		--local --processors 1 --state-dir "$dir" --ready-file "$dir/ready.json" --log-format json "$@" \
		</dev/null >>"$dir/agent.log" 2>&1 &
}

wait_ready() { # wait_ready INDEX DEADLINE
	local dir=$state/n$1
	until [[ -s $dir/ready.json ]]; do
		((SECONDS < $2)) || die "agent n$1 did not come up in ${timeout}s; its log, $dir/agent.log, ends with:
$(tail -n 5 "$dir/agent.log" 2>/dev/null)"
		sleep 0.1
	done
}

# undo_failed_up removes what a failed up made.
undo_failed_up() {
	if ((!up_done)); then
		echo "cluster.sh: up failed; removing what it made" >&2
		down >/dev/null 2>&1 || true
	fi
}

up() {
	local n=${1:-}
	if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n > 253)); then die "up: N must be 1 to 253, got '$n'"; fi
	shift
	((EUID == 0)) || die "up: needs root (ip netns, ip link)"
	command -v ip >/dev/null || die "up: ip (iproute2) not found"
	command -v "$cosched" >/dev/null || die "up: $cosched not found (set COSCHED)"
	[[ -z $(namespaces) ]] || die "up: namespaces $name-ns* exist already; run cluster.sh down first"
	! ip link show "$bridge" >/dev/null 2>&1 || die "up: $bridge exists already; run cluster.sh down first"
	up_done=0
	trap undo_failed_up EXIT

	ip link add "$bridge" type bridge
	ip addr add "$subnet.254/24" dev "$bridge"
	ip link set "$bridge" up
	local i ns
	for ((i = 0; i < n; i++)); do
		ns=$name-ns$i
		ip netns add "$ns"
		ip link add "$name-v$i" type veth peer name "$name-p$i"
		ip link set "$name-p$i" netns "$ns"
		ip -n "$ns" link set "$name-p$i" name eth0
		ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" link set lo up
		ip link set "$name-v$i" master "$bridge" up
	done

	mkdir -p "$state"
	local deadline=$((SECONDS + timeout))
	start_agent 0 --controller "$@"
	wait_ready 0 "$deadline"
	for ((i = 1; i < n; i++)); do
		start_agent "$i" --join "$subnet.1:$gossip_port" "$@"
	done
	for ((i = 1; i < n; i++)); do
		wait_ready "$i" "$deadline"
	done
	until (($(up_count) == n)); do
		((SECONDS < deadline)) || die "only $(up_count) of $n agents joined the controller in ${timeout}s (logs in $state/n*/agent.log)"
		sleep 0.2
	done
	up_done=1
	echo "cluster of $n agents up in network namespaces $name-ns0..$name-ns$((n - 1)), controller n0 at $subnet.1:$api_port"
	echo "  export COSCHED_ADDR=$subnet.1:$api_port"
	echo "  cosched submit -n $n -t 1m -- hostname -I"
	echo "  sudo $0 down"
}

status() {
	local ns i pid
	for ns in $(namespaces); do
		i=${ns#"$name-ns"}
		if pid=$(agent_pid "$state/n$i/ready.json"); then
			echo "$ns: agent n$i (pid $pid) at $subnet.$((i + 1))"
		else
			echo "$ns: no agent"
		fi
	done
	[[ -n ${ns:-} ]] || echo "no namespaces $name-ns*"
	"$cosched" nodes --addr "$subnet.1:$api_port" 2>/dev/null || true
}

down() {
	local ns dir pid pids=() i
	for dir in "$state"/n*; do
		[[ -d $dir ]] || continue
		if pid=$(agent_pid "$dir/ready.json"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	# An agent that leaves kills its ranks; wait for them to go.
	local deadline=$((SECONDS + grace))
	while ((SECONDS < deadline)); do
		local left=()
		for pid in "${pids[@]}"; do
			if is_agent "$pid"; then left+=("$pid"); fi
		done
		((${#left[@]})) || break
		sleep 0.1
	done
	for pid in "${pids[@]}"; do
		if is_agent "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
	done
	# Whatever still runs in a namespace (an agent that never wrote its ready
	# file, a rank's descendant that left its process group) goes too.
	for ns in $(namespaces); do
		for i in 1 2 3 4 5 6 7 8 9 10; do
			pids=()
			while read -r pid; do pids+=("$pid"); done < <(ip netns pids "$ns" 2>/dev/null)
			((${#pids[@]})) || break
			kill -KILL "${pids[@]}" 2>/dev/null || true
			sleep 0.1
		done
		ip netns del "$ns" 2>/dev/null || true
	done
	# Deleting a namespace deletes its veth end and so the pair; a pair made
	# by an up that failed half-way may still be here.
	for dir in /sys/class/net/"$name"-[vp][0-9]*; do
		if [[ -e $dir ]]; then ip link del "${dir##*/}" 2>/dev/null || true; fi
	done
	if ip link show "$bridge" >/dev/null 2>&1; then ip link del "$bridge"; fi
	rm -f "$state"/n*/ready.json
	echo "cluster $name stopped: no agent, namespace, veth or bridge left (logs in $state)"
}

case ${1:-} in
up)
	shift
	up "$@"
	;;
down)
	((EUID == 0)) || die "down: needs root"
	down
	;;
status) status ;;
*) usage ;;
esac
