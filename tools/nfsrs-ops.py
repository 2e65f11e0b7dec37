#!/usr/bin/env python3
"""Metadata operations through a third-party client, nfs-rs (PyPI), for
tools/ab.sh: creates FILES empty files in a fresh directory, stats each,
removes each, one phase after the other, and prints one JSON object with,
per phase, the operations done, the seconds taken and the CPU time the
server process SERVER_PID used meanwhile (utime + stime of all its
threads, /proc/PID/stat), and the share of a core this client used.

    nfsrs-ops.py URL SERVER_PID [FILES]

URL is an nfs-rs URL, for example nfs://127.0.0.1:2049/?version=4.1.
Run it with the Python of a virtual environment that has nfs-rs installed
(tools/ab.sh makes one outside the repository).
"""
import json
import os
import sys
import time

import nfs_rs


def server_cpu(pid):
    """utime + stime of process `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(rest[11]) + int(rest[12])) / tck


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    url, pid = sys.argv[1], int(sys.argv[2])
    files = int(sys.argv[3]) if len(sys.argv) == 4 else 2000
    out = {"url": url, "files": files, "phases": {}}
    with nfs_rs.Client.connect(url) as c:
        top = f"nfsrs-{os.getpid()}-{int(time.time())}"
        c.mkdir(top)
        names = [f"{top}/f{i:06d}" for i in range(files)]

        def create(p):
            with c.open(p, "wb"):
                pass

        for phase, op in (("create", create), ("stat", c.stat), ("remove", c.remove)):
            m0 = os.times()
            c0, t0 = server_cpu(pid), time.perf_counter()
            for p in names:
                op(p)
            t1, c1 = time.perf_counter(), server_cpu(pid)
            m1 = os.times()
            mine = (m1.user + m1.system) - (m0.user + m0.system)
            out["phases"][phase] = {
                "ops": files,
                "secs": t1 - t0,
                "server_cpu_s": c1 - c0,
                "ops_per_s": files / (t1 - t0),
                "server_cpu_us_per_op": (c1 - c0) * 1e6 / files,
                "server_cpu_percent": (c1 - c0) / (t1 - t0) * 100,
                "client_cpu_percent": mine / (t1 - t0) * 100,
            }
        c.rmdir(top)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
