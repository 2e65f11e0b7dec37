# Sourced by tools/cpu-ab.sh and tools/nhfsstone.sh: two Ferrite servers,
# A and B, each serving its own scratch export under OUT (OUT/A, OUT/B:
# export, state, server.log, and log when that server has a write log),
# pinned to CPU 1, on loopback.
#
# The caller sets OUT and the associative arrays BIN (binary), PORT and
# LOGGED (1: `--log OUT/S/log`) for A and B, and declares PID; ARGS_A and
# ARGS_B in the environment add options to that server (e.g. --async).

# Starts both servers (stopped again at exit); fails if one does not start.
ab_start() {
    trap ab_stop EXIT
    local s log extra more
    for s in A B; do
        rm -rf "${OUT:?}/$s" && mkdir -p "$OUT/$s/export" "$OUT/$s/state"
        log=(); [ "${LOGGED[$s]:-0}" = 1 ] && log=(--log "$OUT/$s/log")
        extra="ARGS_$s"; read -r -a more <<< "${!extra:-}"
        log+=("${more[@]}")
        taskset -c 1 "${BIN[$s]}" serve "$OUT/$s/export" --listen "127.0.0.1:${PORT[$s]}" \
            --state-dir "$OUT/$s/state" "${log[@]}" > "$OUT/$s/server.log" 2>&1 &
        PID[$s]=$!
    done
    sleep 1
    for s in A B; do
        kill -0 "${PID[$s]}" 2>/dev/null ||
            { echo "server $s did not start: $OUT/$s/server.log" >&2; exit 1; }
    done
}

ab_stop() {
    local s
    for s in A B; do [ -n "${PID[$s]:-}" ] && kill "${PID[$s]}" 2>/dev/null || true; done
}

# ab_target S: server S's URL.
ab_target() { echo "nfs4://127.0.0.1:${PORT[$1]}/"; }

# ab_order REP: the order of repetition REP (B first on even ones).
ab_order() { if [ $(($1 % 2)) -eq 0 ]; then echo "B A"; else echo "A B"; fi; }
