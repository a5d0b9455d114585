#!/usr/bin/env python3
"""Reads only the bytes of a core that an analyze report needs, as `cat` reads all of them.

Usage: bench/needed_reads.py CORE REPORT [--no-jpeg] > SPANS   (the file ranges, one per line)
       bench/needed_reads.py --read CORE SPANS                (reads them; this is what to time)

REPORT is `dumpsift analyze CORE --report REPORT` (--min-size 65536, as bench/floor.sh runs it).
For each reported buffer, the bytes the report cannot be made without:
  - zero-filled buffers: every byte (the zero proof);
  - buffers of a duplicates finding: every byte (the byte-for-byte comparison);
  - JPEG streams (kind jpeg, or an aws-chunked payload of jpeg): the stream's content_length (the
    marker walk finds where the entropy-coded data ends); left out with --no-jpeg;
  - zero-tail buffers: the zero tail after content_length;
  - every buffer: its sampled fingerprint (18 windows of 4 KiB: the first, the last, 16 between;
    all of it up to 72 KiB) and its first 4 KiB (the sniffers' head).
Ranges are merged, mapped to file offsets through the core's PT_LOAD headers and read with pread
into one 1 MiB buffer (what cat does), in file order. The first form prints the byte count on
stderr.
Timed against `cat CORE` in one hyperfine run, it is the floor of a tool that reads exactly those
bytes (docs/performance.md).
"""
import bisect
import json
import os
import struct
import sys

WINDOW, WINDOWS, HEAD = 4096, 18, 4096


def loads(core):
    """The core's PT_LOAD segments as (vaddr, file offset, file size)."""
    with open(core, "rb") as f:
        ident = f.read(64)
        phoff, = struct.unpack_from("<Q", ident, 32)
        phentsize, phnum = struct.unpack_from("<HH", ident, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, _, offset, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
        if p_type == 1 and filesz:
            out.append((vaddr, offset, filesz))
    return sorted(out)


def needed(report, jpeg):
    """Merged (address, length) ranges the report needs."""
    r = json.load(open(report))
    copies, tails = set(), set()
    for f in r["findings"]:
        if f["type"] == "duplicates":
            copies.update(f["addresses"])
        if f["type"] == "zero-tail":
            tails.update(f["addresses"])
    ranges = []
    for b in r["buffers"]:
        at, size = int(b["address"], 16), b["size"]
        content = b.get("content_length", size)
        chunk = b.get("chunk", b["address"])
        if b["kind"] == "zero" or chunk in copies or b["address"] in copies:
            ranges.append((at, size))
            continue
        ranges.append((at, min(size, HEAD)))
        if size <= WINDOW * WINDOWS:
            ranges.append((at, size))
        else:
            stride = (size - WINDOW) // (WINDOWS - 1)
            ranges += [(at + w * stride, WINDOW) for w in range(WINDOWS - 1)]
            ranges.append((at + size - WINDOW, WINDOW))
        if jpeg and (b["kind"] == "jpeg" or b.get("details", {}).get("payload_kind") == "jpeg"):
            ranges.append((at, content))
        if chunk in tails or b["address"] in tails:
            ranges.append((at + content, size - content))
    merged = []
    for start, length in sorted(ranges):
        if merged and start <= merged[-1][0] + merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], start + length - last[0]))
        else:
            merged.append((start, length))
    return merged


def read_spans(core, spans):
    """Reads each "offset length" line of the file `spans` from `core`, 1 MiB at a time."""
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    fd = os.open(core, os.O_RDONLY)
    for line in open(spans):
        offset, length = map(int, line.split())
        while length:
            n = os.preadv(fd, [view[:min(length, len(buf))]], offset)
            if n <= 0:
                break
            offset += n
            length -= n
    os.close(fd)


def main():
    if sys.argv[1] == "--read":
        read_spans(sys.argv[2], sys.argv[3])
        return
    core, report = sys.argv[1], sys.argv[2]
    segments = loads(core)
    starts = [s[0] for s in segments]
    spans = []
    for start, length in needed(report, "--no-jpeg" not in sys.argv):
        i = max(bisect.bisect_right(starts, start) - 1, 0)
        for vaddr, offset, filesz in segments[i:]:
            if vaddr >= start + length:
                break
            lo, hi = max(start, vaddr), min(start + length, vaddr + filesz)
            if lo < hi:
                spans.append((offset + lo - vaddr, hi - lo))
    spans.sort()
    total = sum(n for _, n in spans)
    size = os.path.getsize(core)
    print(f"{total} bytes of {size} ({total / size:.3f}) in {len(spans)} ranges", file=sys.stderr)
    for offset, length in spans:
        print(offset, length)


if __name__ == "__main__":
    main()
