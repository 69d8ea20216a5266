/*
 * The round simulator: whole rounds of blackjack, one box, one player, the
 * main wager played by a table-driven strategy, dealt from a real shoe.
 *
 * Semantics follow feltlab's Python round engine (sdk/engine.py) card for
 * card, so that a differential test can deal the same cards through both:
 *  - initial deal: player, dealer up card, player; under peek the dealer's
 *    hole card follows, and a dealer blackjack (checked under an ace or a
 *    ten-value card) ends the round before any decision;
 *  - a hand is finished automatically at 21 or on a bust; split aces get one
 *    card each when split_aces_one_card (unless a pair of aces may be resplit);
 *  - a split leaves the first card in place, which takes a new card at once;
 *    the second hand takes its second card when play reaches it;
 *  - under no-hole-card play the dealer's second card is dealt after the
 *    players, only if some hand is not busted; the dealer draws only while some
 *    hand is neither busted nor a blackjack; a dealer blackjack takes the
 *    original wager only, the original and busted hands, or all wagers;
 *  - settlement: rule 5.1 (a)-(g), blackjack paid floor(stake * num / den)
 *    cents (rule 5.4), 21 on a split hand is not a blackjack.
 * Insurance is never taken (basic strategy).
 *
 * Shoe: a shuffle is done lazily, one Fisher-Yates step per card dealt (each
 * card drawn uniformly from those not yet dealt), which is the same
 * distribution as a full shuffle at the cost of only the cards used.  After a
 * round in which the cutting card came out (cards dealt >= cut_position) the
 * shoe is reshuffled (rule 5.7(b)); cut_position == 0 reshuffles before every
 * round (an ideal continuous shuffler, or a fresh shoe each round).
 */
#include <string.h>

#include "feltlab_core.h"
#include "internal.h"
#include "side_tables.h"

enum { ACT_HIT = 0, ACT_STAND = 1, ACT_DOUBLE_HIT = 2, ACT_DOUBLE_STAND = 3 };

typedef struct {
    uint8_t cards[24];
    uint8_t n;
    uint8_t hard; /* total with aces as 1, kept as cards arrive */
    uint8_t aces;
    uint8_t doubled;
    uint8_t from_split;
    uint8_t split_aces;
    uint8_t done;
} sim_hand;

static inline void add_card(sim_hand *h, uint8_t c) {
    h->cards[h->n++] = c;
    h->hard = (uint8_t)(h->hard + fl_card_value[c]);
    h->aces = (uint8_t)(h->aces + (fl_card_value[c] == 1));
}

static inline unsigned best_total(const sim_hand *h, int *soft) {
    int s = h->aces && h->hard <= 11;
    *soft = s;
    return h->hard + (s ? 10u : 0u);
}

static inline int is_natural(const sim_hand *h) {
    return h->n == 2 && h->aces == 1 && h->hard == 11;
}

typedef struct {
    uint8_t cards[FL_MAX_DECKS * 52];
    uint32_t size;  /* cards in the stack */
    uint32_t dealt; /* cards dealt since the last shuffle */
    uint32_t fixed; /* positions already drawn (>= dealt: a peeked next card) */
    uint32_t cut;   /* cut position (0: reshuffle every round) */
    fl_xoshiro256ss x;
    fl_rng *rng;    /* for ChaCha20 */
    uint64_t buf;   /* a 64-bit output whose high half is still unused when have = 1 */
    int have;
    int use_x;
    int ok;
} sim_shoe;

static inline uint64_t shoe_word(sim_shoe *s) {
    if (s->use_x) return fl_xoshiro_next(&s->x);
    uint64_t w = 0;
    if (!fl_chacha_next(&s->rng->u.chacha, &w)) s->ok = 0;
    return w;
}

/* the next 32-bit half-word of the generator (low half of each 64-bit output first) */
static inline uint32_t shoe_half(sim_shoe *s) {
    if (s->have) {
        s->have = 0;
        return (uint32_t)(s->buf >> 32);
    }
    s->buf = shoe_word(s);
    s->have = 1;
    return (uint32_t)s->buf;
}

/* one Fisher-Yates step at position p: a uniform card among positions p..size-1 to p */
static inline void fy_step(sim_shoe *s, uint32_t p, uint64_t idx) {
    uint32_t j = p + (uint32_t)idx;
    uint8_t c = s->cards[j];
    s->cards[j] = s->cards[p];
    s->cards[p] = c;
}

