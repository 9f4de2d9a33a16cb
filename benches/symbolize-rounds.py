#!/usr/bin/env python3
"""Issue 15, `symbolize`: ROUNDS interleaved rounds of OLD and NEW (`heapconv symbolize` of the
mixed SQLite trace) and `llvm-symbolizer` on the same addresses. Prints, per tool, the wall time
(median, min, max), CPU (user + sys, from wait4's rusage), minor page faults and peak RSS, then
the llvm-symbolizer / heapconv wall ratio of each round (the issue asks 2x), and checks that OLD
and NEW wrote the same bytes. Outputs go to $OUT (default: a new temporary directory).

    python3 benches/symbolize-rounds.py ROUNDS OLD_BINARY NEW_BINARY   (from the repository root)
"""
import os
import statistics as st
import subprocess
import sys
import tempfile
import time

n, old, new = int(sys.argv[1]), sys.argv[2], sys.argv[3]
bench = "target/bench"
out = os.environ.get("OUT") or tempfile.mkdtemp(prefix="symbolize-rounds-")
trace = f"{bench}/mixed.pftrace"
cmds = {
    "old": [old, "symbolize", trace, "--symbol-dir", bench, "-o", f"{out}/old.pb", "-q"],
    "new": [new, "symbolize", trace, "--symbol-dir", bench, "-o", f"{out}/new.pb", "-q"],
    "llvm": ["llvm-symbolizer", "--inlines", "--output-style=JSON", f"--obj={bench}/libsqlite3.so"],
}
res = {k: [] for k in cmds}


def run(k):
    with open(f"{bench}/mixed.addrs") as i, open(f"{out}/llvm.jsonl", "w") as o:
        stdin, stdout = (i, o) if k == "llvm" else (subprocess.DEVNULL, subprocess.DEVNULL)
        t = time.perf_counter()
        p = subprocess.Popen(cmds[k], stdin=stdin, stdout=stdout)
        _, status, ru = os.wait4(p.pid, 0)
        wall = (time.perf_counter() - t) * 1000
    assert status == 0, k
    res[k].append((wall, ru.ru_utime * 1000, ru.ru_stime * 1000, ru.ru_minflt, ru.ru_maxrss))


for _ in range(n):
    for k in ["old", "new", "llvm"]:
        run(k)
for k in ["llvm", "old", "new"]:
    v = res[k]
    col = lambda i: [x[i] for x in v]  # noqa: E731
    cpu = [a + b for a, b in zip(col(1), col(2))]
    print(
        f"{k:5} wall median {st.median(col(0)):6.1f} ms (min {min(col(0)):6.1f}, max {max(col(0)):6.1f}) | "
        f"CPU median {st.median(cpu):6.1f} ms (user {st.median(col(1)):5.1f}, sys {st.median(col(2)):5.1f}) | "
        f"faults median {st.median(col(3)):6.0f} | peak {max(col(4)) / 1024:5.1f} MiB"
    )
for k in ["old", "new"]:
    r = [llvm[0] / x[0] for llvm, x in zip(res["llvm"], res[k])]
    print(
        f"llvm/{k} per round: min {min(r):.2f}x, median {st.median(r):.2f}x, max {max(r):.2f}x; "
        f"below 2x in {sum(x < 2 for x in r)} of {n} rounds"
    )
print("new wall per round (ms):", " ".join(f"{x[0]:.0f}" for x in res["new"]))
same = open(f"{out}/old.pb", "rb").read() == open(f"{out}/new.pb", "rb").read()
print(f"outputs in {out}; OLD and NEW bytes {'identical' if same else 'DIFFERENT'}")
