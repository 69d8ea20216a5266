/* Inline hot-path helpers and tables shared by the core's translation units. */
#ifndef FELTLAB_INTERNAL_H
#define FELTLAB_INTERNAL_H

#include "feltlab_core.h"

/* gcc and clang both provide a 128-bit unsigned integer (used for 64x64->128 products). */
__extension__ typedef unsigned __int128 fl_u128;

static inline uint64_t fl_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** 1.0, https://prng.di.unimi.it/xoshiro256starstar.c: one step on the four
 * state words, held apart so that a hot loop keeps them in registers */
static inline uint64_t fl_xoshiro_step(uint64_t *s0, uint64_t *s1, uint64_t *s2, uint64_t *s3) {
    const uint64_t result = fl_rotl64(*s1 * 5, 7) * 9;
    const uint64_t t = *s1 << 17;
    *s2 ^= *s0;
    *s3 ^= *s1;
    *s1 ^= *s2;
    *s0 ^= *s3;
    *s2 ^= t;
    *s3 = fl_rotl64(*s3, 45);
    return result;
}

static inline uint64_t fl_xoshiro_next(fl_xoshiro256ss *x) {
    return fl_xoshiro_step(&x->s[0], &x->s[1], &x->s[2], &x->s[3]);
}

int fl_chacha_next_slow(fl_chacha20 *c, uint64_t *out);

/* The next 8 keystream bytes as a little-endian word; 0 once exhausted. */
static inline int fl_chacha_next(fl_chacha20 *c, uint64_t *out) {
    if (c->pos <= 56 && !(c->pos & 7)) {
        *out = (uint64_t)c->block[c->pos / 4] | ((uint64_t)c->block[c->pos / 4 + 1] << 32);
        c->pos += 8;
        return 1;
    }
    return fl_chacha_next_slow(c, out);
}

/*
 * One attempt of the batched bounded draw (see fl_batch_draw_word in the
 * public header), written once as a macro over a widening multiply
 * MUL(a, b, hi, lo): (hi, lo) = a * b split at w bits, and W_MOD_PROD(p):
 * 2^w mod p.  The shuffles instantiate it at w = 64 (fl_mul64 below);
 * fl_batch_draw_word instantiates the very same text at a reduced width
 * w <= 32, so that tests can count every word exactly.
 * Preconditions: 1 <= k <= n, product n(n-1)...(n-k+1) <= 2^w, x < 2^w,
 * bound >= product.  Sets ACCEPTED to 1, or 0 when a fresh word must be drawn.
 */
#define FL_BATCH_DRAW(MUL, W_MOD_PROD, X, N, K, BOUND, IDX, ACCEPTED)                              \
    do {                                                                                           \
        uint64_t r_ = (X), hi_, lo_;                                                               \
        for (unsigned i_ = 0; i_ < (K); i_++) {                                                    \
            MUL(r_, (uint64_t)(N) - i_, hi_, lo_);                                                 \
            (IDX)[i_] = hi_;                                                                       \
            r_ = lo_;                                                                              \
        }                                                                                          \
        (ACCEPTED) = 1;                                                                            \
        if (r_ < (uint64_t)(BOUND)) { /* rare: compare with 2^w mod product */                   \
            uint64_t prod_ = (uint64_t)(N);                                                        \
            for (unsigned i_ = 1; i_ < (K); i_++) prod_ *= (uint64_t)(N) - i_;                     \
            if (r_ < W_MOD_PROD(prod_)) (ACCEPTED) = 0;                                            \
        }                                                                                          \
    } while (0)

/* 64 x 64 -> 128-bit product. */
#define FL_MUL64(A, B, HI, LO)                                                                     \
    do {                                                                                           \
        fl_u128 m_ = (fl_u128)(A) * (fl_u128)(B);                                                  \
        (HI) = (uint64_t)(m_ >> 64);                                                               \
        (LO) = (uint64_t)m_;                                                                       \
    } while (0)
#define FL_POW64_MOD(P) ((0 - (uint64_t)(P)) % (uint64_t)(P))

/* 32 x 32 -> 64-bit product and 2^32 mod P: the 32-bit instance of FL_BATCH_DRAW (the same
 * text the exact-counting tests run at reduced widths). */
#define FL_MUL32(A, B, HI, LO)                                                                     \
    do {                                                                                           \
        uint64_t m_ = (uint64_t)(uint32_t)(A) * (uint64_t)(B);                                     \
        (HI) = m_ >> 32;                                                                           \
        (LO) = (uint32_t)m_;                                                                       \
    } while (0)
#define FL_POW32_MOD(P) ((uint64_t)(uint32_t)(0u - (uint32_t)(P)) % (uint64_t)(P))

/* The 64-bit instance used by the shuffles and fl_rng_bounded. */
static inline int fl_batch_draw64(uint64_t x, uint64_t n, unsigned k, uint64_t bound,
                                  uint64_t *idx) {
    int accepted;
    FL_BATCH_DRAW(FL_MUL64, FL_POW64_MOD, x, n, k, bound, idx, accepted);
    return accepted;
}

/* Whether a two-card hand (soft or hard, its best total) may double under double_on
 * (fl_double_on): the one reading of the rule, for the simulator and the analyzer. */
static inline int fl_double_allowed(uint32_t double_on, int soft, unsigned total) {
    switch ((fl_double_on)double_on) {
    case FL_DOUBLE_ANY: return 1;
    case FL_DOUBLE_HARD: return !soft;
    case FL_DOUBLE_HARD_9_11: return !soft && total >= 9 && total <= 11;
    case FL_DOUBLE_HARD_10_11: return !soft && total >= 10 && total <= 11;
    }
    return 0;
}

/* Blackjack value of each card code (rank * 4 + suit): A = 1 (counted 11 when the hand is
 * soft), 2..10 their face, J/Q/K = 10.  The core's one table of card values (defined in
 * hands.c); Python's one definition is feltlab.cards.RANK_VALUES (docs/design.md). */
extern const uint8_t fl_card_value[52];

/* The round record (record.c): clear it, then add the box's hands in order and the dealer's. */
void fl_record_clear(fl_round_record *rec);
/* fl_record_clear of every field but the card arrays (hand_cards, dealer_cards), which keep
 * what they held: for a record only side tables read (they have no card-array input) */
void fl_record_clear_fields(fl_round_record *rec);
void fl_record_hand(fl_round_record *rec, const uint8_t *cards, unsigned n, int doubled,
                    int from_split, int surrendered);
void fl_record_dealer(fl_round_record *rec, const uint8_t *cards, unsigned n);

#endif
