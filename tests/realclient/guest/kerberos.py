#!/usr/bin/env python3
"""Kerberos scenarios (run.sh --suite kerberos; tests/realclient-kerberos.sh).

The host runs a KDC (realm FERRITE.TEST) on its loopback, which this guest
reaches as 10.0.2.2, and Ferrite with [kerberos] exporting EXPORT (RC_EXPORT)
with sec = ["krb5p", "krb5i", "krb5"]. The payload (/rc/extra) holds this
guest's krb5.conf, its key table (nfs/ferrite-rc.ferrite.test: the machine
credential rpc.gssd uses for the client's state) and a ticket cache for
alice, which rcuser (uid 1000) uses; rcother (uid 1001) has no ticket.

For each version and each of krb5, krb5i and krb5p, one mount
(`sec=...`, server named ferrite.test), then:
  io        rcuser writes 1 MiB, reads it back after dropping the page
            cache, takes and releases an fcntl lock, renames and lists
  no_ticket rcother, without a ticket, is refused (EACCES or EKEYEXPIRED)
and once per version:
  sys_refused  a sec=sys mount of the export fails
  restart      (krb5p) the host restarts Ferrite mid-scenario: the GSS
               contexts are gone with it, rpc.gssd makes new ones, the
               open file and its lock carry on, nothing written is lost

Result lines as suite.py's (PASS v4.2/krb5p_io ...), whose helpers this uses.
"""
import errno
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, "/rc")
import suite  # noqa: E402
from suite import Fail, Skip, emit, run, run_scenario, as_user, OUT, VERS, PORT, EXPORT, RUNID  # noqa: E402

SERVER = "ferrite.test"
EXTRA = "/rc/extra"
# The server's user alice maps to and its uid here, when the payload names
# them (owners by name): [name, uid].
NAMED = []
USER = (1000, 1000)
OTHER = (1001, 1001)
FLAVORS = ["krb5", "krb5i", "krb5p"]
SCENARIOS = [(f + "_" + s) for f in FLAVORS for s in ("io", "no_ticket")] + ["sys_refused", "restart"]
MiB = 1 << 20


def setup():
    """krb5.conf, the key table, names, the ticket, rpc_pipefs and rpc.gssd."""
    shutil.copy(os.path.join(EXTRA, "krb5.conf"), "/etc/krb5.conf")
    shutil.copy(os.path.join(EXTRA, "krb5.keytab"), "/etc/krb5.keytab")
    os.chmod("/etc/krb5.keytab", 0o600)
    with open("/etc/hosts", "a") as f:
        f.write("10.0.2.2 ferrite.test\n10.0.2.15 ferrite-rc.ferrite.test ferrite-rc\n")
    cc = "/tmp/krb5cc_%d" % USER[0]
    shutil.copy(os.path.join(EXTRA, "alice.cc"), cc)
    os.chown(cc, USER[0], USER[1])
    os.chmod(cc, 0o600)
    # Owners by name: the server's domain, and its user under another uid.
    if os.path.exists(os.path.join(EXTRA, "idmapd.conf")):
        shutil.copy(os.path.join(EXTRA, "idmapd.conf"), "/etc/idmapd.conf")
        with open(os.path.join(EXTRA, "names")) as f:
            name, uid = f.read().split()
        with open("/etc/passwd", "a") as f:
            f.write("%s:x:%s:%s::/nonexistent:/usr/sbin/nologin\n" % (name, uid, uid))
        with open("/etc/group", "a") as f:
            f.write("%s:x:%s:\n" % (name, uid))
        NAMED[:] = [name, int(uid)]
        run(["nfsidmap", "-c"])
    r = run(["modprobe", "-a", "auth_rpcgss", "rpcsec_gss_krb5"])
    if r.returncode != 0:
        raise Fail("modprobe auth_rpcgss rpcsec_gss_krb5: " + r.stdout)
    os.makedirs("/run/rpc_pipefs", exist_ok=True)
    if not os.path.ismount("/run/rpc_pipefs"):
        r = run(["mount", "-t", "rpc_pipefs", "sunrpc", "/run/rpc_pipefs"])
        if r.returncode != 0:
            raise Fail("mount rpc_pipefs: " + r.stdout)
    log = open(os.path.join(OUT, "gssd.log"), "w")
    # -f: foreground (its own process here); -vvv: its log, for a failure.
    subprocess.Popen(["rpc.gssd", "-f", "-vvv"], stdout=log, stderr=subprocess.STDOUT)
    # rpc.gssd watches rpc_pipefs from its start; it is up once it has
    # opened its pipes' directory (a fraction of a second).
    deadline = time.time() + 60
    while not any("rpc.gssd" in open("/proc/%s/cmdline" % p).read()
                  for p in os.listdir("/proc") if p.isdigit() and os.path.exists("/proc/%s/cmdline" % p)):
        if time.time() > deadline:
            raise Fail("rpc.gssd did not start")
        time.sleep(0.1)


