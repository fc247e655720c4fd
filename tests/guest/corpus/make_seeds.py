#!/usr/bin/env python3
"""Writes the seed inputs of the guest batch fuzzer (tests/guest/fuzz_batch.cpp) into this folder.

An input is a guest's whole memory, mapped at guest address 0x10000: byte 0 picks the number of
batches (1 + b % 4), byte 1 the guest clock rate, then per batch three little-endian u16 (buffer
offset, count, capacity); records, locations and texts follow. Run it again after changing the
input layout; the seeds are committed.
"""
import os
import struct

BASE = 0x10000
BEGIN, END, STATIC, INLINE, COUNTER, THREAD_NAME, ALLOCATION, STACK = range(1, 9)
HEAP_ALLOC, HEAP_FREE, HEAP_REALLOC = range(17, 20)


class Image:
    def __init__(self):
        self.data = bytearray(32)  # the header, filled in by batches()

    def put(self, raw):
        self.data += b"\0" * (-len(self.data) % 8)
        offset = len(self.data)
        self.data += raw
        return offset

    def text(self, s):
        return BASE + self.put(s.encode() + b"\0")

    def location(self, name, file="guest.c", line=1):
        return BASE + self.put(struct.pack("<QQII", self.text(name), self.text(file), line, 0))

    def records(self, records):
        return self.put(b"".join(records))

    def batches(self, batches):
        self.data[0] = len(batches) - 1
        for i, (offset, count, capacity) in enumerate(batches):
            struct.pack_into("<HHH", self.data, 2 + 6 * i, offset, count, capacity)
        return bytes(self.data)


def rec(kind, ticks, ref=0, value=0, payload=0):
    return struct.pack("<QQQII", ticks, ref, value, kind, payload)


def text_records(kind, ticks, text):
    raw = text.encode()
    payload = (len(raw) + 31) // 32
    return [rec(kind, ticks, 0, len(raw), payload), raw.ljust(32 * payload, b"\0")]


def heap_records(kind, ticks, address, size, slots):
    """A heap record and its payload: `slots` (a realloc's old address, then the stack), 4 a record."""
    payload = (len(slots) + 3) // 4
    raw = struct.pack("<%dQ" % (4 * payload), *(slots + [0] * (4 * payload - len(slots))))
    return [rec(kind, ticks, address, size, payload), raw]


def heap():
    """Hostile heap records: a free of an unknown block, a double free, a realloc of an unknown
    block (accepted: the accounting counts them), then an absurd size and a stack with a gap (each
    rejects its batch)."""
    image = Image()
    stack = [0x401012, 0x401100, 0x401200]
    first = (heap_records(HEAP_ALLOC, 10, 0x20000, 48, stack)
             + heap_records(HEAP_REALLOC, 11, 0x20100, 4096, [0x20000] + stack)
             + heap_records(HEAP_FREE, 12, 0x20100, 0, stack)
             + heap_records(HEAP_FREE, 13, 0x20100, 0, stack)
             + heap_records(HEAP_FREE, 14, 0x7777, 0, [])
             + heap_records(HEAP_REALLOC, 15, 0x20200, 64, [0x9999]))
    absurd = heap_records(HEAP_ALLOC, 20, 0x20000, 1 << 50, stack)
    gap = heap_records(HEAP_FREE, 30, 0x20000, 0, [0x401012, 0, 0x401200])
    batches = [(image.records(r), len(b"".join(r)) // 32, 16) for r in (first, absurd, gap)]
    return image.batches(batches)


def nested():
    image = Image()
    outer, inner = image.location("dispatch_function"), image.location("call_guest_function")
    first = [rec(BEGIN, 100, outer), rec(BEGIN, 200, inner), rec(END, 300, inner)]
    second = text_records(INLINE, 400, "hello from the guest") + [
        rec(STACK, 450, 0, 3, 1), struct.pack("<QQQQ", 0x401012, 0x401000, 0x500000, 0),
        rec(END, 500, outer)]
    b1 = image.records(first)
    b2 = image.records(second)
    return image.batches([(b1, 3, 8), (b2, 5, 8)])


def kinds():
    image = Image()
    counter, text = image.location("queue depth"), image.text("static message")
    records = ([rec(COUNTER, 10, counter, 7), rec(STATIC, 11, text), rec(ALLOCATION, 12, 0, 4096)]
               + text_records(THREAD_NAME, 13, "worker"))
    offset = image.records(records)
    return image.batches([(offset, 5, 5)])


def repairs():
    image = Image()
    a, b = image.location("a"), image.location("b")
    offset = image.records([rec(END, 1, a), rec(BEGIN, 2, a), rec(BEGIN, 3, b), rec(END, 4, a),
                            rec(BEGIN, 5, b)])
    return image.batches([(offset, 5, 5), (offset, 5, 5)])  # the second goes back in time


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for name, make in (("nested", nested), ("kinds", kinds), ("repairs", repairs), ("heap", heap)):
        with open(os.path.join(here, name + ".bin"), "wb") as out:
            out.write(make())
