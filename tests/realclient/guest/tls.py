#!/usr/bin/env python3
"""RPC-over-TLS scenarios (run.sh --suite tls; tests/realclient-tls.sh).

A guest with a kernel that has xprtsec (6.5 or later; Debian's 6.12) and
tlshd (ktls-utils, built on the host and carried in the payload with the
libraries the image lacks). The host runs Ferrite with [tls] and exports
/tls (xprtsec tls, mtls), /mtls (mtls) and /plain (none); its certificate
names ferrite.test (10.0.2.2 here). The payload (/rc/extra) holds the
authority, this guest's client certificate and key, tlshd.conf, tlshd and
lib/.

For each version:
  tls_io        mount /tls with xprtsec=tls: write 1 MiB, read it back
                after dropping the page cache, lock, rename, list
  mtls_io       the same on /mtls with xprtsec=mtls (the client's
                certificate, which Ferrite verifies)
  plain_refused a mount of /tls without TLS fails
  mtls_refused  a mount of /mtls with xprtsec=tls (no certificate) fails

Result lines as suite.py's, whose helpers this uses.
"""
import fcntl
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, "/rc")
import suite  # noqa: E402
from suite import Fail, emit, run, run_scenario, OUT, VERS, PORT, RUNID  # noqa: E402

SERVER = "ferrite.test"
EXTRA = "/rc/extra"
MiB = 1 << 20
SCENARIOS = ["tls_io", "mtls_io", "plain_refused", "mtls_refused"]


def setup():
    with open("/etc/hosts", "a") as f:
        f.write("10.0.2.2 ferrite.test\n")
    r = run(["modprobe", "-a", "tls"])
    if r.returncode != 0:
        raise Fail("modprobe tls: " + r.stdout)
    log = open(os.path.join(OUT, "tlshd.log"), "w")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(EXTRA, "lib"))
    subprocess.Popen([os.path.join(EXTRA, "tlshd"), "-s", "-c", os.path.join(EXTRA, "tlshd.conf")],
                     stdout=log, stderr=subprocess.STDOUT, env=env)
    time.sleep(1)
    if not any("tlshd" in open("/proc/%s/cmdline" % p).read()
               for p in os.listdir("/proc") if p.isdigit() and os.path.exists("/proc/%s/cmdline" % p)):
        raise Fail("tlshd did not stay up (tlshd.log)")


def mount(vers, path, mp, xprtsec):
    os.makedirs(mp, exist_ok=True)
    opts = "vers=%s,port=%d" % (vers, PORT)
    if xprtsec:
        opts += ",xprtsec=" + xprtsec
    cmd = ["timeout", "120", "mount", "-t", "nfs", "-o", opts, "%s:%s" % (SERVER, path), mp]
    r = run(cmd)
    return r.returncode == 0, "%s -> rc %d: %s" % (" ".join(cmd[3:]), r.returncode, r.stdout.strip())


def umount(mp):
    run(["umount", "-f", mp])


def io(mp, tag):
    d = os.path.join(mp, "rc-%s-%s" % (RUNID, tag))
    os.makedirs(d, exist_ok=True)
    data = hashlib.sha256(tag.encode()).digest() * (MiB // 32)
    p = os.path.join(d, "io")
    with open(p, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    with open(p, "rb") as f:
        if hashlib.sha256(f.read()).digest() != hashlib.sha256(data).digest():
            raise Fail("read back differs from what was written")
    fd = os.open(p, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 100, 0)
        fcntl.lockf(fd, fcntl.LOCK_UN, 100, 0)
    finally:
        os.close(fd)
    os.rename(p, p + ".renamed")
    if "io.renamed" not in os.listdir(d):
        raise Fail("renamed file not listed")
    with open("/proc/mounts") as f:
        line = [l for l in f if (" %s " % mp) in l]
    print("    mount: %s" % (line[0].strip() if line else "?"), flush=True)


class Ctx:
    """What run_scenario needs: a name and a fresh directory for it."""
    def __init__(self, tag):
        self.name, self.tag = None, tag

    @property
    def a(self):
        return "/tmp/tls-%s-%s" % (self.tag, self.name)


def main():
    rc = suite.begin("ferrite realclient TLS suite: server %s:%d, versions %s"
                     % (SERVER, PORT, ",".join(VERS)), SCENARIOS, setup)
    if rc is not None:
        return rc
    for v in VERS:
        tag = "v" + v.replace(".", "")
        print("=== NFS vers=%s" % v, flush=True)
        for name, path, xprt in (("tls_io", "/tls", "tls"), ("mtls_io", "/mtls", "mtls")):
            if not suite.selected(v, name):
                continue
            mp = "/mnt/%s-%s" % (tag, name)
            ok, msg = mount(v, path, mp, xprt)
            print("    " + msg, flush=True)
            if not ok:
                emit("FAIL", v, name, "the mount failed: " + msg)
                continue
            st, reason, secs = run_scenario(Ctx(tag), name, lambda c, mp=mp, t=tag + xprt: io(mp, t), 600)
            emit(st, v, name, reason, secs)
            umount(mp)
        for name, path, xprt in (("plain_refused", "/tls", None), ("mtls_refused", "/mtls", "tls")):
            if not suite.selected(v, name):
                continue
            mp = "/mnt/%s-%s" % (tag, name)
            ok, msg = mount(v, path, mp, xprt)
            print("    " + msg, flush=True)
            if ok:
                # A mount may succeed and fail at first use (WRONGSEC).
                try:
                    os.listdir(mp)
                    emit("FAIL", v, name, "mounted and listed: " + msg)
                except OSError as e:
                    emit("PASS", v, name, "mounted, then refused: %s" % e)
                umount(mp)
            else:
                emit("PASS", v, name, "refused: " + msg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
