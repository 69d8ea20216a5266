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

/* k uniform digits in [0, base) from one word, exactly: the batched draw of Brackett-Rozinsky
 * and Lemire (2025) with k equal ranges (prod = base^k <= 2^64 - 1): the digits are the high
 * words of successive multiplications, the word rejected when the last low word is below
 * 2^64 mod prod.  Returns 0 when the generator is exhausted. */
static int digits_below(bit_source *b, uint64_t base, unsigned k, uint64_t prod, uint16_t *out) {
    for (;;) {
        uint64_t r = next_word(b);
        if (!b->ok) return 0;
        for (unsigned i = 0; i < k; i++) {
            fl_u128 m = (fl_u128)r * base;
            out[i] = (uint16_t)(m >> 64);
            r = (uint64_t)m;
        }
        if (r >= FL_POW64_MOD(prod)) return 1;
    }
}

/* one pass through an m-shelf machine.  Each card's digit d in 0..2m-1 (shelf d / 2, on top
 * of the shelf's cards when d is odd, under them when even), k digits a word; then each card
 * goes to its place through a cursor per digit (no data-dependent branch): the top cards of
 * a shelf fill its upper part from the middle upwards (later cards above earlier ones), the
 * cards under fill the lower part downwards. */
static void shelf_once(bit_source *b, uint16_t *a, size_t n, unsigned m) {
    uint16_t digit[FL_MAX_MODEL_CARDS + 64];
    uint32_t count[2 * FL_MAX_SHELVES] = {0};
    int64_t cursor[2 * FL_MAX_SHELVES];
    uint16_t tmp[FL_MAX_MODEL_CARDS];
    uint64_t base = 2 * (uint64_t)m, prod = base;
    unsigned k = 1;
    while (prod <= UINT64_MAX / base) {
        prod *= base;
        k++;
    }
    for (size_t i = 0; i < n; i += k)
        if (!digits_below(b, base, k, prod, digit + i)) return;
    for (size_t i = 0; i < n; i++) count[digit[i]]++;
    int64_t off = 0;
    for (unsigned s = 0; s < m; s++) {
        uint32_t n_top = count[2 * s + 1], n_under = count[2 * s];
        cursor[2 * s + 1] = off + n_top - 1; /* top cards: upwards from the middle */
        cursor[2 * s] = off + n_top;         /* cards under: downwards from the middle */
        off += n_top + n_under;
    }
    static const int64_t step[2] = {1, -1};
    for (size_t i = 0; i < n; i++) {
        unsigned d = digit[i];
        tmp[cursor[d]] = a[i];
        cursor[d] += step[d & 1];
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

/* ======================================================================================
 * The library of shuffle models (fl_model_init, fl_model_shoes).  Each shoe starts from the
 * loaded order 0..n-1 and ends as the input positions in dealing order.  Sources:
 *
 * - FISHER_YATES: R. Durstenfeld, "Algorithm 235: Random permutation", CACM 7(7), 1964,
 *   with the batched unbiased draws of shuffle.c (the very draws of fl_shuffle_u16).
 * - RIFFLE, SHELF: as above (the very draws of fl_riffle_u16 and fl_shelf_u16).
 * - OVERHAND: R. Pemantle, "Randomization time for the overhand shuffle", J. Theoret.
 *   Probab. 2(1), 1989: each of the n-1 gaps between adjacent cards is a cut with
 *   probability p, independently (nine gaps a 64-bit word, overhand_once); the packets are then laid down in reverse order (the top
 *   packet ends at the bottom, each packet keeping its order).  J. Jonasson, "The overhand
 *   shuffle mixes in Theta(n^2 log n) steps", Ann. Appl. Probab. 16(1), 2006.
 * - STRIP: the strip (running cuts) of a hand-shuffling procedure, feltlab's model: c
 *   distinct gaps chosen uniformly (a partial Fisher-Yates of the n-1 gaps), the c+1 packets
 *   laid down in reverse order, as the overhand shuffle with a fixed number of packets.
 * - POSITION_BIAS: feltlab's model of a machine that does not always pick up one slot: a
 *   Fisher-Yates shoe, then with probability q the card loaded at `pos` is swapped to a
 *   uniform position within `width` of `pos` (clipped).  Law: (1-q)/n! + q [card pos lands
 *   in the window] / (w (n-1)!), w the window's size (the swap of a uniform permutation
 *   that brings a card to a given place is uniform over the permutations with that card
 *   there).
 * - NAIVE: the naive swap shuffle, for i = 0..n-1 swap a[i] and a[j], j uniform on 0..n-1
 *   (J. Atwood, "The danger of naivete", 2007): n^n equally likely paths over n! orders.
 * - MODULO: Durstenfeld's loop (i = n-1 down to 1, swap a[i] and a[j]) with
 *   j = r % (i+1), r uniform on 0..2^b-1 (the top b bits of a word): `rand() % (i+1)` with
 *   RAND_MAX = 2^b - 1 (ISO C 7.22.2.1: at least 32767).  Modulo bias: P(j) =
 *   (floor(2^b/(i+1)) + [j < 2^b mod (i+1)]) / 2^b.
 * - LCG: the same loop with r = x >> shift, x the state of x' = (1103515245 x + 12345) mod
 *   2^31, the generator of glibc's TYPE_0 random_r (rand() returns x: shift 0) and of the
 *   example rand() of ANSI X3.159-1989 4.10.2.2 ((x / 65536) % 32768: shift 16).  The low
 *   bits of a power-of-two-modulus LCG have short periods (bit k: 2^(k+1); D. Knuth, TAOCP
 *   2, 3.2.1.1).  One generator a device: its state carries across shoes; its first shoe
 *   takes the initial state from the low 31 bits of one word of `rng`.
 * - SHORT_SEED: each shoe is a Fisher-Yates shuffle by xoshiro256** seeded (SplitMix64, as
 *   fl_rng_seed_xoshiro) with the top `bits` bits of one word of `rng`: at most 2^bits
 *   distinct shoes (B. Arkin, F. Hill, S. Marks, M. Schmid and T. J. Walls, "How we learned
 *   to cheat at online poker", 1999: a shuffle seeded with a 32-bit clock).
 * - REBOOT: Fisher-Yates from a xoshiro256** seeded at power-up from one word of `rng`; the
 *   device reboots every `every` shoes and reseeds with the same seed, so shoe k equals shoe
 *   k mod every.
 * - STUCK: the card at `pos` never moves, the n-1 others are a Fisher-Yates shoe; MISSING: a
 *   Fisher-Yates shoe loses its card at `pos`; DUPLICATE: a Fisher-Yates shoe where another
 *   uniform position repeats the card at `pos`.
 * ====================================================================================== */

static const uint32_t PARAM_MAX[FL_MODEL_KINDS][FL_MODEL_PARAMS] = {
    [FL_MODEL_FISHER_YATES] = {0, 0, 0, 0},
    [FL_MODEL_RIFFLE] = {FL_MAX_MODEL_PASSES, 0, 0, 0},
    [FL_MODEL_SHELF] = {FL_MAX_SHELVES, FL_MAX_MODEL_PASSES, 0, 0},
    [FL_MODEL_OVERHAND] = {FL_MAX_MODEL_PASSES, 100, 0, 0},
    [FL_MODEL_STRIP] = {FL_MAX_MODEL_CARDS, FL_MAX_MODEL_PASSES, 0, 0},
    [FL_MODEL_POSITION_BIAS] = {FL_MAX_MODEL_CARDS, 100, FL_MAX_MODEL_CARDS, 0},
    [FL_MODEL_NAIVE] = {0, 0, 0, 0},
    [FL_MODEL_MODULO] = {32, 0, 0, 0},
    [FL_MODEL_LCG] = {30, 0, 0, 0},
    [FL_MODEL_SHORT_SEED] = {64, 0, 0, 0},
    [FL_MODEL_REBOOT] = {UINT32_MAX, 0, 0, 0},
    [FL_MODEL_STUCK] = {FL_MAX_MODEL_CARDS, 0, 0, 0},
    [FL_MODEL_MISSING] = {FL_MAX_MODEL_CARDS, 0, 0, 0},
    [FL_MODEL_DUPLICATE] = {FL_MAX_MODEL_CARDS, 0, 0, 0},
};

static fl_status check_params(uint32_t kind, const uint32_t *p) {
    if (kind >= FL_MODEL_KINDS) return FL_ERR_KIND;
    for (int i = 0; i < FL_MODEL_PARAMS; i++)
        if (p[i] > PARAM_MAX[kind][i]) return FL_ERR_RANGE;
    switch (kind) {
    case FL_MODEL_SHELF:
        return p[0] >= 1 ? FL_OK : FL_ERR_RANGE;
    case FL_MODEL_MODULO:
    case FL_MODEL_SHORT_SEED:
    case FL_MODEL_REBOOT:
        return p[0] >= 1 ? FL_OK : FL_ERR_RANGE;
    default:
        return FL_OK;
    }
}

fl_status fl_model_init(fl_model_stream *stream, uint32_t kind, const uint32_t *param,
                        size_t n_param) {
    if (!stream || (!param && n_param)) return FL_ERR_NULL;
    if (n_param > FL_MODEL_PARAMS) return FL_ERR_RANGE;
    uint32_t p[FL_MODEL_PARAMS] = {0, 0, 0, 0};
    for (size_t i = 0; i < n_param; i++) p[i] = param[i];
    fl_status st = check_params(kind, p);
    if (st != FL_OK) return st;
    memset(stream, 0, sizeof *stream);
    stream->kind = kind;
    memcpy(stream->param, p, sizeof p);
    return FL_OK;
}

static void swap16(uint16_t *a, size_t i, size_t j) {
    uint16_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* lay the packets of a[0..n) down in reverse order; cut[g] = 1: a gap between g and g+1.
 * The packets' starts are listed without a data-dependent branch, then copied last first. */
static void reverse_packets(uint16_t *a, size_t n, const uint8_t *cut) {
    uint16_t tmp[FL_MAX_MODEL_CARDS];
    uint16_t start[FL_MAX_MODEL_CARDS + 1];
    size_t k = 1, o = 0;
    start[0] = 0;
    for (size_t g = 0; g + 1 < n; g++) {
        start[k] = (uint16_t)(g + 1);
        k += cut[g];
    }
    start[k] = (uint16_t)n; /* packets i = 0..k-1: [start[i], start[i+1]) */
    for (size_t i = k; i-- > 0;) {
        size_t len = (size_t)start[i + 1] - start[i];
        memcpy(tmp + o, a + start[i], len * sizeof *a);
        o += len;
    }
    memcpy(a, tmp, n * sizeof *a);
}

/* each gap a cut with probability percent/100, exactly: the nine base-100 digits (lowest
 * first) of one uniform draw below 100^9 < 2^64 serve nine gaps */
static void overhand_once(bit_source *b, uint16_t *a, size_t n, unsigned percent) {
    uint8_t cut[FL_MAX_MODEL_CARDS];
    if (n < 2) return;
    for (size_t g = 0; g + 1 < n && b->ok;) {
        uint64_t u = next_below(b, 1000000000000000000ULL);
        for (int d = 0; d < 9 && g + 1 < n; d++, g++) {
            cut[g] = (u % 100) < percent;
            u /= 100;
        }
    }
    if (b->ok) reverse_packets(a, n, cut);
}

static void strip_once(bit_source *b, uint16_t *a, size_t n, unsigned cuts) {
    uint16_t gap[FL_MAX_MODEL_CARDS];
    uint8_t cut[FL_MAX_MODEL_CARDS];
    if (n < 2) return;
    size_t gaps = n - 1;
    for (size_t g = 0; g < gaps; g++) {
        gap[g] = (uint16_t)g;
        cut[g] = 0;
    }
    for (size_t i = 0; i < cuts; i++) { /* the first `cuts` of a partial Fisher-Yates */
        size_t j = i + (size_t)next_below(b, gaps - i);
        swap16(gap, i, j);
        cut[gap[i]] = 1;
    }
    if (b->ok) reverse_packets(a, n, cut);
}

/* Durstenfeld's loop with j = r % (i+1), r from `word` (the generator of the model) */
static uint64_t lcg_next(uint64_t *x) {
    *x = (*x * (uint64_t)FL_LCG_MULTIPLIER + FL_LCG_INCREMENT) & 0x7fffffffu;
    return *x;
}

static fl_status one_shoe(fl_model_stream *s, fl_rng *rng, uint16_t *a, size_t n) {
    const uint32_t *p = s->param;
    bit_source b = {rng, 0, 0, 1};
    fl_status st = FL_OK;
    for (size_t i = 0; i < n; i++) a[i] = (uint16_t)i;
    switch (s->kind) {
    case FL_MODEL_FISHER_YATES:
        return fl_shuffle_u16(rng, a, n);
    case FL_MODEL_RIFFLE:
        for (unsigned left = p[0]; left && b.ok;) {
            unsigned k = left < FL_RIFFLES_AT_ONCE ? left : FL_RIFFLES_AT_ONCE;
            riffles(&b, a, n, k);
            left -= k;
        }
        break;
    case FL_MODEL_SHELF:
        for (unsigned q = 0; q < p[1] && b.ok; q++) shelf_once(&b, a, n, p[0]);
        break;
    case FL_MODEL_OVERHAND:
        for (unsigned q = 0; q < p[0] && b.ok; q++) overhand_once(&b, a, n, p[1]);
        break;
    case FL_MODEL_STRIP:
        for (unsigned q = 0; q < p[1] && b.ok; q++) strip_once(&b, a, n, p[0]);
        break;
    case FL_MODEL_POSITION_BIAS: {
        st = fl_shuffle_u16(rng, a, n);
        if (st != FL_OK) return st;
        if (next_below(&b, 100) < p[1] && b.ok) {
            size_t q = 0;
            while (a[q] != p[0]) q++;
            size_t lo = p[0] > p[2] ? p[0] - p[2] : 0;
            size_t hi = (size_t)p[0] + p[2] < n - 1 ? (size_t)p[0] + p[2] : n - 1;
            size_t t = lo + (size_t)next_below(&b, hi - lo + 1);
            swap16(a, q, t);
        }
        break;
    }
    case FL_MODEL_NAIVE:
        for (size_t i = 0; i < n && b.ok; i++) swap16(a, i, (size_t)next_below(&b, n));
        break;
    case FL_MODEL_MODULO:
        for (size_t i = n; i-- > 1 && b.ok;) {
            uint64_t r = next_word(&b) >> (64 - p[0]);
            swap16(a, i, (size_t)(r % (i + 1)));
        }
        break;
    case FL_MODEL_LCG:
        if (!s->started) {
            s->lcg = next_word(&b) & 0x7fffffffu;
            if (!b.ok) break;
            s->started = 1;
        }
        for (size_t i = n; i-- > 1;) swap16(a, i, (size_t)((lcg_next(&s->lcg) >> p[0]) % (i + 1)));
        break;
    case FL_MODEL_SHORT_SEED: {
        uint64_t w = next_word(&b);
        if (!b.ok) break;
        fl_rng seeded;
        fl_rng_seed_xoshiro(&seeded, w >> (64 - p[0]));
        return fl_shuffle_u16(&seeded, a, n);
    }
    case FL_MODEL_REBOOT:
        if (!s->started) {
            uint64_t w = next_word(&b);
            if (!b.ok) break;
            fl_rng_seed_xoshiro(&s->boot, w);
            s->started = 1;
        }
        if (s->shoes % p[0] == 0) s->gen = s->boot; /* power-up: the same seed again */
        return fl_shuffle_u16(&s->gen, a, n);
    case FL_MODEL_STUCK: {
        uint16_t rest[FL_MAX_MODEL_CARDS];
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (i != p[0]) rest[k++] = (uint16_t)i;
        st = fl_shuffle_u16(rng, rest, k);
        if (st != FL_OK) return st;
        for (size_t i = 0, j = 0; i < n; i++) a[i] = i == p[0] ? (uint16_t)i : rest[j++];
        break;
    }
    case FL_MODEL_MISSING:
        st = fl_shuffle_u16(rng, a, n);
        if (st != FL_OK) return st;
        memmove(a + p[0], a + p[0] + 1, (n - 1 - p[0]) * sizeof *a);
        a[n - 1] = FL_NO_POSITION;
        break;
    case FL_MODEL_DUPLICATE:
        st = fl_shuffle_u16(rng, a, n);
        if (st != FL_OK) return st;
        a[(p[0] + 1 + (size_t)next_below(&b, n - 1)) % n] = a[p[0]];
        break;
    default:
        return FL_ERR_KIND;
    }
    return b.ok ? FL_OK : FL_ERR_EXHAUSTED;
}

fl_status fl_model_shoes(fl_model_stream *stream, fl_rng *rng, uint16_t *out, size_t n_shoes,
                         size_t n) {
    if (!stream || !rng) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    fl_status st = check_params(stream->kind, stream->param);
    if (st != FL_OK) return st;
    if (n > FL_MAX_MODEL_CARDS) return FL_ERR_RANGE;
    if (n_shoes && n && !out) return FL_ERR_NULL;
    const uint32_t *p = stream->param;
    switch (stream->kind) { /* the parameters bounded by the shoe's size */
    case FL_MODEL_STRIP:
        if (p[0] > (n ? n - 1 : 0)) return FL_ERR_RANGE;
        break;
    case FL_MODEL_DUPLICATE:
        if (n < 2) return FL_ERR_RANGE;
        /* fall through */
    case FL_MODEL_POSITION_BIAS:
    case FL_MODEL_STUCK:
    case FL_MODEL_MISSING:
        if (p[0] >= n) return FL_ERR_RANGE;
        break;
    default:
        break;
    }
    if (!n) { /* empty shoes: nothing to draw */
        stream->shoes += n_shoes;
        return FL_OK;
    }
    for (size_t r = 0; r < n_shoes; r++) {
        st = one_shoe(stream, rng, out + r * n, n);
        if (st != FL_OK) return st;
        stream->shoes++;
    }
    return FL_OK;
}
