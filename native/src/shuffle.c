/*
 * Unbiased bounded integers and Fisher-Yates shuffles.
 *
 * The shuffle is Durstenfeld's Fisher-Yates: for i = n down to 2, swap the
 * card at i - 1 with one chosen uniformly in [0, i).  The indexes are drawn
 * several per 64-bit word by the batched method of Brackett-Rozinsky and
 * Lemire (2025), which is Lemire's nearly-divisionless rejection carried
 * through k successive multiplications; the batch sizes and product bounds
 * are those of the paper (k = 6 while i <= 2^9, ..., k = 2 while i <= 2^30).
 */
#include <string.h>

#include "feltlab_core.h"
#include "internal.h"

int fl_batch_draw_word(uint64_t x, unsigned w, uint64_t n, unsigned k, uint64_t bound,
                       uint64_t *indexes) {
    if (!indexes || w < 1 || w > 64 || k < 1 || k > 64 || n < k) return -1;
    if (w < 64 && x >> w) return -1;
    /* the product of the ranges must fit in the word */
    fl_u128 prod = 1;
    for (unsigned i = 0; i < k; i++) {
        prod *= (n - i);
        if (prod > ((fl_u128)1 << w)) return -1;
    }
    if (bound < prod) return -1;
    if (w == 64) return fl_batch_draw64(x, n, k, bound, indexes);
    if (w > 32) return -1; /* reduced widths are for exact counting: w <= 32 */
    const uint64_t mask = ((uint64_t)1 << w) - 1;
#define FL_MUL_W(A, B, HI, LO)                                                                     \
    do {                                                                                           \
        uint64_t m_ = (A) * (B);                                                                   \
        (HI) = m_ >> w;                                                                            \
        (LO) = m_ & mask;                                                                          \
    } while (0)
#define FL_POW_W_MOD(P) ((((uint64_t)1 << w) - (P)) % (P))
    int accepted;
    FL_BATCH_DRAW(FL_MUL_W, FL_POW_W_MOD, x, n, k, bound, indexes, accepted);
#undef FL_MUL_W
#undef FL_POW_W_MOD
    return accepted;
}

/* ---- generator adapters: NEXT(state, &word) -> 1 on success, 0 exhausted.
 * The shuffles work on a local copy of the generator's state: the cards are
 * bytes, which may alias anything, so state left in the caller's struct would
 * be reloaded and stored around every swap. */

static inline int next_xoshiro(fl_xoshiro256ss *g, uint64_t *x) {
    *x = fl_xoshiro_next(g);
    return 1;
}
static inline int next_chacha(fl_chacha20 *g, uint64_t *x) { return fl_chacha_next(g, x); }

#define FL_SWAP(T, A, P1, P2)                                                                      \
    do {                                                                                           \
        T t_ = (A)[P1];                                                                            \
        (A)[P1] = (A)[P2];                                                                         \
        (A)[P2] = t_;                                                                              \
    } while (0)

/*
 * The index stream of one shuffle.  While i > 2^9 indexes are drawn k to a
 * 64-bit word with the paper's bounds (k = 1 above 2^30, 2 up to 2^30, 3 up to
 * 2^19, 4 up to 2^14, 5 up to 2^11).  From i <= 2^9 on, three indexes come
 * from each 32-bit half-word (low half of a 64-bit output first, then its high
 * half): 512^3 = 2^27 <= 2^32; the pre-check bound is the exact product,
 * which makes the division of the rare path rarer still; the last one or
 * two indexes come from one half-word.  Half-words are half as long a
 * multiplication chain as a six-index 64-bit batch, which is what bounds the
 * speed here.
 */