/* Fix the card at position `dealt` (if not yet fixed) by lazy Fisher-Yates steps, two
 * positions per 32-bit half-word (Lemire's method batched, as in the shuffles: 416 x 415 <
 * 2^32), so the positions after it are fixed ahead too; a shoe is still a uniformly random
 * order, drawn only as far as it is dealt. */
static inline void fix_at(sim_shoe *s) {
    uint32_t p = s->fixed;
    uint64_t n = s->size - p, idx[2];
    int accepted;
    if (n >= 2) {
        uint64_t prod = n * (n - 1);
        do {
            uint64_t x = shoe_half(s);
            FL_BATCH_DRAW(FL_MUL32, FL_POW32_MOD, x, n, 2, prod, idx, accepted);
        } while (!accepted && s->ok);
        fy_step(s, p, idx[0]);
        fy_step(s, p + 1, idx[1]);
        s->fixed = p + 2;
    } else {
        s->fixed = p + 1; /* the last card: nothing to choose */
    }
}

static inline void fix_next(sim_shoe *s) {
    if (s->fixed <= s->dealt) fix_at(s);
}

/* A batch of new shoes, one per lane: the positions up to the cut are fixed at once, the
 * lanes' batched draws taking turns (FL_SIM_LANES independent generator chains and swap
 * streams in flight, as in the batch shuffles), in a tight loop that does not wait on play.
 * These are the very draws of fixing the cards one by one as dealt, so each shoe is still a
 * uniformly random order; the few cards past the cut stay lazy. */
static void start_shoes(sim_shoe *lanes) {
    for (unsigned l = 0; l < FL_SIM_LANES; l++) lanes[l].dealt = lanes[l].fixed = 0;
    const uint32_t cut = lanes[0].cut;
    while (lanes[0].fixed < cut && lanes[0].ok)
        for (unsigned l = 0; l < FL_SIM_LANES; l++) fix_at(&lanes[l]);
}

/* the rare path of deal: the card is not fixed yet, or the shoe is out of cards */
static __attribute__((noinline)) uint8_t deal_slow(sim_shoe *s) {
    if (s->dealt >= s->size) { /* out of cards: excluded by the cut-position check */
        s->ok = 0;
        return 0;
    }
    fix_next(s);
    return s->cards[s->dealt++];
}

/* deal one card: one comparison on the common path (fixed <= size, so a fixed card is
 * always in the shoe) */
static inline uint8_t deal(sim_shoe *s) {
    if (__builtin_expect(s->dealt < s->fixed, 1)) return s->cards[s->dealt++];
    return deal_slow(s);
}

static inline unsigned value_of(uint8_t c) { return fl_card_value[c]; }

static int may_double(const fl_sim_rules *r, const sim_hand *h) {
    if (h->n != 2) return 0;
    if (h->split_aces && r->split_aces_one_card) return 0;
    if (h->from_split && !r->double_after_split) return 0;
    int soft;
    unsigned t = best_total(h, &soft);
    switch (r->double_on) {
    case 0: return 1;
    case 1: return !soft;
    case 2: return !soft && t >= 9 && t <= 11;
    case 3: return !soft && t >= 10 && t <= 11;
    default: return 0;
    }
}

static int may_split(const fl_sim_rules *r, const sim_hand *h, unsigned n_hands) {
    if (h->n != 2 || (h->cards[0] >> 2) != (h->cards[1] >> 2)) return 0;
    if (n_hands >= r->max_hands) return 0;
    int aces = (h->cards[0] >> 2) == 0;
    if (h->split_aces && !(aces && r->resplit_aces)) return 0;
    return 1;
}

/* finished without a decision: bust, 21, or a one-card split ace */
static inline int auto_done(const fl_sim_rules *r, sim_hand *h, unsigned n_hands) {
    int soft;
    unsigned t = best_total(h, &soft);
    if (t >= 21) return h->done = 1;
    if (h->split_aces && r->split_aces_one_card) {
        int pair = h->n == 2 && (h->cards[0] >> 2) == (h->cards[1] >> 2);
        int can_resplit = pair && r->resplit_aces && n_hands < r->max_hands;
        if (!can_resplit) return h->done = 1;
    }
    return 0;
}

