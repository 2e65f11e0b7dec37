#!/usr/bin/env python3
"""The host's side of tests/realclient/pnfs.sh: requests from the guests
(statistics snapshots, killing a data server, waiting for the metadata
server to notice), and, after the guests are done, the host's checks (rows
of role H): the data servers' disks, their counters and the metadata
server's log.

  pnfs_check.py request CLUSTERS.json OUT REQFILE   answers one request (JSON on stdout)
  pnfs_check.py verify  CLUSTERS.json OUT VERS      prints the host's rows

CLUSTERS.json (written by pnfs.sh) names, for each cluster (F, G, M41,
M42), its metadata server and data servers: their kind (ferrite or
ganesha), export directory, state directory, log, pid file and address,
and the cluster's stripe unit and mirrors. `ferrite stat` is FERRITE_BIN.

Placement being checked (crates/server/src/pnfs/datafiles.rs): stripe k
of a file whose first data server is b lives on data servers
(b + k + m) mod N for mirrors m; each data server's data file
"ferrite-<tag>.<hex handle>" in its export's top directory holds its
stripes at the file's own offsets, zeros (holes) elsewhere.
"""
import hashlib
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time

BIN = os.environ.get("FERRITE_BIN", "ferrite")


def sha(b):
    return hashlib.sha256(b).hexdigest()


def load(path):
    with open(path) as f:
        return json.load(f)


