#!/usr/bin/env python3
"""Two-guest checks (tests/realclient/two-guests.sh). The same script runs in
two qemu guests at once, as RC_ROLE=A and RC_ROLE=B: two independent Linux NFS
clients (distinct nfs.nfs4_unique_id) of the same server. They coordinate
through a 9p directory shared by both guests and the host (RC_SHARED, default
/rcshare) with barrier files: post(name) atomically creates
"<vtag>-<name>.<ROLE>", wait(name) polls for "<vtag>-<name>.<OTHER>". A guest
that hits an unexpected error posts "<vtag>-abort.<ROLE>" so that the other
one stops waiting; the host posts the same file for a guest that dies.

Every check prints exactly one line (and appends it to $RC_OUT/results.txt):
    PASS v4.2/B/fcntl_setlkw: detail (1.2s)
    FAIL v4.2/A/excl_race: reason (0.4s)
`twoguests.py --plan` (runs on the host too) prints every expected row.

Versions (RC_VERS): 4.2, 4.1, 4.0, 3 (NFSv3 with NLM locking: needs RC_V3_LOCK,
two-guests.sh --tap), mix40 (A on NFSv4.0, B on NFSv4.1), and mix (A on NFSv3, B on NFSv4.1: NLM and NFSv4
locks on one file, one server).

Configuration: RC_ROLE RC_SHARED RC_HOST RC_PORT RC_EXPORT RC_VERS RC_RUNID
RC_MOUNT_OPTS RC_KEEP RC_OUT, RC_V3_LOCK, RC_BARRIER_TIMEOUT (s, default 300),
RC_SETLKW_LIMIT (s a blocked F_SETLKW may take after the unlock, default 45),
RC_EXCL_ROUNDS (default 15), RC_RESTART (1: the host restarts the server
when a guest posts "<vtag>-restart-req.<ROLE>", and answers with
"<vtag>-restart-ack.H" holding "rc=N"; 0: the grace checks are skipped).

Time (issue 28): the guests run under TCG, shared with other work, so no
verdict may depend on their speed. Waits are for a condition (a barrier
file, a lock granted), polled under a deadline that is only an upper
bound, and the checks that compare a duration hold a bound whose reason
is written beside it.
"""
import errno
import fcntl
import hashlib
import os
import select
import signal
import socket
import sys
import time
import traceback

ROLE = os.environ.get("RC_ROLE", "A")
OTHER = "B" if ROLE == "A" else "A"
SHARED = os.environ.get("RC_SHARED", "/rcshare")
VERS_ENV = [v for v in os.environ.get("RC_VERS", "4.2").split(",") if v]
# Upper bound on a wait for the other guest at a barrier: the other's step
# takes seconds, the longest (a server restart, then its grace period of
# up to a lease, 30 s) under a minute here; a guest that gives up posts
# its abort file, which ends the wait at once.
WAIT = float(os.environ.get("RC_BARRIER_TIMEOUT", "300"))
# A blocked F_SETLKW on NFSv4: the client polls it 1, 2, 4 ... then every
# 30 s (NFS4_LOCK_MAXTIMEOUT), so even a server that does not notify
# (CB_NOTIFY_LOCK) grants it within 30 s of the unlock plus one LOCK round
# trip; 45 s leaves a machine twice as slow, and loaded, inside.
SETLKW_LIMIT = float(os.environ.get("RC_SETLKW_LIMIT", "45"))
EXCL_ROUNDS = int(os.environ.get("RC_EXCL_ROUNDS", "15"))
EXPECT_DELEG = os.environ.get("RC_EXPECT_DELEG", "0") == "1"

# (check, role that reports it), in the order they run.
PLAN = [
    ("mount", "A"), ("mount", "B"),
    ("fcntl_conflict", "B"),       # A holds a write lock: B's overlapping F_SETLK refused, F_GETLK sees it
    ("fcntl_nonoverlap", "B"),     # ... while B's non-overlapping ranges are granted
    ("fcntl_setlkw", "B"),         # B's F_SETLKW blocks until A unlocks, then is granted in bounded time
    ("fcntl_read_shared", "A"), ("fcntl_read_shared", "B"),   # both hold read locks on one range
    ("fcntl_close_release", "B"),  # A's lock goes away when A closes its fd
    ("fcntl_exit_release", "B"),   # a lock of an A process goes away when that process exits
    ("flock_conflict", "B"),       # A's LOCK_EX refuses B's LOCK_EX|LOCK_NB, LOCK_SH|LOCK_NB and fcntl lock
    ("flock_release", "B"),        # ... and B gets LOCK_EX after A's LOCK_UN
    ("flock_close_release", "A"),  # B's flock goes away when B closes its fd
    ("excl_race", "A"), ("excl_race", "B"),   # O_CREAT|O_EXCL races: exactly one winner, winner's data
    ("cto_a_to_b", "B"),           # close-to-open: what A wrote and closed, B reads on open
    ("cto_b_to_a", "A"),
    # read delegations (RC_EXPECT_DELEG=1: the server must grant them)
    ("deleg_granted", "A"),        # A's second open of a file it reads goes to no server
    ("deleg_recall", "B"),         # B's open for writing recalls it, in bounded time
    ("deleg_data", "A"),           # A, which held it, then reads what B wrote; it was returned
    # write delegations (RC_EXPECT_DELEG=1: the server must grant them)
    ("wdeleg_granted", "A"),       # A's second open of a file it created and writes goes to no server
    ("wdeleg_getattr", "B"),       # B's stat sees the size of what A wrote, cached or not (CB_GETATTR)
    ("wdeleg_data", "B"),          # B's open recalls it: A writes back and returns it, B reads A's data
    # the server restarts (two-guests.sh --restart-cmd) while A holds a lock:
    ("grace_lock_kept", "B"),      # B's request after the restart is refused: A reclaimed the lock first
    ("grace_reclaimed", "A"),      # A's lock and open survive the restart; B gets the lock once A unlocks
]


