#!/usr/bin/env python3
"""pNFS checks with the real Linux client (tests/realclient/pnfs.sh). The same
script runs in two qemu guests, RC_ROLE=A and RC_ROLE=B, each on a tap NIC on
the host's test bridge, where a Ferrite metadata server (MDS) hands out
flexible-file layouts naming data servers (DS) on the same bridge. Guest A
does the I/O checks; guest B joins for the layout recall.

Clusters (host ports in the environment):
  F   (RC_PNFS_F)    MDS over two Ferrite DS, --stripe-unit 1m
  G   (RC_PNFS_G)    MDS over two NFS-Ganesha DS, --stripe-unit 1m (empty:
                     Ganesha not run, RC_PNFS_G_WHY says why; its rows SKIP)
  M41, M42 (RC_PNFS_M41, RC_PNFS_M42)   MDS over two Ferrite DS, --mirrors 2
                     (one per version: the host kills one of its DS)

Per version (RC_VERS, default 4.1,4.2), guest A:
  mount          F mounted with vers=X; its nfsv4 line says pnfs=LAYOUT_FLEX_FILES
  layout_io      F: three files of several MiB (random bytes) written, fsync'd,
                 read back after drop_caches: the checksums match
  mds_counters   F: during that I/O every per-op READ/WRITE is a pNFS one
                 (= the pnfs_read/pnfs_write events) and the MDS's transport
                 sent only the other ops: none of the I/O went to the MDS
                 (the 6.1 flexfiles driver counts its data-server READ, WRITE
                 and COMMIT in the MDS mount's per-op table; see Traffic)
  ganesha_io, ganesha_mds_counters   the same on G
  recall_returned  A holds an RW layout of a file it writes; B truncates it;
                 A's client gives the layout back (LAYOUTRETURN) meanwhile
  recall_final   A then writes past the old end; A and B read the same bytes
  mirror_read    M: a file read 1 MiB at a time; after 4 MiB the host kills the
                 DS serving the reads; the read completes with the right bytes
  mirror_new_layout  after the MDS noticed, a new file is written and read back
                 through a layout (no READ/WRITE through the MDS)
Guest B: mount, recall_truncate (its truncate of A's file completes, and it
reads the truncated bytes), recall_final.
Rows with role H are the host's (lib/pnfs_check.py: the data servers' disks,
their counters, the MDS's log).

Host requests go through the shared 9p directory (RC_SHARED): the guest
creates "req-<id>" (a JSON object) and waits for "ack-<id>" (a JSON object);
guest-to-guest barriers are "<vtag>-<name>.<ROLE>" files, as in
twoguests.py; "<vtag>-abort.<ROLE>" ends the other guest's waits.

Time (issue 28): no verdict depends on speed. Each step runs in a forked
child under a time limit that only bounds a hang (many times what it takes
under TCG here); waits are for conditions under deadlines.
"""
import errno
import hashlib
import json
import os
import random
import signal
import sys
import time
import traceback

ROLE = os.environ.get("RC_ROLE", "A")
OTHER = "B" if ROLE == "A" else "A"
SHARED = os.environ.get("RC_SHARED", "/rcshare")
VERS = [v for v in os.environ.get("RC_VERS", "4.1,4.2").split(",") if v]
HOST = os.environ.get("RC_HOST", "")
PORT_F = os.environ.get("RC_PNFS_F", "")
PORT_G = os.environ.get("RC_PNFS_G", "")
G_WHY = os.environ.get("RC_PNFS_G_WHY", "no Ganesha data servers")
G_FAIL = os.environ.get("RC_PNFS_G_FAIL", "0") == "1"
RUNID = os.environ.get("RC_RUNID", "x")
OUT = os.environ.get("RC_OUT", "/rcout")
MiB = 1 << 20
UNIT = MiB   # --stripe-unit 1m
# An upper bound on waiting for the other guest or the host: their steps
# take seconds to a minute under TCG here (guest A's I/O checks before the
# recall about two); a guest that gives up posts its abort file, which
# ends the wait at once.
WAIT = float(os.environ.get("RC_BARRIER_TIMEOUT", "900"))