/* the surr table's choice on the box's first two cards (never a pair the pair table splits) */
static int surrender_choice(const fl_sim_rules *r, const sim_hand *h, unsigned up) {
    if (h->n != 2 || is_natural(h)) return 0;
    if ((h->cards[0] >> 2) == (h->cards[1] >> 2) && r->pair[h->cards[0] >> 2][up] &&
        r->max_hands >= 2)
        return 0;
    int soft;
    unsigned t = best_total(h, &soft);
    return !soft && r->surr[t][up];
}

static int32_t hand_net(const fl_sim_rules *r, int outcome, int32_t stake) {
    /* outcome: 2 blackjack, 1 win, 0 stand-off, -1 lose */
    if (outcome == 2) return (int32_t)(((int64_t)stake * r->bj_num) / r->bj_den);
    return outcome * stake;
}

/* rule 5.1: the outcome of one hand against the dealer's completed hand */
static int outcome_of(const sim_hand *h, const sim_hand *dealer) {
    int ps, ds;
    unsigned pt = best_total(h, &ps), dt = best_total(dealer, &ds);
    int pbj = is_natural(h) && !h->from_split;
    int dbj = is_natural(dealer);
    if (pt > 21) return -1;               /* 5.1(f) */
    if (pbj && dbj) return 0;             /* 5.1(e) */
    if (pbj) return 2;                    /* 5.1(a)-(c) */
    if (dbj) return -1;                   /* 5.1(d), (g) */
    if (dt > 21) return 1;                /* 5.1(a) */
    return pt > dt ? 1 : (pt == dt ? 0 : -1);
}

/* the dealer draws to 17 (a wager that needs the dealer's hand completed is in play) */
static void dealer_completes(const fl_sim_rules *r, sim_shoe *s, sim_hand *d) {
    int soft;
    unsigned t = best_total(d, &soft);
    while ((t < 17 || (t == 17 && soft && r->h17)) && d->n < 23 && s->ok) {
        add_card(d, deal(s));
        t = best_total(d, &soft);
    }
}

/* the round record (record.c) of the box's hands and the dealer's */
static void emit_record(fl_round_record *rec, const sim_hand *hands, unsigned n_hands,
                        const sim_hand *dealer, int surrendered, int light) {
    if (light) /* for the tables only: its card arrays are not read (no input) */
        fl_record_clear_fields(rec);
    else
        fl_record_clear(rec);
    for (unsigned i = 0; i < n_hands; i++)
        fl_record_hand(rec, hands[i].cards, hands[i].n, hands[i].doubled, hands[i].from_split,
                       surrendered && i == 0);
    fl_record_dealer(rec, dealer->cards, dealer->n);
}

