#!/usr/bin/env python3
# distsampler golden values: SamplerState version 3, 4 and 5 forms and StateKey fingerprints from the documented format.
# SPDX-License-Identifier: MIT
"""Writes the expected values of tests/test_state.cpp from the format described in
include/distsampler/state.hpp, without using the library: FNV-1a 64, the SplitMix64
finaliser, the version-3 byte layout (version 4: with strided entries; version 5: with family words), and the text line
whose checksum is the byte form's."""

M = (1 << 64) - 1
TAILS = {"pad": 0, "drop": 1, "uneven": 2}


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & M
    return h


def u64(v):
    return v.to_bytes(8, "little")


def u32(v):
    return v.to_bytes(4, "little")


def field(h, value):
    if isinstance(value, str):
        data = value.encode()
        return fnv1a64(data, fnv1a64(u64(len(data)), h))
    return fnv1a64(u64(value), h)


def fingerprint(sampler, size, seed, shuffle, tail, engine, engine_version, layout):
    engine, engine_version = (engine, engine_version) if shuffle else ("identity", 1)
    h = field(0xCBF29CE484222325, "distsampler-state-key-v3")
    for v in (sampler, size, seed, int(shuffle), TAILS[tail], engine, engine_version, layout):
        h = field(h, v)
    return mix64(h)


def legacy_fingerprint(sampler, size, seed, shuffle, tail, engine):
    h = field(0xCBF29CE484222325, "distsampler-state-key")
    for v in (sampler, size, seed, int(shuffle), TAILS[tail], engine if shuffle else "identity"):
        h = field(h, v)
    return mix64(h)


def version(s):
    return 5 if s.get("extra") else 4 if s.get("strided") else 3


def state_bytes(s):
    strided, extra = s.get("strided", []), s.get("extra", [])
    body = b"DSST" + u32(version(s)) + u64(s["size"]) + u64(s["seed"]) + u64(s["epoch"]) + u64(s["consumed"])
    body += u64(s["layout"]) + u32(s["engine_version"]) + u32(len(s["sampler"])) + u32(len(s["engine"]))
    body += bytes([int(s["shuffle"]), TAILS[s["tail"]], 0, 0]) + u64(len(s["ahead"]))
    if strided or extra:
        body += u64(len(strided))
    if extra:
        body += u64(len(extra))
    body += s["sampler"].encode() + s["engine"].encode()
    for begin, end in s["ahead"]:
        body += u64(begin) + u64(end)
    for begin, length, stride, count in strided:
        body += u64(begin) + u64(length) + u64(stride) + u64(count)
    for word in extra:
        body += u64(word)
    return body + u64(mix64(fnv1a64(body)))


def escape(name):
    plain = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-")
    return "".join(c if c in plain else "%%%02X" % ord(c) for c in name)


def state_text(s):
    b = state_bytes(s)
    line = "distsampler-state v%d sampler=%s dataset_size=%d seed=%d shuffle=%s tail=%s engine=%s/%d layout=0x%016x" % (
        version(s), escape(s["sampler"]), s["size"], s["seed"], "true" if s["shuffle"] else "false", s["tail"],
        escape(s["engine"]), s["engine_version"], s["layout"])
    line += " epoch=%d consumed=%d" % (s["epoch"], s["consumed"])
    if s["ahead"]:
        line += " ahead=" + ",".join("%d-%d" % r for r in s["ahead"])
    if s.get("strided"):
        line += " strided=" + ",".join("%d-%d/%dx%d" % (b, b + n, st, c) for b, n, st, c in s["strided"])
    if s.get("extra"):
        line += " extra=" + ",".join("%d" % w for w in s["extra"])
    return line + " checksum=0x%016x" % int.from_bytes(b[-8:], "little")


BATCH = dict(sampler="batch", size=1000, seed=42, shuffle=True, tail="drop", engine="feistel", engine_version=2,
             layout=0, epoch=3, consumed=640, ahead=[])
SHARD = dict(sampler="shard", size=1000, seed=42, shuffle=True, tail="drop", engine="shard-v2 shuffle",
             engine_version=2, layout=0x0123456789ABCDEF, epoch=3, consumed=640,
             ahead=[(700, 764), (900, 901), (950, 1000)])
STRIDED = dict(SHARD, strided=[(650, 4, 20, 3), (656, 2, 20, 2), (702, 2, 30, 2), (766, 10, 100, 2)])
EXTRA = dict(BATCH, sampler="stream", size=4, seed=9, tail="pad", layout=0x0123456789ABCDEF, epoch=2, consumed=0,
             extra=[1, 0, 18446744073709551615])

if __name__ == "__main__":
    print("legacy fingerprint batch/1000/42/drop/feistel: 0x%016x"
          % legacy_fingerprint("batch", 1000, 42, True, "drop", "feistel"))
    print("fingerprint batch/1000/42/drop/feistel/2/0: 0x%016x"
          % fingerprint("batch", 1000, 42, True, "drop", "feistel", 2, 0))
    for name, s in (("batch", BATCH), ("shard", SHARD), ("strided", STRIDED), ("extra", EXTRA)):
        print("%s text: %s" % (name, state_text(s)))
        print("%s bytes: %d, checksum 0x%s" % (name, len(state_bytes(s)), state_bytes(s)[-8:][::-1].hex()))
