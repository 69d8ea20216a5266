"""The seed tree (feltlab.seeds): version 1 reproduces feltlab 0.1's derivations bit for bit,
so every recorded seed still replays; a change must bump SEED_DERIVATION_VERSION."""

from __future__ import annotations

import hashlib

import pytest

from feltlab import native, seeds
from feltlab.rig.certify import collect, record


def _sha(text: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:n], "little")


def test_version_one_is_the_documented_hash_of_domain_seed_and_labels() -> None:
    assert seeds.SEED_DERIVATION_VERSION == 1
    assert seeds.child_seed(7, "power", "riffle", 3) == _sha("feltlab-seed:7:power:riffle:3", 8)
    assert seeds.part_seed(7, 2) == _sha("feltlab:7:2", 8)
    assert seeds.stream_key(7, "seat", 0) == _sha("7:seat:0", 32)
    assert seeds.derive_seed(7, "x", domain="abc", bits=16) == _sha("abc:7:x", 2)


def test_the_rig_derives_its_seeds_here() -> None:
    # the rig's own copies (rig/seeds.py, certify.part_seed) are gone: it uses feltlab.seeds
    # (a part's device seed is drawn in collect and recorded in record)
    assert vars(collect)["part_seed"] is seeds.part_seed
    assert vars(record)["part_seed"] is seeds.part_seed


def test_children_are_distinct_and_in_range() -> None:
    kids = {seeds.child_seed(5, "rep", i) for i in range(1000)}
    assert len(kids) == 1000 and all(0 <= k <= seeds.U64_MAX for k in kids)
    assert seeds.stream_key(5, "a") != seeds.stream_key(5, "b")
    assert seeds.stream_key(5, "a").bit_length() > 64  # a full 256-bit ChaCha20 key


def test_chunk_generator_is_the_seed_jumped_chunk_plus_one_times() -> None:
    g = native.Xoshiro256StarStar(11)
    g.jump()
    g.jump()
    assert seeds.chunk_generator(11, 1).random_raw(4).tolist() == g.random_raw(4).tolist()
    first = seeds.chunk_generator(11, 0).random_raw(4).tolist()
    assert first != seeds.chunk_generator(11, 1).random_raw(4).tolist()


def test_chunk_generator_asked_in_any_order_is_the_direct_jumps() -> None:
    """The last chunk's state kept per seed (the run asks 0, 1, 2, ...) gives the generator
    that ``chunk + 1`` jumps from the seed give, in any order of asking, several seeds mixed."""

    def direct(seed: int, chunk: int) -> list[int]:
        g = native.Xoshiro256StarStar(seed)
        for _ in range(chunk + 1):
            g.jump()
        return [int(x) for x in g.random_raw(3)]

    for seed, chunk in [(5, 0), (5, 1), (9, 4), (5, 2), (5, 7), (9, 3), (5, 0), (5, 7), (9, 9)]:
        assert seeds.chunk_generator(seed, chunk).random_raw(3).tolist() == direct(seed, chunk)


def test_bad_arguments_name_the_problem() -> None:
    with pytest.raises(ValueError, match="seed must be non-negative, got -1"):
        seeds.child_seed(-1)
    with pytest.raises(ValueError, match=r"bits must be a multiple of 8 in 8\.\.256, got 12"):
        seeds.derive_seed(1, bits=12)


def test_records_carry_the_derivation_version() -> None:
    from feltlab.rules import Rules
    from feltlab.simulation.run import simulate

    res = simulate(Rules.preset("nz"), 2_000, seed=3, chunk_rounds=1_000)
    assert res.seed_derivation == seeds.SEED_DERIVATION_VERSION
