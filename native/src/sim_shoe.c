/* The round simulator's shoe and its lazy Fisher-Yates shuffle (sim_shoe.h). */
#include <string.h>

#include "sim_shoe.h"

void fl_sim_shoe_init(sim_shoe *s, uint32_t decks, uint32_t cut_position, fl_rng *rng,
                      fl_rng *x, fl_csm_state *csm) {
    memset(s, 0, sizeof *s);
    s->size = decks * 52;
    s->cut = cut_position;
    s->ok = 1;
    s->use_x = x != NULL;
    s->rng = rng;
    if (x) {
        s->x = x->u.xoshiro;
        (void)fl_xoshiro_long_jump(x);
    }
    (void)fl_new_shoe_codes(decks, s->cards, s->size);
    s->bound = 1;
    for (unsigned k = 0; k < SIM_DRAWS; k++) s->bound *= (uint64_t)(s->size - k);
    if (csm) { /* an empty tray of the shoe's size, filled from the machine */
        s->csm = csm;
        s->cut = 0;
    }
}

static inline uint64_t shoe_word(sim_shoe *s) {
    if (s->use_x) return fl_xoshiro_next(&s->x);
    uint64_t w = 0;
    if (!fl_chacha_next(&s->rng->u.chacha, &w)) s->ok = 0;
    return w;
}

/* one Fisher-Yates step at position p: a uniform card among positions p..size-1 to p */
static inline void fy_step(sim_shoe *s, uint32_t p, uint64_t idx) {
    uint32_t j = p + (uint32_t)idx;
    uint8_t c = s->cards[j];
    s->cards[j] = s->cards[p];
    s->cards[p] = c;
}

/* k Fisher-Yates steps at positions p.., n cards from p on, their draws from one 64-bit word
 * (drawn again when the exact test rejects it) */
static inline void fix_draws(sim_shoe *s, uint32_t p, uint64_t n, unsigned k) {
    uint64_t idx[SIM_DRAWS];
    int accepted;
    do {
        uint64_t x = shoe_word(s);
        FL_BATCH_DRAW(FL_MUL64, FL_POW64_MOD, x, n, k, s->bound, idx, accepted);
    } while (!accepted && s->ok);
    for (unsigned i = 0; i < k; i++) fy_step(s, p + i, idx[i]);
}

/* the last positions of a shoe (fewer than SIM_DRAWS left): n - 1 draws from one word */
static __attribute__((noinline)) void fix_tail(sim_shoe *s) {
    const uint64_t n = s->size - s->fixed;
    if (n >= 2) fix_draws(s, s->fixed, n, (unsigned)n - 1);
    s->fixed = s->size; /* the last card: nothing to choose */
}

/* Fix the next SIM_DRAWS positions from `fixed` (fewer at the end of the shoe) by lazy
 * Fisher-Yates steps, their draws from one 64-bit word: a shoe is a uniformly random order,
 * drawn only as far as it is dealt (and at most SIM_DRAWS - 1 positions ahead). */
static inline void fix_at(sim_shoe *s) {
    const uint32_t p = s->fixed;
    const uint64_t n = s->size - p;
    if (__builtin_expect(n < SIM_DRAWS, 0)) {
        fix_tail(s);
        return;
    }
    fix_draws(s, p, n, SIM_DRAWS);
    s->fixed = p + SIM_DRAWS;
}

/* the next card when none is fixed: from the shoe's Fisher-Yates draws, or out of the
 * continuous shuffler into its tray (rare on a shoe: its cards up to the cut are fixed when
 * it starts; every card off a continuous shuffler) */
__attribute__((noinline)) void fl_sim_fix_more(sim_shoe *s) {
    if (s->csm) {
        s->cards[s->fixed++] = fl_csm_deal(s->csm);
        if (!fl_csm_ok(s->csm)) s->ok = 0;
        return;
    }
    fix_at(s);
}


/* A batch of new shoes, one per lane: the positions up to the cut are fixed at once, the
 * lanes' batched draws taking turns (FL_SIM_LANES independent generator chains and swap
 * streams in flight, as in the batch shuffles), in a tight loop that does not wait on play.
 * These are the very draws of fixing the cards one by one as dealt, so each shoe is still a
 * uniformly random order; the few cards past the cut stay lazy. */
