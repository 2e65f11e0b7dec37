#!/usr/bin/env python3
"""Guest side of tests/realclient/bench-guest.sh: run `ferrite bench run` on a
kernel NFS mount and record what the Linux client sent for it.

Runs as root (PID 1's child, see guest/init with RC_SCRIPT=/rc/bench.py).
Environment (written by bench-guest.sh into /rc/env):
  RC_HOST RC_PORT RC_EXPORT RC_VERS RC_MOUNT_OPTS RC_OUT (9p share)
  RC_MOUNTPORT  NFSv3 only: the MOUNT port (mountproto=tcp)
  BENCH_ARGS    JSON list: the arguments after `ferrite bench run`, with
                @MNT@ standing for the mount point
  BENCH_DROP    1: drop the guest's caches right before the measured run
  BENCH_KNFSD_DELEG  0: (with BENCH_KNFSD) fs.leases-enable=0, no delegations
  BENCH_KNFSD   1: the server is the guest's own kernel nfsd (binaries from
                nfs-kernel-server in $RC_OUT/knfsd/), exporting /srv/export
                as the NFSv4 root; the file set is prepared here with
                `ferrite bench prepare ... --target nfs4://127.0.0.1:2049/`

Steps: copy $RC_OUT/ferrite to /tmp, (v3: start rpcbind + rpc.statd, which
the kernel's lockd needs for NLM), mount, save /proc/self/mountstats and
/proc/net/rpc/nfs, run the benchmark (-o $RC_OUT/result.json), save both
again, and write $RC_OUT/ops.txt: per-op deltas of the mount's
"per-op statistics" (ops count = RPCs the client issued), plus the deltas of
its "events:" counters. Prints progress to stdout (the host streams it).
"""
import json
import os
import shutil
import subprocess
import sys
import time

HOST = os.environ.get("RC_HOST", "10.0.2.2")
PORT = os.environ.get("RC_PORT", "2049")
EXPORT = os.environ.get("RC_EXPORT", "/")
VERS = os.environ.get("RC_VERS", "4.1")
OPTS = os.environ.get("RC_MOUNT_OPTS", "")
MOUNTPORT = os.environ.get("RC_MOUNTPORT", "")
OUT = os.environ.get("RC_OUT", "/rcout")
ARGS = json.loads(os.environ.get("BENCH_ARGS", "[]"))
DROP = os.environ.get("BENCH_DROP", "1") == "1"
MNT = "/mnt/bench"

# names of the "events:" counters (fs/nfs/iostat.h, enum nfs_stat_eventcounters)
EVENTS = ["inoderevalidate", "dentryrevalidate", "datainvalidate", "attrinvalidate",
          "vfsopen", "vfslookup", "vfsaccess", "vfsupdatepage", "vfsreadpage",
          "vfsreadpages", "vfswritepage", "vfswritepages", "vfsgetdents",
          "vfssetattr", "vfsflush", "vfsfsync", "vfslock", "vfsrelease",
          "congestionwait", "setattrtrunc", "extendwrite", "sillyrename",
          "shortread", "shortwrite", "delay", "pnfs_read", "pnfs_write"]


def log(msg):
    print(msg, flush=True)


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return r.returncode, r.stdout


def mount_block(text, mp):
    for b in text.split("\ndevice "):
        if (" mounted on %s with fstype" % mp) in b:
            return b
    return ""


def parse(block):
    """(per-op {name: [ops, trans, timeouts, bytes_sent, bytes_recv, queue, rtt, execute, ...]},
    events [...], xprt line)"""
    ops, events, xprt, inops = {}, [], "", False
    for line in block.splitlines():
        s = line.strip()
        if s.startswith("events:"):
            events = [int(x) for x in s.split()[1:]]
        elif s.startswith("xprt:"):
            xprt = s
        elif s.startswith("per-op statistics"):
            inops = True
        elif inops and ":" in s:
            name, rest = s.split(":", 1)
            ops[name.strip()] = [int(x) for x in rest.split()]
    return ops, events, xprt


