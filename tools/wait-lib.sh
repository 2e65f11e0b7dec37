# shellcheck shell=dash
# Sourced (by bash, or by a POSIX sh such as dash) by the test scripts and
# the tools they start servers with: wait for a condition under a deadline
# instead of sleeping a fixed time (issue 28). A deadline here is only an
# upper bound on waiting: the wait ends as soon as the condition holds, so
# a deadline costs nothing when things work and is set many times what the
# wait takes on the 2-core development machine (a machine twice as slow,
# or a loaded one, stays far inside it). Reaching it means the thing waited
# for is broken, not slow.

# wait_until SECS CMD [ARG...]: runs CMD every 0.1 s until it succeeds
# (returns 0) or SECS seconds of wall-clock time have passed (returns 1
# after one last try). Call it as `wait_until ... || ...`, so that `set -e`
# does not end the caller at a timeout without its message.
wait_until() {
    local wu_end
    wu_end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        if [ "$(date +%s)" -ge "$wu_end" ]; then
            "$@"
            return
        fi
        sleep 0.1
    done
}

# pid_alive PID: true while process PID runs; one that has exited but is
# not reaped yet (a zombie) counts as gone once all its threads are gone.
# A killed process's main thread can be a zombie while its other threads
# are still exiting and still hold its descriptors (a listening socket: a
# new server's bind would fail with EADDRINUSE), so a zombie with more
# than one task listed is still alive.
pid_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ] && return 0
    [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -gt 1 ]
}