PLAN = [
    ("mount", "A"), ("mount", "B"),
    ("layout_io", "A"), ("mds_counters", "A"), ("ds_counters", "H"), ("stripes", "H"),
    ("ganesha_io", "A"), ("ganesha_mds_counters", "A"), ("ganesha_stripes", "H"),
    ("recall_truncate", "B"), ("recall_returned", "A"), ("recall_final", "A"), ("recall_final", "B"),
    ("recall_stripes", "H"),
    ("mirror_read", "A"), ("mirror_new_layout", "A"), ("mirror_mds_noticed", "H"), ("mirror_placement", "H"),
]

if __name__ == "__main__" and sys.argv[1:] == ["--plan"]:
    print("\n".join("v%s/%s/%s" % (v, r, n) for v in VERS for n, r in PLAN))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite as S  # noqa: E402  (run, drop_caches, save_mountstats)

# Steps: (name, rows this role reports, limit in seconds). A limit bounds a
# hang only: under TCG here layout_io takes well under a minute and the
# mirror step (with a failover) about half of one.
STEPS_A = [
    ("mount", ["mount"], 300),
    ("io_f", ["layout_io", "mds_counters"], 900),
    ("io_g", ["ganesha_io", "ganesha_mds_counters"], 900),
    ("recall", ["recall_returned", "recall_final"], 900),
    ("mirror", ["mirror_read", "mirror_new_layout"], 900),
]
STEPS_B = [
    ("mount", ["mount"], 300),
    ("recall", ["recall_truncate", "recall_final"], 2 * 900 + 900),
]

# Ops of the MDS mount that carry file data: with a layout they go to the
# data servers instead.
IO_OPS = ("READ", "WRITE", "COMMIT")
PNFS_READ_EV, PNFS_WRITE_EV = 25, 26   # NFSIOS_PNFS_READ/WRITE in "events:"


class Fail(Exception):
    pass