def mount(vers, sec, mp):
    os.makedirs(mp, exist_ok=True)
    opts = "vers=%s,port=%d,sec=%s" % (vers, PORT, sec)
    cmd = ["timeout", "120", "mount", "-t", "nfs", "-o", opts, "%s:%s" % (SERVER, EXPORT), mp]
    r = run(cmd)
    return r.returncode == 0, "%s -> rc %d: %s" % (" ".join(cmd[3:]), r.returncode, r.stdout.strip())


def umount(mp):
    r = run(["timeout", "60", "umount", mp])
    if r.returncode != 0:
        run(["umount", "-f", "-l", mp])


def drop_caches():
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Ctx:
    """run_scenario makes the scenario's directory (as root, which acts as
    the machine's principal, squashed to nobody); each scenario opens it
    to the users first."""
    def __init__(self, vers, tag, sec, mp):
        self.v, self.tag, self.sec, self.mp = vers, tag, sec, mp
        self.name = ""
        self.base = os.path.join(mp, "rc-%s-%s-%s" % (RUNID, tag, sec))
        os.makedirs(self.base, exist_ok=True)
        if mp != "/mnt":
            os.chmod(self.base, 0o777)

    @property
    def a(self):
        return os.path.join(self.base, self.name)


def user(what, uid_gid, fn):
    res = as_user(uid_gid[0], uid_gid[1], fn)
    if res[0] != "ok":
        raise Fail("%s as uid %d: %s" % (what, uid_gid[0], errno.errorcode.get(res[1], res[1])))
    return res[1]