def plan_rows(vers):
    return ["v%s/%s/%s" % (v, r, n) for v in vers for n, r in PLAN]


if __name__ == "__main__" and sys.argv[1:] == ["--plan"]:
    print("\n".join(plan_rows(VERS_ENV)))
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite as S  # noqa: E402  (helpers: mount, run, Agent, lockf, getlk, save_mountstats, ...)

OUT = S.OUT
DENIED = (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)
KiB = 1024


class Abort(Exception):
    pass


def sha(b):
    return hashlib.sha256(b).hexdigest()


def errname(e):
    return S.errname(e)


def mount_vers(v, role):
    """The NFS version `role` mounts in column `v`: "mix" has A on NFSv3
    (NLM) and B on NFSv4.1, "mix40" A on NFSv4.0 and B on NFSv4.1,
    contending for the same locks and files."""
    if v == "mix":
        return "3" if role == "A" else "4.1"
    if v == "mix40":
        return "4.0" if role == "A" else "4.1"
    return v


class Ctx:
    def __init__(self, vers):
        self.vers = vers
        # Both guests on NFSv4: the delegation checks apply.
        self.v4 = mount_vers(vers, "A") != "3" and mount_vers(vers, "B") != "3"
        self.tag = "v" + vers.replace(".", "")
        self.mp = "/mnt/two%s" % self.tag
        self.w = os.path.join(self.mp, "rc2-%s-%s" % (S.RUNID, self.tag))
        self.done = set()      # checks this guest has reported
        self.t_last = time.time()

    def p(self, name):
        return os.path.join(self.w, name)

    # ---- results
    def res(self, name, ok, detail=""):
        assert (name, ROLE) in PLAN, name
        line = "%s v%s/%s/%s" % ("PASS" if ok else "FAIL", self.vers, ROLE, name)
        if detail:
            line += ": " + " ".join(str(detail).split())
        line += " (%.1fs)" % (time.time() - self.t_last)
        self.t_last = time.time()
        self.done.add(name)
        print(line, flush=True)
        with open(os.path.join(OUT, "results.txt"), "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        return ok

    def skip(self, name, why):
        assert (name, ROLE) in PLAN, name
        line = "SKIP v%s/%s/%s: %s (0.0s)" % (self.vers, ROLE, name, why)
        self.done.add(name)
        print(line, flush=True)
        with open(os.path.join(OUT, "results.txt"), "a") as f:
            f.write(line + "\n")

    def restart_server(self):
        """Asks the host to restart the server; waits for its answer."""
        self.post("restart-req")
        ack = self._f("restart-ack", "H")
        deadline = time.time() + S.RESTART_TIMEOUT
        while not os.path.exists(ack):
            self.check_abort()
            if time.time() > deadline:
                raise Abort("host did not restart the server within %ds" % S.RESTART_TIMEOUT)
            time.sleep(0.2)
        with open(ack) as f:
            res = f.read().strip()
        if res != "rc=0":
            raise Abort("host restart command failed (%s)" % res)

    def fail_rest(self, reason):
        first = True
        for n, r in PLAN:
            if r == ROLE and n not in self.done:
                self.res(n, False, reason if first else "not run: " + reason)
                first = False

    # ---- barrier files in the shared 9p directory
    def _f(self, name, role):
        return os.path.join(SHARED, "%s-%s.%s" % (self.tag, name, role))

    def post(self, name, data=""):
        p = self._f(name, ROLE)
        with open(p + ".tmp", "w") as f:
            f.write(str(data))
        os.rename(p + ".tmp", p)

    def posted(self, name, role=None):
        return os.path.exists(self._f(name, role or OTHER))

    def check_abort(self):
        ab = self._f("abort", OTHER)
        if os.path.exists(ab):
            try:
                why = open(ab).read().strip()
            except OSError:
                why = "?"
            raise Abort("guest %s gave up: %s" % (OTHER, why))

    def wait(self, name, timeout=None, poll=0.02):
        p = self._f(name, OTHER)
        deadline = time.time() + (timeout or WAIT)
        while not os.path.exists(p):
            self.check_abort()
            if time.time() > deadline:
                raise Abort("timed out after %.0fs waiting for guest %s at '%s'" % (timeout or WAIT, OTHER, name))
            time.sleep(poll)
        with open(p) as f:
            return f.read()

    def barrier(self, name, data="", timeout=None, poll=0.02):
        self.post(name, data)
        return self.wait(name, timeout, poll)


def try_lock(fd, t, start, ln):
    """Non-blocking fcntl lock: None when granted, the errno when refused."""
    try:
        S.lockf(fd, t, start, ln)
        return None
    except OSError as e:
        if e.errno in DENIED:
            return e.errno
        raise


def try_flock(fd, how):
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return None
    except OSError as e:
        if e.errno in DENIED:
            return e.errno
        raise


def retry(fn, limit=60.0):
    """fn() -> None when it succeeded. Retries every 0.1 s; returns (ok, secs, last_errno).
    `limit` is an upper bound on the wait: the locks it waits for are free
    within a second here (the holder's close or exit sent the unlock)."""
    t0 = time.time()
    while True:
        e = fn()
        if e is None:
            return True, time.time() - t0, None
        if time.time() - t0 > limit:
            return False, time.time() - t0, e
        time.sleep(0.1)


def agent_pending(ag, secs):
    r, _, _ = select.select([ag.rr], [], [], secs)
    return not r


# --------------------------------------------------------------- phases
def ph_setup(c):
    if ROLE == "A":
        os.mkdir(c.w)
        os.chmod(c.w, 0o777)
        S.write_file(c.p("locks"), b"\0" * 4096)
        S.write_file(c.p("flock"), b"f")
        c.post("setup")
    else:
        c.wait("setup")
        if not os.path.isdir(c.w):
            raise Abort("the work dir %s created by A is not visible" % c.w)


def ph_fcntl(c):
    p = c.p("locks")
    if ROLE == "A":
        fd = os.open(p, os.O_RDWR)
        try:
            S.lockf(fd, "w", 0, 100)
        except OSError as e:
            raise Abort("A's write lock on [0,100) failed: %s" % errname(e.errno))
        c.post("f1-locked")
        c.wait("f1-checked")          # B checked conflicts and has an F_SETLKW blocked
        time.sleep(1.0)               # B stays blocked a while longer; nothing is timed against it
        c.post("f2-unlocking")
        S.lockf(fd, "u", 0, 100)
        c.post("f2-unlocked")
        c.wait("f2-done")
        # read locks shared by both clients
        S.lockf(fd, "r", 0, 100)
        c.post("f3-rlocked")
        c.wait("f3-rlocked")          # B holds a read lock on the same range
        e = try_lock(fd, "w", 0, 100)
        c.res("fcntl_read_shared", e is not None,
              "A's upgrade to a write lock refused (%s) while B shares the range" % errname(e) if e else
              "A's upgrade to a write lock was granted while B holds a read lock on the range")
        if e is None:
            S.lockf(fd, "r", 0, 100)
        c.barrier("f3-checked")
        S.lockf(fd, "u", 0, 0)
        c.barrier("f3-unlocked")
        # release on close
        S.lockf(fd, "w", 2000, 10)
        c.post("f4-locked")
        c.wait("f4-denied")
        os.close(fd)
        c.post("f4-closed")
        # release on exit of the process holding the lock
        ag = S.Agent()
        try:
            ag.ok("open", "open", "f", p, os.O_RDWR)
            ag.ok("lock [3000,3010)", "lock", "f", "w", 3000, 10, False)
            c.post("f5-locked")
            c.wait("f5-denied")
        finally:
            ag.stop()                 # the agent exits: os._exit closes its fd
        c.post("f5-exited")
        c.wait("f-done")
        return

    # ---- B
    c.wait("f1-locked")
    fd = os.open(p, os.O_RDWR)
    bad = []
    for t, s, n in (("w", 50, 10), ("w", 0, 1), ("w", 99, 1), ("w", 90, 20), ("r", 10, 5), ("w", 0, 0)):
        e = try_lock(fd, t, s, n)
        if e is None:
            bad.append("%s[%d,+%d) granted" % (t, s, n))
            S.lockf(fd, "u", s, n)
    lk = S.getlk(fd, "w", 0, 10)
    if lk[0] != fcntl.F_WRLCK:
        bad.append("F_GETLK reports type %d, not F_WRLCK" % lk[0])
    elif not (lk[2] == 0 and lk[3] == 100):
        bad.append("F_GETLK reports the range [%d,+%d), A holds [0,+100)" % (lk[2], lk[3]))
    c.res("fcntl_conflict", not bad,
          "; ".join(bad) if bad else "6 overlapping F_SETLK refused (EAGAIN/EACCES), F_GETLK reports A's write lock [0,100)")
    bad = []
    for t, s, n in (("w", 100, 10), ("r", 150, 50), ("w", 4096, 0)):
        e = try_lock(fd, t, s, n)
        if e is not None:
            bad.append("%s[%d,+%d) refused (%s)" % (t, s, n, errname(e)))
    S.lockf(fd, "u", 100, 0)
    c.res("fcntl_nonoverlap", not bad, "; ".join(bad) if bad else "3 locks next to and beyond A's range granted")
    # F_SETLKW in a second process of B
    ag = S.Agent()
    try:
        ag.ok("open", "open", "f", p, os.O_RDWR)
        t0 = time.time()
        ag.send("lock", "f", "w", 0, 100, True)
        # Still blocked 3 s later (A holds the lock until B posts f1-checked,
        # so no slowness can grant it early; the "f2-unlocking" check below
        # catches a grant at any time before A's unlock).
        early = not agent_pending(ag, 3.0)
        c.post("f1-checked")
        t_unlocking = t_unlocked = None
        granted, why, t_grant = False, "", None
        while True:
            now = time.time()
            if t_unlocking is None and c.posted("f2-unlocking"):
                t_unlocking = now
            if t_unlocked is None and c.posted("f2-unlocked"):
                t_unlocked = now
            if not agent_pending(ag, 0.05):
                t_grant = time.time()
                r = ag.reply()
                seen = c.posted("f2-unlocking")   # A posts it before it sends LOCKU
                if seen and t_unlocking is None:
                    t_unlocking = t_grant
                granted = r[0] == "ok"
                if not granted:
                    why = "F_SETLKW failed: %s" % errname(r[1])
                elif early or not seen:
                    granted, why = False, "F_SETLKW was granted while A still held the lock"
                break
            limit_from = t_unlocked if t_unlocked else t0 + WAIT
            if now - limit_from > SETLKW_LIMIT:
                why = "F_SETLKW still blocked %.0fs after A unlocked" % (now - (t_unlocked or t0))
                os.kill(ag.pid, signal.SIGKILL)
                break
            c.check_abort()
        if granted:
            after = t_grant - (t_unlocking or t_grant)
            # NLM (both on NFSv3): the server grants the blocked LOCK and
            # calls B's lock manager back (NLM_GRANTED) at once (0.0 s
            # here); without the callback B would find out at its next
            # retry, 30 s after it blocked, that is about 25 s after A's
            # unlock. 20 s tells the two apart on a machine several times
            # slower than this one.
            limit = 20.0 if c.vers == "3" else SETLKW_LIMIT
            c.res("fcntl_setlkw", after <= limit,
                  "blocked %.1fs in total, granted %.1fs after A's unlock (limit %.0fs%s)" % (
                      t_grant - t0, max(after, 0.0), limit, ": NLM_GRANTED" if c.vers == "3" else ""))
            ag.ok("unlock", "lock", "f", "u", 0, 0, False)
        else:
            c.res("fcntl_setlkw", False, why)
    finally:
        # the agent may still be blocked in F_SETLKW (abort, timeout): SIGKILL
        # interrupts the wait; its exit drops whatever it holds
        try:
            os.kill(ag.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(ag.pid, 0)
    c.post("f2-done")
    # read locks shared by both clients
    c.wait("f3-rlocked")
    bad = []
    e = try_lock(fd, "r", 0, 100)
    if e is not None:
        bad.append("B's read lock on A's read-locked range refused (%s)" % errname(e))
    e2 = try_lock(fd, "w", 0, 100)
    if e2 is None:
        bad.append("B's upgrade to a write lock granted while A holds a read lock")
        S.lockf(fd, "r", 0, 100)
    c.post("f3-rlocked")
    c.res("fcntl_read_shared", not bad, "; ".join(bad) if bad else
          "B's read lock granted on A's read-locked range, B's upgrade refused (%s)" % errname(e2))
    c.barrier("f3-checked")
    S.lockf(fd, "u", 0, 0)
    c.barrier("f3-unlocked")
    # release on close
    c.wait("f4-locked")
    e = try_lock(fd, "w", 2000, 1)
    if e is None:
        S.lockf(fd, "u", 2000, 1)
    c.post("f4-denied")
    c.wait("f4-closed")
    ok, secs, last = retry(lambda: try_lock(fd, "w", 2000, 10))
    if e is None:
        c.res("fcntl_close_release", False, "B's lock on A's range [2000,2010) was granted before A closed")
    else:
        c.res("fcntl_close_release", ok, "B's lock granted %.2fs after A closed its fd" % secs if ok else
              "B's lock still refused (%s) %.0fs after A closed its fd" % (errname(last), secs))
    S.lockf(fd, "u", 0, 0)
    # release on exit
    c.wait("f5-locked")
    e = try_lock(fd, "w", 3005, 1)
    if e is None:
        S.lockf(fd, "u", 3005, 1)
    c.post("f5-denied")
    c.wait("f5-exited")
    ok, secs, last = retry(lambda: try_lock(fd, "w", 3000, 10))
    if e is None:
        c.res("fcntl_exit_release", False, "B's lock on the range [3000,3010) of A's process was granted before it exited")
    else:
        c.res("fcntl_exit_release", ok, "B's lock granted %.2fs after A's process exited" % secs if ok else
              "B's lock still refused (%s) %.0fs after A's process exited" % (errname(last), secs))
    S.lockf(fd, "u", 0, 0)
    os.close(fd)
    c.post("f-done")


def ph_flock(c):
    p = c.p("flock")
    fd = os.open(p, os.O_RDWR)
    try:
        if ROLE == "A":
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            c.post("k1-locked")
            c.wait("k1-checked")
            fcntl.flock(fd, fcntl.LOCK_UN)
            c.post("k2-unlocked")
            c.wait("k2-locked")           # B holds LOCK_EX now
            e1 = try_flock(fd, fcntl.LOCK_SH)
            e2 = try_flock(fd, fcntl.LOCK_EX)
            c.post("k3-checked")
            c.wait("k3-closed")
            if e1 is None or e2 is None:
                c.res("flock_close_release", False, "A's flock %s granted while B holds LOCK_EX" %
                      ("LOCK_SH" if e1 is None else "LOCK_EX"))
            else:
                ok, secs, last = retry(lambda: try_flock(fd, fcntl.LOCK_EX))
                c.res("flock_close_release", ok,
                      "A's LOCK_SH/LOCK_EX refused while B held LOCK_EX; LOCK_EX granted %.2fs after B closed" % secs if ok else
                      "A's LOCK_EX still refused (%s) %.0fs after B closed its fd" % (errname(last), secs))
            fcntl.flock(fd, fcntl.LOCK_UN)
        else:
            c.wait("k1-locked")
            bad = []
            for how, nm in ((fcntl.LOCK_EX, "LOCK_EX|LOCK_NB"), (fcntl.LOCK_SH, "LOCK_SH|LOCK_NB")):
                e = try_flock(fd, how)
                if e is None:
                    bad.append(nm + " granted")
                    fcntl.flock(fd, fcntl.LOCK_UN)
            e = try_lock(fd, "w", 10, 1)   # flock is a whole-file lock at the server
            if e is None:
                bad.append("fcntl write lock [10,11) granted")
                S.lockf(fd, "u", 10, 1)
            c.res("flock_conflict", not bad, "; ".join(bad) if bad else
                  "A's LOCK_EX refuses B's LOCK_EX|LOCK_NB, LOCK_SH|LOCK_NB and an fcntl lock (EWOULDBLOCK)")
            c.post("k1-checked")
            c.wait("k2-unlocked")
            ok, secs, last = retry(lambda: try_flock(fd, fcntl.LOCK_EX))
            c.res("flock_release", ok, "B's LOCK_EX granted %.2fs after A's LOCK_UN" % secs if ok else
                  "B's LOCK_EX still refused (%s) %.0fs after A's LOCK_UN" % (errname(last), secs))
            c.post("k2-locked")
            c.wait("k3-checked")
            os.close(fd)
            fd = None
            c.post("k3-closed")
        c.barrier("k-done")
    finally:
        if fd is not None:
            os.close(fd)


def ph_excl(c):
    outcome = {}
    for i in range(EXCL_ROUNDS):
        name = c.p("excl%02d" % i)
        c.barrier("x%d-go" % i, poll=0.002)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, ("%s round %d\n" % (ROLE, i)).encode())
            os.close(fd)
            outcome[i] = "won"
        except OSError as e:
            outcome[i] = errname(e.errno)
        c.post("x%d-res" % i, outcome[i])
    other = {i: c.wait("x%d-res" % i).strip() for i in range(EXCL_ROUNDS)}
    bad, wins = [], {"A": 0, "B": 0}
    for i in range(EXCL_ROUNDS):
        mine, theirs = outcome[i], other[i]
        winners = [r for r, o in ((ROLE, mine), (OTHER, theirs)) if o == "won"]
        if len(winners) != 1:
            bad.append("round %d: %d winners (%s: %s, %s: %s)" % (i, len(winners), ROLE, mine, OTHER, theirs))
            continue
        w = winners[0]
        wins[w] += 1
        loser = theirs if w == ROLE else mine
        if loser != "EEXIST":
            bad.append("round %d: loser got %s, expected EEXIST" % (i, loser))
        data = S.read_file(c.p("excl%02d" % i))
        if data != ("%s round %d\n" % (w, i)).encode():
            bad.append("round %d: content %r is not the winner's (%s)" % (i, data[:40], w))
    c.res("excl_race", not bad, "; ".join(bad[:4]) if bad else
          "%d rounds, exactly one winner each (A won %d, B won %d), loser EEXIST, winner's data read back" %
          (EXCL_ROUNDS, wins["A"], wins["B"]))
    c.barrier("x-done")


def ph_cto(c):
    p = c.p("cto")
    if ROLE == "A":
        d1 = os.urandom(192 * KiB)
        S.write_file(p, d1, fsync=False)         # no fsync: close() must flush
        c.post("c1-written", sha(d1))
        c.wait("c1-read")
        d2 = os.urandom(len(d1))
        fd = os.open(p, os.O_WRONLY)              # overwrite in place, same size
        os.write(fd, d2)
        os.close(fd)
        c.post("c2-written", sha(d2))
        c.wait("c2-read")
        tail = os.urandom(1000)
        fd = os.open(p, os.O_WRONLY | os.O_APPEND)
        os.write(fd, tail)
        os.close(fd)
        cur = d2 + tail
        c.post("c3-written", sha(cur))
        c.wait("c3-read")
        # B overwrites the first 4 KiB in place; A still has the file in its page cache
        patch = c.wait("c4-written")
        exp = bytes.fromhex(patch) + cur[4096:]
        got = S.read_file(p)
        c.res("cto_b_to_a", got == exp,
              "A reads B's in-place overwrite of a file A has cached (%d bytes)" % len(got) if got == exp else
              "A read %d bytes, sha %s..., expected %d bytes with B's first 4 KiB (stale page cache?)" % (len(got), sha(got)[:12], len(exp)))
        c.barrier("c-done")
        return
    bad = []
    for step, what in (("c1", "new file"), ("c2", "in-place overwrite, same size"), ("c3", "append")):
        want = c.wait(step + "-written").strip()
        got = S.read_file(p)                      # B keeps its page cache between the steps
        if sha(got) != want:
            bad.append("%s: B read %d bytes that differ from what A wrote and closed" % (what, len(got)))
        c.post(step + "-read")
    c.res("cto_a_to_b", not bad, "; ".join(bad) if bad else
          "B reads what A wrote and closed: new file, in-place overwrite of a file B has cached, append")
    patch = os.urandom(4096)
    fd = os.open(p, os.O_WRONLY)
    os.write(fd, patch)
    os.close(fd)
    c.post("c4-written", patch.hex())
    c.barrier("c-done")


op_count = S.op_count


def skip_unless_v4(c, prefix):
    """True (and the rows skipped) when a guest mounts NFSv3, which has no
    delegations."""
    if c.v4:
        return False
    for n, r in PLAN:
        if r == ROLE and n.startswith(prefix):
            c.skip(n, "NFSv3 has no delegations")
    return True


def ph_deleg(c):
    """RFC 8881 §10.2, §10.4.6: A reads a file under a read delegation
    (its second open sends no OPEN) and keeps it open; B opens it for
    writing, which recalls the delegation; A then reads B's data."""
    if skip_unless_v4(c, "deleg_"):
        return
    p = c.p("deleg")
    if ROLE == "A":
        d1 = os.urandom(64 * KiB)
        S.write_file(p, d1, fsync=True)
        S.read_file(p)                       # an open for reading: a delegation may come
        n0 = op_count(c.mp, "OPEN")
        fd = os.open(p, os.O_RDONLY)
        delegated = op_count(c.mp, "OPEN") == n0
        if delegated:
            c.res("deleg_granted", True, "A's second open of the file sent no OPEN: a read delegation")
        elif EXPECT_DELEG:
            c.res("deleg_granted", False, "A's second open sent an OPEN: no read delegation was granted")
        else:
            c.skip("deleg_granted", "the server granted no read delegation (RC_EXPECT_DELEG=0)")
        returns0 = op_count(c.mp, "DELEGRETURN")
        os.read(fd, 4096)
        c.post("d-held", "1" if delegated else "0")
        want = c.wait("d-written").strip()
        returned = op_count(c.mp, "DELEGRETURN") > returns0
        os.close(fd)
        got = S.read_file(p)
        ok = sha(got) == want and (returned or not delegated)
        c.res("deleg_data", ok,
              "A reads what B wrote after B's open recalled A's delegation (returned: %s)" % returned if ok else
              "A read %d bytes, sha %s...; B wrote sha %s...; delegation returned: %s"
              % (len(got), sha(got)[:12], want[:12], returned))
        c.barrier("d-done")
        return
    held = c.wait("d-held").strip() == "1"
    t0 = time.monotonic()
    fd = os.open(p, os.O_WRONLY)
    took = time.monotonic() - t0
    d2 = os.urandom(64 * KiB)
    os.write(fd, d2)
    os.close(fd)
    c.post("d-written", sha(d2))
    if held:
        # The server recalls A's delegation and answers B's OPEN with
        # NFS4ERR_DELAY meanwhile; B's client retries 0.1, 0.3, 0.7, 1.5,
        # 3.1, 6.3, 12.7 s after its first try, so a recall that takes up
        # to 12 s (under a second here) still ends within 20 s, while a
        # server that waits out A's lease (30 s) does not.
        c.res("deleg_recall", took < 20,
              "B's open for writing, which recalled A's delegation, took %.2fs" % took)
    else:
        c.skip("deleg_recall", "A held no delegation")
    c.barrier("d-done")


def ph_wdeleg(c):
    """RFC 8881 §10.4: A creates a file and writes it, keeping it open:
    alone with it, A holds a write delegation (its second open sends no
    OPEN) and may keep what it wrote in its cache. B's stat then sees A's
    size (the server asks A with CB_GETATTR, §10.4.3). A then closes the
    file (close-to-open: what B may then read), still holding the
    delegation; B's open recalls it, and B reads A's data."""
    if skip_unless_v4(c, "wdeleg_"):
        return
    p = c.p("wdeleg")
    size = 200 * KiB + 123
    if ROLE == "A":
        data = os.urandom(size)
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        n0 = op_count(c.mp, "OPEN")
        fd2 = os.open(p, os.O_RDWR)
        delegated = op_count(c.mp, "OPEN") == n0
        os.close(fd2)
        if delegated:
            c.res("wdeleg_granted", True, "A's second open of the file it created sent no OPEN: a write delegation")
        elif EXPECT_DELEG:
            c.res("wdeleg_granted", False, "A's second open sent an OPEN: no write delegation was granted")
        else:
            c.skip("wdeleg_granted", "the server granted no write delegation (RC_EXPECT_DELEG=0)")
        w0 = op_count(c.mp, "WRITE")
        os.write(fd, data)
        cached = op_count(c.mp, "WRITE") == w0
        c.post("w-held", "%d %d %s" % (1 if delegated else 0, 1 if cached else 0, sha(data)))
        c.wait("w-statted")
        still = op_count(c.mp, "WRITE") == w0
        c.post("w-still", "1" if still else "0")
        r0 = op_count(c.mp, "DELEGRETURN")
        os.close(fd)
        returned = op_count(c.mp, "DELEGRETURN") > r0
        c.post("w-closed", "1" if returned else "0")
        c.barrier("w-done")
        return
    held, cached, want = c.wait("w-held").split()
    st = os.stat(p)
    c.post("w-statted")
    still = c.wait("w-still").strip() == "1"
    where = ("still in A's cache: the server asked A" if cached == "1" and still
             else "A had written it back")
    if held == "1":
        c.res("wdeleg_getattr", st.st_size == size,
              "B's stat saw %d bytes, A's size (%s)" % (st.st_size, where) if st.st_size == size else
              "B's stat saw %d bytes; A wrote %d (%s)" % (st.st_size, size, where))
    else:
        c.skip("wdeleg_getattr", "A held no write delegation")
    returned = c.wait("w-closed").strip() == "1"
    t0 = time.monotonic()
    got = S.read_file(p)
    took = time.monotonic() - t0
    ok = sha(got) == want
    how = ("A returned its delegation at close" if returned
           else "B's open recalled A's delegation" if held == "1" else "no delegation")
    c.res("wdeleg_data", ok,
          "B read A's %d bytes in %.2fs (%s)" % (len(got), took, how) if ok else
          "B read %d bytes, sha %s...; A wrote %d, sha %s... (%s)" % (len(got), sha(got)[:12], size, want[:12], how))
    c.barrier("w-done")


def ph_grace(c):
    """RFC 8881 §8.4.2.1: after a server restart, the lock A held is
    reclaimed by A before B can have it, however soon B asks."""
    if not S.RESTART:
        for n, r in PLAN:
            if r == ROLE and n.startswith("grace_"):
                c.skip(n, "no --restart-cmd given (the host must restart the server)")
        return
    p = c.p("grace")
    if ROLE == "A":
        S.write_file(p, b"\0" * 100)
        fd = os.open(p, os.O_RDWR)
        S.lockf(fd, "w", 0, 10)
        c.post("g1-locked")
        c.wait("g1-opened")           # B has the file open too
        c.restart_server()
        c.post("g2-restarted")
        c.wait("g2-tried")            # B's request after the restart was answered
        errs = []
        try:
            os.pwrite(fd, b"after", 0)
            os.fsync(fd)
        except OSError as e:
            errs.append("write through the fd opened before the restart: %s" % errname(e.errno))
        try:
            S.lockf(fd, "u", 0, 10)
        except OSError as e:
            errs.append("unlock of the reclaimed lock: %s" % errname(e.errno))
        os.close(fd)
        c.post("g3-unlocked")
        got = c.wait("g3-locked")     # B's lock once A let go
        if got != "ok":
            errs.append("B could not lock after A unlocked: %s" % got)
        c.res("grace_reclaimed", not errs, "; ".join(errs) or
              "A's open and lock survived the restart; B locked after A's unlock")
        return
    # ---- B
    c.wait("g1-locked")
    fd = os.open(p, os.O_RDWR)
    c.post("g1-opened")
    c.wait("g2-restarted", poll=0.01)
    t0 = time.time()
    # During the grace period the server answers NFS4ERR_GRACE and the
    # client retries: the answer comes once A has reclaimed, or the
    # grace period is over; either way A holds the lock again.
    e = try_lock(fd, "w", 0, 10)
    took = time.time() - t0
    if e is None:
        S.lockf(fd, "u", 0, 10)
    c.post("g2-tried")
    c.res("grace_lock_kept", e is not None,
          "refused (%s) %.1fs after the restart: A had reclaimed it" % (errname(e), took) if e else
          "granted %.1fs after the restart: the lock A held was given away" % took)
    c.wait("g3-unlocked")
    # A unlocked: free at once, unless the server is still in its grace
    # period (up to a lease, 30 s); 90 s is an upper bound on the wait.
    ok, secs, last = retry(lambda: try_lock(fd, "w", 0, 10), 90.0)
    if ok:
        S.lockf(fd, "u", 0, 10)
    os.close(fd)
    c.post("g3-locked", "ok" if ok else "refused (%s) for %.0fs" % (errname(last), secs))


PHASES = [ph_setup, ph_fcntl, ph_flock, ph_excl, ph_cto, ph_deleg, ph_wdeleg, ph_grace]


def run_version(v):
    c = Ctx(v)
    print("=== NFS vers=%s, guest %s" % (v, ROLE), flush=True)
    mv = mount_vers(v, ROLE)
    ok, msg = S.mount(mv, c.mp, "")
    opts = ""
    if ok:
        with open("/proc/mounts") as f:
            line = [l for l in f if " %s " % c.mp in l]
        opts = line[0].split()[3] if line else ""
        if ("vers=%s" % mv) not in opts.split(","):
            ok, msg = False, "negotiated options %s, expected vers=%s" % (opts, mv)
        elif mv == "3" and "nolock" in opts.split(","):
            ok, msg = False, "NFSv3 mounted with nolock: %s" % opts
    c.res("mount", ok, msg if not ok else "vers=%s (%s), client id nfs.nfs4_unique_id=%s" % (
        mv, "NLM locking, " + msg.split(" -> ")[0] if mv == "3" else opts.split(",")[0], unique_id()))
    if not ok:
        c.post("abort", "mount failed")
        c.fail_rest("not run: guest %s could not mount" % ROLE)
        return
    aborted = False
    try:
        c.barrier("mounted")
        for fn in PHASES:
            fn(c)
        c.barrier("end")
    except BaseException as e:  # noqa
        aborted = True
        if isinstance(e, (Abort, S.Fail)):
            why = str(e)
        elif isinstance(e, OSError):
            tb = traceback.extract_tb(e.__traceback__)
            why = "unexpected %s at line %d" % (e, tb[-1].lineno if tb else 0)
        else:
            traceback.print_exc()
            why = "exception %r" % e
        try:
            c.post("abort", "%s: %s" % (sys.exc_info()[0].__name__, why))
        except OSError:
            pass
        c.fail_rest(why)
    S.save_mountstats(c.tag, [c.mp])
    # Cleanup after the checks: its bounds decide no verdict.
    if ROLE == "A" and not aborted and not S.KEEP:
        r = S.run(["timeout", "120", "rm", "-rf", c.w])
        print("    cleanup of %s: rc %d %s" % (c.w, r.returncode, r.stdout.strip()[-200:]), flush=True)
    r = S.run(["timeout", "60", "umount", c.mp])
    if r.returncode != 0:
        print("    umount %s failed: %s" % (c.mp, r.stdout.strip()), flush=True)
        S.run(["umount", "-f", "-l", c.mp])


def unique_id():
    try:
        with open("/sys/module/nfs/parameters/nfs4_unique_id") as f:
            return f.read().strip()
    except OSError:
        return "?"


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "plan.txt"), "w") as f:
        f.write("\n".join(r for r in plan_rows(S.VERS) if r.split("/")[1] == ROLE) + "\n")
    try:
        socket.sethostname("ferrite-rc-%s" % ROLE.lower())   # before mounting: the client id has the node name
    except OSError:
        pass
    print("ferrite realclient two-guest checks: guest %s, server %s:%d export %s, versions %s, kernel %s" %
          (ROLE, S.HOST, S.PORT, S.EXPORT, ",".join(S.VERS), os.uname().release), flush=True)
    t0 = time.time()
    for v in S.VERS:
        run_version(v)
    print("guest %s finished in %.1fs" % (ROLE, time.time() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
