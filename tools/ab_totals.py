"""Totals of `ferrite bench run --server-pid` results, for the tables of
tools/krb5-ab.sh and tools/tls-ab.sh (imported by their report scripts)."""
import json

# The rows both compare (tools/bench-lib.sh sec_args), as the tables name them.
NAMES = {
    "randread-16": "randread 4 KiB, 16 threads",
    "seqread": "seqread 1 MiB, 4 threads",
    "randwrite-16": "randwrite 4 KiB, 16 threads",
    "dirlist": "dirlist, 4 threads",
}


def totals(paths):
    """Over the runs in the JSON files `paths`: server CPU µs per operation
    (summed CPU over summed operations), mean ops/s, and the most CPU
    percent the client used in a run."""
    cpu = ops = 0.0
    rates, clients = [], []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        for run in d["runs"]:
            sc = run["server_cpu"]
            cpu += sc["user_s"] + sc["sys_s"]
            ops += run["ops"]
            rates.append(run["ops_per_s"])
            clients.append(run["cpu"]["percent"])
    return cpu / ops * 1e6 if ops else float("nan"), sum(rates) / len(rates), max(clients)
