#!/usr/bin/env bash
# Re-records the real OpenPBS outputs in this directory from the dev server
# (scripts/dev-pbs up; run as root). Jobs run as user_a; the operator actions as hpcdet.
# Each file's command is in README.md. Takes about 3 minutes (it waits for real jobs).
set -euo pipefail
OUT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="/opt/pbs/bin:$PATH" PBS_CONF_FILE="${PBS_CONF_FILE:-/etc/pbs.conf}"
U=user_a
OP=hpcdet

as() { # user command... (in the user's home, with the PBS environment only)
    local user="$1" home
    shift
    home="$(getent passwd "$user" | cut -d: -f6)"
    (cd "$home" && runuser -u "$user" -- env -i HOME="$home" PATH="$PATH" PBS_CONF_FILE="$PBS_CONF_FILE" "$@")
}

state() { qstat -x -f -F json "$1" | python3 -c 'import json,sys; print(next(iter(json.load(sys.stdin)["Jobs"].values()))["job_state"])'; }

wait_state() { # job state [seconds]
    local i
    for ((i = 0; i < ${3:-90}; i++)); do
        [[ "$(state "$1")" == "$2" ]] && return 0
        sleep 1
    done
    echo "job $1 never reached $2 (now $(state "$1"))" >&2
    return 1
}

save() { # file command...: the command's stdout into the file
    local f="$1"
    shift
    "$@" >"$OUT/$f"
}

# A job that logs which signals it gets (TERM is trapped; KILL cannot be).
SIGLOG='echo "start $(date +%s)"; trap "echo TERM at \$(date +%s)" TERM; for i in $(seq 120); do sleep 1; done; echo "end $(date +%s)"'

# 1. A 2-host job that fills both hosts (2 x 2 cpus), so the next job stays queued.
big=$(as $U qsub -N two-hosts -l select=2:ncpus=2 -l place=scatter -l walltime=00:05:00 -- /bin/sleep 60)
wait_state "$big" R
queued=$(as $U qsub -N queued -l select=1:ncpus=1 -- /bin/true)
queued2=$(as $U qsub -N queued2 -l select=1:ncpus=1 -- /bin/true)
sleep 12 # one scheduling cycle writes the comment ("Not Running: ...")
save running-two-hosts.json qstat -f -F json "$big"
save queued.json qstat -f -F json "$queued"
# qorder: swap two queued jobs; qalter -p as the owner and as the operator; qmove to debug.
as $U qorder "$queued" "$queued2"
as $U qalter -p 10 "$queued"
as $OP qalter -p 500 "$queued2" 2>"$OUT/qalter-p-500-stderr.txt" || true
as $OP qalter -p 100 "$queued2"
as $OP qmove debug "$queued2"
save after-qorder-qalter-qmove.json qstat -f -F json "$queued" "$queued2"
as $U qhold "$queued"
save held.json qstat -f -F json "$queued"
as $U qrls "$queued"
qdel_queued=$(as $U qsub -N deleted-queued -- /bin/true)
as $U qdel "$qdel_queued"
as $U qdel "$big"
wait_state "$queued" F
wait_state "$queued2" F
save finished-qdel-queued.json qstat -x -f -F json "$qdel_queued"
save finished-qdel-running-two-hosts.json qstat -x -f -F json "$big"

# 2. Finished OK, failed (exit 3), a #PBS script.
ok=$(as $U qsub -N ok -- /bin/sleep 1)
bad=$(as $U qsub -N exit3 -- /bin/sh -c 'exit 3')
home_u="$(getent passwd $U | cut -d: -f6)"
install -o $U -m 0644 "$OUT/directives.pbs" "$home_u/directives.pbs"
script=$(as $U qsub directives.pbs)
echo "$script" >"$OUT/qsub-directives-stdout.txt"
wait_state "$ok" F
wait_state "$bad" F
wait_state "$script" F
save finished-ok.json qstat -x -f -F json "$ok"
save finished-exit3.json qstat -x -f -F json "$bad"
save finished-directives.json qstat -x -f -F json "$script"
cp "$home_u/directives.out" "$OUT/directives-job-output.txt"

# 3. Signals: walltime kill (queue short), qdel while running, qrerun by the operator.
wall=$(as $U qsub -N walltime -q short -l walltime=00:00:05 -j oe -o wall.out -- /bin/bash -c "$SIGLOG")
del=$(as $U qsub -N qdel-running -j oe -o del.out -- /bin/bash -c "$SIGLOG")
rerun=$(as $U qsub -N rerun -j oe -o rerun.out -- /bin/bash -c 'echo "run at $(date +%s)"; sleep 15')
wait_state "$del" R
wait_state "$rerun" R
sleep 3
echo "qdel at $(date +%s)" >"$OUT/qdel-running-output.txt"
as $U qdel "$del"
as $OP qrerun "$rerun"
save rerun-requeued.json qstat -f -F json "$rerun"
wait_state "$wall" F 120
wait_state "$del" F
wait_state "$rerun" F 120
save finished-walltime.json qstat -x -f -F json "$wall"
save finished-qdel-running.json qstat -x -f -F json "$del"
save finished-qrerun.json qstat -x -f -F json "$rerun"
cat "$home_u/del.out" >>"$OUT/qdel-running-output.txt"
cp "$home_u/wall.out" "$OUT/walltime-output.txt"
cp "$home_u/rerun.out" "$OUT/qrerun-output.txt"

# 4. Refusals, and the server, queue and node views.
as $U qsub -q nosuch -- /bin/true 2>"$OUT/qsub-unknown-queue-stderr.txt" || echo "exit $?" >>"$OUT/qsub-unknown-queue-stderr.txt"
as $U qsub -q short -l walltime=00:05:00 -- /bin/true 2>"$OUT/qsub-over-walltime-max-stderr.txt" || echo "exit $?" >>"$OUT/qsub-over-walltime-max-stderr.txt"
as $U qalter -p 10 "$ok" 2>"$OUT/qalter-finished-stderr.txt" || echo "exit $?" >>"$OUT/qalter-finished-stderr.txt"
save queues.json qstat -Q -f -F json
save nodes.json pbsnodes -a -F json
save server.json qstat -B -f -F json
echo "recorded into $OUT"
