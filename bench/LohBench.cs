// A production-sized CoreCLR heap for bench/coreclr.sh: about MIB mebibytes of byte[] on the Large
// Object Heap and MILLIONS million small objects, all reachable. Prints one JSON line (what it
// holds), then READY, and waits to be dumped with gcore.
//
// Usage: LohBench.exe JPEG MIB [MILLIONS]   (default 5 million small objects)
// Compiled with Mono's mcs; run on .NET Core 2.0 (`dotnet exec`), as fixtures/dotnet/make_cores.sh
// runs LohArrays.exe. JPEG is the picture make_cores.sh makes (MakeImage.exe, then cjpeg).
//
// The large arrays cycle through the story's kinds, in the order of fixtures/programs/big_heap.c:
// a slice of the JPEG (131,072 bytes from an offset that steps through the file, so some start at
// its SOI marker and most are cut entropy-coded data; zero-padded past the file's end), an
// aws-chunked frame carrying such a slice (`20000;chunk-signature=<64 hex>\r\n<data>\r\n` for the
// story's 131,162-byte frame), a copy of the previous array (a retried frame), a zero-filled array
// and two random ones. Sizes are drawn from big_heap's table without its 64 KiB (below the LOH
// threshold of 85,000 bytes): 128 KiB, 131,162 bytes, 132 KiB, 192 KiB, 256 KiB to 2 MiB.
// Everything is drawn from a fixed seed, so every run holds the same bytes.
using System;
using System.Collections.Generic;
using System.IO;
using System.Threading;

static class LohBench {
  const int SliceStep = 131072; // the AWS SDK's input buffer, DefaultChunkSize in 2018
  static readonly int[] Sizes = {131072, 131162, 135152, 196608, 262144, 524288, 1048576, 2097152};
  static readonly string[] Kinds = {"jpeg-slice", "aws-chunk", "copy", "zeros", "random"};

  static readonly List<byte[]> Large = new List<byte[]>();
  static object[] small;
  static ulong rng = 0x9E3779B97F4A7C15UL;
  static ulong sizeRng = 0x94D049BB133111EBUL;

  // xorshift64*: deterministic on every runtime (System.Random differs between runtimes).
  static ulong Next(ref ulong state) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717UL;
  }

  static void FillRandom(byte[] a) {
    int i = 0;
    for (; i + 8 <= a.Length; i += 8) {
      ulong v = Next(ref rng);
      for (int b = 0; b < 8; b++)
        a[i + b] = (byte)(v >> (8 * b));
    }
    for (; i < a.Length; i++)
      a[i] = (byte)(Next(ref rng) >> 56);
  }

  // Copies `count` bytes of the JPEG's slice number `n` into dst at `at` (zeros past its end).
  static void CopySlice(byte[] jpeg, int n, byte[] dst, int at, int count) {
    int slices = (jpeg.Length + SliceStep - 1) / SliceStep;
    int from = (n % slices) * SliceStep;
    int copied = Math.Min(count, jpeg.Length - from);
    Buffer.BlockCopy(jpeg, from, dst, at, copied); // new arrays are zero-filled already
  }

  static int WriteAscii(byte[] dst, int at, string s) {
    for (int i = 0; i < s.Length; i++)
      dst[at + i] = (byte)s[i];
    return at + s.Length;
  }

  // An aws-chunked frame of `size` bytes: hex(data length) ";chunk-signature=" sig CRLF data CRLF.
  static byte[] ChunkFrame(byte[] jpeg, int n, int size) {
    var sig = new char[64];
    for (int i = 0; i < sig.Length; i++)
      sig[i] = "0123456789abcdef"[(int)(Next(ref rng) >> 60)];
    string tail = ";chunk-signature=" + new string(sig) + "\r\n";
    int data = size - 2 - tail.Length - (size - 2 - tail.Length).ToString("x").Length;
    string head = data.ToString("x") + tail;
    data = size - 2 - head.Length; // one hex digit fewer when the shorter length crosses a power of 16
    head = data.ToString("x") + tail;
    var frame = new byte[size];
    int at = WriteAscii(frame, 0, head);
    CopySlice(jpeg, n, frame, at, data);
    WriteAscii(frame, at + data, "\r\n");
    return frame;
  }

  // Allocates the large arrays. A method of its own, so that the JPEG file's bytes (an array on the
  // LOH too) are garbage by the time Main collects.
  [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
  static int Build(string path, long target, int[] counts, out long bytes) {
    byte[] jpeg = File.ReadAllBytes(path);
    bytes = 0;
    if (jpeg.Length < 2 || jpeg[0] != 0xFF || jpeg[1] != 0xD8)
      return 0;
    byte[] previous = null;
    for (int i = 0; bytes < target; i++) {
      int size = Sizes[(int)(Next(ref sizeRng) % (ulong)Sizes.Length)];
      int kind = Math.Min(i % 6, 4);
      byte[] a;
      if (kind == 0) {
        a = new byte[size];
        CopySlice(jpeg, i / 6, a, 0, size);
      } else if (kind == 1) {
        a = ChunkFrame(jpeg, i / 6, size);
      } else if (kind == 2) {
        a = (byte[])previous.Clone();
      } else {
        a = new byte[size];
        if (kind == 4)
          FillRandom(a);
      }
      counts[kind]++;
      Large.Add(a);
      bytes += a.Length;
      previous = a;
    }
    return jpeg.Length;
  }

  static int Main(string[] args) {
    if (args.Length < 2 || args.Length > 3) {
      Console.Error.WriteLine("usage: LohBench.exe JPEG MIB [MILLIONS]");
      return 2;
    }
    long target = long.Parse(args[1]) << 20;
    int millions = args.Length > 2 ? int.Parse(args[2]) : 5;
    var counts = new int[Kinds.Length];
    long bytes = 0;
    int jpegBytes = 0;
    if (target > 0 && millions >= 0)
      jpegBytes = Build(args[0], target, counts, out bytes);
    if (jpegBytes == 0) {
      Console.Error.WriteLine("LohBench: need a JPEG file, MIB > 0 and MILLIONS >= 0");
      return 2;
    }

    // Small objects after the large ones, as BigHeap.java holds them: byte[16], int[2] and
    // instances of a class with one field.
    small = new object[millions * 1000000];
    for (int i = 0; i < small.Length; i++) {
      switch (i % 3) {
      case 0: small[i] = new byte[16]; break;
      case 1: small[i] = new int[2]; break;
      default: small[i] = new Box(i); break;
      }
    }

    // Settle the heap: the JPEG's bytes and the List's outgrown arrays become free space.
    GC.Collect();
    GC.WaitForPendingFinalizers();
    GC.Collect();

    string kinds = "";
    for (int k = 0; k < Kinds.Length; k++)
      kinds += (k > 0 ? "," : "") + "\"" + Kinds[k] + "\":" + counts[k];
    Console.Out.Write("{\"runtime\":\"coreclr\",\"version\":\"" + Environment.Version + "\",\"mib\":" +
                      args[1] + ",\"jpeg_bytes\":" + jpegBytes + ",\"large_arrays\":" + Large.Count +
                      ",\"large_bytes\":" + bytes + ",\"kinds\":{" + kinds + "},\"small_objects\":" +
                      small.Length + "}\nREADY\n");
    Console.Out.Flush();
    Thread.Sleep(Timeout.Infinite);
    GC.KeepAlive(small);
    return 0;
  }

  sealed class Box {
    public int Value;
    public Box(int value) { Value = value; }
  }
}
