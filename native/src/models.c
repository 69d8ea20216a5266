/*
 * Shuffle models of physical shufflers, for simulated devices and for the
 * calibration of the certification battery.
 *
 * - GSR riffle: the Gilbert-Shannon-Reeds model (E. N. Gilbert, Bell Labs
 *   1955; J. Reeds 1981; D. Bayer and P. Diaconis, "Trailing the dovetail
 *   shuffle to its lair", Ann. Appl. Probab. 2(2), 1992): cut at a
 *   Binomial(n, 1/2) position, then interleave, each next card coming from a
 *   packet with probability proportional to the cards left in it (so all
 *   interleavings of the cut are equally likely).  k riffles are drawn at once
 *   as one 2^k-shuffle, the same law (riffles() below).
 * - Shelf shuffler: P. Diaconis, J. Fulman and S. Holmes, "Analysis of casino
 *   shelf shuffling machines", Ann. Appl. Probab. 23(4), 2013: each card in
 *   turn, from the top, goes to a uniformly chosen one of m shelves, on top of
 *   or under the cards already there with probability 1/2 each; the shelves are
 *   then unloaded in order, shelf 0 on top.
 *
 * Index 0 is the top of the deck.  Decks of up to FL_MAX_MODEL_CARDS cards
 * (no allocation: scratch space is on the stack).
 */
#include <string.h>

#include "feltlab_core.h"
#include "internal.h"

typedef struct {
    fl_rng *rng;
    uint64_t bits;
    unsigned nbits;
    int ok;
} bit_source;

static uint64_t next_word(bit_source *b) {
    uint64_t x = 0;
    if (b->rng->kind == FL_RNG_XOSHIRO256SS) {
        x = fl_xoshiro_next(&b->rng->u.xoshiro);
    } else if (!fl_chacha_next(&b->rng->u.chacha, &x)) {
        b->ok = 0;
    }
    return x;
}

static unsigned next_bit(bit_source *b) {
    if (!b->nbits) {
        b->bits = next_word(b);
        b->nbits = 64;
    }
    unsigned v = (unsigned)(b->bits & 1);
    b->bits >>= 1;
    b->nbits--;
    return v;
}

/* uniform in [0, bound), bound >= 1 (Lemire, one index per 64-bit word) */
static uint64_t next_below(bit_source *b, uint64_t bound) {
    uint64_t idx[1];
    int accepted;
    do {
        uint64_t x = next_word(b);
        if (!b->ok) return 0;
        FL_BATCH_DRAW(FL_MUL64, FL_POW64_MOD, x, bound, 1, bound, idx, accepted);
    } while (!accepted);
    return idx[0];
}

/* k bits (1..16) from the buffer; a word's leftover bits too few for k are dropped */
static unsigned next_bits(bit_source *b, unsigned k) {
    if (b->nbits < k) {
        b->bits = next_word(b);
        b->nbits = 64;
    }
    unsigned v = (unsigned)(b->bits & ((1u << k) - 1));
    b->bits >>= k;
    b->nbits -= k;
    return v;
}

/* k GSR riffles of a[0..n) at once (1 <= k <= FL_RIFFLES_AT_ONCE).  Bayer and Diaconis
 * (1992): k riffles have the law of one 2^k-shuffle, and the inverse of a 2^k-shuffle labels
 * each card with a uniform k-bit digit and sorts the deck stably by digit.  So with p(i) the
 * place card i takes in that stable sort, the riffled deck is c[i] = a[p(i)]: for k = 1,
 * the cards labelled 0 are the top packet (cut ~ Binomial(n, 1/2)), and the labels of the
 * output positions are a uniform interleaving of the two packets, as in the GSR model.  One
 * pass over the deck instead of k, with k bits a card instead of k bounded draws. */
#define FL_RIFFLES_AT_ONCE 8
static void riffles(bit_source *b, uint16_t *a, size_t n, unsigned k) {
    uint16_t tmp[FL_MAX_MODEL_CARDS];
    uint16_t label[FL_MAX_MODEL_CARDS];
    uint32_t start[(1u << FL_RIFFLES_AT_ONCE) + 1] = {0};
    unsigned digits = 1u << k;
    for (size_t i = 0; i < n; i++) {
        label[i] = (uint16_t)next_bits(b, k);
        start[label[i] + 1]++;
    }
    for (unsigned d = 1; d <= digits; d++) start[d] += start[d - 1];
    for (size_t i = 0; i < n; i++) tmp[i] = a[start[label[i]]++];
    memcpy(a, tmp, n * sizeof *a);
}

