"""Fuzz the C core's public entry points under ASan and UBSan (atheris).

Every entry point is driven with arbitrary scalar arguments (decks, counts, bounds, widths,
rule fields, card codes, generator states) and buffers whose sizes agree with the lengths
passed, since C cannot check a pointer's extent.  A crash, a sanitizer report, or a status
code outside the documented fl_status values ends the run with a non-zero exit.

Two drivers share one input decoder (``one_input``):
- ``--seconds S --seed N`` (the default): seeded random inputs of up to 4 KiB for S seconds.
  With gcc's sanitizers no coverage reaches libFuzzer, so coverage-guided mutation would only
  replay the empty input; random inputs through the structured decoder reach every entry
  point.  This is what the opt-in test tests/native/test_fuzz.py runs.
- ``--atheris [libFuzzer flags]``: atheris / libFuzzer, worthwhile when the core is built
  with clang's ``-fsanitize=fuzzer-no-link`` so that coverage guides the mutations.

  python native/fuzz/build_asan.py /tmp/asan
  LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
      python native/fuzz/fuzz_core.py /tmp/asan --seconds 60 --seed 1
"""

from __future__ import annotations

import random
import sys
import time

import atheris

sys.path.insert(0, sys.argv.pop(1))
from _core_asan import ffi, lib

STATUSES = set(range(7))


