/*
 * Continuous shufflers (CSM): the models of fl_csm_model (feltlab_core.h), dealt through the
 * internal interface of csm.h by the round simulator (sim.c) and by fl_csm_stream.
 *
 * The machine holds every card not on the table, not in the buffer and not waiting for its
 * batch.  Two machines:
 *  - FL_CSM_IDEAL: the cards in an unordered pool; a deal draws one uniformly (Lemire's
 *    bounded integer, rejection exact) and swaps the last into its place: every card in the
 *    machine equally likely next.
 *  - FL_CSM_SLOTS: the declared model of the bundled continuous profile
 *    (rig/certify/profiles/continuous.toml; rig/certify/analyze_continuous.py): a card
 *    entering goes to a uniformly chosen slot at a uniformly chosen depth among the slot's
 *    len + 1 places; a deal takes the top card of a uniformly chosen non-empty slot.  A slot
 *    is stored bottom first (its top card last), so a deal pops and an insertion moves the
 *    cards above the chosen depth, a few cards (decks * 52 / slots on average).
 * The return path (both machines): a round's cards go back in the order dealt (pickup order),
 * after every round (FL_CSM_RETURN_ROUND) or, held in a discard rack, after every batch-th
 * round (FL_CSM_RETURN_BATCH); each returned card passes through a first-in first-out buffer
 * of B cards and enters the machine when B later cards have been returned.  These are the
 * mechanisms of Stephen How's model of the ShuffleMaster 126 (a buffer of at least 16 cards
 * returned in the order picked up), which motivates the audit of issue 26.
 */
#include <stdlib.h>
#include <string.h>

#include "csm.h"
#include "internal.h"

size_t fl_csm_state_size(void) { return sizeof(fl_csm_state); }

static inline uint64_t csm_word(fl_csm_state *m) {
    if (m->rng->kind == FL_RNG_XOSHIRO256SS) return fl_xoshiro_next(&m->rng->u.xoshiro);
    uint64_t w = 0;
    if (!fl_chacha_next(&m->rng->u.chacha, &w)) {
        m->ok = 0;
        m->error = FL_ERR_EXHAUSTED;
    }
    return w;
}

/* uniform in [0, n), n >= 1: Lemire's multiply-shift with exact rejection */
static inline uint32_t csm_below(fl_csm_state *m, uint32_t n) {
    uint64_t hi, lo;
    FL_MUL64(csm_word(m), (uint64_t)n, hi, lo);
    if (__builtin_expect(lo < n, 0)) {
        const uint64_t t = FL_POW64_MOD(n);
        while (lo < t && m->ok) FL_MUL64(csm_word(m), (uint64_t)n, hi, lo);
    }
    return (uint32_t)hi;
}

/* a card enters the machine */
static void csm_enter(fl_csm_state *m, uint8_t card) {
    m->n++;
    if (m->model.kind == FL_CSM_IDEAL) {
        m->pool[m->n_pool++] = card;
        return;
    }
    const uint32_t s = csm_below(m, m->model.slots);
    const uint32_t len = m->slot_len[s];
    const uint32_t at = csm_below(m, len + 1); /* depth among len + 1 places, as an index */
    uint8_t *c = m->slot_card[s];
    for (uint32_t i = len; i > at; i--) c[i] = c[i - 1]; /* a few cards: no library call */
    c[at] = card;
    m->slot_len[s] = (uint16_t)(len + 1);
    if (len == 0) {
        m->where[s] = (uint8_t)m->n_nonempty;
        m->nonempty[m->n_nonempty++] = (uint8_t)s;
    }
}