def sk_io(c):
    os.chmod(c.a, 0o777)
    data = hashlib.sha256(c.sec.encode()).digest() * (MiB // 32)
    path = os.path.join(c.a, "io-" + c.sec)
    def write():
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return os.stat(path).st_uid
    owner = user("write", USER, write)
    drop_caches()
    def read():
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    got = user("read back", USER, read)
    if got != hashlib.sha256(data).hexdigest():
        raise Fail("read back differs from what was written")
    def lock():
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
            fcntl.lockf(fd, fcntl.LOCK_UN, 100, 0)
        finally:
            os.close(fd)
        os.rename(path, path + ".renamed")
        return sorted(os.listdir(c.a))
    names = user("lock, rename, list", USER, lock)
    if ("io-%s.renamed" % c.sec) not in names:
        raise Fail("renamed file not listed: %s" % names)
    print("    %s: file owner as the guest sees it: %s" % (c.sec, owner), flush=True)
    if NAMED and owner != NAMED[1]:
        raise Fail("the owner came as uid %d, not %s (uid %d here): names did not cross"
                   % (owner, NAMED[0], NAMED[1]))


def sk_no_ticket(c):
    """rcother has no ticket: rpc.gssd cannot make a context for uid 1001
    and tells the kernel EACCES, so nothing of rcother's reaches the
    server. The kernel reports that to the application as EACCES, or as
    ESTALE where it was revalidating the mount's root (6.1 does for a
    listing of it)."""
    os.chmod(c.a, 0o777)
    path = os.path.join(c.a, "alices")
    user("alice creates", USER, lambda: open(path, "w").write("alice's\n"))
    for what, fn in (("list the export", lambda: os.listdir(c.mp)),
                     ("read alice's file", lambda: open(path).read()),
                     ("create a file", lambda: open(os.path.join(c.a, "others"), "w").close())):
        res = as_user(OTHER[0], OTHER[1], fn)
        if res[0] == "ok":
            raise Fail("a user without a ticket could %s: %s" % (what, res[1]))
        if res[1] not in (errno.EACCES, errno.EKEYEXPIRED, errno.EPERM, errno.ESTALE):
            raise Fail("a user without a ticket, %s: %s, not EACCES" % (what, errno.errorcode.get(res[1], res[1])))
        print("    %s: refused, %s" % (what, errno.errorcode.get(res[1], res[1])), flush=True)
    with open(os.path.join(OUT, "gssd.log")) as f:
        if "uid %d err -13" % OTHER[0] not in f.read():
            raise Fail("rpc.gssd never refused uid %d a context (gssd.log)" % OTHER[0])


def sk_sys_refused(vers, tag):
    mp = "/mnt/%s-sys" % tag
    ok, msg = mount(vers, "sys", mp)
    if ok:
        try:
            res = as_user(USER[0], USER[1], lambda: os.listdir(mp))
        finally:
            umount(mp)
        if res[0] == "ok":
            raise Fail("AUTH_SYS mounted and listed a krb5-only export: " + msg)
        print("    mounted, but listing refused: %s" % errno.errorcode.get(res[1], res[1]), flush=True)
    else:
        print("    " + msg, flush=True)


def sk_restart(c):
    if not suite.RESTART:
        raise Skip("no --restart-cmd given")
    os.chmod(c.a, 0o777)
    path = os.path.join(c.a, "restart")
    before = os.urandom(MiB)
    after = os.urandom(MiB)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        # rcuser holds the file open with a lock across the restart.
        os.close(r)
        try:
            os.setgroups([])
            os.setresgid(USER[1], USER[1], USER[1])
            os.setresuid(USER[0], USER[0], USER[0])
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            os.write(fd, before)
            os.fsync(fd)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
            os.write(w, b"locked\n")
            # Wait for the host's restart (the parent says when).
            while not os.path.exists(os.path.join(OUT, "ctl", "restart-%s.ack" % c.tag)):
                time.sleep(0.2)
            os.pwrite(fd, after, MiB)
            os.fsync(fd)
            fcntl.lockf(fd, fcntl.LOCK_UN, 10, 0)
            os.close(fd)
            os.write(w, b"done\n")
            os._exit(0)
        except OSError as e:
            os.write(w, ("error %s\n" % e).encode())
            os._exit(1)
    os.close(w)
    f = os.fdopen(r)
    line = f.readline().strip()
    if line != "locked":
        os.waitpid(pid, 0)
        raise Fail("before the restart: " + line)
    suite.restart_server(c.tag)
    line = f.readline().strip()
    os.waitpid(pid, 0)
    if line != "done":
        raise Fail("after the restart: " + line)
    drop_caches()
    def read():
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    got = user("read after the restart", USER, read)
    if got != hashlib.sha256(before + after).hexdigest():
        raise Fail("the file differs after the restart")


def main():
    rc = suite.begin("ferrite realclient Kerberos suite: server %s:%d export %s, versions %s"
                     % (SERVER, PORT, EXPORT, ",".join(VERS)), SCENARIOS, setup)
    if rc is not None:
        return rc
    for v in VERS:
        tag = "v" + v.replace(".", "")
        print("=== NFS vers=%s" % v, flush=True)
        for sec in FLAVORS:
            mp = "/mnt/%s-%s" % (tag, sec)
            ok, msg = mount(v, sec, mp)
            print("    " + msg, flush=True)
            if ok:
                try:
                    ctx = Ctx(v, tag, sec, mp)
                except OSError as e:
                    ok, msg = False, "cannot make the work directory: %s" % e
            for kind, fn, limit in (("io", sk_io, 600), ("no_ticket", sk_no_ticket, 300)):
                n = sec + "_" + kind
                if not suite.selected(v, n):
                    continue
                if not ok:
                    emit("FAIL", v, n, "the mount failed: " + msg)
                else:
                    st, reason, secs = run_scenario(ctx, n, lambda c, fn=fn: fn(c), limit)
                    emit(st, v, n, reason, secs)
            if ok and sec == "krb5p":
                if suite.selected(v, "restart"):
                    st, reason, secs = run_scenario(ctx, "restart", sk_restart, 900)
                    emit(st, v, "restart", reason, secs)
            elif sec == "krb5p":
                emit("FAIL", v, "restart", "the krb5p mount failed: " + msg)
            if ok:
                umount(mp)
        if suite.selected(v, "sys_refused"):
            st, reason, secs = run_scenario(Ctx(v, tag, "sys", "/mnt"), "sys_refused",
                                            lambda c: sk_sys_refused(v, tag), 300)
            emit(st, v, "sys_refused", reason, secs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
