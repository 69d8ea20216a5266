/*
 * The continuous shuffler (CSM) models behind the round simulator (internal; csm.c).
 *
 * sim.c deals through this interface only: fl_csm_init loads the machine, fl_csm_deal takes
 * the next card out of it, fl_csm_return hands a finished round's cards back by the model's
 * return policy.  The models and their parameters are documented on fl_csm_model in
 * feltlab_core.h and in csm.c.
 */
#ifndef FELTLAB_CSM_H
#define FELTLAB_CSM_H

#include "feltlab_core.h"

#define FL_CSM_MAX_CARDS (FL_MAX_DECKS * FL_CARDS_PER_DECK)
#define FL_CSM_MAX_SLOTS 255

struct fl_csm_state {
    fl_csm_model model;
    fl_rng *rng;      /* the generator every draw comes from (xoshiro256** or ChaCha20) */
    uint32_t total;   /* cards loaded: decks * 52 */
    uint32_t n;       /* cards in the machine */
    int ok;           /* 0 once a deal found the machine empty or the generator failed */
    fl_status error;  /* why ok is 0 */
    /* FL_CSM_IDEAL: the machine's cards in no order (a card is drawn uniformly among them) */
    uint32_t n_pool;
    uint8_t pool[FL_CSM_MAX_CARDS];
    /* FL_CSM_SLOTS: slot s holds slot_len[s] cards, slot_card[s][slot_len[s] - 1] on top;
     * nonempty[0..n_nonempty) lists the non-empty slots, where[s] is s's place in it */
    uint32_t n_nonempty;
    uint16_t slot_len[FL_CSM_MAX_SLOTS];
    uint8_t nonempty[FL_CSM_MAX_SLOTS];
    uint8_t where[FL_CSM_MAX_SLOTS];
    uint8_t slot_card[FL_CSM_MAX_SLOTS][FL_CSM_MAX_CARDS];
    /* the buffer: a first-in first-out ring of up to `buffer` returned cards */
    uint32_t buf_head, buf_len;
    uint8_t buf[FL_CSM_MAX_CARDS];
    /* FL_CSM_RETURN_BATCH: the rounds' cards waiting for the batch to complete, in order */
    uint32_t pend_len, pend_rounds;
    uint8_t pend[FL_CSM_MAX_CARDS];
};
typedef struct fl_csm_state fl_csm_state;

size_t fl_csm_state_size(void);
/* the machine loaded with `decks` decks, drawing from rng (xoshiro256** or ChaCha20) */
fl_status fl_csm_init(fl_csm_state *m, const fl_csm_model *model, uint32_t decks, fl_rng *rng);
/* the next card out of the machine; on failure (empty, generator) sets the state's error and
 * returns 0: fl_csm_ok(m) */
uint8_t fl_csm_deal(fl_csm_state *m);
static inline int fl_csm_ok(const fl_csm_state *m) { return m->ok; }
/* the end of a round: its cards (in the order dealt) go back by the model's policy */
void fl_csm_return(fl_csm_state *m, const uint8_t *cards, uint32_t n);

#endif
