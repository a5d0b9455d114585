#!/usr/bin/env python3
"""Writes the hostile dumps of issue 24, one per class, laid out from the formats' documentation
(the ELF gABI's Elf64_Ehdr/Elf64_Phdr; Microsoft's MINIDUMP_HEADER, MINIDUMP_DIRECTORY,
MINIDUMP_MEMORY_LIST, MINIDUMP_MEMORY64_LIST, MINIDUMP_SYSTEM_INFO; breakpad's Linux streams):

  aliased.core        4.7 MB: 65,533 PT_LOADs of 1 MiB, all over the same 1 MiB of file bytes
  aliased.dmp         1.1 MB: 1,024 MemoryList ranges of 1 MiB over the same 1 MiB
  ranges.dmp          102 MB: 6,000,000 one-byte Memory64List ranges (counts consistent)
  gzip.core           4 MiB of private memory: back-to-back gzip members, each 4 MiB of zeros
  escapes.dmp         a command line, module path and process name holding ESC, BEL, CR
  pointers.core       a gzip member (of 128 KiB of random bytes) in 1 MiB of private memory, and
                      64 MiB of words each pointing into it (holders: one buffer, 8 Mi references)
  jpegs.core          4 MiB of private memory: JPEG headers (photo_baseline.jpg's, to its SOS),
                      each followed by 400 bytes of scan data and no end marker, back to back

Usage: hostile_dumps.py [--small] OUT_DIR [CLASS...]   (bench/hostile.sh runs dumpsift on them)

--small writes each class in a small form instead (a few KiB: 64 aliased PT_LOADs of 4 KiB, 64
aliased MemoryList ranges, 1,000 one-byte ranges, an 8 KiB region of two gzip members, a 16 KiB
region of cut JPEG streams, 64 KiB of words pointing into a gzip member), the fuzz seeds fixtures/corpus/pipeline/regress-*.
"""
import array
import gzip
import os
import random
import struct
import sys

MIB = 1 << 20
PT_LOAD, PT_NOTE = 1, 4
PF_R, PF_W = 4, 2


def elf_core(loads, notes=b""):
    """An x86-64 ELF core: header, a PT_NOTE, then one PT_LOAD per (vaddr, memsz, offset, filesz,
    flags) in `loads`; the caller's data follows the headers at the offsets it gives, relative to
    the end of the headers (the notes first)."""
    phnum = 1 + len(loads)
    data_at = 64 + 56 * phnum
    ehdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr += struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, phnum, 0, 0, 0)
    phdrs = [struct.pack("<IIQQQQQQ", PT_NOTE, 0, data_at, 0, 0, len(notes), 0, 4)]
    for vaddr, memsz, offset, filesz, flags in loads:
        phdrs.append(struct.pack("<IIQQQQQQ", PT_LOAD, flags, data_at + len(notes) + offset,
                                 vaddr, 0, filesz, memsz, 0x1000))
    return ehdr + b"".join(phdrs) + notes


def minidump(streams, tail=b""):
    """A minidump of `streams` [(type, bytes)]: header, directory, each stream's bytes, then
    `tail`, which starts at tail_offset(streams)."""
    at = 32 + 12 * len(streams)
    directory, body = b"", b""
    for kind, data in streams:
        directory += struct.pack("<III", kind, len(data), at)
        body += data
        at += len(data)
    header = struct.pack("<IIIIIIQ", 0x504D444D, 0xA793, len(streams), 32, 0, 0, 0)
    return header + directory + body + tail


def tail_offset(streams):
    return 32 + 12 * len(streams) + sum(len(data) for _, data in streams)


def system_info_linux():
    # MINIDUMP_SYSTEM_INFO (56 bytes): ProcessorArchitecture 9 (AMD64), PlatformId 0x8201
    # (breakpad's Linux), then SuiteMask, Reserved2 and the 24-byte CPU_INFORMATION.
    return struct.pack("<HHHBBIIIIIHH", 9, 6, 0, 1, 0, 0, 0, 0, 0x8201, 0, 0, 0) + bytes(24)


def noise(n, seed):
    return random.Random(seed).randbytes(n)


def aliased_core(count=65533, size=MIB):
    loads = [(0x10000000 + i * size, size, 0, size, PF_R | PF_W) for i in range(count)]
    return elf_core(loads) + noise(size, 1)


def aliased_dmp(count=1024, size=MIB):
    def memory_list(data_at):
        descs = b"".join(struct.pack("<QII", 0x10000000 + i * size, size, data_at)
                         for i in range(count))
        return struct.pack("<I", count) + descs
    streams = [(7, system_info_linux()), (5, memory_list(0))]
    streams[1] = (5, memory_list(tail_offset(streams)))
    return minidump(streams, noise(size, 2))


