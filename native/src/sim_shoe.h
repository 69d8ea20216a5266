/* The round simulator's shoe (sim.c deals its rounds from it): a shuffle done lazily, one
 * Fisher-Yates step per card dealt (each card drawn uniformly from those not yet dealt; six
 * positions per 64-bit generator word), which is the same distribution as a full shuffle at
 * the cost of only the cards used, the positions up to the cut fixed when the shoe starts.
 * After a round in which the cutting card came out (cards dealt >= cut_position) the shoe is
 * reshuffled (rule 5.7(b)); cut_position == 0 reshuffles before every round (an ideal
 * continuous shuffler, or a fresh shoe each round); or the cards come off a continuous
 * shuffler model (csm.h). */
#ifndef FELTLAB_SIM_SHOE_H
#define FELTLAB_SIM_SHOE_H

#include "csm.h"
#include "feltlab_core.h"
#include "internal.h"

/* Positions of the shoe fixed per 64-bit generator word: Lemire's bounded integers batched
 * (Brooks & Lemire, "Batched ranged random integer generation", 2024: k = 6 while the
 * ranges stay below 2^9; a shoe has at most 416 cards). */
#define SIM_DRAWS 6

typedef struct {
    uint8_t cards[FL_MAX_DECKS * 52];
    uint32_t size;  /* cards in the stack */
    uint32_t dealt; /* cards dealt since the last shuffle */
    uint32_t fixed; /* positions already drawn (>= dealt: a peeked next card) */
    uint32_t cut;   /* cut position (0: reshuffle every round) */
    fl_xoshiro256ss x;
    fl_rng *rng;    /* for ChaCha20 */
    uint64_t bound; /* the product of the first SIM_DRAWS ranges of a full shoe: above 2^64
                     * mod the product of any later ranges (the batched draw's quick test) */
    int use_x;
    int ok;
    fl_csm_state *csm; /* not NULL: the cards come from this continuous shuffler, and
                        * `cards` is its delivery tray (cards out of the machine, dealt or
                        * waiting: a peeked next card stays there for the next round) */
} sim_shoe;

/* A lane's shoe, new: `decks` decks in order, cut at `cut_position`, its draws from `x` (a
 * generator long-jumped once after, so the next lane's never overlap) or, when x is NULL,
 * from the ChaCha20 `rng`; when csm is not NULL an empty tray filled from that machine. */
void fl_sim_shoe_init(sim_shoe *s, uint32_t decks, uint32_t cut_position, fl_rng *rng,
                      fl_rng *x, fl_csm_state *csm);

/* the next card when none is fixed (out of line: rare on a shoe, every card off a machine) */
void fl_sim_fix_more(sim_shoe *s);

/* the rare path of fl_sim_deal: the card is not fixed yet, or the shoe is out of cards */
uint8_t fl_sim_deal_slow(sim_shoe *s);

/* A batch of FL_SIM_LANES new shoes, their positions up to the cut fixed, the lanes' draws
 * taking turns. */
void fl_sim_start_shoes(sim_shoe *lanes);

/* Shoe k of the stream (lane k % FL_SIM_LANES, whose last shoe has ended) into *play, its
 * positions up to the cut fixed. */
void fl_sim_shoe_begin(sim_shoe *lanes, size_t k, sim_shoe *play);

/* fix the next card when it is not fixed yet (a peek at the next card without dealing it) */
static inline void fl_sim_fix_next(sim_shoe *s) {
    if (s->fixed <= s->dealt) fl_sim_fix_more(s);
}

/* deal one card: one comparison on the common path (fixed <= size, so a fixed card is
 * always in the shoe) */
static inline uint8_t fl_sim_deal(sim_shoe *s) {
    if (__builtin_expect(s->dealt < s->fixed, 1)) return s->cards[s->dealt++];
    return fl_sim_deal_slow(s);
}

#endif