#define FL_DEFINE_SHUFFLE(NEXT, S, MEMBER, T)                                                      \
    typedef struct {                                                                               \
        S g;                                                                                       \
        uint64_t buf;                                                                              \
        int have;                                                                                  \
    } src_##NEXT##_##T;                                                                            \
    static inline int half_##NEXT##_##T(src_##NEXT##_##T *s, uint64_t *x) {                        \
        if (s->have) {                                                                             \
            s->have = 0;                                                                           \
            *x = s->buf >> 32;                                                                     \
            return 1;                                                                              \
        }                                                                                          \
        if (!NEXT(&s->g, &s->buf)) return 0;                                                       \
        s->have = 1;                                                                               \
        *x = (uint32_t)s->buf;                                                                     \
        return 1;                                                                                  \
    }                                                                                              \
    /* k indexes for ranges i .. i-k+1 from 64-bit words, then the k swaps */                      \
    static inline int wide_##NEXT##_##T(src_##NEXT##_##T *s, T *a, uint64_t i, unsigned k,         \
                                        uint64_t bound) {                                          \
        uint64_t idx[8], x;                                                                        \
        int accepted;                                                                              \
        do {                                                                                       \
            if (!NEXT(&s->g, &x)) return 0;                                                        \
            FL_BATCH_DRAW(FL_MUL64, FL_POW64_MOD, x, i, k, bound, idx, accepted);                  \
        } while (!accepted);                                                                       \
        for (unsigned j = 0; j < k; j++) FL_SWAP(T, a, i - 1 - j, idx[j]);                         \
        return 1;                                                                                  \
    }                                                                                              \
    /* k <= 3 indexes for ranges i .. i-k+1 (i <= 2^9) from one 32-bit half-word */                \
    static inline int narrow_##NEXT##_##T(src_##NEXT##_##T *s, T *a, uint64_t i, unsigned k,       \
                                          uint64_t bound) {                                        \
        uint64_t idx[3], x;                                                                        \
        int accepted;                                                                              \
        do {                                                                                       \
            if (!half_##NEXT##_##T(s, &x)) return 0;                                               \
            FL_BATCH_DRAW(FL_MUL32, FL_POW32_MOD, x, i, k, bound, idx, accepted);                  \
        } while (!accepted);                                                                       \
        for (unsigned j = 0; j < k; j++) FL_SWAP(T, a, i - 1 - j, idx[j]);                         \
        return 1;                                                                                  \
    }                                                                                              \
    /* the part of the shuffle above 2^9 cards; returns the i left, 0 if exhausted */              \
    static uint64_t large_##NEXT##_##T(src_##NEXT##_##T *s, T *a, uint64_t n) {                    \
        uint64_t i = n;                                                                            \
        for (; i > ((uint64_t)1 << 30); i--)                                                       \
            if (!wide_##NEXT##_##T(s, a, i, 1, i)) return 0;                                       \
        for (; i > ((uint64_t)1 << 19); i -= 2)                                                    \
            if (!wide_##NEXT##_##T(s, a, i, 2, (uint64_t)1 << 60)) return 0;                       \
        for (; i > ((uint64_t)1 << 14); i -= 3)                                                    \
            if (!wide_##NEXT##_##T(s, a, i, 3, (uint64_t)1 << 57)) return 0;                       \
        for (; i > ((uint64_t)1 << 11); i -= 4)                                                    \
            if (!wide_##NEXT##_##T(s, a, i, 4, (uint64_t)1 << 56)) return 0;                       \
        for (; i > ((uint64_t)1 << 9); i -= 5)                                                     \
            if (!wide_##NEXT##_##T(s, a, i, 5, (uint64_t)1 << 55)) return 0;                       \
        return i;                                                                                  \
    }                                                                                              \
    static int shuffle_##NEXT##_##T(fl_rng *rng, T *a, size_t n) {                                 \
        src_##NEXT##_##T s = {rng->u.MEMBER, 0, 0};                                                \
        int ok = 1;                                                                                \
        uint64_t i = n;                                                                            \
        if (i > ((uint64_t)1 << 9)) {                                                              \
            i = large_##NEXT##_##T(&s, a, i);                                                      \
            ok = i != 0;                                                                           \
        }                                                                                          \
        for (; ok && i > 3; i -= 3) ok = narrow_##NEXT##_##T(&s, a, i, 3, i * (i - 1) * (i - 2));  \
        if (ok && i > 1) ok = narrow_##NEXT##_##T(&s, a, i, (unsigned)(i - 1), 6);                 \
        rng->u.MEMBER = s.g;                                                                       \
        return ok;                                                                                 \
    }                                                                                              \
    /* four shoes of m <= 2^9 cards at once, batches taking turns between them:                  \
     * four independent multiplication chains and swap streams in flight (measured best of        \
     * 2, 4 and 8 here) */                                                                         \
    static int shuffle4_##NEXT##_##T(fl_rng *rng, T *a, uint64_t m) {                              \
        src_##NEXT##_##T s = {rng->u.MEMBER, 0, 0};                                                \
        int ok = 1;                                                                                \
        uint64_t i = m;                                                                            \
        T *b = a + m, *c = b + m, *d = c + m;                                                      \
        for (; ok && i > 3; i -= 3) {                                                              \
            uint64_t pb = i * (i - 1) * (i - 2);                                                   \
            ok = narrow_##NEXT##_##T(&s, a, i, 3, pb) && narrow_##NEXT##_##T(&s, b, i, 3, pb) &&   \
                 narrow_##NEXT##_##T(&s, c, i, 3, pb) && narrow_##NEXT##_##T(&s, d, i, 3, pb);     \
        }                                                                                          \
        if (ok && i > 1)                                                                           \
            ok = narrow_##NEXT##_##T(&s, a, i, (unsigned)(i - 1), 6) &&                            \
                 narrow_##NEXT##_##T(&s, b, i, (unsigned)(i - 1), 6) &&                            \
                 narrow_##NEXT##_##T(&s, c, i, (unsigned)(i - 1), 6) &&                            \
                 narrow_##NEXT##_##T(&s, d, i, (unsigned)(i - 1), 6);                              \
        rng->u.MEMBER = s.g;                                                                       \
        return ok;                                                                                 \
    }

FL_DEFINE_SHUFFLE(next_xoshiro, fl_xoshiro256ss, xoshiro, uint8_t)
FL_DEFINE_SHUFFLE(next_xoshiro, fl_xoshiro256ss, xoshiro, uint16_t)
FL_DEFINE_SHUFFLE(next_chacha, fl_chacha20, chacha, uint8_t)
FL_DEFINE_SHUFFLE(next_chacha, fl_chacha20, chacha, uint16_t)

/*
 * Each loop starts with i no larger than its threshold (the previous loop ran
 * while i exceeded it), so every batch's ranges are <= the threshold and their
 * product is within the bound given: (2^11)^5 = 2^55, ..., (2^9)^3 = 2^27.
 */

static fl_status shuffle_dispatch(fl_rng *rng, void *cards, size_t n, int wide) {
    if (!rng || (!cards && n)) return FL_ERR_NULL;
    int ok;
    switch (rng->kind) {
    case FL_RNG_XOSHIRO256SS:
        ok = wide ? shuffle_next_xoshiro_uint16_t(rng, cards, n)
                  : shuffle_next_xoshiro_uint8_t(rng, cards, n);
        break;
    case FL_RNG_CHACHA20:
        ok = wide ? shuffle_next_chacha_uint16_t(rng, cards, n)
                  : shuffle_next_chacha_uint8_t(rng, cards, n);
        break;
    default:
        return FL_ERR_KIND;
    }
    return ok ? FL_OK : FL_ERR_EXHAUSTED;
}

fl_status fl_shuffle_u8(fl_rng *rng, uint8_t *cards, size_t n) {
    return shuffle_dispatch(rng, cards, n, 0);
}

fl_status fl_shuffle_u16(fl_rng *rng, uint16_t *cards, size_t n) {
    return shuffle_dispatch(rng, cards, n, 1);
}

fl_status fl_rng_bounded(fl_rng *rng, uint64_t bound, uint64_t *out, size_t n) {
    if (!rng || (!out && n)) return FL_ERR_NULL;
    if (bound < 1) return FL_ERR_RANGE;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    for (size_t j = 0; j < n; j++) {
        uint64_t x, idx[1];
        do {
            int ok = rng->kind == FL_RNG_XOSHIRO256SS ? next_xoshiro(&rng->u.xoshiro, &x)
                                                    : next_chacha(&rng->u.chacha, &x);
            if (!ok) return FL_ERR_EXHAUSTED;
        } while (!fl_batch_draw64(x, bound, 1, bound, idx));
        out[j] = idx[0];
    }
    return FL_OK;
}

/* ------------------------------------------------------------ shoes */

static const uint8_t NEW_DECK_ORDER[52] = {
    /* A-K spades (suit 3) */
    3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51,
    /* A-K diamonds (suit 1) */
    1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49,
    /* K-A clubs (suit 0) */
    48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0,
    /* K-A hearts (suit 2) */
    50, 46, 42, 38, 34, 30, 26, 22, 18, 14, 10, 6, 2,
};

void fl_new_deck_order(uint8_t out[52]) {
    if (out) memcpy(out, NEW_DECK_ORDER, sizeof NEW_DECK_ORDER);
}

fl_status fl_new_shoe_codes(unsigned decks, uint8_t *out, size_t n_out) {
    if (!out) return FL_ERR_NULL;
    if (decks < 1 || decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (n_out != (size_t)decks * 52) return FL_ERR_RANGE;
    for (unsigned d = 0; d < decks; d++) memcpy(out + 52 * d, NEW_DECK_ORDER, 52);
    return FL_OK;
}

fl_status fl_new_shoe_ids(unsigned decks, uint16_t *out, size_t n_out) {
    if (!out) return FL_ERR_NULL;
    if (decks < 1 || decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (n_out != (size_t)decks * 52) return FL_ERR_RANGE;
    for (unsigned d = 0; d < decks; d++)
        for (unsigned p = 0; p < 52; p++) out[52 * d + p] = (uint16_t)(52 * d + NEW_DECK_ORDER[p]);
    return FL_OK;
}

/* Shuffles the rows of an (n_shoes, m) array, each first set to the new shoe,
 * four at a time; the last n_shoes mod 4 rows one at a time. */
#define FL_BATCH_ROWS(T, SUFFIX)                                                                   \
    static fl_status batch_rows_##SUFFIX(fl_rng *rng, const T *shoe, T *out, size_t m,             \
                                         size_t n_shoes) {                                         \
        int ok = 1, x = rng->kind == FL_RNG_XOSHIRO256SS;                                          \
        size_t s = 0;                                                                              \
        for (; ok && s + 3 < n_shoes; s += 4) {                                                    \
            T *a = out + s * m;                                                                    \
            for (int l = 0; l < 4; l++) memcpy(a + l * m, shoe, m * sizeof(T));                    \
            ok = x ? shuffle4_next_xoshiro_##T(rng, a, m) : shuffle4_next_chacha_##T(rng, a, m);   \
        }                                                                                          \
        for (; ok && s < n_shoes; s++) {                                                           \
            T *a = out + s * m;                                                                    \
            memcpy(a, shoe, m * sizeof(T));                                                        \
            ok = x ? shuffle_next_xoshiro_##T(rng, a, m) : shuffle_next_chacha_##T(rng, a, m);     \
        }                                                                                          \
        return ok ? FL_OK : FL_ERR_EXHAUSTED;                                                      \
    }
FL_BATCH_ROWS(uint8_t, u8)
FL_BATCH_ROWS(uint16_t, u16)

fl_status fl_shuffle_batch_codes(fl_rng *rng, unsigned decks, uint8_t *out, size_t n_shoes) {
    if (!rng || (!out && n_shoes)) return FL_ERR_NULL;
    if (decks < 1 || decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    const size_t m = (size_t)decks * 52;
    uint8_t shoe[FL_MAX_DECKS * 52];
    (void)fl_new_shoe_codes(decks, shoe, m);
    return batch_rows_u8(rng, shoe, out, m, n_shoes);
}

fl_status fl_shuffle_batch_ids(fl_rng *rng, unsigned decks, uint16_t *out, size_t n_shoes) {
    if (!rng || (!out && n_shoes)) return FL_ERR_NULL;
    if (decks < 1 || decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    const size_t m = (size_t)decks * 52;
    uint16_t shoe[FL_MAX_DECKS * 52];
    (void)fl_new_shoe_ids(decks, shoe, m);
    return batch_rows_u16(rng, shoe, out, m, n_shoes);
}
