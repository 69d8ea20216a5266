/*
 * Continuous shufflers (fl_csm_model in feltlab_core.h): the machine the round simulator deals
 * from when a game uses one (rule 5.4 of the rules allows them).  The ideal machine deals a
 * uniformly random card among those it holds; a buffer holds each returned card back until
 * `buffer` later cards have been returned (the mechanism of Stephen How's analysis of the
 * ShuffleMaster 126: the cards of the last rounds cannot come out again at once, so a count of
 * them predicts the next rounds).
 */
#include "csm.h"

#include <string.h>

#include "internal.h"

static uint64_t csm_word(fl_csm_state *m) {
    if (m->rng->kind == FL_RNG_XOSHIRO256SS) return fl_xoshiro_next(&m->rng->u.xoshiro);
    uint64_t w = 0;
    if (!fl_chacha_next(&m->rng->u.chacha, &w)) m->ok = 0;
    return w;
}

/* a uniform integer in 0..n-1 (n >= 1): Lemire's multiply-and-reject (ACM TOMACS 2019) */
static uint32_t csm_below(fl_csm_state *m, uint32_t n) {
    for (;;) {
        fl_u128 p = (fl_u128)csm_word(m) * n;
        uint64_t lo = (uint64_t)p;
        if (lo >= (uint64_t)n || lo >= (0 - (uint64_t)n) % n || !m->ok) return (uint32_t)(p >> 64);
    }
}

fl_status fl_csm_init(fl_csm_state *m, const fl_csm_model *model, uint32_t decks, fl_rng *rng) {
    if (!m || !model || !rng) return FL_ERR_NULL;
    if (decks < 1 || decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    if (model->kind != FL_CSM_IDEAL) return FL_ERR_KIND;
    uint32_t size = decks * 52;
    if (model->buffer > size - 52 || model->policy != FL_CSM_RETURN_ROUND) return FL_ERR_RANGE;
    memset(m, 0, sizeof *m);
    m->model = *model;
    m->rng = rng;
    m->ok = 1;
    (void)fl_new_shoe_codes(decks, m->cards, size);
    m->n = size;
    return FL_OK;
}

uint8_t fl_csm_deal(fl_csm_state *m) {
    if (m->n == 0) {
        m->ok = 0;
        return 0;
    }
    uint32_t j = csm_below(m, m->n);
    uint8_t c = m->cards[j];
    m->cards[j] = m->cards[--m->n];
    return c;
}

/* a card enters the machine */
static void csm_enter(fl_csm_state *m, uint8_t c) { m->cards[m->n++] = c; }

void fl_csm_return(fl_csm_state *m, const uint8_t *cards, uint32_t n) {
    const uint32_t B = m->model.buffer;
    for (uint32_t i = 0; i < n; i++) {
        if (B == 0) {
            csm_enter(m, cards[i]);
            continue;
        }
        if (m->buf_n == B) { /* the oldest card leaves the buffer for the machine */
            csm_enter(m, m->buf[m->buf_head]);
            m->buf_head = (m->buf_head + 1) % FL_CSM_CARDS;
            m->buf_n--;
        }
        m->buf[(m->buf_head + m->buf_n) % FL_CSM_CARDS] = cards[i];
        m->buf_n++;
    }
}