def _ok(status: int) -> None:
    if status not in STATUSES:
        raise AssertionError(f"undocumented status {status}")


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    rng = ffi.new("fl_rng *")
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 1:
        lib.fl_rng_seed_xoshiro(rng, fdp.ConsumeIntInRange(0, 2**64 - 1))
    elif kind == 2:
        key = fdp.ConsumeBytes(32).ljust(32, b"\0")
        nonce = fdp.ConsumeBytes(12).ljust(12, b"\0")
        _ok(lib.fl_rng_seed_chacha(rng, key, nonce, fdp.ConsumeIntInRange(0, 2**32 - 1)))
        _ok(
            lib.fl_chacha_seek(
                rng, fdp.ConsumeIntInRange(0, 2**64 - 1), fdp.ConsumeIntInRange(0, 80)
            )
        )
    elif kind == 3:  # raw, possibly invalid state words, including an unknown kind
        ffi.memmove(
            rng,
            fdp.ConsumeBytes(ffi.sizeof("fl_rng")).ljust(ffi.sizeof("fl_rng"), b"\0"),
            ffi.sizeof("fl_rng"),
        )
        rng.kind = fdp.ConsumeIntInRange(0, 4)
        if rng.kind == 2:  # keep the ChaCha20 position inside its buffer, as seek does
            _ok(lib.fl_chacha_seek(rng, fdp.ConsumeIntInRange(0, 2**64 - 1), 0))
    op = fdp.ConsumeIntInRange(0, 9)
    n = fdp.ConsumeIntInRange(0, 5000)
    if op == 0:
        buf = ffi.new("uint8_t[]", max(n, 1))
        _ok(lib.fl_shuffle_u8(rng, buf, n))
    elif op == 1:
        buf16 = ffi.new("uint16_t[]", max(n, 1))
        _ok(lib.fl_shuffle_u16(rng, buf16, n))
    elif op == 2:
        decks = fdp.ConsumeIntInRange(0, 10)
        shoes = fdp.ConsumeIntInRange(0, 9)
        out = ffi.new("uint16_t[]", max(decks, 1) * 52 * max(shoes, 1))
        _ok(lib.fl_shuffle_batch_ids(rng, decks, out, shoes))
    elif op == 3:
        out64 = ffi.new("uint64_t[]", max(n, 1) % 300 + 1)
        _ok(lib.fl_rng_bounded(rng, fdp.ConsumeIntInRange(0, 2**64 - 1), out64, len(out64)))
    elif op == 4:
        idx = ffi.new("uint64_t[64]")
        r = lib.fl_batch_draw_word(
            fdp.ConsumeIntInRange(0, 2**64 - 1),
            fdp.ConsumeIntInRange(0, 70),
            fdp.ConsumeIntInRange(0, 2**64 - 1),
            fdp.ConsumeIntInRange(0, 70),
            fdp.ConsumeIntInRange(0, 2**64 - 1),
            idx,
        )
        assert r in (-1, 0, 1)
    elif op == 5:
        m = fdp.ConsumeIntInRange(1, 12)
        rows = fdp.ConsumeIntInRange(0, 20)
        cards = fdp.ConsumeBytes(rows * m).ljust(rows * m, b"\xff")
        outs = [ffi.new("uint8_t[]", max(rows, 1)) for _ in range(3)]
        bad = ffi.new("size_t *")
        _ok(lib.fl_evaluate_hands(cards, rows, m, *outs, bad))
    elif op == 6:
        cards = min(n, 4096)
        buf16 = ffi.new("uint16_t[]", max(cards, 1))
        which = fdp.ConsumeIntInRange(0, 1)
        if which:
            _ok(
                lib.fl_shelf_u16(
                    rng, buf16, n, fdp.ConsumeIntInRange(0, 300), fdp.ConsumeIntInRange(0, 3)
                )
            )
        else:
            _ok(lib.fl_riffle_u16(rng, buf16, cards, fdp.ConsumeIntInRange(0, 3)))
    elif op == 7:
        width = fdp.ConsumeIntInRange(1, 64)
        shoes = fdp.ConsumeIntInRange(0, 12)
        raw = fdp.ConsumeBytes(2 * width * shoes).ljust(2 * width * shoes, b"\0")
        perm = ffi.new("uint16_t[]", max(width * shoes, 1))
        ffi.memmove(perm, raw, 2 * width * shoes)
        outs = [ffi.new("uint16_t[]", max(shoes, 1)) for _ in range(4)]
        counts = ffi.new("int64_t[]", width * width)
        bad = ffi.new("size_t *")
        _ok(lib.fl_battery_pass(perm, shoes, width, *outs, counts, bad))
        rho = ffi.new("double[]", max(shoes, 1))
        _ok(lib.fl_successive_shoe_rho(perm, shoes, width, rho))
        b1, b2, b3 = ffi.new("size_t *"), ffi.new("size_t *"), ffi.new("uint32_t *")
        _ok(lib.fl_check_permutations(perm, shoes, width, b1, b2, b3))
    elif op == 8:
        r = ffi.new("fl_sim_rules *")
        raw = fdp.ConsumeBytes(ffi.sizeof("fl_sim_rules"))
        ffi.memmove(r, raw.ljust(ffi.sizeof("fl_sim_rules"), b"\0"), ffi.sizeof("fl_sim_rules"))
        rounds = fdp.ConsumeIntInRange(0, 50)
        net = ffi.new("int32_t[]", max(rounds, 1))
        init = ffi.new("uint8_t[]", 5 * max(rounds, 1))
        _ok(lib.fl_simulate_rounds(rng, r, rounds, net, init, ffi.NULL, 0, ffi.NULL))
        # a side table of fuzzed shape, strides and two-level classes: refused or in bounds
        size = fdp.ConsumeIntInRange(1, 4096)
        table = ffi.new("uint8_t[]", fdp.ConsumeBytes(size).ljust(size, b"\0"))
        pre_size = fdp.ConsumeIntInRange(1, 4096)
        pre = ffi.new("uint16_t[]", pre_size)
        for i in range(min(pre_size, 64)):
            pre[i] = fdp.ConsumeIntInRange(0, 70)
        counts = ffi.new("uint64_t[]", 256)
        t = ffi.new("fl_side_table *")
        t.table, t.size, t.counts = table, size, counts
        t.n_inputs = fdp.ConsumeIntInRange(0, 7)
        for j in range(6):
            t.input[j] = fdp.ConsumeIntInRange(0, 6)
            t.stride[j] = fdp.ConsumeIntInRange(0, 4096)
        if fdp.ConsumeBool():
            t.pre, t.pre_size = pre, pre_size
            t.n_pre = fdp.ConsumeIntInRange(0, 6)
            t.n_classes = fdp.ConsumeIntInRange(0, 80)
            t.class_stride = fdp.ConsumeIntInRange(0, 4096)
        sums = ffi.new("fl_sim_sums *")
        _ok(lib.fl_simulate_tally(rng, r, rounds, t, 1, sums))
    else:
        ks = ffi.new("uint8_t[]", max(n, 1))
        _ok(lib.fl_chacha_keystream(rng, ks, n))


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--atheris":
        atheris.Setup([sys.argv[0], *args[1:]], one_input)
        atheris.Fuzz()
        return
    opts = dict(zip(args[::2], args[1::2], strict=False))
    seconds = float(opts.get("--seconds", 10))
    gen = random.Random(int(opts.get("--seed", 1)))
    deadline = time.monotonic() + seconds
    runs = 0
    while time.monotonic() < deadline:
        one_input(gen.randbytes(gen.choice((8, 32, 128, 512, 4096))))
        runs += 1
    print(f"fuzz_core: {runs} inputs in {seconds:.0f} s, no crash, no sanitizer report")


if __name__ == "__main__":
    main()