class Abort(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def sha(b):
    return hashlib.sha256(b).hexdigest()


# ---------------------------------------------------------------- results
def results_done():
    try:
        with open(os.path.join(OUT, "results.txt")) as f:
            return {l.split()[1].rstrip(":") for l in f if l.strip()}
    except OSError:
        return set()


def emit(status, vers, name, detail="", secs=None):
    line = "%s v%s/%s/%s" % (status, vers, ROLE, name)
    if detail:
        line += ": " + " ".join(str(detail).split())
    if secs is not None:
        line += " (%.1fs)" % secs
    print(line, flush=True)
    with open(os.path.join(OUT, "results.txt"), "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------- mountstats
def mountstats(mp):
    """The per-op counts, events, bytes and nfsv4 line of the mount at mp."""
    with open("/proc/self/mountstats") as f:
        text = f.read()
    blk = None
    for b in text.split("\ndevice "):
        if (" mounted on %s with fstype" % mp) in b:
            blk = b
    check(blk is not None, "no mountstats entry for %s" % mp)
    ms = {"ops": {}, "errs": {}, "events": [], "bytes": [], "nfsv4": "", "xprt": []}
    in_ops = False
    for line in blk.splitlines():
        s = line.strip()
        if s.startswith("events:"):
            ms["events"] = [int(x) for x in s.split()[1:]]
        elif s.startswith("bytes:"):
            ms["bytes"] = [int(x) for x in s.split()[1:]]
        elif s.startswith("nfsv4:"):
            ms["nfsv4"] = s
        elif s.startswith("xprt:"):
            ms["xprt"].append(s)
        elif s == "per-op statistics":
            in_ops = True
        elif in_ops and ":" in s:
            name, rest = s.split(":", 1)
            nums = rest.split()
            if nums and nums[0].isdigit():
                ms["ops"][name.strip()] = int(nums[0])
                if len(nums) >= 9:
                    ms["errs"][name.strip()] = int(nums[8])
    return ms


def delta(a, b):
    ops = {k: b["ops"].get(k, 0) - a["ops"].get(k, 0) for k in b["ops"]}
    ev = [y - x for x, y in zip(a["events"], b["events"])]
    by = [y - x for x, y in zip(a["bytes"], b["bytes"])]
    return ops, ev, by


def sends(ms):
    """RPCs sent on the mount's transports: mountstats shows only the
    MDS's ("xprt: tcp srcport bind_count connect_count connect_time
    idle_time sends recvs ...")."""
    return sum(int(x.split()[7]) for x in ms["xprt"] if len(x.split()) > 7)


class Traffic:
    """What the MDS mount's mountstats say of an interval. The 6.1
    flexfiles driver adds each READ, WRITE and COMMIT it sends to a data
    server to the MDS mount's per-op table (ff_layout_*_count_stats) and
    shows no data-server transport, so the per-op READ/WRITE/COMMIT count
    I/O wherever it went; what went to the MDS is told by its transport's
    sends, which the other ops account for."""

    # A few sends besides the ops counted: replies to callbacks, a NULL
    # ping on reconnect. Never close to the data I/O of a check.
    SLACK = 2

    def __init__(self, a, b):
        self.ops, self.ev, self.by = delta(a, b)
        self.io = {k: self.ops.get(k, 0) for k in IO_OPS}
        self.other = sum(n for k, n in self.ops.items() if k not in IO_OPS)
        self.sends = sends(b) - sends(a)
        self.pnfs_read = self.ev[PNFS_READ_EV] if len(self.ev) > PNFS_WRITE_EV else -1
        self.pnfs_write = self.ev[PNFS_WRITE_EV] if len(self.ev) > PNFS_WRITE_EV else -1
        self.errs = {k: b["errs"].get(k, 0) - a["errs"].get(k, 0) for k in b["errs"]}

    def io_off_mds(self):
        """Every READ/WRITE went through a layout, and none of the I/O
        crossed the MDS's connection."""
        return (self.io["READ"] == self.pnfs_read and self.io["WRITE"] == self.pnfs_write
                and self.sends <= self.other + self.SLACK)

    def say(self, *extra):
        return ("per-op READ +%d WRITE +%d COMMIT +%d, pnfs_read +%d pnfs_write +%d events; MDS connection: "
                "%d RPCs sent, the other ops %d (%s)%s" % (
                    self.io["READ"], self.io["WRITE"], self.io["COMMIT"], self.pnfs_read, self.pnfs_write,
                    self.sends, self.other,
                    "the I/O did not cross it" if self.sends <= self.other + self.SLACK else "I/O WENT TO THE MDS",
                    "".join("; %s +%d%s" % (k, self.ops.get(k, 0),
                                            " (%d errors)" % self.errs[k] if self.errs.get(k) else "")
                            for k in extra)))


def pnfs_driver(mp):
    line = mountstats(mp)["nfsv4"]
    for part in line.split(","):
        if part.startswith("pnfs="):
            return part[len("pnfs="):]
    return "(no pnfs= in %r)" % line


# ---------------------------------------------------------------- I/O helpers
def write_all(path, data, chunk=MiB, fsync=True):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        off = 0
        while off < len(data):
            off += os.write(fd, view[off:off + chunk])
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_all(path, chunk=MiB):
    out = bytearray()
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, chunk)
            if not b:
                break
            out += b
    finally:
        os.close(fd)
    return bytes(out)


def rate(n, secs):
    return "%.1f MiB/s" % (n / MiB / secs) if secs > 0 else "-"


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(0, n, 4096):
        if a[i:i + 4096] != b[i:i + 4096]:
            for j in range(i, min(i + 4096, n)):
                if a[j] != b[j]:
                    return j
    return n


# ---------------------------------------------------------------- context
class Ctx:
    def __init__(self, vers):
        self.vers = vers
        self.tag = "v" + vers.replace(".", "")
        self.mps = {}
        self.t_last = time.time()

    def mp(self, cluster):
        return "/mnt/%s%s" % (cluster.lower(), self.tag)

    def work(self, cluster):
        return os.path.join(self.mp(cluster), "pn-%s-%s" % (RUNID, self.tag))

    def res(self, name, ok, detail=""):
        assert (name, ROLE) in PLAN, name
        emit("PASS" if ok else "FAIL", self.vers, name, detail, time.time() - self.t_last)
        self.t_last = time.time()
        return ok

    def skip(self, name, why):
        emit("SKIP", self.vers, name, why)

    # ---- barriers with the other guest
    def _f(self, name, role):
        return os.path.join(SHARED, "%s-%s.%s" % (self.tag, name, role))

    def post(self, name, data=""):
        p = self._f(name, ROLE)
        with open(p + ".tmp", "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        os.rename(p + ".tmp", p)

    def check_abort(self):
        ab = self._f("abort", OTHER)
        if os.path.exists(ab):
            try:
                why = open(ab).read().strip()
            except OSError:
                why = "?"
            raise Abort("guest %s gave up: %s" % (OTHER, why))

    def wait(self, name, timeout=WAIT):
        p = self._f(name, OTHER)
        deadline = time.time() + timeout
        while not os.path.exists(p):
            self.check_abort()
            if time.time() > deadline:
                raise Abort("timed out after %.0fs waiting for guest %s at '%s'" % (timeout, OTHER, name))
            time.sleep(0.1)
        with open(p) as f:
            return f.read()

    # ---- requests to the host
    def ask(self, kind, timeout=300, **args):
        """Asks the host to do `kind` (snap, kill, noticed); its answer."""
        rid = "%s-%s-%s-%d" % (ROLE, self.tag, kind, int(time.time() * 1000))
        args["kind"] = kind
        args["vers"] = self.vers
        p = os.path.join(SHARED, "req-" + rid)
        with open(p + ".tmp", "w") as f:
            json.dump(args, f)
        os.rename(p + ".tmp", p)
        ack = os.path.join(SHARED, "ack-" + rid)
        deadline = time.time() + timeout
        while not os.path.exists(ack):
            if time.time() > deadline:
                raise Fail("the host did not answer request %s within %ds" % (rid, timeout))
            time.sleep(0.1)
        with open(ack) as f:
            return json.load(f)


def manifest_add(entry):
    """What the host checks on the data servers' disks afterwards."""
    with open(os.path.join(OUT, "manifest.jsonl"), "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()
        os.fsync(f.fileno())


def mount(c, cluster, port):
    mp = c.mp(cluster)
    os.makedirs(mp, exist_ok=True)
    opts = "vers=%s,port=%s" % (c.vers, port)
    # A mount takes a second or two under TCG; 90 s bounds a hang.
    cmd = ["timeout", "90", "mount", "-t", "nfs", "-o", opts, "%s:/" % HOST, mp]
    r = S.run(cmd)
    check(r.returncode == 0, "%s -> rc %d: %s" % (" ".join(cmd[3:]), r.returncode, r.stdout.strip()))
    c.mps[cluster] = mp
    return mp


def umount_all(c):
    for mp in c.mps.values():
        S.run(["timeout", "60", "umount", mp])


# ---------------------------------------------------------------- steps
def st_mount(c):
    """Both guests: F mounted, with the flexfiles layout driver."""
    mp = mount(c, "F", PORT_F)
    drv = pnfs_driver(mp)
    with open("/proc/mounts") as f:
        line = [l for l in f if (" %s " % mp) in l]
    got = [o for o in (line[0].split()[3].split(",") if line else []) if o.startswith("vers=")]
    ok = drv == "LAYOUT_FLEX_FILES" and got == ["vers=%s" % c.vers]
    if ROLE == "A" and ok:
        os.mkdir(c.work("F"))
        os.chmod(c.work("F"), 0o777)
    c.res("mount", ok, "%s:%s on %s: %s, pnfs=%s%s" % (
        HOST, PORT_F, mp, got[0] if got else "no vers=", drv,
        "" if drv == "LAYOUT_FLEX_FILES" else " (the client took no layout driver: no pNFS)"))


def io_checks(c, cluster, rows):
    """layout_io and mds_counters (or their ganesha_ twins) on `cluster`."""
    io_row, cnt_row = rows
    if cluster == "F":
        mp = c.mps["F"]
    else:
        mp = mount(c, cluster, PORT_G)
        os.mkdir(c.work(cluster))
    drv = pnfs_driver(mp)
    check(drv == "LAYOUT_FLEX_FILES", "%s: pnfs=%s: the client took no flexfiles layout driver" % (mp, drv))
    w = c.work(cluster)
    c.ask("snap", label="%s-%s-pre" % (cluster, c.tag), cluster=cluster)
    ms0 = mountstats(mp)
    # Several MiB each, none a whole number of stripes but the first; the
    # last written in 300 KiB write() calls, so that the client's WRITEs
    # straddle stripes (each layout segment is one stripe).
    files = [("a", 3 * MiB, MiB), ("b", 5 * MiB + 4097, MiB), ("c", 7 * MiB + 123, 300 * 1024)]
    srcs = {}
    t0 = time.time()
    total = 0
    for name, n, chunk in files:
        # dd if=/dev/urandom, without the shell: the same bytes source.
        with open("/dev/urandom", "rb") as u:
            data = u.read(n)
        srcs[name] = (sha(data), n)
        write_all(os.path.join(w, name), data, chunk=chunk)
        total += n
    os.sync()
    t_write = time.time() - t0
    S.drop_caches()
    t0 = time.time()
    bad = []
    rb_dir = os.path.join(OUT, "readback")
    os.makedirs(rb_dir, exist_ok=True)
    for name, n, _ in files:
        back = read_all(os.path.join(w, name))
        if sha(back) != srcs[name][0] or len(back) != n:
            bad.append("%s: read %d bytes, checksum %s, wrote %d bytes, checksum %s" % (
                name, len(back), sha(back)[:12], n, srcs[name][0][:12]))
        # The file as read back, for the host's byte-range comparisons
        # with each data server's data file.
        rb = "%s-%s-%s" % (c.tag, cluster, name)
        with open(os.path.join(rb_dir, rb), "wb") as f:
            f.write(back)
        manifest_add({"vers": c.vers, "cluster": cluster, "kind": "stripe",
                      "path": os.path.relpath(os.path.join(w, name), mp),
                      "size": n, "sha": srcs[name][0], "sha_read": sha(back), "readback": "readback/" + rb})
    t_read = time.time() - t0
    ms1 = mountstats(mp)
    c.ask("snap", label="%s-%s-post" % (cluster, c.tag), cluster=cluster)
    c.res(io_row, not bad, "; ".join(bad) if bad else
          "3 files (%s bytes) written with fsync (%s) and read back after drop_caches (%s) through %s:%s: "
          "checksums computed in the guest match" % (
              "+".join(str(n) for _, n, _ in files), rate(total, t_write), rate(total, t_read),
              HOST, PORT_F if cluster == "F" else PORT_G))
    t = Traffic(ms0, ms1)
    ok = t.io_off_mds() and t.io["READ"] > 0 and t.io["WRITE"] > 0 and t.ops.get("LAYOUTGET", 0) > 0
    c.res(cnt_row, ok,
          "during the I/O: %s; mountstats shows the MDS's transport alone (%d xprt line), and the 6.1 "
          "flexfiles driver counts the data servers' READ/WRITE/COMMIT in the MDS mount's per-op table, so "
          "its sends tell where they went (the host checks the data servers' own counters: ds_counters)" % (
              t.say("LAYOUTGET", "GETDEVICEINFO", "LAYOUTCOMMIT", "LAYOUTRETURN", "LAYOUTERROR"),
              len(ms1["xprt"])))


def st_io_f(c):
    io_checks(c, "F", ("layout_io", "mds_counters"))


def st_io_g(c):
    if not PORT_G:
        # Not run when asked not to (SKIP), but a Ganesha that was to run
        # and could not start is a failure.
        for n in ("ganesha_io", "ganesha_mds_counters"):
            if G_FAIL:
                c.res(n, False, G_WHY)
            else:
                c.skip(n, G_WHY)
        return
    io_checks(c, "G", ("ganesha_io", "ganesha_mds_counters"))


RECALL_T = MiB + 4321          # B truncates to this
RECALL_CHUNK = 512 * 1024
RECALL_BEFORE = 6              # chunks A writes before B's truncate (3 MiB)
RECALL_AFTER = 2               # chunks A writes at 3 MiB after it


def recall_pattern(seed):
    return random.Random(seed).randbytes((RECALL_BEFORE + RECALL_AFTER) * RECALL_CHUNK)


def recall_expected(p):
    end = RECALL_BEFORE * RECALL_CHUNK
    return p[:RECALL_T] + bytes(end - RECALL_T) + p[end:]


def st_recall(c):
    w = c.work("F")
    path = os.path.join(w, "recall")
    mp = c.mps["F"]
    if ROLE == "A":
        seed = random.getrandbits(64)
        p = recall_pattern(seed)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            # Written and synced chunk by chunk through RW layouts, which
            # A's client keeps while the file stays open.
            for i in range(RECALL_BEFORE):
                os.pwrite(fd, p[i * RECALL_CHUNK:(i + 1) * RECALL_CHUNK], i * RECALL_CHUNK)
                os.fsync(fd)
            ms0 = mountstats(mp)
            c.ask("snap", label="R-%s-pre" % c.tag, cluster="F")
            c.post("recall-ready", {"seed": seed})
            c.wait("truncated")
            ms1 = mountstats(mp)
            end = RECALL_BEFORE * RECALL_CHUNK
            t0 = time.time()
            for i in range(RECALL_AFTER):
                os.pwrite(fd, p[end + i * RECALL_CHUNK:end + (i + 1) * RECALL_CHUNK], end + i * RECALL_CHUNK)
            os.fsync(fd)
            t_after = time.time() - t0
        finally:
            os.close(fd)
        ms2 = mountstats(mp)
        c.ask("snap", label="R-%s-post" % c.tag, cluster="F")
        t1, t2 = Traffic(ms0, ms1), Traffic(ms1, ms2)
        returned = t1.ops.get("LAYOUTRETURN", 0)
        ok = returned >= 1 and t2.ops.get("LAYOUTGET", 0) >= 1 and t2.io_off_mds() and t2.io["WRITE"] >= 1
        c.res("recall_returned", ok,
              "while B truncated the file A holds open with RW layouts, A's client sent LAYOUTRETURN +%d "
              "(answering the recall); A's writes after it (%d bytes with fsync, %.1fs): %s" % (
                  returned, RECALL_AFTER * RECALL_CHUNK, t_after,
                  t2.say("LAYOUTGET", "LAYOUTCOMMIT", "LAYOUTRETURN")))
        exp = recall_expected(p)
        S.drop_caches()
        back = read_all(path)
        manifest_add({"vers": c.vers, "cluster": "F", "kind": "recall", "path": os.path.relpath(path, mp),
                      "size": len(exp), "sha": sha(exp), "sha_read": sha(back), "truncated_to": RECALL_T,
                      "rewritten_from": RECALL_BEFORE * RECALL_CHUNK})
        c.post("final")
        c.res("recall_final", back == exp,
              "A reads %d bytes: its first %d, zeros to %d (truncated away by B), its last %d" % (
                  len(exp), RECALL_T, RECALL_BEFORE * RECALL_CHUNK, RECALL_AFTER * RECALL_CHUNK)
              if back == exp else "A read %d bytes, expected %d; first difference at %d" % (
                  len(back), len(exp), first_diff(back, exp)))
        c.wait("recall-done")
        return
    # ---- B
    info = json.loads(c.wait("recall-ready"))
    p = recall_pattern(info["seed"])
    st = os.stat(path)
    t0 = time.time()
    os.truncate(path, RECALL_T)
    dt = time.time() - t0
    size = os.stat(path).st_size
    S.drop_caches()
    msb0 = mountstats(c.mps["F"])
    t0 = time.time()
    back = read_all(path)
    t_read = time.time() - t0
    tb = Traffic(msb0, mountstats(c.mps["F"]))
    c.post("truncated")
    ok = st.st_size == RECALL_BEFORE * RECALL_CHUNK and size == RECALL_T and back == p[:RECALL_T]
    c.res("recall_truncate", ok,
          "B saw %d bytes, truncated to %d in %.2fs while A held RW layouts (the MDS recalled them), "
          "then stat says %d and B reads (in %.1fs) %s" % (
              st.st_size, RECALL_T, dt, size, t_read,
              ("A's first %d bytes" % RECALL_T if back == p[:RECALL_T] else
               "%d bytes differing at %d" % (len(back), first_diff(back, p[:RECALL_T])))
              + " (B's read: %s)" % tb.say("LAYOUTGET")))
    c.wait("final")
    exp = recall_expected(p)
    S.drop_caches()
    back = read_all(path)
    c.res("recall_final", back == exp,
          "B reads what A wrote after the truncate (%d bytes, zeros from %d to %d)" % (
              len(exp), RECALL_T, RECALL_BEFORE * RECALL_CHUNK)
          if back == exp else "B read %d bytes, expected %d; first difference at %d" % (
              len(back), len(exp), first_diff(back, exp)))
    c.post("recall-done")


MIRROR_SIZE = 12 * MiB
MIRROR_BEFORE_KILL = 4         # MiB read before the host kills a data server
MIRROR_NEW = 4 * MiB + 555


def st_mirror(c):
    cluster = "M" + c.tag[1:]
    port = os.environ.get("RC_PNFS_" + cluster, "")
    check(port, "no mirrored cluster %s" % cluster)
    mp = mount(c, cluster, port)
    w = c.work(cluster)
    os.mkdir(w)
    drv = pnfs_driver(mp)
    check(drv == "LAYOUT_FLEX_FILES", "%s: pnfs=%s" % (mp, drv))
    with open("/dev/urandom", "rb") as u:
        x = u.read(MIRROR_SIZE)
    px = os.path.join(w, "x")
    write_all(px, x)
    S.drop_caches()
    c.ask("snap", label="%s-pre" % cluster, cluster=cluster)
    ms0 = mountstats(mp)
    fd = os.open(px, os.O_RDONLY)
    got = bytearray()
    try:
        # No readahead: each read() is one READ of 1 MiB, so the reads
        # after the kill are still to be done when it happens.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for _ in range(MIRROR_BEFORE_KILL):
            got += os.read(fd, MiB)
        ack = c.ask("kill", label="%s-pre" % cluster, cluster=cluster)
        check(ack.get("killed"), "the host killed no data server: %s" % ack)
        t0 = time.time()
        while True:
            b = os.read(fd, MiB)
            if not b:
                break
            got += b
        t_rest = time.time() - t0
    finally:
        os.close(fd)
    ms1 = mountstats(mp)
    after = c.ask("snap", label="%s-post" % cluster, cluster=cluster)
    t = Traffic(ms0, ms1)
    ok = bytes(got) == x
    c.res("mirror_read", ok,
          "%d MiB read 1 MiB at a time, %d MiB of it before the host killed %s (%s; %s); the rest took %.1fs "
          "and the bytes are right; %s" % (
              MIRROR_SIZE // MiB, MIRROR_BEFORE_KILL, ack["killed"], ack.get("addr"), ack.get("why"), t_rest,
              t.say("LAYOUTGET", "LAYOUTRETURN", "LAYOUTERROR", "GETDEVICEINFO"))
          if ok else "read %d bytes, first difference at %d" % (len(got), first_diff(bytes(got), x)))
    del after
    manifest_add({"vers": c.vers, "cluster": cluster, "kind": "mirror", "path": os.path.relpath(px, mp),
                  "size": len(x), "sha": sha(x), "sha_read": sha(bytes(got)), "killed": ack["killed"]})
    # The MDS hears of the failure from the client (NFSv4.2: LAYOUTERROR at
    # once; NFSv4.1 has no LAYOUTERROR: the errors come in a LAYOUTRETURN,
    # later) or from its own calls to that server. What its log says by
    # now is reported; the verdict is the host's (mirror_mds_noticed, from
    # the whole log, and mirror_placement).
    noticed = c.ask("noticed", cluster=cluster, ds=ack["killed"], wait=5, timeout=200)
    with open("/dev/urandom", "rb") as u:
        y = u.read(MIRROR_NEW)
    py = os.path.join(w, "y")
    c.ask("snap", label="%s-y-pre" % cluster, cluster=cluster)
    ms2 = mountstats(mp)
    t0 = time.time()
    write_all(py, y)
    t_write = time.time() - t0
    S.drop_caches()
    back = read_all(py)
    ms3 = mountstats(mp)
    c.ask("snap", label="%s-y-post" % cluster, cluster=cluster)
    t = Traffic(ms2, ms3)
    # The layout may come with the OPEN that creates the file (Linux sends
    # OPEN+LAYOUTGET in one compound): the host counts the MDS's LAYOUTGETs.
    ok = back == y and t.io_off_mds() and t.io["WRITE"] >= 1
    c.res("mirror_new_layout", ok,
          "the MDS's log %ds after the kill: %s; then a new file of %d bytes written with fsync in %.1fs and "
          "read back: %s; %s (its layout named the live server alone: the host checks where its bytes are, "
          "mirror_placement)" % (
              5, noticed.get("what", noticed), len(y), t_write, "bytes right" if back == y else "bytes WRONG",
              t.say("OPEN", "LAYOUTGET", "GETDEVICEINFO", "LAYOUTERROR", "LAYOUTRETURN")))
    manifest_add({"vers": c.vers, "cluster": cluster, "kind": "mirror-new", "path": os.path.relpath(py, mp),
                  "size": len(y), "sha": sha(y), "sha_read": sha(back), "killed": ack["killed"]})


STEP_FNS = {"mount": st_mount, "io_f": st_io_f, "io_g": st_io_g, "recall": st_recall, "mirror": st_mirror}


def run_step(c, name, rows, limit):
    """Runs step `name` in a forked child (SIGKILL ends a hung NFS call);
    rows it did not report fail with the reason. True if it ended cleanly."""
    t0 = time.time()
    c.t_last = t0
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        why = ""
        try:
            STEP_FNS[name](c)
        except (Fail, Abort) as e:
            why = str(e)
        except OSError as e:
            tb = traceback.extract_tb(e.__traceback__)
            why = "unexpected %s at line %d" % (e, tb[-1].lineno if tb else 0)
        except BaseException as e:  # noqa
            traceback.print_exc()
            why = "exception %r" % e
        sys.stdout.flush()
        os.write(w, why.encode() or b"ok")
        os._exit(0)
    os.close(w)
    import select
    data = b""
    deadline = t0 + limit
    while True:
        left = deadline - time.time()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            data = b"timed out after %ds (killed)" % limit
            break
        rd, _, _ = select.select([r], [], [], min(left, 5))
        if rd:
            b = os.read(r, 65536)
            if not b:
                break
            data += b
    os.close(r)
    os.waitpid(pid, 0)
    why = data.decode() if data else "step process died without a result"
    if why == "ok":
        return True
    done = results_done()
    first = True
    for n in rows:
        if "v%s/%s/%s" % (c.vers, ROLE, n) not in done:
            emit("FAIL", c.vers, n, why if first else "not run: " + why, time.time() - t0)
            first = False
    return False


def main():
    os.makedirs(OUT, exist_ok=True)
    t_all = time.time()
    print("pnfs guest %s: versions %s, MDS %s (F %s, G %s, M41 %s, M42 %s)" % (
        ROLE, ",".join(VERS), HOST, PORT_F, PORT_G or "-", os.environ.get("RC_PNFS_M41", "-"),
        os.environ.get("RC_PNFS_M42", "-")), flush=True)
    # The layout driver loads by itself on the first mount (request_module);
    # loaded here so that a missing module is said plainly.
    r = S.run(["modprobe", "nfs_layout_flexfiles"])
    if r.returncode != 0:
        print("    modprobe nfs_layout_flexfiles: rc %d %s" % (r.returncode, r.stdout.strip()), flush=True)
    for v in VERS:
        c = Ctx(v)
        ok_mount = True
        for name, rows, limit in (STEPS_A if ROLE == "A" else STEPS_B):
            if not ok_mount:
                for n in rows:
                    emit("FAIL", v, n, "not run: the mount failed")
                continue
            ok = run_step(c, name, rows, limit)
            if not ok and name in ("mount", "recall"):
                # The other guest waits for this one only in these steps.
                c.post("abort", "step %s failed" % name)
            if not ok and name == "mount":
                ok_mount = False
            if name == "mount":
                # c.mps lives in the child: note the mount here too.
                c.mps["F"] = c.mp("F")
                if ROLE == "A":
                    for cl in ("G", "M" + c.tag[1:]):
                        c.mps[cl] = c.mp(cl)
        try:
            S.save_mountstats(c.tag, [mp for mp in c.mps.values() if os.path.ismount(mp)])
        except OSError as e:
            print("    mountstats not saved: %s" % e, flush=True)
        umount_all(c)
    print("pnfs guest %s finished in %.1fs" % (ROLE, time.time() - t_all), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