static int play_round(const fl_sim_rules *r, sim_shoe *s, int32_t *net, uint8_t *initial,
                      uint8_t *trace, unsigned trace_cap, unsigned *trace_n,
                      fl_round_record *rec, int light_rec) {
    sim_hand hands[4];
    sim_hand dealer;
    unsigned n_hands = 1;
    uint32_t first = s->dealt;
    sim_hand *h0 = &hands[0];
    h0->n = h0->hard = h0->aces = h0->doubled = h0->from_split = h0->split_aces = h0->done = 0;
    dealer.n = dealer.hard = dealer.aces = 0;
    add_card(h0, deal(s));
    add_card(&dealer, deal(s));
    add_card(h0, deal(s));
    if (r->peek) add_card(&dealer, deal(s));
    if (initial) { /* the player's first three cards (the third always dealt: the next card
                    * of the shoe, fixed now whether or not anyone takes it), the up card */
        initial[0] = h0->cards[0];
        initial[1] = h0->cards[1];
        initial[2] = dealer.cards[0];
        if (s->dealt < s->size) {
            fix_next(s);
            initial[3] = s->cards[s->dealt];
        } else {
            initial[3] = FL_NO_CARD;
        }
        initial[4] = FL_NO_CARD;
    }
    const unsigned up = fl_card_value[dealer.cards[0]];
    const uint8_t(*hard_t)[11] = r->hard;
    const uint8_t(*soft_t)[11] = r->soft;
    /* surrender (rules.py Surrender): early before the dealer's check, late at the first
     * decision; a hard two-card total the surr table gives up, unless the pair table splits */
    int surrendered = 0;
    if (r->surrender == 2 && surrender_choice(r, h0, up)) surrendered = 1;
    int dealer_bj_peeked = !surrendered && r->peek && is_natural(&dealer);
    if (surrendered) {
        if (dealer.n < 2) add_card(&dealer, deal(s)); /* dealt to the box's live hand */
        if (r->dealer_plays_out) dealer_completes(r, s, &dealer);
    } else if (!dealer_bj_peeked) {
        auto_done(r, h0, 1);
        for (unsigned i = 0; i < n_hands; i++) {
            sim_hand *h = &hands[i];
            if (h->done) continue;
            if (h->n == 1) { /* a split hand takes its second card */
                add_card(h, deal(s));
                if (auto_done(r, h, n_hands)) continue;
            }
            if (i == 0 && n_hands == 1 && r->surrender == 1 && surrender_choice(r, h, up)) {
                surrendered = 1;
                h->done = 1;
                continue;
            }
            while (!h->done) {
                if (h->n == 2 && r->pair[h->cards[0] >> 2][up] && may_split(r, h, n_hands)) {
                    /* split: the second card starts a new hand after this one */
                    for (unsigned k = n_hands; k > i + 1; k--) hands[k] = hands[k - 1];
                    sim_hand *nh = &hands[i + 1];
                    uint8_t second = h->cards[1], first_card = h->cards[0];
                    uint8_t aces = (uint8_t)((first_card >> 2) == 0);
                    nh->n = nh->hard = nh->aces = nh->doubled = nh->done = 0;
                    nh->from_split = 1;
                    nh->split_aces = aces;
                    add_card(nh, second);
                    h->n = h->hard = h->aces = 0;
                    add_card(h, first_card);
                    h->from_split = 1;
                    h->split_aces = aces;
                    n_hands++;
                    add_card(h, deal(s));
                    auto_done(r, h, n_hands);
                    continue;
                }
                int soft;
                unsigned t = best_total(h, &soft);
                uint8_t a = soft ? soft_t[t][up] : hard_t[t][up];
                if (a >= ACT_DOUBLE_HIT) {
                    if (may_double(r, h)) {
                        h->doubled = 1;
                        add_card(h, deal(s));
                        h->done = 1;
                        continue;
                    }
                    a = a == ACT_DOUBLE_HIT ? ACT_HIT : ACT_STAND;
                }
                if (a == ACT_HIT && !(h->split_aces && r->split_aces_one_card) && h->n < 23) {
                    add_card(h, deal(s));
                    auto_done(r, h, n_hands);
                } else {
                    h->done = 1;
                }
            }
        }
        /* the dealer */
        int any_live = 0, any_open = 0;
        for (unsigned i = 0; i < n_hands; i++) {
            int live = hands[i].hard <= 21;
            any_live |= live;
            any_open |= live && !(is_natural(&hands[i]) && !hands[i].from_split) && !surrendered;
        }
        if (dealer.n < 2 && (any_live || r->dealer_plays_out)) add_card(&dealer, deal(s));
        if (dealer.n < 2 && initial && s->dealt < s->size) {
            /* nobody needs the dealer's second card; for side bets (insurance) it is the
             * card the dealer would have taken: fix it without dealing it */
            fix_next(s);
            initial[4] = s->cards[s->dealt];
        }
        if (!is_natural(&dealer) && (any_open || r->dealer_plays_out)) {
            for (;;) {
                int soft;
                unsigned t = best_total(&dealer, &soft);
                if (t < 17 || (t == 17 && soft && r->h17))
                    add_card(&dealer, deal(s));
                else
                    break;
            }
        }
    }
    /* settlement */
    int32_t total = 0;
    if (surrendered) {
        int lost_all = r->surrender == 1 && !r->peek && is_natural(&dealer);
        *net = lost_all ? -r->stake : -(r->stake - r->stake / 2);
        if (initial && dealer.n >= 2) initial[4] = dealer.cards[1];
        if (rec) emit_record(rec, hands, n_hands, &dealer, 1, light_rec);
        if (trace) {
            unsigned m = s->dealt - first;
            if (m > trace_cap) m = trace_cap;
            memcpy(trace, s->cards + first, m);
            *trace_n = m;
        }
        return s->ok;
    }
    int limited = !r->peek && is_natural(&dealer) && r->enhc_takes != 2;
    int original_taken = 0;
    for (unsigned i = 0; i < (dealer_bj_peeked ? 1u : n_hands); i++) {
        const sim_hand *h = &hands[i];
        int32_t stake = r->stake * (h->doubled ? 2 : 1);
        int oc = outcome_of(h, &dealer);
        int32_t v = hand_net(r, oc, stake);
        if (limited && oc == -1) {
            if (r->enhc_takes == 1 && h->hard > 21) {
                /* a busted hand stays lost, whole */
            } else if (!original_taken) { /* the original wager, once per box */
                original_taken = 1;
                v = -r->stake;
            } else {
                v = 0;
            }
        }
        total += v;
    }
    *net = total;
    if (initial && dealer.n >= 2) initial[4] = dealer.cards[1];
    if (rec) emit_record(rec, hands, n_hands, &dealer, 0, light_rec);
    if (trace) {
        unsigned m = s->dealt - first;
        if (m > trace_cap) m = trace_cap;
        memcpy(trace, s->cards + first, m);
        *trace_n = m;
    }
    return s->ok;
}

