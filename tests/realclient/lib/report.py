"""The report of a two-guest run (two-guests.sh, pnfs.sh): every row of
OUT/plan.txt with its result from OUT/results.txt (MISSING if the guest
never got there), the failures, the totals; written to OUT/report.txt and
printed. Exits 1 if any row failed or is missing, or nothing ran.

    python3 lib/report.py OUT TOTAL_SECONDS ACCEL

Rows are "vVERSION/ROLE/name": versions such as 4.1 or "mix", roles A
and B (the guests) and H (the host's checks).
"""
import os
import re
import sys

out, total, accel = sys.argv[1:]
plan = [l.strip() for l in open(os.path.join(out, "plan.txt")) if l.strip()]
pat = re.compile(r"^(PASS|FAIL|SKIP) (v[0-9a-z.]+/[ABH]/\w+)(?:: (.*?))?(?: \(([0-9.]+)s\))?$")
res = {}
results = os.path.join(out, "results.txt")
for l in open(results) if os.path.exists(results) else []:
    m = pat.match(l.strip())
    if m:
        res[m.group(2)] = (m.group(1), m.group(3) or "")
lines, fails, counts = [], [], {}
w = max(len(p) for p in plan)
for p in plan:
    st, why = res.get(p, ("MISSING", "no result: the guest did not get here (crash/timeout, see output.log)"))
    counts[st] = counts.get(st, 0) + 1
    lines.append("%-*s  %-7s  %s" % (w, p, st, why))
    if st in ("FAIL", "MISSING"):
        fails.append("%s: %s" % (p, why))
lines.append("")
if fails:
    lines.append("FAILURES:")
    lines += ["  " + f for f in fails]
lines.append("TOTAL: %s | wall %ss (accel %s, two guests)" % (" ".join("%s=%d" % (k, counts[k]) for k in sorted(counts)), total, accel))
lines.append("RESULT: %s" % ("FAIL" if fails or not res else "PASS"))
text = "\n".join(lines) + "\n"
open(os.path.join(out, "report.txt"), "w").write(text)
print("\n" + text, end="")
sys.exit(1 if fails or not res else 0)
