"""cffi build script for the C core: ``feltlab.native._core`` (API mode, out-of-line).

Run by setuptools through ``setup.py``'s ``cffi_modules``.  Source paths are relative to the
project root, where pip runs the build.  Optimisation flags are chosen per compiler;
``-march=native`` is added only when ``FELTLAB_NATIVE_ARCH=1`` is set (never in a wheel meant
for other machines).
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CDEF = """
typedef enum {
    FL_OK = 0, FL_ERR_NULL = 1, FL_ERR_DECKS = 2, FL_ERR_RANGE = 3,
    FL_ERR_CARD = 4, FL_ERR_KIND = 5, FL_ERR_EXHAUSTED = 6
} fl_status;
typedef enum { FL_RNG_XOSHIRO256SS = 1, FL_RNG_CHACHA20 = 2 } fl_rng_kind;
typedef struct { uint32_t kind; ...; } fl_rng;

#define FL_CARDS_PER_DECK ...
#define FL_MAX_DECKS ...
#define FL_NO_CARD ...
#define FL_HAND_SOFT ...
#define FL_HAND_BLACKJACK ...
#define FL_HAND_BUST ...

void fl_rng_seed_xoshiro(fl_rng *rng, uint64_t seed);
fl_status fl_rng_set_xoshiro(fl_rng *rng, const uint64_t s[4]);
fl_status fl_xoshiro_get(const fl_rng *rng, uint64_t s[4]);
fl_status fl_xoshiro_jump(fl_rng *rng);
fl_status fl_xoshiro_long_jump(fl_rng *rng);
fl_status fl_rng_seed_chacha(fl_rng *rng, const uint8_t key[32], const uint8_t nonce[12],
                             uint32_t counter);
fl_status fl_chacha_get_key(const fl_rng *rng, uint8_t key[32], uint8_t nonce[12]);
fl_status fl_chacha_seek(fl_rng *rng, uint64_t block, uint32_t offset);
fl_status fl_chacha_tell(const fl_rng *rng, uint64_t *block, uint32_t *offset);
void fl_chacha20_block(const uint32_t in[16], uint32_t out[16]);
fl_status fl_chacha_keystream(fl_rng *rng, uint8_t *out, size_t n);
fl_status fl_rng_fill_u64(fl_rng *rng, uint64_t *out, size_t n);
fl_status fl_rng_bounded(fl_rng *rng, uint64_t bound, uint64_t *out, size_t n);
int fl_batch_draw_word(uint64_t x, unsigned w, uint64_t n, unsigned k, uint64_t bound,
                       uint64_t *indexes);

void fl_new_deck_order(uint8_t out[52]);
fl_status fl_new_shoe_codes(unsigned decks, uint8_t *out, size_t n_out);
fl_status fl_new_shoe_ids(unsigned decks, uint16_t *out, size_t n_out);
fl_status fl_shuffle_u8(fl_rng *rng, uint8_t *cards, size_t n);
fl_status fl_shuffle_u16(fl_rng *rng, uint16_t *cards, size_t n);
fl_status fl_shuffle_batch_codes(fl_rng *rng, unsigned decks, uint8_t *out, size_t n_shoes);
fl_status fl_shuffle_batch_ids(fl_rng *rng, unsigned decks, uint16_t *out, size_t n_shoes);

#define FL_MAX_MODEL_CARDS ...
#define FL_MAX_SHELVES ...
fl_status fl_riffle_u8(fl_rng *rng, uint8_t *cards, size_t n, unsigned passes);
fl_status fl_riffle_u16(fl_rng *rng, uint16_t *cards, size_t n, unsigned passes);
fl_status fl_shelf_u8(fl_rng *rng, uint8_t *cards, size_t n, unsigned shelves, unsigned passes);
fl_status fl_shelf_u16(fl_rng *rng, uint16_t *cards, size_t n, unsigned shelves,
                       unsigned passes);

fl_status fl_check_permutations(const uint16_t *perm, size_t n_shoes, size_t n, size_t *bad_shoe,
                                size_t *bad_column, uint32_t *bad_value);
fl_status fl_battery_pass(const uint16_t *perm, size_t n_shoes, size_t n, uint16_t *rising,
                          uint16_t *turning, uint16_t *successions, uint16_t *guesses,
                          int64_t *position_counts, size_t *bad_shoe);
fl_status fl_adjacent_rank_pairs(const uint8_t *codes, size_t n_shoes, size_t n, int64_t *counts);
fl_status fl_successive_shoe_rho(const uint16_t *perm, size_t n_shoes, size_t n, double *rho);

typedef struct {
    uint32_t decks;
    uint32_t h17;
    uint32_t peek;
    uint32_t enhc_takes;
    uint32_t bj_num, bj_den;
    uint32_t double_on;
    uint32_t double_after_split;
    uint32_t max_hands;
    uint32_t resplit_aces;
    uint32_t split_aces_one_card;
    uint32_t cut_position;
    int32_t stake;
    uint8_t hard[32][11];
    uint8_t soft[32][11];
    uint8_t pair[13][11];
} fl_sim_rules;
fl_status fl_simulate_rounds(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                             int32_t *net, uint8_t *initial, uint8_t *trace, size_t trace_cap,
                             uint8_t *trace_len);

fl_status fl_evaluate_hands(const uint8_t *cards, size_t n_hands, size_t max_cards,
                            uint8_t *hard_total, uint8_t *total, uint8_t *flags,
                            size_t *bad_index);

const char *fl_core_version(void);
const char *fl_core_compiler(void);
const char *fl_core_flags(void);
"""

SOURCES = sorted(str(p.relative_to(ROOT)) for p in (HERE / "src").glob("*.c"))


def compile_flags() -> list[str]:
    """Optimisation flags for the compiler Python was built with (gcc and clang alike)."""
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    flags = ["-std=c11", "-O3", "-fno-strict-aliasing", "-Wall", "-Wextra"]
    if "cl.exe" in cc or cc.endswith("cl"):  # MSVC: no __int128, unsupported for now
        raise RuntimeError("feltlab's C core needs gcc or clang (it uses unsigned __int128)")
    if os.environ.get("FELTLAB_NATIVE_ARCH") == "1":
        flags.append("-march=native")
    return flags


FLAGS = compile_flags()
ffibuilder = FFI()
ffibuilder.cdef(CDEF)
ffibuilder.set_source(
    "feltlab.native._core",
    '#include "feltlab_core.h"\n',
    sources=SOURCES,
    include_dirs=[str((HERE / "include").relative_to(ROOT))],
    extra_compile_args=FLAGS,
    define_macros=[("FL_BUILD_FLAGS", '"' + " ".join(FLAGS) + '"')],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
