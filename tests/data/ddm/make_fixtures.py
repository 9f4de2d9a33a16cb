#!/usr/bin/env python3
"""Writes the DDM allocation-record fixtures of tests/data/ddm/ (see README.md there).

An encoder of its own, written from the format notes (../shared/formats/ddm-alloc-and-hprof.md,
section A) with Python's struct module: it shares no code with heapconv's decoder or with the
blob writer heapconv keeps for its tests, so a misread field cannot hide in both. Deterministic:
running it again rewrites the same bytes.

    python3 tests/data/ddm/make_fixtures.py
"""

import gzip
import io
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def string(s):
    units = s.encode("utf-16-be")
    return struct.pack(">I", len(units) // 2) + units


class Capture:
    """Records in file order; string tables in first-use order."""

    def __init__(self):
        self.classes, self.methods, self.files = [], [], []
        self.entries = []
        self.thread_names = None

    @staticmethod
    def _index(table, s):
        if s not in table:
            table.append(s)
        return table.index(s)

    def entry(self, size, thread, cls, frames):
        """frames: innermost first, (class descriptor, method, file, line)."""
        c = self._index(self.classes, cls)
        fr = [(self._index(self.classes, fc), self._index(self.methods, m), self._index(self.files, f), line)
              for (fc, m, f, line) in frames]
        self.entries.append((size, thread, c, fr))

    def blob(self, header_len=15, entry_len=9, frame_len=8, pad=b"\x00", count=None):
        body = b""
        for size, thread, c, frames in self.entries:
            e = struct.pack(">IHHB", size, thread, c, len(frames))
            body += e + pad * (entry_len - 9)
            for fc, m, f, line in frames:
                body += struct.pack(">HHHh", fc, m, f, line) + pad * (frame_len - 8)
        n = len(self.entries) if count is None else count
        header = struct.pack(">BBBHIHHH", header_len, entry_len, frame_len, n & 0xFFFF,
                             header_len + len(body), len(self.classes), len(self.methods), len(self.files))
        header += pad * (header_len - 15)
        tables = b"".join(string(s) for s in self.classes + self.methods + self.files)
        tail = b""
        if self.thread_names is not None:
            tail = struct.pack(">I", len(self.thread_names))
            for tid, name in self.thread_names:
                tail += struct.pack(">H", tid) + string(name)
        return header + body + tables + tail


def chunk(kind, data):
    return kind + struct.pack(">I", len(data)) + data


def jdwp_reply(pid, payload, error=0):
    return struct.pack(">IIBH", 11 + len(payload), pid, 0x80, error) + payload


def jdwp_command(pid, payload):
    return struct.pack(">IIBBB", 11 + len(payload), pid, 0, 0xC7, 0x01) + payload


def art_capture():
    """ART on Android 6.0+: newest allocation first, kernel tids, a depth limit of 6 reached."""
    c = Capture()
    main, worker, decoder = 12345, 12367, 12401
    act = "Lcom/example/app/MainActivity;"
    looper = [("Landroid/os/Handler;", "dispatchMessage", "Handler.java", 102),
              ("Landroid/os/Looper;", "loop", "Looper.java", 193),
              ("Landroid/app/ActivityThread;", "main", "ActivityThread.java", 6669),
              ("Ljava/lang/reflect/Method;", "invoke", "Method.java", -2)]
    # Newest first: the last allocation made comes first.
    c.entry(24, main, "Ljava/lang/String;",
            [("Ljava/lang/StringBuilder;", "toString", "StringBuilder.java", 413),
             (act, "label", "MainActivity.java", 88)] + looper)
    c.entry(4096, decoder, "[B",
            [("Lcom/example/app/Decoder;", "nativeDecode", "Decoder.java", -2),
             ("Lcom/example/app/Decoder;", "decode", "Decoder.java", 40000 - 65536),
             ("Lcom/example/app/Decoder$Worker;", "run", "", 17)])
    c.entry(48, worker, "[[Ljava/lang/Object;",
            [("Lcom/example/app/Cache;", "grow", "Cache.java", -1),
             ("Lcom/example/app/Cache;", "put", "Cache.java", 0),
             ("Lcom/example/app/Loader;", "run", "", -1)])
    c.entry(1024, main, "[I",
            [(act, "onCreate", "MainActivity.java", 31)] + looper[:3] + [looper[3]] +
            [("Lcom/android/internal/os/ZygoteInit;", "main", "ZygoteInit.java", 858)])
    c.entry(24, main, "Ljava/lang/String;",
            [("Ljava/lang/StringBuilder;", "toString", "StringBuilder.java", 413),
             (act, "label", "MainActivity.java", 88)] + looper)
    c.entry(16, worker, "Lcom/example/app/Cache$Node;",
            [("Lcom/example/app/Cache;", "put", "Cache.java", 52),
             ("Lcom/example/app/Loader;", "run", "", -1)])
    c.entry(64, decoder, "Ljava/lang/Object;", [])
    return c


def dalvik_capture():
    """Dalvik: oldest allocation first, small VM thread ids, the 16-frame limit reached."""
    c = Capture()
    deep = [("Lorg/example/Parser;", "parseValue", "Parser.java", 210 + i) for i in range(13)]
    base = [("Lorg/example/Parser;", "parse", "Parser.java", 40),
            ("Lorg/example/Main;", "run", "Main.java", 12),
            ("Ldalvik/system/NativeStart;", "main", "NativeStart.java", -2)]
    c.entry(32, 1, "Ljava/util/HashMap$Entry;", [("Ljava/util/HashMap;", "put", "HashMap.java", 407)] + base)
    c.entry(72, 1, "[C", [("Ljava/lang/AbstractStringBuilder;", "enlargeBuffer", "AbstractStringBuilder.java", 94)] +
            deep[:12] + base[:2] + [base[2]])
    c.entry(16, 7, "Ljava/lang/Integer;", [("Ljava/lang/Integer;", "valueOf", "Integer.java", 644)])
    c.entry(40, 11, "[Ljava/lang/String;", [("Lorg/example/Parser;", "split", "Parser.java", 33)] + base)
    c.entry(72, 1, "[C", [("Ljava/lang/AbstractStringBuilder;", "enlargeBuffer", "AbstractStringBuilder.java", 94)] +
            deep[:12] + base[:2] + [base[2]])
    return c


def ddmlib_basic(n):
    """The captures ddmlib's AllocationsParserTest checks (basic1..3.alloc), rebuilt from the
    values that test asserts (the original binary files were not available). ddmlib numbers
    entry i as count - i, i.e. it takes the first entry to be the newest."""
    c = Capture()
    if n == 1:
        c.entry(32, 4, "Lpath/Foo;", [])
    elif n == 2:
        c.entry(64, 0, "Lpath/Bar;", [("Lpath/Bar;", "bar", "Bar.java", -1),
                                      ("Lpath/Baz;", "foo", "Bar.java", 2000),
                                      ("Lpath/Foo;", "baz", "Foo.java", 10)])
    else:
        c.entry(128, 8, "Lpath/Red;", [("Lpath/Green;", "eatTiramisu", "SomewhatBlue.java", 100),
                                       ("Lpath/Blue;", "findWaldo", "SomewhatBlue.java", -2)])
        c.entry(16, 8, "Lpath/Blue;", [("Lpath/Red;", "failUnitTest", "Red.java", -1)])
        c.entry(42, 2, "Lpath/Green;", [("Lpath/LightCanaryishGrey;", "collectFakeMoney", "LightCanaryishGrey.java", 10001),
                                        ("Lpath/Red;", "passGo", "Red.java", 0),
                                        ("Lpath/Blue;", "watchCatVideos", "SomewhatBlue.java", 16)])
    return c


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    art = art_capture().blob()
    write("art.alloc", art)
    write("art.real", chunk(b"REAL", art))
    write("art.jdwp", b"JDWP-Handshake" + jdwp_command(0x41, chunk(b"REAL", b"")) + jdwp_reply(0x41, chunk(b"REAL", art)))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as g:
        g.write(art)
    write("art.alloc.gz", buf.getvalue())
    write("dalvik.alloc", dalvik_capture().blob())
    # A producer with longer header, entries and frames: the extra bytes must be skipped.
    write("long_layout.alloc", dalvik_capture().blob(header_len=19, entry_len=12, frame_len=11, pad=b"\xee"))
    named = ddmlib_basic(3)
    named.thread_names = [(8, "main"), (2, "Binder:1234_2")]
    write("thread_names.alloc", named.blob())
    for n in (1, 2, 3):
        write(f"ddmlib_basic{n}.alloc", ddmlib_basic(n).blob())
    write("empty.alloc", Capture().blob())
    write("fail.real", chunk(b"FAIL", struct.pack(">II", 1, 8) + "disabled".encode("utf-16-be")))


if __name__ == "__main__":
    main()
