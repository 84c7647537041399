#!/usr/bin/env bash
# Samples the threads of a running server every 50 ms and records each thread found in
# uninterruptible sleep (state D, a wait on the disk or a kernel lock) with its wait channel
# and kernel stack: where a worker loop stalls when the stall watcher names no blocking file
# operation. Needs root (for /proc/PID/task/TID/stack). Runs until STOPFILE exists.
#
#   bench/lib/dstate.sh PGREP_PATTERN OUT STOPFILE &
#   ... run the load ...; touch STOPFILE
#
# Each line of OUT: time, thread name, wait channel, "|", the kernel stack (frames joined
# with ";"). Summarise with:
#   awk -F'|' '{ split($1, a, " "); print a[2], a[3], "|", substr($2, 1, 200) }' OUT |
#       sort | uniq -c | sort -rn | head
set -u
pattern=$1 out=$2 stop=$3
: >"$out"
while [ ! -e "$stop" ]; do
    pid=$(pgrep -f "$pattern" | head -1)
    if [ -n "$pid" ]; then
        for task in /proc/"$pid"/task/*; do
            # The state follows the command name, which may hold spaces: after the last ")".
            state=$(sed 's/.*) //' "$task/stat" 2>/dev/null | cut -d' ' -f1)
            [ "$state" = D ] || continue
            printf '%s %s %s | %s\n' "$(date +%H:%M:%S.%N | cut -c1-12)" \
                "$(cat "$task/comm" 2>/dev/null)" "$(cat "$task/wchan" 2>/dev/null)" \
                "$(tr '\n' ';' <"$task/stack" 2>/dev/null | cut -c1-400)" >>"$out"
        done
    fi
    sleep 0.05
done
