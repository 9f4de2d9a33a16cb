#!/usr/bin/env python3
"""Writes a large R8-shaped mapping file and a stack trace of frames drawn from it:
   benches/gen_proguard_map.py MAP STACK [MEGABYTES=100] [FRAMES=200000]
Classes of a big app: ~40 fields and methods each, line ranges, inline chains of 2-3
methods, sourceFile records. Deterministic (seeded)."""
import random, sys

out_map, out_stack = sys.argv[1], sys.argv[2]
megabytes = int(sys.argv[3]) if len(sys.argv) > 3 else 100
frames = int(sys.argv[4]) if len(sys.argv) > 4 else 200000
rng = random.Random(17)

def obf(i):
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return s

classes = []
size = 0
with open(out_map, "w") as f:
    f.write("# compiler: R8\n# compiler_version: 8.5.35\n# min_api: 24\n# pg_map_id: 0123456\n")
    c = 0
    while size < megabytes * 1_000_000:
        pkg = f"com.bigapp.feature{c % 400}.sub{c % 17}"
        name = f"{pkg}.Component{c}"
        o = f"{obf(c // 700)}.{obf(c % 700)}"
        lines = [f"{name} -> {o}:\n", f'# {{"id":"sourceFile","fileName":"Component{c}.java"}}\n']
        for k in range(rng.randint(3, 12)):
            lines.append(f"    java.lang.String field{k}OfComponent{c} -> {obf(k)}\n")
        methods = []
        start = 1
        for k in range(rng.randint(8, 30)):
            n = rng.randint(1, 20)
            src = rng.randint(10, 2000)
            m = obf(k)
            depth = rng.choice([1, 1, 1, 2, 3])
            for d in range(depth - 1):
                lines.append(f"    {start}:{start + n - 1}:void com.bigapp.util.Helper{rng.randint(0, 999)}.inlined{d}(int):{src + d}:{src + d} -> {m}\n")
            lines.append(f"    {start}:{start + n - 1}:void method{k}OfComponent{c}(int,java.lang.String):{src}:{src + n - 1} -> {m}\n")
            methods.append((m, start, start + n - 1))
            start += n
        text = "".join(lines)
        f.write(text)
        size += len(text)
        classes.append((o, methods))
        c += 1
with open(out_stack, "w") as f:
    f.write("java.lang.Throwable: bench\n")
    for _ in range(frames):
        o, methods = rng.choice(classes)
        m, a, b = rng.choice(methods)
        f.write(f"\tat {o}.{m}(SourceFile:{rng.randint(a, b)})\n")
print(f"{len(classes)} classes, {size} bytes, {frames} frames")