/* one pass through an m-shelf machine */
static void shelf_once(bit_source *b, uint16_t *a, size_t n, unsigned m) {
    uint16_t shelf[FL_MAX_MODEL_CARDS];
    uint8_t top[FL_MAX_MODEL_CARDS];
    uint32_t n_top[FL_MAX_SHELVES] = {0}, n_bottom[FL_MAX_SHELVES] = {0};
    uint32_t start[FL_MAX_SHELVES], seen_top[FL_MAX_SHELVES] = {0},
        seen_bottom[FL_MAX_SHELVES] = {0};
    uint16_t tmp[FL_MAX_MODEL_CARDS];
    for (size_t i = 0; i < n; i++) {
        shelf[i] = (uint16_t)next_below(b, m);
        top[i] = (uint8_t)next_bit(b);
        if (top[i])
            n_top[shelf[i]]++;
        else
            n_bottom[shelf[i]]++;
    }
    uint32_t off = 0;
    for (unsigned s = 0; s < m; s++) {
        start[s] = off;
        off += n_top[s] + n_bottom[s];
    }
    for (size_t i = 0; i < n; i++) {
        unsigned s = shelf[i];
        size_t pos;
        if (top[i]) /* later cards placed on top lie above earlier ones */
            pos = start[s] + n_top[s] - 1 - seen_top[s]++;
        else
            pos = start[s] + n_top[s] + seen_bottom[s]++;
        tmp[pos] = a[i];
    }
    memcpy(a, tmp, n * sizeof *a);
}

/* runs a model over positions 0..n-1 and applies the permutation to T arrays */
static fl_status model_perm(fl_rng *rng, size_t n, int which, unsigned param, unsigned passes,
                            uint16_t *perm) {
    if (!rng) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    if (n > FL_MAX_MODEL_CARDS) return FL_ERR_RANGE;
    if (which == 1 && (param < 1 || param > FL_MAX_SHELVES)) return FL_ERR_RANGE;
    bit_source b = {rng, 0, 0, 1};
    for (size_t i = 0; i < n; i++) perm[i] = (uint16_t)i;
    if (which == 0) { /* 2^k-shuffles of at most FL_RIFFLES_AT_ONCE riffles each */
        for (unsigned left = passes; left && b.ok;) {
            unsigned k = left < FL_RIFFLES_AT_ONCE ? left : FL_RIFFLES_AT_ONCE;
            riffles(&b, perm, n, k);
            left -= k;
        }
    } else {
        for (unsigned p = 0; p < passes && b.ok; p++) shelf_once(&b, perm, n, param);
    }
    return b.ok ? FL_OK : FL_ERR_EXHAUSTED;
}

#define FL_APPLY(T)                                                                                \
    static void apply_##T(T *cards, const uint16_t *perm, size_t n) {                              \
        T tmp[FL_MAX_MODEL_CARDS];                                                                 \
        for (size_t i = 0; i < n; i++) tmp[i] = cards[perm[i]];                                    \
        memcpy(cards, tmp, n * sizeof *cards);                                                     \
    }
FL_APPLY(uint8_t)
FL_APPLY(uint16_t)

#define FL_MODEL_API(NAME, T, WHICH)                                                          \
    fl_status NAME(fl_rng *rng, T *cards, size_t n, unsigned param, unsigned passes) {             \
        if (!cards && n) return FL_ERR_NULL;                                                       \
        uint16_t perm[FL_MAX_MODEL_CARDS];                                                         \
        fl_status st = model_perm(rng, n, WHICH, param, passes, perm);                             \
        if (st == FL_OK) apply_##T(cards, perm, n);                                                \
        return st;                                                                                 \
    }

static fl_status riffle_u8(fl_rng *rng, uint8_t *cards, size_t n, unsigned param,
                           unsigned passes);
static fl_status riffle_u16(fl_rng *rng, uint16_t *cards, size_t n, unsigned param,
                            unsigned passes);
FL_MODEL_API(riffle_u8, uint8_t, 0)
FL_MODEL_API(riffle_u16, uint16_t, 0)
FL_MODEL_API(fl_shelf_u8, uint8_t, 1)
FL_MODEL_API(fl_shelf_u16, uint16_t, 1)

fl_status fl_riffle_u8(fl_rng *rng, uint8_t *cards, size_t n, unsigned passes) {
    return riffle_u8(rng, cards, n, 0, passes);
}

fl_status fl_riffle_u16(fl_rng *rng, uint16_t *cards, size_t n, unsigned passes) {
    return riffle_u16(rng, cards, n, 0, passes);
}