void fl_sim_start_shoes(sim_shoe *lanes) {
    for (unsigned l = 0; l < FL_SIM_LANES; l++) lanes[l].dealt = lanes[l].fixed = 0;
    const uint32_t cut = lanes[0].cut;
    while (lanes[0].fixed < cut && lanes[0].ok)
        for (unsigned l = 0; l < FL_SIM_LANES; l++) fix_at(&lanes[l]);
}

/* 2^64 mod n(n-1)...(n-SIM_DRAWS+1): the batched draw's exact test, out of line (it is rare,
 * and inline the compiler computed the product for every draw) */
static __attribute__((noinline, cold)) uint64_t sim_pow64_mod_falling(uint64_t n) {
    uint64_t prod = n;
    for (unsigned i = 1; i < SIM_DRAWS; i++) prod *= n - i;
    return FL_POW64_MOD(prod);
}

/* Undo the SIM_DRAWS Fisher-Yates steps at q[0..SIM_DRAWS-1], n cards from q on, that word w's
 * batched draw made (their indexes recomputed from w), last step first: a rejected draw (rare) */
static __attribute__((noinline, cold)) void sim_undo_draw(uint8_t *q, uint64_t n, uint64_t w) {
    uint64_t idx[SIM_DRAWS], hi, lo;
    for (unsigned i = 0; i < SIM_DRAWS; i++) {
        FL_MUL64(w, n - i, hi, lo);
        idx[i] = hi;
        w = lo;
    }
    for (unsigned i = SIM_DRAWS; i-- > 0;) {
        const uint8_t c = q[i + idx[i]];
        q[i + idx[i]] = q[i];
        q[i] = c;
    }
}

/* Fix a fresh xoshiro256** shoe's positions up to its cut: fix_at's draws and Fisher-Yates
 * steps, in order, each step swapped as its index comes out of the multiply chain, and a draw
 * the exact test rejects (rare) undone and drawn again.  The same draws and the same shoe as
 * fix_at (FL_BATCH_DRAW's steps).  Kept in registers: the generator's four words (through the
 * shoe, each swap's byte stores made the compiler reload them), a pointer to the next position
 * (each card's loads and stores one addressing mode) and the range, counted down; this form
 * took 20 instructions a round fewer than indexes from the shoe's start (callgrind). */
static void fix_to_cut(sim_shoe *s) {
    uint64_t x0 = s->x.s[0], x1 = s->x.s[1], x2 = s->x.s[2], x3 = s->x.s[3];
    const uint64_t bound = s->bound;
    /* below the cut, at least 26 cards from the end (check_rules) */
    uint8_t *q = s->cards + s->fixed, *const end = s->cards + s->cut;
    uint64_t n = s->size - s->fixed; /* the cards from q on */
    while (q < end) {
        for (;;) {
            const uint64_t word = fl_xoshiro_step(&x0, &x1, &x2, &x3);
            uint64_t w = word, hi, lo, m = n;
            for (unsigned i = 0; i < SIM_DRAWS; i++, m--) {
                FL_MUL64(w, m, hi, lo);
                const uint8_t c = q[i + hi];
                q[i + hi] = q[i];
                q[i] = c;
                w = lo;
            }
            if (__builtin_expect(w >= bound, 1) || w >= sim_pow64_mod_falling(n)) break;
            sim_undo_draw(q, n, word);
        }
        q += SIM_DRAWS;
        n -= SIM_DRAWS;
    }
    s->x.s[0] = x0;
    s->x.s[1] = x1;
    s->x.s[2] = x2;
    s->x.s[3] = x3;
    s->fixed = (uint32_t)(q - s->cards);
}

/* Shoe k of the stream (lane k % FL_SIM_LANES, whose last shoe has ended) into *play: its
 * positions up to the cut fixed (xoshiro256** lanes: each its own generator). */
void fl_sim_shoe_begin(sim_shoe *lanes, size_t k, sim_shoe *play) {
    sim_shoe *s = &lanes[k % FL_SIM_LANES];
    s->dealt = s->fixed = 0;
    fix_to_cut(s);
    *play = *s;
}

/* the rare path of fl_sim_deal: the card is not fixed yet, or the shoe is out of cards */
__attribute__((noinline)) uint8_t fl_sim_deal_slow(sim_shoe *s) {
    if (s->dealt >= s->size) { /* out of cards: excluded by the cut-position check */
        s->ok = 0;
        return 0;
    }
    fl_sim_fix_next(s);
    return s->cards[s->dealt++];
}