def ranges_dmp(count=6_000_000):
    def memory64_list(base):
        # MINIDUMP_MEMORY64_LIST: NumberOfMemoryRanges, BaseRva, then (StartOfMemoryRange,
        # DataSize) pairs, laid out as one array of little-endian u64s (a second, not a minute).
        words = array.array("Q", bytes(8 * (2 + 2 * count)))
        words[0], words[1] = count, base
        words[2::2] = array.array("Q", range(0x10000000, 0x10000000 + count * 0x1000, 0x1000))
        words[3::2] = array.array("Q", [1]) * count
        if sys.byteorder != "little":
            words.byteswap()
        return words.tobytes()
    streams = [(7, system_info_linux()), (9, memory64_list(0))]
    streams[1] = (9, memory64_list(tail_offset(streams)))
    return minidump(streams, noise(count, 3))


def gzip_core(size=4 * MIB):
    member = gzip.compress(bytes(4 * MIB), compresslevel=9, mtime=0)
    region = bytearray()
    while len(region) + len(member) <= size:
        region += member
    region += bytes(size - len(region))
    return elf_core([(0x20000000, size, 0, size, PF_R | PF_W)]) + bytes(region)


def jpegs_core(size=4 * MIB):
    """Each cut stream is a JPEG to the region scan, its extent an estimate: the end of the run of
    non-zero bytes it starts, which is the whole region. Found once per stream, that was quadratic
    (31 s for this region)."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "fixtures", "content", "photo_baseline.jpg"), "rb") as f:
        jpeg = f.read()
    sos = jpeg.index(b"\xff\xda")
    headers = jpeg[: sos + 2 + struct.unpack_from(">H", jpeg, sos + 2)[0]]
    rng = random.Random(24)
    region = bytearray()
    while len(region) + len(headers) + 400 <= size:
        region += headers + bytes(rng.randrange(0, 0xFF) for _ in range(400))  # no 0xFF: no marker
    region += bytes(size - len(region))
    return elf_core([(0x20000000, size, 0, size, PF_R | PF_W)]) + bytes(region)


def pointers_core(words_size=64 * MIB):
    """The region scan finds a gzip member of 128 KiB of random bytes (about 128 KiB long) at
    0x20000000; every word of the second region points into it, so the holders pass meets one
    buffer with words_size / 8 references."""
    member = gzip.compress(random.Random(31).randbytes(128 * 1024), compresslevel=1, mtime=0)
    image_at, words_at = 0x20000000, 0x30000000
    image = member + bytes(MIB - len(member))
    words = array.array("Q", (image_at + (i * 8) % len(member) for i in range(words_size // 8)))
    return elf_core([(image_at, MIB, 0, MIB, PF_R | PF_W),
                     (words_at, words_size, MIB, words_size, PF_R | PF_W)]) + image + words.tobytes()


def escapes_dmp():
    hostile = b"evil\x1b[2J\x1b]0;owned\x07\rfake line\x1b[31m"
    cmdline = b"/usr/bin/" + hostile + b"\0--flag\x1b[0m\0"
    status = b"Name:\t" + hostile + b"\nPid:\t42\n"
    return minidump([(7, system_info_linux()), (0x47670006, cmdline), (0x47670004, status)])


CLASSES = {
    "aliased.core": aliased_core,
    "aliased.dmp": aliased_dmp,
    "ranges.dmp": ranges_dmp,
    "gzip.core": gzip_core,
    "escapes.dmp": escapes_dmp,
    "jpegs.core": jpegs_core,
    "pointers.core": pointers_core,
}


SMALL = {
    "aliased.core": lambda: aliased_core(64, 4096),
    "aliased.dmp": lambda: aliased_dmp(64, 4096),
    "ranges.dmp": lambda: ranges_dmp(1000),
    "gzip.core": lambda: gzip_core(8200),
    "escapes.dmp": escapes_dmp,
    "jpegs.core": lambda: jpegs_core(16384),
    "pointers.core": lambda: pointers_core(64 * 1024),
}


def main():
    args = sys.argv[1:]
    classes = CLASSES
    if args and args[0] == "--small":
        classes, args = SMALL, args[1:]
    out = args[0]
    os.makedirs(out, exist_ok=True)
    for name in args[1:] or classes:
        with open(os.path.join(out, name), "wb") as f:
            f.write(classes[name]())


if __name__ == "__main__":
    main()