# ------------------------------------------------------------ ferrite stat
def stat_json(server):
    r = subprocess.run([BIN, "stat", "--state-dir", server["state"], "--json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}
    return json.loads(r.stdout)


def op_count(report, program, op):
    for p in report.get("programs", []):
        if p["name"] == program:
            for o in p["ops"]:
                if o["name"] == op:
                    return o["count"]
    return 0


def op_statuses(report, program, op):
    for p in report.get("programs", []):
        if p["name"] == program:
            for o in p["ops"]:
                if o["name"] == op:
                    return dict(o.get("statuses", []))
    return {}


def snap_delta(out, pre, post, name, program, op):
    """How many more `op` a server answered between two snapshots, and
    its non-OK statuses."""
    a, b = read_snap(out, pre, name), read_snap(out, post, name)
    sa, sb = op_statuses(a, program, op), op_statuses(b, program, op)
    st = {k: n - sa.get(k, 0) for k, n in sb.items() if n - sa.get(k, 0)}
    return op_count(b, program, op) - op_count(a, program, op), st


def host_calls(report):
    return {h["address"]: h["calls"] for h in report.get("hosts", [])}


def ferrite_servers(cl):
    return [cl["mds"]] + [d for d in cl["ds"] if d["kind"] == "ferrite"]


def snap_path(out, label, name):
    return os.path.join(out, "snap", label, name + ".json")


def snap(cl, out, label):
    os.makedirs(os.path.join(out, "snap", label), exist_ok=True)
    for s in ferrite_servers(cl):
        with open(snap_path(out, label, s["name"]), "w") as f:
            json.dump(stat_json(s), f)


def read_snap(out, label, name):
    try:
        return load(snap_path(out, label, name))
    except OSError:
        return {}


# ------------------------------------------------------------ processes
def pid_of(server):
    """The server's pid, if it is alive and ours (its command line names
    its state directory)."""
    try:
        pid = int(open(server["pidfile"]).read().strip())
        cmd = open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0")
    except (OSError, ValueError):
        return None
    if server["state"].encode() not in cmd:
        return None
    try:
        st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
    return None if st == "Z" else pid


def kill(cl, out, label):
    """SIGKILLs the data server that served the most NFSv3 READs since the
    snapshot `label` (the one the client is reading from)."""
    deltas = []
    for d in cl["ds"]:
        before = op_count(read_snap(out, label, d["name"]), "NFSv3", "READ")
        now = op_count(stat_json(d), "NFSv3", "READ")
        deltas.append((now - before, d))
    deltas.sort(key=lambda t: -t[0])
    n, d = deltas[0]
    why = ", ".join("%s NFSv3 READ +%d" % (x["name"], k) for k, x in deltas)
    pid = pid_of(d)
    if pid is None:
        return {"killed": None, "why": "%s is not running (%s)" % (d["name"], why)}
    os.kill(pid, signal.SIGKILL)
    # It is gone as soon as the kernel has reaped it: well under a second;
    # 60 s bounds the wait.
    end = time.time() + 60
    while pid_of(d) is not None and time.time() < end:
        time.sleep(0.05)
    rec = {"killed": d["name"], "addr": d["addr"], "why": why, "at": time.time()}
    with open(os.path.join(out, "killed-%s.json" % cl["name"]), "w") as f:
        json.dump(rec, f)
    return rec


NOTICE = (
    ("LAYOUTERROR/ff_ioerr", re.compile(r"a client reports I/O errors")),
    ("data server down", re.compile(r"data server down")),
)


def noticed_lines(cl, addr):
    """The metadata server's log lines saying it noticed data server `addr`
    failing: a client's report (LAYOUTERROR or the ff_ioerr4 of a
    LAYOUTRETURN), or its own marking the server down."""
    try:
        with open(cl["mds"]["log"], errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    found = {}
    for l in lines:
        if addr not in l:
            continue
        for what, rx in NOTICE:
            if rx.search(l):
                found.setdefault(what, []).append(l.strip())
    return found


def noticed(cl, ds_name, limit):
    """What the MDS's log says of data server `ds_name` within `limit`
    seconds (at once if it says it is down). An NFSv4.2 client reports
    the failure at once (LAYOUTERROR) and the probe that follows marks the
    server down within a call timeout (10 s); an NFSv4.1 client only when
    it returns the layout, and the MDS finds out by itself only when it
    next calls that server: then nothing by the end of the wait, which
    decides nothing (the host's rows look at the whole log later)."""
    d = [x for x in cl["ds"] if x["name"] == ds_name][0]
    end = time.time() + limit
    while True:
        f = noticed_lines(cl, d["addr"])
        if "data server down" in f or time.time() > end:
            break
        time.sleep(0.2)
    return {"what": ", ".join("%s (%d lines)" % (k, len(v)) for k, v in f.items()) or
            "nothing in the MDS log within %ds" % limit, "lines": {k: v[:3] for k, v in f.items()}}


def request(clusters, out, reqfile):
    req = load(reqfile)
    cl = clusters[req["cluster"]]
    if req["kind"] == "snap":
        snap(cl, out, req["label"])
        return {"ok": True}
    if req["kind"] == "kill":
        return kill(cl, out, req["label"])
    if req["kind"] == "noticed":
        return noticed(cl, req["ds"], float(req.get("wait", 15)))
    return {"error": "unknown request %r" % req["kind"]}


# ------------------------------------------------------------ data files
NAME = re.compile(r"^ferrite-([0-9a-f]{8})\.([0-9a-f]+)$")


def data_files(ds_export):
    """hex handle -> data file path, in one data server's export."""
    out = {}
    for n in os.listdir(ds_export):
        m = NAME.match(n)
        if m:
            out[m.group(2)] = os.path.join(ds_export, n)
    return out


def ino_of_handle(hexh):
    """The inode number in a Ferrite handle of a file on ext4: the kernel
    handle [type u32 BE][ino u32 LE][generation u32 LE] (FILEID_INO32_GEN),
    then the 8-byte root tag (crates/vfs/src/local.rs); None otherwise."""
    b = bytes.fromhex(hexh)
    if len(b) == 4 + 8 + 8 and struct.unpack(">I", b[:4])[0] == 1:
        return struct.unpack("<I", b[4:8])[0]
    return None


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def piece_of(d, lo, hi):
    """Bytes [lo, hi) of a data file's contents `d` (None: no data file),
    zeros past its end."""
    p = (d or b"")[lo:hi]
    return p + bytes(hi - lo - len(p))


def hole_at(path, start, end):
    """Whether [start, end) of path is a hole (no data allocated)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            d = os.lseek(fd, start, os.SEEK_DATA)
        except OSError:
            return True   # ENXIO: no data after start
        return d >= end
    finally:
        os.close(fd)


def find_data(cl, entry, mds_path):
    """hex handle of the file's data files, and how it was found."""
    ino = os.stat(mds_path).st_ino
    per_ds = [data_files(d["export"]) for d in cl["ds"]]
    hexes = set().union(*[set(p) for p in per_ds])
    by_ino = [h for h in hexes if ino_of_handle(h) == ino]
    if len(by_ino) == 1:
        return by_ino[0], per_ds, "by inode %d" % ino
    return None, per_ds, "no data file named for inode %d" % ino


def stripe_check(cl, out, entry):
    """Errors (empty: fine) and a summary for one striped file."""
    U, N, M = cl["stripe_unit"], len(cl["ds"]), cl["mirrors"]
    mds_path = os.path.join(cl["mds"]["export"], entry["path"])
    size = entry["size"]
    errs = []
    st = os.stat(mds_path)
    if st.st_size != size:
        errs.append("MDS file %s is %d bytes, not %d" % (entry["path"], st.st_size, size))
    mds_alloc = st.st_blocks * 512
    hexh, per_ds, how = find_data(cl, entry, mds_path)
    if hexh is None:
        return [how], ""
    ds_bytes = [read_bytes(p[hexh]) if hexh in p else None for p in per_ds]
    rb = read_bytes(os.path.join(out, "a", "guest", entry["readback"])) if entry.get("readback") else None
    if rb is not None and sha(rb) != entry["sha"]:
        errs.append("the guest's read-back copy differs from what it wrote")
    stripes = (size + U - 1) // U
    ranges = [(k * U, min((k + 1) * U, size)) for k in range(stripes)]
    # The file as read back: the guest's copy, or (the recall file) the
    # data servers' stripes reassembled, if they give the guest's checksum.
    base = None
    for b in range(N):
        if rb is not None:
            ok = all(piece_of(ds_bytes[(b + k + m) % N], lo, hi) == rb[lo:hi]
                     for k, (lo, hi) in enumerate(ranges) for m in range(M))
        else:
            r = b"".join(piece_of(ds_bytes[(b + k) % N], lo, hi) for k, (lo, hi) in enumerate(ranges))
            ok = sha(r) == entry["sha"] and all(
                piece_of(ds_bytes[(b + k + m) % N], lo, hi) == r[lo:hi]
                for k, (lo, hi) in enumerate(ranges) for m in range(1, M))
        if ok:
            base = b
            break
    if base is None:
        errs.append("no first data server b makes stripe k of %s = data server (b+k+m) mod %d's bytes [kU, (k+1)U) "
                    "(data files: %s)" % (entry["path"], N, ", ".join(
                        "%s %s" % (cl["ds"][i]["name"], "absent" if d is None else "%d bytes" % len(d))
                        for i, d in enumerate(ds_bytes))))
        return errs, ""
    # Elsewhere: zeros, and holes.
    zeros_bad, holes, others = [], 0, 0
    for i, d in enumerate(ds_bytes):
        if d is None:
            continue
        if len(d) > size:
            errs.append("%s's data file is %d bytes, past the file's %d" % (cl["ds"][i]["name"], len(d), size))
        for k in range(stripes):
            if i in [(base + k + m) % N for m in range(M)]:
                continue
            lo, hi = k * U, min((k + 1) * U, size)
            others += 1
            if any(d[lo:hi]):
                zeros_bad.append("%s [%d,%d)" % (cl["ds"][i]["name"], lo, hi))
            elif hole_at(per_ds[i][hexh], lo, hi):
                holes += 1
    if zeros_bad:
        errs.append("bytes where another data server's stripes are: " + ", ".join(zeros_bad[:4]))
    summary = "%s (%d bytes, %d stripes, data files %s, first on %s, %s): each holds its stripes at the file's " \
              "offsets%s, zeros in the other %d ranges (%d of them holes); the MDS's file has %d bytes allocated" % (
                  entry["path"].split("/")[-1], size, stripes,
                  "/".join("absent" if d is None else str(len(d)) for d in ds_bytes), cl["ds"][base]["name"], how,
                  " = the guest's read-back copy" if rb is not None else " (reassembled: the guest's checksum)",
                  others, holes, mds_alloc)
    return errs, summary


# ------------------------------------------------------------ host rows
class Rows:
    def __init__(self):
        self.lines = []

    def add(self, vers, name, ok, detail):
        st = "PASS" if ok is True else "FAIL" if ok is False else "SKIP"
        line = "%s v%s/H/%s: %s" % (st, vers, name, " ".join(str(detail).split()))
        self.lines.append(line)
        print(line, flush=True)


def manifest(out):
    entries = []
    try:
        with open(os.path.join(out, "a", "guest", "manifest.jsonl")) as f:
            for l in f:
                if l.strip():
                    entries.append(json.loads(l))
    except OSError:
        pass
    return entries


def row_stripes(rows, clusters, out, v, name, cluster, kind, entries):
    es = [e for e in entries if e["vers"] == v and e["cluster"] == cluster and e["kind"] == kind]
    if not es:
        rows.add(v, name, False, "no file of the guest's to check (its step failed?)")
        return
    errs, sums = [], []
    for e in es:
        er, s = stripe_check(clusters[cluster], out, e)
        errs += er
        if s:
            sums.append(s)
    if kind == "recall":
        e = es[0]
        cl = clusters[cluster]
        hexh, per_ds, _ = find_data(cl, e, os.path.join(cl["mds"]["export"], e["path"]))
        lo, hi = e["truncated_to"], e["rewritten_from"]
        nonzero = [cl["ds"][i]["name"] for i, p in enumerate(per_ds)
                   if hexh in p and any(piece_of(read_bytes(p[hexh]), lo, hi))]
        if nonzero:
            errs.append("bytes in the truncated range [%d,%d) on %s" % (lo, hi, ", ".join(nonzero)))
        sums.append("truncated range [%d,%d) zero on every data server" % (lo, hi))
        tag = "v" + v.replace(".", "")
        mds = clusters[cluster]["mds"]["name"]
        ops = []
        for op in ("LAYOUTGET", "LAYOUTRETURN", "LAYOUTCOMMIT", "SETATTR", "WRITE"):
            n, st = snap_delta(out, "R-%s-pre" % tag, "R-%s-post" % tag, mds, "NFSv4", op)
            ops.append("%s +%d%s" % (op, n, " %s" % st if st else ""))
        sums.append("the MDS during the recall and A's writes after it: " + ", ".join(ops))
    rows.add(v, name, not errs, "; ".join(errs) if errs else " | ".join(sums))


def ds_counter_detail(cl, out, pre, post):
    parts, ok = [], True
    reads = writes = commits = 0
    for d in cl["ds"]:
        a, b = read_snap(out, pre, d["name"]), read_snap(out, post, d["name"])
        r = op_count(b, "NFSv3", "READ") - op_count(a, "NFSv3", "READ")
        w = op_count(b, "NFSv3", "WRITE") - op_count(a, "NFSv3", "WRITE")
        c = op_count(b, "NFSv3", "COMMIT") - op_count(a, "NFSv3", "COMMIT")
        hb, ha = host_calls(b), host_calls(a)
        who = ", ".join("%s +%d" % (h, n - ha.get(h, 0)) for h, n in sorted(hb.items()) if n - ha.get(h, 0))
        parts.append("%s: NFSv3 READ +%d WRITE +%d COMMIT +%d (calls by address: %s)" % (d["name"], r, w, c, who))
        reads, writes, commits = reads + r, writes + w, commits + c
        ok = ok and w > 0
    return ok and reads > 0 and commits > 0, parts


def mds_io_detail(cl, out, pre, post):
    a, b = read_snap(out, pre, cl["mds"]["name"]), read_snap(out, post, cl["mds"]["name"])
    d = {op: op_count(b, "NFSv4", op) - op_count(a, "NFSv4", op) for op in
         ("READ", "WRITE", "COMMIT", "LAYOUTGET", "GETDEVICEINFO", "LAYOUTCOMMIT", "LAYOUTRETURN")}
    ok = d["READ"] == 0 and d["WRITE"] == 0 and d["COMMIT"] == 0 and d["LAYOUTGET"] > 0
    return ok, "MDS (ferrite stat): NFSv4 " + " ".join("%s +%d" % kv for kv in d.items())


def verify(clusters, out, vers):
    rows = Rows()
    entries = manifest(out)
    for v in vers:
        tag = "v" + v.replace(".", "")
        # Point 2 from the servers' side: the data servers' own counters.
        if os.path.isdir(os.path.join(out, "snap", "F-%s-post" % tag)):
            ok1, parts = ds_counter_detail(clusters["F"], out, "F-%s-pre" % tag, "F-%s-post" % tag)
            ok2, mds = mds_io_detail(clusters["F"], out, "F-%s-pre" % tag, "F-%s-post" % tag)
            rows.add(v, "ds_counters", ok1 and ok2, "during layout_io: " + "; ".join(parts) + "; " + mds)
        else:
            rows.add(v, "ds_counters", False, "no statistics snapshots (the guest's layout_io did not run)")
        row_stripes(rows, clusters, out, v, "stripes", "F", "stripe", entries)
        if "G" in clusters:
            if os.path.isdir(os.path.join(out, "snap", "G-%s-post" % tag)):
                ok2, mds = mds_io_detail(clusters["G"], out, "G-%s-pre" % tag, "G-%s-post" % tag)
            else:
                ok2, mds = False, "no statistics snapshots"
            es = [e for e in entries if e["vers"] == v and e["cluster"] == "G"]
            if es:
                errs, sums = [], []
                for e in es:
                    er, s = stripe_check(clusters["G"], out, e)
                    errs += er
                    sums += [s] if s else []
                rows.add(v, "ganesha_stripes", not errs and ok2,
                         "; ".join(errs + ([] if ok2 else [mds])) if errs or not ok2 else " | ".join(sums) + "; " + mds)
            else:
                rows.add(v, "ganesha_stripes", False, "no file of the guest's to check (its step failed?)")
        else:
            rows.add(v, "ganesha_stripes", False if os.environ.get("RC_PNFS_G_FAIL") == "1" else None,
                     os.environ.get("RC_PNFS_G_WHY", "no Ganesha data servers"))
        row_stripes(rows, clusters, out, v, "recall_stripes", "F", "recall", entries)
        m = "M" + tag[1:]
        cl = clusters.get(m)
        killed = None
        try:
            killed = load(os.path.join(out, "killed-%s.json" % m))
        except OSError:
            pass
        if cl is None or not killed:
            rows.add(v, "mirror_mds_noticed", False, "no data server was killed (the guest's mirror step failed?)")
            rows.add(v, "mirror_placement", False, "no data server was killed")
            continue
        f = noticed_lines(cl, killed["addr"])
        rep = stat_json(cl["mds"])
        lerr, lret = op_count(rep, "NFSv4", "LAYOUTERROR"), op_count(rep, "NFSv4", "LAYOUTRETURN")
        rows.add(v, "mirror_mds_noticed", bool(f),
                 "MDS log on %s (%s, killed): %s; MDS served LAYOUTERROR %d, LAYOUTRETURN %d in all" % (
                     killed["killed"], killed["addr"],
                     "; ".join("%s: %s" % (k, l[0][-160:]) for k, l in f.items()) or "nothing", lerr, lret))
        # Placement: the file read during the kill on both mirrors; the file
        # written after it only on the live one.
        errs, sums = [], []
        for e in [e for e in entries if e["vers"] == v and e["cluster"] == m]:
            mds_path = os.path.join(cl["mds"]["export"], e["path"])
            hexh, per_ds, how = find_data(cl, e, mds_path)
            if hexh is None:
                errs.append("%s: %s" % (e["path"], how))
                continue
            for i, d in enumerate(cl["ds"]):
                b = read_bytes(per_ds[i][hexh]) if hexh in per_ds[i] else None
                dead = d["name"] == killed["killed"]
                if e["kind"] == "mirror":
                    if b is None or sha(b) != e["sha"]:
                        errs.append("%s on %s: %s, not the whole file" % (
                            e["path"], d["name"], "absent" if b is None else "%d bytes" % len(b)))
                elif dead:
                    if b is not None and any(b):
                        errs.append("%s has bytes on the dead %s" % (e["path"], d["name"]))
                    else:
                        sums.append("%s: no data file on the dead %s" % (e["path"].split("/")[-1], d["name"]))
                else:
                    if b is None or sha(b) != e["sha"]:
                        errs.append("%s on the live %s: %s" % (
                            e["path"], d["name"], "absent" if b is None else "%d bytes, wrong" % len(b)))
                    else:
                        sums.append("%s: all %d bytes on the live %s" % (e["path"].split("/")[-1], len(b), d["name"]))
            if e["kind"] == "mirror" and not errs:
                sums.append("%s: both mirrors hold all %d bytes" % (e["path"].split("/")[-1], e["size"]))
        reads = []
        for d in cl["ds"]:
            n, _ = snap_delta(out, "%s-pre" % m, "%s-post" % m, d["name"], "NFSv3", "READ")
            reads.append("%s %s" % (d["name"], "killed" if d["name"] == killed["killed"] else "+%d" % n))
        sums.append("NFSv3 READs served during the read of x: %s (at the kill: %s)" % (", ".join(reads), killed["why"]))
        ops = []
        for op in ("OPEN", "LAYOUTGET", "LAYOUTRETURN", "LAYOUTERROR", "WRITE", "READ"):
            n, st = snap_delta(out, "%s-y-pre" % m, "%s-y-post" % m, cl["mds"]["name"], "NFSv4", op)
            ops.append("%s +%d%s" % (op, n, " %s" % st if st else ""))
        sums.append("the MDS while y was written and read: " + ", ".join(ops))
        behind = sorted(os.listdir(os.path.join(cl["mds"]["state"], "pnfs"))) \
            if os.path.isdir(os.path.join(cl["mds"]["state"], "pnfs")) else []
        rows.add(v, "mirror_placement", not errs and bool(sums),
                 "; ".join(errs) if errs else "; ".join(sums) + "; MDS state dir pnfs/: %s" % (
                     ", ".join(behind) or "empty"))
    return rows


def main():
    cmd, clusters_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    clusters = load(clusters_path)
    for k, c in clusters.items():
        c["name"] = k
    if cmd == "request":
        print(json.dumps(request(clusters, out, sys.argv[4])))
    elif cmd == "verify":
        rows = verify(clusters, out, [v for v in sys.argv[4].split(",") if v])
        with open(os.path.join(out, "host-results.txt"), "w") as f:
            f.write("\n".join(rows.lines) + "\n")
    else:
        sys.exit("usage: pnfs_check.py request|verify CLUSTERS.json OUT ...")


if __name__ == "__main__":
    main()