def snapshot(tag):
    text = open("/proc/self/mountstats").read()
    open(os.path.join(OUT, "mountstats-%s.txt" % tag), "w").write(text)
    try:
        shutil.copy("/proc/net/rpc/nfs", os.path.join(OUT, "rpc-nfs-%s.txt" % tag))
    except OSError:
        pass
    return mount_block(text, MNT)


def host_mark(tag):
    """Tell the host to note its relay log position (bench-guest.sh --vers 3
    counts the RPCs between the marks) and wait for its acknowledgement."""
    req = os.path.join(OUT, "mark-%s.req" % tag)
    open(req, "w").close()
    # The host polls every 0.1 s: 120 s is an upper bound on the wait.
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.exists(req + ".ack"):
            return
        time.sleep(0.05)
    log("host did not acknowledge mark %s within 120 s" % tag)


def start_knfsd(args):
    """The guest's own knfsd on 127.0.0.1:2049 (/srv/export = NFSv4 root),
    10 s grace period, and the file set prepared through it."""
    k = os.path.join(OUT, "knfsd")
    os.makedirs("/srv/export", exist_ok=True)
    os.makedirs("/var/lib/nfs/v4recovery", exist_ok=True)
    os.makedirs("/run/rpcbind", exist_ok=True)
    with open("/etc/exports", "w") as f:
        f.write("/srv/export 127.0.0.1(rw,fsid=0,no_root_squash,insecure,no_subtree_check)\n")
    steps = [["modprobe", "nfsd"], ["mount", "-t", "nfsd", "nfsd", "/proc/fs/nfsd"],
             ["sh", "-c", "echo 10 > /proc/fs/nfsd/nfsv4gracetime"],
             # lockd's grace period (default 5 x nlm_timeout = 50 s) also
             # holds back LOCK (NFS4ERR_GRACE) and delegations: 10 s
             ["sh", "-c", "echo 10 > /proc/sys/fs/nfs/nlm_grace_period"],
             # BENCH_KNFSD_DELEG=0: no leases, so nfsd grants no delegations
             ["sh", "-c", "echo %s > /proc/sys/fs/leases-enable" %
              ("0" if os.environ.get("BENCH_KNFSD_DELEG", "1") == "0" else "1")],
             ["rpcbind", "-w"], [k + "/exportfs", "-ra"], [k + "/rpc.mountd"],
             [k + "/rpc.nfsd", "4"]]
    for cmd in steps:
        rc, out = run(cmd)
        log("knfsd: %s -> rc %d %s" % (" ".join(cmd), rc, out.strip()))
    for name in ("fs/nfsd/nfsv4leasetime", "fs/nfsd/nfsv4gracetime", "fs/nfsd/versions",
                 "sys/fs/nfs/nlm_grace_period", "sys/fs/leases-enable"):
        try:
            log("knfsd: %s = %s" % (name, open("/proc/" + name).read().strip()))
        except OSError:
            pass
    # The grace periods (nfsd's and lockd's, set to 10 s above) are timers
    # on the wall clock, started by rpc.nfsd: 12 s later both are over on
    # any machine. No file shows lockd's, which holds back delegations.
    time.sleep(12)
    # The set's shape as the run will want it: --files, --file-size and
    # --io-size when given (else the workload's defaults).
    cmd = ["/tmp/ferrite", "bench", "prepare", args[0], "--target", "nfs4://127.0.0.1:2049/"]
    for opt in ("--files", "--file-size", "--io-size"):
        if opt in args:
            cmd += [opt, args[args.index(opt) + 1]]
    for _ in range(3):
        rc, out = run(cmd)
        log("knfsd: %s -> rc %d %s" % (" ".join(cmd), rc, out.strip()[-500:]))
        if rc == 0:
            return True
        time.sleep(5)
    # fallback: prepare through a separate kernel mount, unmounted afterwards
    os.makedirs("/mnt/prep", exist_ok=True)
    rc, out = run(["mount", "-t", "nfs", "-o", "vers=4.1", "127.0.0.1:/", "/mnt/prep"])
    cmd[5] = "dir:/mnt/prep"
    rc, out = run(cmd)
    log("knfsd: %s -> rc %d %s" % (" ".join(cmd), rc, out.strip()[-500:]))
    run(["umount", "/mnt/prep"])
    return rc == 0