static fl_status check_rules(const fl_sim_rules *r) {
    if (r->decks < 1 || r->decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (r->bj_den < 1 || r->max_hands < 1 || r->max_hands > 4 || r->double_on > 3 ||
        r->enhc_takes > 2 || r->stake < 1 || r->stake > 1000000000 / 8 || r->surrender > 2 ||
        r->dealer_plays_out > 1)
        return FL_ERR_RANGE;
    /* the most a round can win (4 doubled hands, or a blackjack) must fit the int32 net */
    uint64_t odds = ((uint64_t)r->bj_num + r->bj_den - 1) / r->bj_den;
    if ((uint64_t)r->stake * (odds > 8 ? odds : 8) > INT32_MAX) return FL_ERR_RANGE;
    uint32_t size = r->decks * 52;
    /* keep at least 26 cards behind the cut: no round of one box needs more (4 hands of
     * 5 small cards and a dealer's 6); a round that still ran out would fail with
     * FL_ERR_RANGE rather than deal a card twice */
    if (r->cut_position > size || (r->cut_position && size - r->cut_position < 26))
        return FL_ERR_RANGE;
    for (int t = 0; t < 32; t++)
        for (int u = 0; u < 11; u++)
            if (r->hard[t][u] > 3 || r->soft[t][u] > 3 || r->surr[t][u] > 1) return FL_ERR_RANGE;
    return FL_OK;
}

/* what one run writes: per-round arrays (any may be NULL) and/or the tally */
typedef struct {
    int32_t *net;
    uint8_t *initial;
    uint8_t *trace;
    size_t trace_cap;
    uint8_t *trace_len;
    const fl_side_table *tables;
    size_t n_tables;
    fl_sim_sums *sums;
    fl_round_record *records; /* each round's record (the play-decided wagers' input) */
    unsigned n_rec_inputs;    /* record inputs the tables read (0: none; the record is then
                               * kept for the round only when records is NULL) */
    uint8_t rec_inputs[FL_SIM_INPUTS];
} sim_out;

/* FL_SIM_LANES shoes prepared at a time, then played one after the other (see the header) */
static fl_status run_lanes(fl_rng *rng, const fl_sim_rules *r, size_t n_rounds,
                           const sim_out *o) {
    sim_shoe lanes[FL_SIM_LANES];
    const int use_x = rng->kind == FL_RNG_XOSHIRO256SS;
    fl_rng g = *rng;
    for (unsigned l = 0; l < FL_SIM_LANES; l++) {
        sim_shoe *s = &lanes[l];
        memset(s, 0, sizeof *s);
        s->size = r->decks * 52;
        s->cut = r->cut_position;
        s->ok = 1;
        s->use_x = use_x;
        s->rng = rng;
        if (use_x) {
            s->x = g.u.xoshiro;
            (void)fl_xoshiro_long_jump(&g);
        }
        (void)fl_new_shoe_codes(r->decks, s->cards, s->size);
    }
    __extension__ __int128 net_sum = 0;
    fl_u128 sq_sum = 0;
    fl_status st = FL_OK;
    /* the shoe in play is a copy at one fixed place (lanes[cur] while it is played), which
     * the compiler keeps as a local: play through a pointer into the lanes was slower */
    sim_shoe play;
    sim_shoe *const s = &play;
    unsigned cur = FL_SIM_LANES; /* FL_SIM_LANES: a new batch is due */
    fl_round_record round_rec;   /* the round's record, when only a table reads it */
    for (size_t i = 0; i < n_rounds; i++) {
        if (cur == FL_SIM_LANES) { /* shuffle (rule 5.7(b)), a batch of shoes at a time */
            start_shoes(lanes);
            cur = 0;
            play = lanes[0];
        }
        unsigned tn = 0;
        int32_t v = 0;
        uint8_t local[5];
        uint8_t *init = o->initial ? o->initial + 5 * i : local;
        fl_round_record *rec = o->records ? o->records + i : o->n_rec_inputs ? &round_rec : NULL;
        if (!play_round(r, s, &v, init, o->trace ? o->trace + i * o->trace_cap : NULL,
                        (unsigned)o->trace_cap, &tn, rec, !o->records)) {
            st = s->dealt >= s->size ? FL_ERR_RANGE : FL_ERR_EXHAUSTED;
            break;
        }
        if (s->cut == 0 || s->dealt >= s->cut) { /* the cutting card came out */
            lanes[cur++] = play;
            if (cur < FL_SIM_LANES) play = lanes[cur];
        }
        if (o->net) o->net[i] = v;
        if (o->trace_len) o->trace_len[i] = (uint8_t)tn;
        if (o->sums) {
            net_sum += v;
            sq_sum += (uint64_t)((int64_t)v * v);
            fl_side_lookup_round(o->tables, o->n_tables, init, rec, o->rec_inputs,
                                 o->n_rec_inputs);
        }
    }
    if (use_x) rng->u.xoshiro = g.u.xoshiro; /* long-jumped once per lane */
    if (o->sums && st == FL_OK) {
        fl_sim_sums *m = o->sums;
        fl_u128 net = ((fl_u128)m->net_hi << 64 | m->net_lo) + (fl_u128)net_sum;
        fl_u128 sq = ((fl_u128)m->sq_hi << 64 | m->sq_lo) + sq_sum;
        m->rounds += n_rounds;
        m->net_lo = (uint64_t)net;
        m->net_hi = (uint64_t)(net >> 64);
        m->sq_lo = (uint64_t)sq;
        m->sq_hi = (uint64_t)(sq >> 64);
    }
    return st;
}

fl_status fl_simulate_rounds(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                             int32_t *net, uint8_t *initial, uint8_t *trace, size_t trace_cap,
                             uint8_t *trace_len) {
    return fl_simulate_rounds_rec(rng, rules, n_rounds, net, initial, trace, trace_cap, trace_len,
                                  NULL);
}

fl_status fl_simulate_rounds_rec(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                                 int32_t *net, uint8_t *initial, uint8_t *trace,
                                 size_t trace_cap, uint8_t *trace_len, fl_round_record *records) {
    if (!rng || !rules || (n_rounds && !net)) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    fl_status st = check_rules(rules);
    if (st != FL_OK) return st;
    sim_out o = {net, initial, trace, trace_cap, trace_len, NULL, 0, NULL, records, 0, {0}};
    return run_lanes(rng, rules, n_rounds, &o);
}

fl_status fl_simulate_tally(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                            const fl_side_table *tables, size_t n_tables, fl_sim_sums *sums) {
    return fl_simulate_tally_out(rng, rules, n_rounds, tables, n_tables, sums, NULL, NULL);
}

fl_status fl_simulate_tally_out(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                                const fl_side_table *tables, size_t n_tables, fl_sim_sums *sums,
                                uint8_t *initial, fl_round_record *records) {
    if (!rng || !rules || !sums) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    fl_status st = check_rules(rules);
    if (st == FL_OK) st = fl_side_check_tables(tables, n_tables);
    if (st != FL_OK) return st;
    sim_out o = {NULL, initial, NULL, 0, NULL, tables, n_tables, sums, records, 0, {0}};
    o.n_rec_inputs = fl_side_record_inputs_used(tables, n_tables, o.rec_inputs);
    return run_lanes(rng, rules, n_rounds, &o);
}