fl_status fl_csm_check(const fl_csm_model *model, uint32_t decks, uint32_t per_round) {
    if (!model) return FL_ERR_NULL;
    if (decks < 1 || decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (model->kind != FL_CSM_IDEAL && model->kind != FL_CSM_SLOTS) return FL_ERR_KIND;
    if (model->policy != FL_CSM_RETURN_ROUND && model->policy != FL_CSM_RETURN_BATCH)
        return FL_ERR_KIND;
    if (model->kind == FL_CSM_SLOTS && (model->slots < 1 || model->slots > FL_CSM_MAX_SLOTS))
        return FL_ERR_RANGE;
    if (model->policy == FL_CSM_RETURN_BATCH && (model->batch < 1 || model->batch > 64))
        return FL_ERR_RANGE;
    if (per_round < 1) return FL_ERR_RANGE;
    const uint64_t rounds = model->policy == FL_CSM_RETURN_BATCH ? model->batch : 1;
    /* the most cards ever out of the machine: the buffer, a full rack and the round dealt */
    if ((uint64_t)model->buffer + rounds * per_round >= (uint64_t)decks * FL_CARDS_PER_DECK)
        return FL_ERR_RANGE;
    return FL_OK;
}

/* the machine loaded with the decks in new-deck order (fl_new_shoe_codes), each card entering
 * by the machine's rule; no checks */
static fl_status csm_load(fl_csm_state *m, const fl_csm_model *model, uint32_t decks,
                          fl_rng *rng) {
    m->model = *model;
    m->rng = rng;
    m->total = decks * FL_CARDS_PER_DECK;
    m->n = m->n_pool = m->n_nonempty = 0;
    m->buf_head = m->buf_len = m->pend_len = m->pend_rounds = 0;
    m->ok = 1;
    m->error = FL_OK;
    uint8_t shoe[FL_CSM_MAX_CARDS];
    (void)fl_new_shoe_codes(decks, shoe, m->total);
    if (model->kind == FL_CSM_IDEAL) { /* no draws: the pool has no order */
        memcpy(m->pool, shoe, m->total);
        m->n_pool = m->n = m->total;
        return FL_OK;
    }
    memset(m->slot_len, 0, sizeof m->slot_len);
    for (uint32_t i = 0; i < m->total; i++) csm_enter(m, shoe[i]);
    return m->ok ? FL_OK : m->error;
}

fl_status fl_csm_init(fl_csm_state *m, const fl_csm_model *model, uint32_t decks, fl_rng *rng) {
    if (!m || !model || !rng) return FL_ERR_NULL;
    fl_status st = fl_csm_check(model, decks, 1);
    if (st != FL_OK) return st;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    /* the simulator's rounds: the machine keeps at least a deck (52 cards) beside the buffer
     * and the full rounds of a batch held in the rack (CSM_ROUND_CARDS_MAX, 24, each) */
    const uint64_t rack = model->policy == FL_CSM_RETURN_BATCH ? model->batch - 1u : 0u;
    if ((uint64_t)model->buffer + rack * 24u + 52u > (uint64_t)decks * FL_CARDS_PER_DECK)
        return FL_ERR_RANGE;
    return csm_load(m, model, decks, rng);
}

uint8_t fl_csm_deal(fl_csm_state *m) {
    if (__builtin_expect(m->n == 0, 0)) {
        m->ok = 0;
        m->error = FL_ERR_RANGE;
        return 0;
    }
    m->n--;
    if (m->model.kind == FL_CSM_IDEAL) {
        const uint32_t i = csm_below(m, m->n_pool);
        const uint8_t card = m->pool[i];
        m->pool[i] = m->pool[--m->n_pool];
        return card;
    }
    const uint32_t k = csm_below(m, m->n_nonempty);
    const uint32_t s = m->nonempty[k];
    const uint32_t len = m->slot_len[s] - 1u;
    m->slot_len[s] = (uint16_t)len;
    if (len == 0) { /* the slot is empty: the last listed slot takes its place */
        const uint8_t last = m->nonempty[--m->n_nonempty];
        m->nonempty[k] = last;
        m->where[last] = (uint8_t)k;
    }
    return m->slot_card[s][len];
}

/* a returned card passes through the buffer */
static void csm_feed(fl_csm_state *m, uint8_t card) {
    const uint32_t b = m->model.buffer;
    if (b == 0) {
        csm_enter(m, card);
        return;
    }
    uint32_t tail = m->buf_head + m->buf_len;
    if (tail >= b) tail -= b;
    if (m->buf_len == b) { /* full: the oldest enters the machine, B later cards behind it */
        csm_enter(m, m->buf[m->buf_head]);
        m->buf[m->buf_head] = card;
        m->buf_head = m->buf_head + 1 == b ? 0 : m->buf_head + 1;
        return;
    }
    m->buf[tail] = card;
    m->buf_len++;
}

void fl_csm_return(fl_csm_state *m, const uint8_t *cards, uint32_t n) {
    if (m->model.policy == FL_CSM_RETURN_ROUND) {
        for (uint32_t i = 0; i < n; i++) csm_feed(m, cards[i]);
        return;
    }
    if (m->pend_len + n > FL_CSM_MAX_CARDS) { /* cannot happen for a checked model */
        m->ok = 0;
        m->error = FL_ERR_RANGE;
        return;
    }
    memcpy(m->pend + m->pend_len, cards, n);
    m->pend_len += n;
    if (++m->pend_rounds < m->model.batch) return;
    for (uint32_t i = 0; i < m->pend_len; i++) csm_feed(m, m->pend[i]);
    m->pend_len = m->pend_rounds = 0;
}

fl_status fl_csm_stream(fl_rng *rng, const fl_csm_model *model, uint32_t decks, size_t n_rounds,
                        uint32_t per_round, uint8_t *out) {
    if (!rng || !model || (!out && n_rounds)) return FL_ERR_NULL;
    fl_status st = fl_csm_check(model, decks, per_round);
    if (st != FL_OK) return st;
    fl_csm_state *m = malloc(sizeof *m); /* large (slots of cards): off the stack */
    if (!m) return FL_ERR_RANGE;
    st = rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20
             ? FL_ERR_KIND
             : csm_load(m, model, decks, rng);
    for (size_t r = 0; r < n_rounds && st == FL_OK; r++) {
        uint8_t *round = out + r * per_round;
        for (uint32_t j = 0; j < per_round; j++) round[j] = fl_csm_deal(m);
        if (m->ok) fl_csm_return(m, round, per_round);
        if (!m->ok) st = m->error;
    }
    free(m);
    return st;
}