def main():
    os.makedirs(OUT, exist_ok=True)
    log("bench guest: kernel %s, server %s:%s export %s vers %s opts '%s'" %
        (os.uname().release, HOST, PORT, EXPORT, VERS, OPTS))
    t0 = time.time()
    shutil.copy(os.path.join(OUT, "ferrite"), "/tmp/ferrite")
    os.chmod("/tmp/ferrite", 0o755)
    log("copied ferrite in %.1fs" % (time.time() - t0))
    if HOST.startswith("10.0.2.") and HOST != "10.0.2.2":   # bench-guest.sh --vers 3: guestfwd address
        run(["ip", "route", "add", "%s/32" % HOST, "dev", "eth0"])
    if os.environ.get("BENCH_KNFSD") == "1" and not start_knfsd(ARGS):
        return 4
    if VERS == "3":
        # lockd asks the local statd (through the local rpcbind) to monitor
        # the server before its first NLM LOCK; without it locks fail ENOLCK.
        os.makedirs("/run/rpcbind", exist_ok=True)
        rc, out = run(["rpcbind", "-w"])
        log("rpcbind: rc %d %s" % (rc, out.strip()))
        rc, out = run(["rpc.statd", "--no-notify"])
        log("rpc.statd: rc %d %s" % (rc, out.strip()))
        opts = "vers=3,proto=tcp,port=%s,mountport=%s,mountproto=tcp" % (PORT, MOUNTPORT)
    else:
        opts = "vers=%s,port=%s" % (VERS, PORT)
    if OPTS:
        opts += "," + OPTS
    os.makedirs(MNT, exist_ok=True)
    cmd = ["timeout", "120", "mount", "-t", "nfs", "-o", opts, "%s:%s" % (HOST, EXPORT), MNT]
    rc, out = run(cmd)
    log("%s -> rc %d %s" % (" ".join(cmd[3:]), rc, out.strip()))
    if rc != 0:
        return 3
    log(open("/proc/mounts").read().strip().splitlines()[-1])
    args = [a.replace("@MNT@", MNT) for a in ARGS]
    if DROP:
        os.sync()
        open("/proc/sys/vm/drop_caches", "w").write("3\n")
    before = snapshot("before")
    host_mark("before")
    cmd = ["/tmp/ferrite", "bench", "run"] + args + ["-o", os.path.join(OUT, "result.json")]
    log("running: %s" % " ".join(cmd))
    t0 = time.time()
    with open(os.path.join(OUT, "bench.log"), "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    wall = time.time() - t0
    host_mark("after")
    after = snapshot("after")
    log("ferrite bench: rc %d, %.1fs wall" % (rc, wall))
    log(open(os.path.join(OUT, "bench.log")).read())
    b_ops, b_ev, _ = parse(before)
    a_ops, a_ev, xprt = parse(after)
    lines = ["# per-op deltas of /proc/self/mountstats for %s (vers %s, opts %s), bench wall %.1fs rc %d" %
             (MNT, VERS, opts, wall, rc),
             "# %-20s %10s %10s %12s %12s" % ("op", "ops", "trans", "bytes_sent", "bytes_recv")]
    total = 0
    for name in a_ops:
        d = [x - y for x, y in zip(a_ops[name], b_ops.get(name, [0] * len(a_ops[name])))]
        if d and d[0]:
            total += d[0]
            lines.append("%-22s %10d %10d %12d %12d" % (name, d[0], d[1], d[3], d[4]))
    lines.append("%-22s %10d" % ("TOTAL", total))
    lines.append("# events (deltas, nonzero)")
    for i, (x, y) in enumerate(zip(a_ev, b_ev or [0] * len(a_ev))):
        if x - y:
            lines.append("event %-16s %10d" % (EVENTS[i] if i < len(EVENTS) else "ev%d" % i, x - y))
    lines.append("# " + xprt)
    text = "\n".join(lines) + "\n"
    open(os.path.join(OUT, "ops.txt"), "w").write(text)
    log(text)
    rc2, out = run(["timeout", "60", "umount", MNT])
    log("umount: rc %d %s" % (rc2, out.strip()))
    snapshot("umounted")
    return rc


if __name__ == "__main__":
    sys.exit(main())
