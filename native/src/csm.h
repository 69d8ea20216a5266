/* The continuous shufflers the round simulator deals from (csm.c; fl_csm_model in the public
 * header).  sim.c deals through these four functions only. */
#ifndef FELTLAB_CSM_H
#define FELTLAB_CSM_H

#include "feltlab_core.h"

#define FL_CSM_CARDS (FL_MAX_DECKS * 52)

typedef struct fl_csm_state {
    fl_csm_model model;
    fl_rng *rng;
    int ok;
    uint32_t n;                   /* cards in the machine */
    uint8_t cards[FL_CSM_CARDS];  /* FL_CSM_IDEAL: the machine's cards, in no order */
    uint32_t buf_head, buf_n;     /* the buffer: a ring of buf_n cards from buf_head */
    uint8_t buf[FL_CSM_CARDS];
    uint32_t held_rounds, held_n; /* FL_CSM_RETURN_BATCH: rounds and cards held back */
    uint8_t held[FL_CSM_CARDS];
} fl_csm_state;

/* Validates the model for `decks` decks (FL_ERR_KIND, FL_ERR_RANGE) and loads the machine
 * with every card; the machine draws from rng (xoshiro256** or ChaCha20). */
fl_status fl_csm_init(fl_csm_state *m, const fl_csm_model *model, uint32_t decks, fl_rng *rng);
/* The next card out of the machine; when it holds none, or the generator fails, clears
 * m->ok and returns 0. */
uint8_t fl_csm_deal(fl_csm_state *m);
/* The end of a round: its n cards, in the order dealt, go back by the model's policy. */
void fl_csm_return(fl_csm_state *m, const uint8_t *cards, uint32_t n);
/* 1 while the machine has dealt every card asked of it */
static inline int fl_csm_ok(const fl_csm_state *m) { return m->ok; }

#endif
