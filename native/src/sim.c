/*
 * The round simulator: whole rounds of blackjack, one box, one player, the
 * main wager played by a table-driven strategy, dealt from a real shoe.
 *
 * Semantics follow feltlab's Python round engine (sdk/engine/) card for
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
 * The shoe the rounds are dealt from, and its lazy shuffle: sim_shoe.c.
 */
#include <stdlib.h>
#include <string.h>

#include "csm.h"
#include "feltlab_core.h"
#include "internal.h"
#include "side_tables.h"
#include "sim_shoe.h"

static fl_status check_rules(const fl_sim_rules *r) {
    if (r->decks < 1 || r->decks > FL_MAX_DECKS) return FL_ERR_DECKS;
    if (r->bj_den < 1 || r->max_hands < 1 || r->max_hands > 4 ||
        r->double_on > FL_DOUBLE_HARD_10_11 || r->enhc_takes > FL_TAKES_ALL || r->stake < 1 ||
        r->stake > 1000000000 / 8 || r->surrender > FL_SURRENDER_EARLY ||
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
            if (r->hard[t][u] > FL_ACT_DOUBLE_ELSE_STAND ||
                r->soft[t][u] > FL_ACT_DOUBLE_ELSE_STAND || r->surr[t][u] > 1)
                return FL_ERR_RANGE;
    return FL_OK;
}
/* ---------------------------------------------------------------- the round */

/* A decision resolved once per run (sim_ctx.act): hit, stand (also a hand finished at 21 or
 * more, which takes no decision), or double. */
enum { DO_HIT = 0, DO_STAND = 1, DO_DOUBLE = 2 };

/* A hand's state as one number: its hard total (aces counted as 1) plus 32 for each ace it
 * holds.  A card is one addition (sim_ctx.card), where a total and an ace flag took a compare
 * and an or, and every table the round reads (the decision, the dealer's stand, the best
 * total) is indexed by the state directly, where an address was computed from both.  The hard
 * total stays below 32 (a hand takes a card only below 21, the dealer only below 17: at most
 * 20 + 10), so it never carries into the aces, and the aces are at most the hard total: every
 * state is below SIM_STATES. */
#define SIM_STATES 1024u
#define ST_HARD(st) ((unsigned)(st) & 31u)
#define ST_SOFT(st) (((unsigned)(st) >= 32u) & (ST_HARD(st) <= 11u))
#define SIM_NATURAL_ST (1u + 10u + 32u) /* an ace and a ten-value card */

/* A hand as the loop keeps it: its state, updated as each card arrives (its best total,
 * softness and blackjack follow from it and n); the card codes only as far as something reads
 * them: the first two always (a split, the surrender choice), the rest only for a full round
 * record. */
typedef struct {
    uint16_t st; /* hard total + 32 * aces */
    uint8_t n;   /* cards */
    uint8_t doubled;
    uint8_t from_split;
    uint8_t split_aces;
    uint8_t cards[FL_REC_CARDS];
} sim_hand;

typedef struct {
    uint16_t st; /* hard total + 32 * aces */
    uint8_t n;
    uint8_t suits; /* a bit per suit among its cards (kept for a record: dealer_suited) */
    uint8_t cards[FL_REC_CARDS]; /* the first two always, the rest for a full record */
} sim_dealer;

/* (bitwise, not short-circuit: a value the round selects on, not a branch to predict) */
#define SOFT(h) ST_SOFT((h)->st)
#define BEST(x, h) ((unsigned)(x)->best[(h)->st])
#define NATURAL(h) (((h)->n == 2) & ((h)->st == SIM_NATURAL_ST))

/* What a run decides once from its rules and strategy, so the round reads one byte where it
 * would test several flags: the resolved decision of every (may double, state, up card)
 * (double_on, the double fallbacks and the automatic stand at 21 folded in), whether the
 * dealer stands on every state (h17 folded in), every state's best total, each card's step
 * of the state, the blackjack's pay. */
typedef struct {
    uint8_t act[11][2][SIM_STATES]; /* [up][may double][state]: a round reads act[up] */
    uint8_t dealer_stands[SIM_STATES];
    uint8_t best[SIM_STATES];
    uint16_t card[52]; /* a card code's step of the state: its value, and 32 for an ace */
    int32_t stake, bj_win;
} sim_ctx;

static void make_ctx(const fl_sim_rules *r, sim_ctx *x) {
    for (unsigned st = 0; st < 64; st++) { /* no ace, then one */
        const unsigned hard = ST_HARD(st);
        const int soft = ST_SOFT(st);
        const unsigned t = hard + (soft ? 10u : 0u);
        const int dbl_ok = fl_double_allowed(r->double_on, soft, t);
        for (unsigned up = 0; up < 11; up++) {
            uint8_t a = t >= 21 ? (uint8_t)FL_ACT_STAND : soft ? r->soft[t][up] : r->hard[t][up];
            for (unsigned may = 0; may < 2; may++) {
                uint8_t d = a == FL_ACT_HIT ? DO_HIT : a == FL_ACT_STAND ? DO_STAND
                            : may && dbl_ok ? DO_DOUBLE
                            : a == FL_ACT_DOUBLE_ELSE_HIT ? DO_HIT : DO_STAND;
                x->act[up][may][st] = d;
            }
        }
        x->dealer_stands[st] = (uint8_t)(t > 17 || (t == 17 && !(soft && r->h17)));
        x->best[st] = (uint8_t)t;
    }
    for (unsigned st = 64; st < SIM_STATES; st += 32) { /* more aces: as one */
        for (unsigned up = 0; up < 11; up++)
            for (unsigned may = 0; may < 2; may++) memcpy(&x->act[up][may][st], &x->act[up][may][32], 32);
        memcpy(&x->dealer_stands[st], &x->dealer_stands[32], 32);
        memcpy(&x->best[st], &x->best[32], 32);
    }
    for (unsigned c = 0; c < 52; c++)
        x->card[c] = (uint16_t)(fl_card_value[c] + (fl_card_value[c] == 1 ? 32u : 0u));
    x->stake = r->stake;
    x->bj_win = (int32_t)(((int64_t)r->stake * r->bj_num) / r->bj_den);
}

/* The rules a round branches on, as a value: the hot combinations are instantiated with
 * constants (run_tally_* below), so their tests vanish at compile time; the generic
 * instance reads them from fl_sim_rules. */
typedef struct {
    unsigned peek, surrender, plays_out, das, max_hands, rsa, sa1, enhc_takes;
} sim_cfg;

#define CFG_OF(r)                                                                                 \
    ((sim_cfg){(r)->peek, (r)->surrender, (r)->dealer_plays_out, (r)->double_after_split,          \
               (r)->max_hands, (r)->resplit_aces, (r)->split_aces_one_card, (r)->enhc_takes})

/* The instances inline every helper (always_inline); the sanitizer build of ``make test-native``
 * defines FL_NO_FORCED_INLINE, which leaves the choice to the compiler: the same source and
 * values checked, compiled in 2 s instead of 67 s (21 instrumented copies of run_core). */
#ifdef FL_NO_FORCED_INLINE
#define AI static inline
#else
#define AI static inline __attribute__((always_inline))
#endif

AI void hand_take(const sim_ctx *x, sim_hand *h, uint8_t c, int full) {
    if (full) h->cards[h->n] = c;
    h->st = (uint16_t)(h->st + x->card[c]);
    h->n++;
}

AI void dealer_take(const sim_ctx *x, sim_dealer *d, uint8_t c, int keep_card, int rec) {
    if (keep_card) d->cards[d->n] = c;
    if (rec) d->suits |= (uint8_t)(1u << (c & 3));
    d->st = (uint16_t)(d->st + x->card[c]);
    d->n++;
}

/* The dealer's first two draws, branch-free, from the next two cards c0 and c1 of the shoe
 * (fixed; k0 and k1 their steps of the state): each taken or not by a select on the stands
 * table, so the common dealer hands (no card, one or two more) cost no branch to predict.
 * Returns the cards taken; *more: a third card is due (rare). */
AI unsigned dealer_two(const sim_ctx *x, sim_dealer *d, unsigned go, uint8_t c0, unsigned k0,
                       uint8_t c1, unsigned k1, int rec, unsigned *more) {
    unsigned st = d->st, n = d->n;
    const unsigned t0 = go & !x->dealer_stands[st];
    if (rec) {
        d->cards[n] = c0; /* past n when not taken: never read */
        d->suits = (uint8_t)(d->suits | (t0 << (c0 & 3)));
    }
    st += k0 & -t0;
    n += t0;
    const unsigned t1 = t0 & !x->dealer_stands[st];
    if (rec) {
        d->cards[n] = c1;
        d->suits = (uint8_t)(d->suits | (t1 << (c1 & 3)));
    }
    st += k1 & -t1;
    n += t1;
    d->st = (uint16_t)st;
    d->n = (uint8_t)n;
    *more = t1 & !x->dealer_stands[st];
    return t0 + t1;
}

/* the dealer's third card and more, by the loop */
AI void dealer_rest(const sim_ctx *x, sim_shoe *s, sim_dealer *d, int rec) {
    while (!x->dealer_stands[d->st]) dealer_take(x, d, fl_sim_deal(s), rec != 0, rec);
}

/* The dealer draws to 17 (or to a hard 17 under h17) when `go` (some hand is open, or the
 * dealer plays out): the first two draws by dealer_two when the next two cards are fixed,
 * the rest (or every draw, when they are not) by the loop.  The same cards in the same order
 * either way. */
AI void dealer_draws(const sim_ctx *x, sim_shoe *s, sim_dealer *d, unsigned go, int rec) {
    if (__builtin_expect(s->dealt + 2 <= s->fixed, 1))
    {
        const uint8_t c0 = s->cards[s->dealt], c1 = s->cards[s->dealt + 1];
        s->dealt += dealer_two(x, d, go, c0, x->card[c0], c1, x->card[c1], rec, &go);
    }
    if (go) dealer_rest(x, s, d, rec);
}

/* the surr table's choice on the box's first two cards (never a pair the pair table splits) */
AI int surrender_choice(const fl_sim_rules *r, const sim_cfg C, const sim_hand *h, unsigned up) {
    if (h->n != 2 || NATURAL(h)) return 0;
    if ((h->cards[0] >> 2) == (h->cards[1] >> 2) && r->pair[h->cards[0] >> 2][up] &&
        C.max_hands >= 2)
        return 0;
    return !SOFT(h) && r->surr[ST_HARD(h->st)][up];
}

/* The round's record (record.c) from the hands' card arrays (kept for a full record). */
static void emit_record(fl_round_record *rec, const sim_hand *hands, unsigned n_hands,
                        const sim_dealer *d, int surrendered) {
    fl_record_clear(rec);
    for (unsigned i = 0; i < n_hands; i++)
        fl_record_hand(rec, hands[i].cards, hands[i].n, hands[i].doubled, hands[i].from_split,
                       surrendered && i == 0);
    fl_record_dealer(rec, d->cards, d->n);
}

/* The box's hands played out in order (splits inserting the new hand after the current one);
 * returns 1 when the box surrendered late. */
AI int play_hands(const fl_sim_rules *r, const sim_ctx *x, const sim_cfg C, const int REC,
                  sim_shoe *s, sim_hand *hands, unsigned *n_hands_io, unsigned up) {
    const int full = REC == 2;
    unsigned n_hands = 1;
    for (unsigned i = 0; i < n_hands; i++) {
        sim_hand *h = &hands[i];
        if (h->n == 1) { /* a split hand takes its second card when play reaches it */
            h->cards[1] = fl_sim_deal(s);
            hand_take(x, h, h->cards[1], 0);
        }
        if (i == 0 && C.surrender == FL_SURRENDER_LATE && surrender_choice(r, C, h, up)) {
            *n_hands_io = 1;
            return 1;
        }
        for (;;) {
            unsigned rank = h->cards[0] >> 2;
            if (h->n == 2 && rank == (unsigned)(h->cards[1] >> 2) && r->pair[rank][up] &&
                n_hands < C.max_hands && !(h->split_aces && !(rank == 0 && C.rsa))) {
                /* split: the second card starts a new hand after this one */
                for (unsigned k = n_hands; k > i + 1; k--) hands[k] = hands[k - 1];
                sim_hand *nh = &hands[i + 1];
                uint8_t aces = (uint8_t)(rank == 0), second = h->cards[1];
                const uint16_t st = x->card[second];
                nh->n = 1;
                nh->st = st;
                nh->doubled = 0;
                nh->from_split = 1;
                nh->split_aces = aces;
                nh->cards[0] = second;
                h->n = 1;
                h->st = st;
                h->from_split = 1;
                h->split_aces = aces;
                n_hands++;
                h->cards[1] = fl_sim_deal(s);
                hand_take(x, h, h->cards[1], 0);
                continue;
            }
            if (C.sa1 && h->split_aces) break; /* one card to each split ace */
            unsigned may = h->n == 2 && (C.das || !h->from_split);
            uint8_t a = x->act[up][may][h->st];
            if (a == DO_STAND) break;
            hand_take(x, h, fl_sim_deal(s), full);
            if (a == DO_DOUBLE) {
                h->doubled = 1;
                break;
            }
        }
    }
    *n_hands_io = n_hands;
    return 0;
}

/* The round-record inputs (FL_IN_N_HANDS ..) of the round straight from the hands the loop
 * kept: the values record.c's record gives and fl_side_record_inputs reads from it (the
 * tally's own path; a value past its bound cannot occur: a hand or the dealer holds at most
 * 21 cards and a total at most 30). */
AI void record_inputs(const sim_ctx *x, uint8_t *in, const sim_hand *hands, unsigned n_hands,
                      const sim_dealer *d, int surrendered) {
    memset(in + FL_IN_N_HANDS, 0, FL_IN_DEALER_N_CARDS - FL_IN_N_HANDS);
    in[FL_IN_N_HANDS] = (uint8_t)n_hands;
    for (unsigned i = 0; i < n_hands; i++) {
        const sim_hand *h = &hands[i];
        unsigned t = BEST(x, h);
        in[FL_IN_HAND_N_CARDS + i] = h->n;
        in[FL_IN_HAND_TOTAL + i] = (uint8_t)t;
        in[FL_IN_HAND_BUST + i] = t > 21;
        in[FL_IN_HAND_BLACKJACK + i] = NATURAL(h) && !h->from_split;
        in[FL_IN_HAND_DOUBLED + i] = h->doubled;
    }
    in[FL_IN_HAND_SURRENDERED] = (uint8_t)(surrendered != 0);
    unsigned t = BEST(x, d);
    in[FL_IN_DEALER_N_CARDS] = d->n;
    in[FL_IN_DEALER_TOTAL] = (uint8_t)t;
    in[FL_IN_DEALER_BUST] = t > 21;
    in[FL_IN_DEALER_BLACKJACK] = NATURAL(d);
    in[FL_IN_DEALER_UP] = d->cards[0];
    in[FL_IN_DEALER_SUITED] = (d->suits & (d->suits - 1)) == 0;
    in[FL_IN_DEALER_RANK] = (uint8_t)(d->cards[0] >> 2);
    in[FL_IN_DEALER_RANK + 1] = d->n > 1 ? (uint8_t)(d->cards[1] >> 2) : 13;
    in[FL_IN_DEALER_RANK + 2] = d->n > 2 ? (uint8_t)(d->cards[2] >> 2) : 13;
}

/* A hand's net against the dealer's final total dt (rule 5.1): w the hand's wager (the stake,
 * doubled or not), pt its best total, dbj a dealer blackjack without a hole card (a dealer
 * blackjack under peek ends the round before), natural the hand a blackjack (not after a
 * split), bj_v a blackjack's pay against this dealer.  Selected by masks, not branches: the
 * outcome is the round's least predictable step. */
AI int32_t hand_net(int32_t w, unsigned pt, unsigned dt, unsigned dbj, unsigned natural,
                    int32_t bj_v) {
    const unsigned live = (pt <= 21) & !dbj;             /* else lost: 5.1(f), (d), (g) */
    const unsigned win = live & ((dt > 21) | (pt > dt)); /* 5.1(a) */
    const unsigned push = live & (pt == dt);
    const int32_t v_hand = (w & -(int32_t)win) - (w & -(int32_t)!(win | push));
    const int32_t nat = -(int32_t)natural; /* 5.1(a)-(c), (e) */
    return (v_hand & ~nat) | (bj_v & nat);
}

/* The initial deal of a one-hand round from its fixed cards cd: the box's two cards and the
 * dealer's up card, then, under peek, the dealer's hole card (the fourth card); init as
 * play_round gives it, the player's third card (cd[P]) whether or not anyone takes it. */
AI void one_hand_deal(const sim_ctx *x, const sim_cfg C, const uint8_t *cd, unsigned P,
                      sim_dealer *d, uint8_t *init) {
    const uint8_t d0 = cd[1];
    init[0] = cd[0];
    init[1] = cd[2];
    init[2] = d0;
    init[3] = cd[P];
    d->st = x->card[d0];
    d->n = 1;
    d->cards[0] = d0;
    d->suits = (uint8_t)(1u << (d0 & 3));
    if (C.peek) {
        const uint8_t d1 = cd[3];
        init[4] = d1;
        d->st = (uint16_t)(d->st + x->card[d1]);
        d->n = 2;
        d->cards[1] = d1;
        d->suits = (uint8_t)(d->suits | (1u << (d1 & 3)));
    }
}

/* The box hits again after its third card (rare): its cards by the loop while the table
 * hits (*st, *n its state and cards), then, without a hole card, the dealer's second card
 * when the hand stands (or the dealer plays out), else for the side bets (insurance) the
 * card it would have been (52 past the shoe's end), and the dealer's draws.  Returns the
 * box's best total. */
AI unsigned one_hand_hits_on(const sim_ctx *x, const sim_cfg C, const int REC, sim_shoe *s,
                             sim_dealer *d, unsigned up, unsigned pbj, unsigned *st,
                             unsigned *n, uint8_t *init) {
    do {
        *st += x->card[fl_sim_deal(s)];
        (*n)++;
    } while (x->act[up][0][*st] == DO_HIT);
    const unsigned pt = x->best[*st];
    const unsigned live = pt <= 21;
    if (!C.peek) { /* the hole card, or (for side bets) the card it would have been */
        if (live | C.plays_out) {
            const uint8_t hole = fl_sim_deal(s);
            dealer_take(x, d, hole, REC, REC);
            init[4] = hole;
        } else if (s->dealt < s->size) {
            fl_sim_fix_next(s);
            init[4] = s->cards[s->dealt];
        } else {
            init[4] = 52; /* a card never dealt */
        }
    }
    dealer_draws(x, s, d, ((live & !pbj) | C.plays_out) & !NATURAL(d), REC);
    return pt;
}

/* The dealer's cards after a box that took at most one card (take), branch-free: from the
 * fixed cards cd (cd[0] the player's third card), the dealer's next cards are the first and
 * second after it when the box took it, else from it, each selected by the mask of take, not
 * loaded after the decision (the round's chain of dependent steps the shorter).  Without a
 * hole card the first is the dealer's second card (taken when the box stands at 21 or less,
 * or the dealer plays out; init[4] either way), two draws from the card after; under peek,
 * the dealer's first two draws.  pt: the box's best total. */
AI void one_hand_dealer(const sim_ctx *x, const sim_cfg C, const int REC, sim_shoe *s,
                        sim_dealer *d, const uint8_t *cd, unsigned take, unsigned pt,
                        unsigned pbj, uint8_t *init) {
    const unsigned c4 = cd[0], c5 = cd[1], c6 = cd[2], m = 0u - take;
    const unsigned k4 = x->card[c4], k5 = x->card[c5], k6 = x->card[c6];
    const uint8_t e0 = (uint8_t)(c4 ^ ((c4 ^ c5) & m)), e1 = (uint8_t)(c5 ^ ((c5 ^ c6) & m));
    const unsigned u0 = k4 ^ ((k4 ^ k5) & m), u1 = k5 ^ ((k5 ^ k6) & m);
    const unsigned live = pt <= 21, go = (live & !pbj) | C.plays_out;
    unsigned more;
    if (C.peek) {
        s->dealt += dealer_two(x, d, go, e0, u0, e1, u1, REC, &more);
    } else {
        /* the hole card e0, taken by a select, then two draws from the card after */
        const unsigned t = live | C.plays_out, c7 = cd[3], k7 = x->card[c7];
        const uint8_t e2 = (uint8_t)(c6 ^ ((c6 ^ c7) & m));
        const unsigned u2 = k6 ^ ((k6 ^ k7) & m);
        init[4] = e0; /* the card the dealer took, or would have taken */
        d->st = (uint16_t)(d->st + (u0 & -t));
        if (REC) {
            d->cards[1] = e0; /* past n when not taken: never read */
            d->suits = (uint8_t)(d->suits | (t << (e0 & 3)));
        }
        d->n = (uint8_t)(d->n + t);
        s->dealt += t;
        s->dealt += dealer_two(x, d, t & go, e1, u1, e2, u2, REC, &more);
    }
    if (more) dealer_rest(x, s, d, REC);
}

/* The one hand's net (rule 5.1) once the dealer has drawn: st the box's state and pt its
 * best total, pbj its blackjack.  Without a hole card a dealer blackjack takes the original
 * wager only (not a double), or a busted hand whole, as enhc_takes says. */
AI int32_t one_hand_net(const sim_ctx *x, const sim_cfg C, unsigned st, unsigned pt,
                        unsigned doubled, unsigned pbj, const sim_dealer *d) {
    const unsigned dbj = C.peek ? 0u : NATURAL(d); /* under peek, ended before the draws */
    const int32_t v = hand_net(x->stake << doubled, pt, BEST(x, d), dbj, pbj,
                               x->bj_win & -(int32_t)!dbj);
    if (!C.peek && __builtin_expect(dbj & !pbj, 0) && C.enhc_takes != FL_TAKES_ALL &&
        !(C.enhc_takes == FL_TAKES_ORIGINAL_AND_BUSTED && ST_HARD(st) > 21))
        return -x->stake;
    return v;
}

/* The round of one hand (no split), without surrender, in a tally (REC 0 or 1): the common
 * round, played from locals with its first steps branch-free.  Under peek the dealer's hole
 * card is the fourth card and a dealer blackjack ends the round at once; without a hole card
 * (no peek) the dealer's second card is the first after the player's, dealt when the hand is
 * not busted (or the dealer plays out), and a dealer blackjack is settled at the end, taking
 * what enhc_takes says.  The caller has checked that the round's first seven cards are fixed
 * (the initial cards, the player's third, read by the first decision's select and as
 * init[3], and those after it, the dealer's first draws when the player takes at most one
 * card).  Returns 0, leaving the shoe untouched, when the box holds a pair the strategy
 * splits: play_round's general path plays that round.  The same cards, in the same order,
 * and the same net as the general path. */
AI int one_hand_round(const fl_sim_rules *r, const sim_ctx *x, const sim_cfg C, const int REC,
                      sim_shoe *s, int32_t *net, uint8_t *init) {
    const uint8_t *cd = s->cards + s->dealt;
    const unsigned P = C.peek ? 4u : 3u; /* the player's third card: the next after the deal */
    const uint8_t p0 = cd[0], d0 = cd[1], p1 = cd[2];
    const unsigned up = fl_card_value[d0];
    const unsigned rank = p0 >> 2u;
    if (__builtin_expect(rank == (unsigned)(p1 >> 2u) && r->pair[rank][up] && C.max_hands >= 2, 0))
        return 0;
    s->dealt += P;
    sim_dealer d;
    one_hand_deal(x, C, cd, P, &d, init);
    unsigned st = x->card[p0] + x->card[p1], n = 2, doubled = 0;
    const unsigned pbj = st == SIM_NATURAL_ST;
    int32_t v;
    if (C.peek && __builtin_expect(NATURAL(&d), 0)) { /* the dealer's blackjack, peeked */
        v = pbj ? 0 : -x->stake;
    } else {
        /* the first decision (a double allowed), its card taken or not by a select; a second
         * decision only after a hit the table hits again (may double no longer: hit or
         * stand), and from there by the loop */
        const uint8_t a = x->act[up][1][st];
        const unsigned take = a != DO_STAND;
        st += x->card[cd[P]] & -take;
        n += take;
        s->dealt += take;
        doubled = a == DO_DOUBLE;
        unsigned pt;
        if ((a == DO_HIT) & (x->act[up][0][st] == DO_HIT)) {
            pt = one_hand_hits_on(x, C, REC, s, &d, up, pbj, &st, &n, init);
        } else {
            pt = x->best[st];
            one_hand_dealer(x, C, REC, s, &d, cd + P, take, pt, pbj, init);
        }
        v = one_hand_net(x, C, st, pt, doubled, pbj, &d);
    }
    if (REC) {
        sim_hand h;
        h.st = (uint16_t)st;
        h.n = (uint8_t)n;
        h.doubled = (uint8_t)doubled;
        h.from_split = h.split_aces = 0;
        record_inputs(x, init, &h, 1, &d, 0);
    }
    *net = v;
    return 1;
}

/* The initial deal of the general round: the box's two cards and the dealer's up card, under
 * peek the dealer's hole card; init[0..2] those cards, init[3] the player's third card (the
 * next card of the shoe, fixed now whether or not anyone takes it), init[4] none yet (52 in
 * a tally, a table input; else FL_NO_CARD).  Returns the up card's value. */
AI unsigned round_deal(const sim_ctx *x, const sim_cfg C, const int REC, const int TALLY,
                       sim_shoe *s, sim_hand *h0, sim_dealer *d, uint8_t *init) {
    const uint8_t none = TALLY ? 52 : FL_NO_CARD; /* a card never dealt */
    const uint8_t p0 = fl_sim_deal(s), d0 = fl_sim_deal(s), p1 = fl_sim_deal(s);
    h0->st = (uint16_t)(x->card[p0] + x->card[p1]);
    h0->n = 2;
    h0->doubled = h0->from_split = h0->split_aces = 0;
    h0->cards[0] = p0;
    h0->cards[1] = p1;
    d->st = x->card[d0];
    d->n = 1;
    d->cards[0] = d0;
    d->cards[1] = FL_NO_CARD; /* (taken only with the second card) */
    d->suits = (uint8_t)(1u << (d0 & 3));
    if (C.peek) dealer_take(x, d, fl_sim_deal(s), 1, REC);
    init[0] = p0;
    init[1] = p1;
    init[2] = d0;
    init[4] = none;
    if (__builtin_expect(s->dealt < s->size, 1)) {
        fl_sim_fix_next(s);
        init[3] = s->cards[s->dealt];
    } else {
        init[3] = none;
    }
    return fl_card_value[d0];
}

/* The dealer's hand after the box's play: without a hole card the second card when some
 * hand is live (any_live, or the dealer plays out), else for the side bets (insurance) the
 * card the dealer would have taken, fixed without dealing it (init[4]); then the draws when
 * some hand is open (any_open: neither busted, nor a blackjack, nor surrendered), or always
 * when playing out. */
AI void dealer_after_box(const sim_ctx *x, const sim_cfg C, const int REC, sim_shoe *s,
                         unsigned any_live, unsigned any_open, sim_dealer *d, uint8_t *init) {
    if (!C.peek) {
        if (d->n < 2 && (any_live || C.plays_out)) dealer_take(x, d, fl_sim_deal(s), 1, REC);
        if (d->n < 2 && s->dealt < s->size) {
            fl_sim_fix_next(s);
            init[4] = s->cards[s->dealt];
        }
    }
    dealer_draws(x, s, d, (any_open | C.plays_out) & !NATURAL(d), REC);
}

/* The box's net (rule 5.1 (a)-(g)) once the round is played: a surrendered box loses half
 * its wager (the whole of it under late surrender without a hole card, against a dealer
 * blackjack); against a dealer blackjack peeked it pushes a blackjack and loses the rest;
 * else its hands' nets summed, a dealer blackjack without a hole card taking the original
 * wager once per box (enhc_takes original), and every busted hand whole (original and
 * busted), or every wager (all). */
AI int32_t settle_box(const sim_ctx *x, const sim_cfg C, const sim_hand *hands,
                      unsigned n_hands, const sim_dealer *d, int surrendered,
                      int dealer_bj_peeked) {
    const int32_t stake = x->stake;
    if (surrendered) {
        int lost_all = C.surrender == FL_SURRENDER_LATE && !C.peek && NATURAL(d);
        return lost_all ? -stake : -(stake - stake / 2);
    }
    const unsigned dt = BEST(x, d);
    if (dealer_bj_peeked) return NATURAL(&hands[0]) ? 0 : -stake;
    /* a dealer blackjack under peek ended the round above */
    const unsigned dbj = C.peek ? 0u : NATURAL(d);
    const int limited = !C.peek && dbj && C.enhc_takes != FL_TAKES_ALL;
    int original_taken = 0;
    int32_t total = 0;
    /* a blackjack's pay against this dealer (5.1(a)-(c), (e)) */
    const int32_t bj_v = x->bj_win & -(int32_t)!dbj;
    for (unsigned i = 0; i < n_hands; i++) {
        const sim_hand *h = &hands[i];
        int32_t v = hand_net(stake << h->doubled, BEST(x, h), dt, dbj,
                             NATURAL(h) & !h->from_split, bj_v);
        if (limited && v < 0) {
            if (C.enhc_takes == FL_TAKES_ORIGINAL_AND_BUSTED && ST_HARD(h->st) > 21) {
                /* a busted hand stays lost, whole */
            } else if (!original_taken) { /* the original wager, once per box */
                original_taken = 1;
                v = -stake;
            } else {
                v = 0;
            }
        }
        total += v;
    }
    return total;
}

/* One round: the main wager's net result into *net, the five initial cards (P1, P2, D1, the
 * next card as P3, D2 or the card the dealer would have taken) into init, the record when
 * rec is not NULL (arrays path; REC 2 keeps the card arrays), in a tally the record
 * inputs after the cards in init (REC 1).  Returns 0 when the shoe
 * failed (out of cards, or the generator). */
AI int play_round(const fl_sim_rules *r, const sim_ctx *x, const sim_cfg C, const int REC,
                  const int TALLY, sim_shoe *s, int32_t *net, uint8_t *init,
                  fl_round_record *rec) {
    if (TALLY && REC < 2 && C.surrender == FL_SURRENDER_NONE &&
        __builtin_expect(s->fixed - s->dealt >= 7, 1) &&
        one_hand_round(r, x, C, REC, s, net, init))
        return s->ok;
    sim_hand hands[4];
    sim_dealer d;
    unsigned n_hands = 1;
    const unsigned up = round_deal(x, C, REC, TALLY, s, &hands[0], &d, init);
    /* surrender (rules.py Surrender): early before the dealer's check, late at the first
     * decision; a hard two-card total the surr table gives up, unless the pair table splits */
    int surrendered = C.surrender == FL_SURRENDER_EARLY && surrender_choice(r, C, &hands[0], up);
    const int dealer_bj_peeked = C.peek && !surrendered && NATURAL(&d);
    if (surrendered) {
        if (d.n < 2) dealer_take(x, &d, fl_sim_deal(s), 1, REC); /* dealt to the box's live hand */
        if (C.plays_out) dealer_draws(x, s, &d, 1, REC);
    } else if (!dealer_bj_peeked) {
        surrendered = play_hands(r, x, C, REC, s, hands, &n_hands, up);
        /* (the hands scanned here, not in dealer_after_box: there the arrays path ran 3 %
         * slower, gcc 12 -O3) */
        unsigned any_live = 0, any_open = 0;
        for (unsigned i = 0; i < n_hands; i++) {
            unsigned live = ST_HARD(hands[i].st) <= 21;
            any_live |= live;
            any_open |= live & !(NATURAL(&hands[i]) & !hands[i].from_split);
        }
        any_open &= !surrendered;
        dealer_after_box(x, C, REC, s, any_live, any_open, &d, init);
    }
    if (d.n >= 2) init[4] = d.cards[1];
    if (TALLY && REC) record_inputs(x, init, hands, n_hands, &d, surrendered);
    if (!TALLY && rec) emit_record(rec, hands, n_hands, &d, surrendered);
    *net = settle_box(x, C, hands, n_hands, &d, surrendered, dealer_bj_peeked);
    return s->ok;
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
    const fl_count *count;     /* a counted run (fl_simulate_counted): its buckets' sums and */
    fl_sim_sums *bucket_sums;  /* side-table counts; the tables' counts point into */
    uint64_t *bucket_counts;   /* bucket_counts' bucket 0 */
    fl_csm_state *csm;         /* deal from this continuous shuffler (a counted run only) */
} sim_out;

/* ---------------------------------------------------------------- the count */

/* The count as the loop keeps it (fl_count in the header): the running count of the cards
 * seen since the shuffle (FL_COUNT_WINDOW: of the last `window` cards seen, in a ring of
 * their tags) and the cards seen of each suit. */
typedef struct {
    const fl_count *c;
    int64_t rc; /* 64 bits: a continuous shuffler's running count never resets (at most
                 * FL_COUNT_MAX_TAG * 2^40 rounds * 30 cards) */
    uint32_t suit_seen[4];
    uint32_t per_suit; /* cards of each suit in the full shoe */
    uint32_t w_head, w_n;
    int16_t ring[FL_MAX_DECKS * 52];
} sim_count;

static void count_reset(sim_count *k) {
    k->rc = 0;
    k->w_head = k->w_n = 0;
    memset(k->suit_seen, 0, sizeof k->suit_seen);
}

/* the cards of a round, seen (in the order dealt) */
static void count_cards(sim_count *k, const uint8_t *cards, unsigned n) {
    const fl_count *c = k->c;
    if (c->mode == FL_COUNT_WINDOW) {
        const uint32_t W = c->window;
        for (unsigned i = 0; i < n; i++) {
            int16_t tag = c->tags[cards[i]];
            if (k->w_n == W) {
                k->rc -= k->ring[k->w_head];
                k->ring[k->w_head] = tag;
                k->w_head = k->w_head + 1 == W ? 0 : k->w_head + 1;
            } else {
                uint32_t at = k->w_head + k->w_n;
                k->ring[at >= W ? at - W : at] = tag;
                k->w_n++;
            }
            k->rc += tag;
        }
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        k->rc += c->tags[cards[i]];
        k->suit_seen[cards[i] & 3]++;
    }
}

static int64_t floor_div(int64_t a, int64_t b) { /* b > 0 */
    int64_t q = a / b;
    return q * b > a ? q - 1 : q;
}

/* the bucket of a round bet with `remaining` cards unseen in the shoe (> 0) */
static size_t count_bucket(const sim_count *k, uint32_t remaining) {
    const fl_count *c = k->c;
    const int64_t res = c->resolution;
    int64_t v;
    switch (c->mode) {
    case FL_COUNT_TRUE: v = floor_div((int64_t)k->rc * 52 * res, remaining); break;
    case FL_COUNT_SUIT:
        v = INT64_MIN;
        for (unsigned u = 0; u < 4; u++) {
            int64_t unseen_s = (int64_t)k->per_suit - k->suit_seen[u];
            int64_t e = floor_div(res * (52 * unseen_s - 13 * (int64_t)remaining), remaining);
            if (e > v) v = e;
        }
        break;
    case FL_COUNT_SUIT_RANGE: {
        uint32_t lo = k->suit_seen[0], hi = k->suit_seen[0]; /* most seen = least unseen */
        for (unsigned u = 1; u < 4; u++) {
            if (k->suit_seen[u] < lo) lo = k->suit_seen[u];
            if (k->suit_seen[u] > hi) hi = k->suit_seen[u];
        }
        v = floor_div(res * 52 * (int64_t)(hi - lo), remaining);
        break;
    }
    default: v = (int64_t)k->rc * res; break; /* running, window */
    }
    v -= c->lowest;
    if (v < 0) return 0;
    return v >= (int64_t)c->n_buckets ? c->n_buckets - 1 : (size_t)v;
}

AI void bucket_add(fl_sim_sums *b, int32_t v) {
    fl_u128 net = ((fl_u128)b->net_hi << 64 | b->net_lo) + (fl_u128)(__extension__(__int128)v);
    fl_u128 sq = ((fl_u128)b->sq_hi << 64 | b->sq_lo) + (uint64_t)((int64_t)v * v);
    b->rounds++;
    b->net_lo = (uint64_t)net;
    b->net_hi = (uint64_t)(net >> 64);
    b->sq_lo = (uint64_t)sq;
    b->sq_hi = (uint64_t)(sq >> 64);
}

/* ---------------------------------------------------------------- the run */

/* The main wager's sums as a run keeps them: the net and its square in 64 bits, added to the
 * 128-bit sums every `period` rounds: a round's net is at most `top` cents either way (four
 * doubled hands, or a blackjack; below 2^31 by check_rules), so `period` rounds cannot
 * overflow either 64-bit sum. */
typedef struct {
    __extension__ __int128 net_sum;
    fl_u128 sq_sum;
    int64_t net_part;
    uint64_t sq_part, left, period;
} sim_acc;

AI void acc_init(sim_acc *a, const fl_sim_rules *r) {
    const uint64_t bj_top = (uint64_t)r->stake * r->bj_num / r->bj_den + 1u;
    const uint64_t top = bj_top > 8u * (uint64_t)r->stake ? bj_top : 8u * (uint64_t)r->stake;
    const uint64_t period_sq = UINT64_MAX / (top * top), period_net = (uint64_t)INT64_MAX / top;
    a->period = period_sq < period_net ? period_sq : period_net;
    a->left = a->period;
    a->net_sum = 0;
    a->sq_sum = 0;
    a->net_part = 0;
    a->sq_part = 0;
}

AI void acc_add(sim_acc *a, int32_t v) {
    a->net_part += v;
    a->sq_part += (uint64_t)((int64_t)v * v);
    if (__builtin_expect(--a->left == 0, 0)) {
        a->net_sum += a->net_part;
        a->sq_sum += a->sq_part;
        a->net_part = 0;
        a->sq_part = 0;
        a->left = a->period;
    }
}

/* the run's sums of n_rounds rounds added to *m */
AI void acc_into(const sim_acc *a, fl_sim_sums *m, size_t n_rounds) {
    fl_u128 net = ((fl_u128)m->net_hi << 64 | m->net_lo) + (fl_u128)(a->net_sum + a->net_part);
    fl_u128 sq = ((fl_u128)m->sq_hi << 64 | m->sq_lo) + (a->sq_sum + a->sq_part);
    m->rounds += n_rounds;
    m->net_lo = (uint64_t)net;
    m->net_hi = (uint64_t)(net >> 64);
    m->sq_lo = (uint64_t)sq;
    m->sq_hi = (uint64_t)(sq >> 64);
}

/* What a run's loops share: its parameters and run_core's own objects, each at its one
 * place (the shoe in play a copy, which the compiler keeps as a local: play through a
 * pointer into the lanes was slower). */
typedef struct {
    const fl_sim_rules *r;
    const sim_out *o;
    const sim_ctx *x;
    sim_shoe *lanes;            /* FL_SIM_LANES shoes, shuffled a batch at a time */
    sim_shoe *s;                /* the shoe in play */
    fl_csm_state *csm;          /* deal from this continuous shuffler (a counted run only) */
    sim_count *kc;              /* the count (a counted run) */
    fl_side_batch *batch;       /* a tally's rounds not yet counted in its tables */
    const fl_side_lookups *lk;  /* a tally's tables, as the batch reads them */
    uint8_t *in;                /* the round's inputs, when no table reads them */
    fl_round_record *round_rec; /* the round's record, when only a table reads it */
} sim_run;

/* why a shoe failed: out of cards (or a continuous shuffler emptied), else the generator */
AI fl_status shoe_failure(const sim_shoe *s, const fl_csm_state *csm) {
    const int out = s->dealt >= s->size || (csm && csm->n == 0);
    return out ? FL_ERR_CARDS_OUT : FL_ERR_EXHAUSTED;
}

/* A tally of n_rounds from two shoes in flight: the rounds of shoe A (the earlier in the
 * order of play, in R->s) and of the next, B, alternate, so that the two rounds' chains of
 * dependent loads and selects overlap.  The tally is a sum, the same in any order of its
 * rounds; its set of rounds stays the sequential one (the first n_rounds of the shoes in
 * order): a round of B is played only while the rounds left leave room for every round A may
 * still have (a round takes at least 3 cards), so A always ends within the call, and near
 * the end A is played alone.  Shoe k is lane k % FL_SIM_LANES's, fixed to the cut when it
 * starts: each lane's positions are fixed in the same order from its own generator as by
 * fl_sim_start_shoes, so these are the same shoes.  Needs a cutting card (cut > 0) and no
 * count.  (Each round is written out twice, not in a helper of its own: with one, a round
 * of the general path ran 3 % slower, gcc 12 -O3.) */
AI fl_status run_two_shoes(const sim_run *R, sim_acc *acc, const sim_cfg C, const int REC,
                           size_t n_rounds) {
    sim_shoe *const lanes = R->lanes, *const s = R->s;
    const fl_sim_rules *const r = R->r;
    const sim_ctx *const x = R->x;
    uint8_t *const in = R->in;
    const fl_side_lookups *const lk = R->lk;
    sim_shoe pb;
    fl_side_batch *const bt = R->o->n_tables ? R->batch : NULL;
    size_t ka = 0, done = 0;
    int b_done = 0;
    fl_sim_shoe_begin(lanes, 0, s);
    fl_sim_shoe_begin(lanes, 1, &pb);
    const uint32_t cut = r->cut_position;
    const size_t a_top = (cut + 2) / 3;
    while (done < n_rounds) {
        /* A's rounds left are at most (cut - dealt + 2) / 3, at most a_top: the exact bound
         * is worked out only near the end of the call */
        const size_t left_now = n_rounds - done;
        if (!b_done && (left_now > a_top || left_now > (cut - s->dealt + 2) / 3)) {
            int32_t vb = 0;
            if (!play_round(r, x, C, REC, 1, &pb, &vb, bt ? bt->in[bt->n] : in, NULL))
                return shoe_failure(&pb, NULL);
            acc_add(acc, vb);
            if (bt && ++bt->n == FL_SIDE_BATCH) fl_side_lookup_batch(lk, bt, 0);
            done++;
            if (pb.dealt >= cut) { /* B's cutting card came out: B waits for A */
                lanes[(ka + 1) % FL_SIM_LANES] = pb;
                b_done = 1;
            }
        }
        int32_t v = 0;
        if (!play_round(r, x, C, REC, 1, s, &v, bt ? bt->in[bt->n] : in, NULL))
            return shoe_failure(s, NULL);
        acc_add(acc, v);
        if (bt && ++bt->n == FL_SIDE_BATCH) fl_side_lookup_batch(lk, bt, 0);
        done++;
        if (s->dealt >= cut) { /* A's cutting card came out: B, or the shoes after it */
            lanes[ka % FL_SIM_LANES] = *s;
            if (b_done) {
                ka += 2;
                fl_sim_shoe_begin(lanes, ka, s);
                b_done = 0;
            } else {
                ka += 1;
                *s = pb;
            }
            fl_sim_shoe_begin(lanes, ka + 1, &pb);
        }
    }
    return FL_OK;
}

/* A counted round's bucket at the moment of the bet: from the cards seen since the shuffle (a
 * new shoe resets the count); off a continuous shuffler, whose count never resets, the
 * delivery tray first keeps only the cards not dealt yet. */
AI size_t count_at_bet(sim_count *kc, sim_shoe *s, const fl_csm_state *csm) {
    if (csm) {
        uint32_t waiting = s->fixed - s->dealt;
        memmove(s->cards, s->cards + s->dealt, waiting);
        s->dealt = 0;
        s->fixed = waiting;
    } else if (s->dealt == 0) {
        count_reset(kc); /* a new shoe */
    }
    return count_bucket(kc, s->size - s->dealt);
}

/* The rounds one after the other, each from the shoe in play until its cutting card comes
 * out (a continuous shuffler's: never), a batch of FL_SIM_LANES shoes shuffled at a time:
 * every path that is not run_two_shoes'.  TALLY: sums and tables only; else every array of
 * o.  COUNT: each round bucketed by the count at the moment of the bet. */
AI fl_status run_in_order(const sim_run *R, sim_acc *acc, const sim_cfg C, const int REC,
                          const int TALLY, const int COUNT, size_t n_rounds) {
    const sim_out *const o = R->o;
    sim_shoe *const lanes = R->lanes, *const s = R->s;
    fl_csm_state *const csm = R->csm;
    fl_side_batch *const batch = R->batch;
    const int tables = o->n_tables != 0;
    unsigned cur = FL_SIM_LANES; /* FL_SIM_LANES: a new batch is due */
    if (csm) {
        *s = lanes[0];
        cur = 0;
    }
    for (size_t i = 0; i < n_rounds; i++) {
        if (cur == FL_SIM_LANES) { /* shuffle (rule 5.7(b)), a batch of shoes at a time */
            fl_sim_start_shoes(lanes);
            cur = 0;
            *s = lanes[0];
        }
        size_t bucket = 0, off = 0; /* off: the bucket's offset in the side-table counts */
        if (COUNT) {
            bucket = count_at_bet(R->kc, s, csm);
            off = bucket * o->n_tables * 256;
        }
        int32_t v = 0;
        uint8_t *init = TALLY && tables ? batch->in[batch->n] : R->in;
        fl_round_record *rec = NULL;
        uint32_t first = s->dealt;
        if (!TALLY) {
            if (o->initial) init = o->initial + 5 * i;
            rec = o->records ? o->records + i : o->n_rec_inputs ? R->round_rec : NULL;
        }
        if (!play_round(R->r, R->x, C, REC, TALLY, s, &v, init, rec)) return shoe_failure(s, csm);
        if (COUNT) {
            count_cards(R->kc, s->cards + first, s->dealt - first);
            if (csm) fl_csm_return(csm, s->cards + first, s->dealt - first);
            bucket_add(&o->bucket_sums[bucket], v);
        }
        if (!TALLY && o->trace) {
            unsigned m = s->dealt - first;
            if (m > o->trace_cap) m = (unsigned)o->trace_cap;
            memcpy(o->trace + i * o->trace_cap, s->cards + first, m);
            if (o->trace_len) o->trace_len[i] = (uint8_t)m;
        }
        if (!csm && (s->cut == 0 || s->dealt >= s->cut)) { /* the cutting card came out */
            lanes[cur++] = *s;
            if (cur < FL_SIM_LANES) *s = lanes[cur];
        }
        if (!TALLY && o->net) o->net[i] = v;
        if (TALLY || o->sums) {
            acc_add(acc, v);
            if (TALLY && tables) {
                if (COUNT) batch->off[batch->n] = off;
                if (++batch->n == FL_SIDE_BATCH) fl_side_lookup_batch(R->lk, batch, COUNT);
            }
            if (!TALLY && tables)
                fl_side_lookup_round(o->tables, o->n_tables, init, rec, o->rec_inputs,
                                     o->n_rec_inputs);
        }
    }
    return FL_OK;
}

/* The run of n_rounds: FL_SIM_LANES shoes prepared at a time, then played one after the other
 * (see the header), by run_two_shoes when it can, else run_in_order.  TALLY: sums and tables
 * only (no per-round array; REC 0 or 1: a record for the tables that read one); otherwise
 * every array of o (REC 2: full records). */
AI fl_status run_core(fl_rng *rng, const fl_sim_rules *r, size_t n_rounds, const sim_out *o,
                      const sim_cfg C, const int REC, const int TALLY, const int COUNT) {
    sim_shoe lanes[FL_SIM_LANES];
    sim_ctx x;
    make_ctx(r, &x);
    fl_csm_state *const csm = COUNT ? o->csm : NULL;
    const int use_x = rng->kind == FL_RNG_XOSHIRO256SS && !csm;
    fl_rng g = *rng;
    for (unsigned l = 0; l < (csm ? 1u : FL_SIM_LANES); l++) {
        fl_sim_shoe_init(&lanes[l], r->decks, r->cut_position, rng, use_x ? &g : NULL, csm);
    }
    sim_count kc;
    if (COUNT) {
        kc.c = o->count;
        kc.per_suit = r->decks * 13;
        count_reset(&kc);
    }
    sim_acc acc;
    acc_init(&acc, r);
    sim_shoe play;
    fl_round_record round_rec;
    uint8_t in[FL_SIM_INPUTS];
    memset(in, 0, sizeof in);
    fl_side_batch batch;
    memset(&batch, 0, sizeof batch);
    fl_side_lookups lk;
    if (TALLY) fl_side_make_lookups(o->tables, o->n_tables, &lk);
    const sim_run R = {r, o, &x, lanes, &play, csm, &kc, &batch, &lk, in, &round_rec};
    const fl_status st = TALLY && !COUNT && use_x && r->cut_position != 0
                             ? run_two_shoes(&R, &acc, C, REC, n_rounds)
                             : run_in_order(&R, &acc, C, REC, TALLY, COUNT, n_rounds);
    if (TALLY && batch.n) fl_side_lookup_batch(&lk, &batch, COUNT);
    if (use_x) rng->u.xoshiro = g.u.xoshiro; /* long-jumped once per lane */
    if (o->sums && st == FL_OK) acc_into(&acc, o->sums, n_rounds);
    return st;
}

/* The instances: the hot rule combinations with their rules as constants (peek, no
 * surrender, double after split, four hands, split aces one card and not resplit: the Vegas
 * presets; no hole card, three hands, original bets only: the NZ preset), each with and
 * without the dealer playing out and a record; every other combination, and every call
 * that writes per-round arrays, through the generic instances. */
#define VEGAS(po) ((sim_cfg){1, FL_SURRENDER_NONE, po, 1, 4, 0, 1, FL_TAKES_ORIGINAL})
#define NZ(po) ((sim_cfg){0, FL_SURRENDER_NONE, po, 1, 3, 0, 1, FL_TAKES_ORIGINAL})
#define RUN_INSTANCE(name, cfg, rec, count)                                                       \
    static __attribute__((noinline)) fl_status name(fl_rng *rng, const fl_sim_rules *r,          \
                                                     size_t n, const sim_out *o) {                \
        return run_core(rng, r, n, o, cfg, rec, 1, count);                                        \
    }
/* the instances of one count flag (0: fl_simulate_tally, 1: fl_simulate_counted), in the
 * order run_tally picks them */
#define RUN_INSTANCES(p, count)                                                                   \
    RUN_INSTANCE(p##vegas, VEGAS(0), 0, count)                                                    \
    RUN_INSTANCE(p##vegas_rec, VEGAS(0), 1, count)                                                \
    RUN_INSTANCE(p##vegas_out, VEGAS(1), 0, count)                                                \
    RUN_INSTANCE(p##vegas_out_rec, VEGAS(1), 1, count)                                            \
    RUN_INSTANCE(p##nz, NZ(0), 0, count)                                                          \
    RUN_INSTANCE(p##nz_rec, NZ(0), 1, count)                                                      \
    RUN_INSTANCE(p##nz_out, NZ(1), 0, count)                                                      \
    RUN_INSTANCE(p##nz_out_rec, NZ(1), 1, count)                                                  \
    RUN_INSTANCE(p##any, CFG_OF(r), 0, count)                                                     \
    RUN_INSTANCE(p##any_rec, CFG_OF(r), 1, count)                                                 \
    static fl_status (*const p##instances[10])(fl_rng *, const fl_sim_rules *, size_t,            \
                                               const sim_out *) = {                               \
        p##vegas, p##vegas_rec, p##vegas_out, p##vegas_out_rec, p##nz,                            \
        p##nz_rec, p##nz_out,   p##nz_out_rec,  p##any,         p##any_rec};
RUN_INSTANCES(run_, 0)
RUN_INSTANCES(counted_, 1)

static __attribute__((noinline)) fl_status run_arrays(fl_rng *rng, const fl_sim_rules *r,
                                                      size_t n, const sim_out *o) {
    return run_core(rng, r, n, o, CFG_OF(r), 2, 0, 0);
}

static int cfg_is(const fl_sim_rules *r, sim_cfg c) {
    return r->peek == c.peek && r->surrender == c.surrender && r->double_after_split == c.das &&
           r->max_hands == c.max_hands && r->resplit_aces == c.rsa &&
           r->split_aces_one_card == c.sa1 && (c.peek || r->enhc_takes == c.enhc_takes);
}

/* the instance for a tally (sums and tables, no per-round array), counted or not */
static fl_status run_tally(fl_rng *rng, const fl_sim_rules *r, size_t n, const sim_out *o) {
    const unsigned rec = o->n_rec_inputs != 0, out = r->dealer_plays_out != 0;
    const unsigned which = cfg_is(r, VEGAS(0)) ? 2 * out + rec
                           : cfg_is(r, NZ(0))  ? 4 + 2 * out + rec
                                               : 8 + rec;
    return (o->count ? counted_instances : run_instances)[which](rng, r, n, o);
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
    sim_out o = {net,  initial, trace, trace_cap, trace_len, NULL, 0, NULL, records, 0, {0},
                 NULL, NULL,    NULL,  NULL};
    return run_arrays(rng, rules, n_rounds, &o);
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
    sim_out o = {NULL, initial, NULL, 0, NULL, tables, n_tables, sums, records, 0, {0},
                 NULL, NULL,    NULL, NULL};
    o.n_rec_inputs = fl_side_record_inputs_used(tables, n_tables, o.rec_inputs);
    if (initial || records) return run_arrays(rng, rules, n_rounds, &o);
    return run_tally(rng, rules, n_rounds, &o);
}

static fl_status check_count(const fl_count *c, const fl_csm_model *csm) {
    if (c->mode > FL_COUNT_SUIT_RANGE || c->resolution < 1 || c->resolution > FL_COUNT_MAX_RESOLUTION ||
        c->n_buckets < 1 || c->n_buckets > FL_COUNT_MAX_BUCKETS ||
        c->lowest < -(1 << 24) || c->lowest > (1 << 24))
        return FL_ERR_RANGE;
    if (c->mode == FL_COUNT_WINDOW && (c->window < 1 || c->window > FL_MAX_DECKS * 52))
        return FL_ERR_RANGE;
    for (unsigned k = 0; k < 52; k++)
        if (c->tags[k] > FL_COUNT_MAX_TAG || c->tags[k] < -FL_COUNT_MAX_TAG) return FL_ERR_RANGE;
    if (csm && c->mode != FL_COUNT_WINDOW && c->mode != FL_COUNT_RUNNING) return FL_ERR_RANGE;
    return FL_OK;
}

/* a continuous shuffler's running count never resets: at most FL_COUNT_MAX_ROUNDS_CSM rounds
 * keep it (and it times the resolution) inside int64 */
#define FL_COUNT_MAX_ROUNDS_CSM (1ull << 40)
static fl_status check_count_rounds(const fl_count *c, const fl_csm_model *csm, size_t n) {
    if (csm && c->mode == FL_COUNT_RUNNING && (unsigned long long)n > FL_COUNT_MAX_ROUNDS_CSM)
        return FL_ERR_RANGE;
    return FL_OK;
}

fl_status fl_simulate_counted(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                              const fl_side_table *tables, size_t n_tables,
                              const fl_count *count, const fl_csm_model *csm, fl_sim_sums *sums,
                              fl_sim_sums *bucket_sums, uint64_t *bucket_counts) {
    if (!rng || !rules || !count || !sums || !bucket_sums || (n_tables && !bucket_counts))
        return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS && rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    if (n_tables > FL_SIDE_MAX_TABLES || (n_tables && !tables)) return FL_ERR_RANGE;
    fl_side_table t[FL_SIDE_MAX_TABLES];
    for (size_t k = 0; k < n_tables; k++) { /* bucket 0's counts; a round adds its offset */
        t[k] = tables[k];
        t[k].counts = bucket_counts + k * 256;
    }
    fl_status st = check_rules(rules);
    if (st == FL_OK) st = fl_side_check_tables(t, n_tables);
    if (st == FL_OK) st = check_count(count, csm);
    if (st == FL_OK) st = check_count_rounds(count, csm, n_rounds);
    if (st != FL_OK) return st;
    sim_out o = {NULL, NULL, NULL, 0, NULL, t, n_tables, sums, NULL, 0, {0},
                 count, bucket_sums, bucket_counts, NULL};
    o.n_rec_inputs = fl_side_record_inputs_used(t, n_tables, o.rec_inputs);
    if (!csm) return run_tally(rng, rules, n_rounds, &o);
    fl_csm_state *m = malloc(sizeof *m);
    if (!m) return FL_ERR_RANGE;
    fl_rng g = *rng; /* the machine's generator: xoshiro256** the caller's, which is then
                      * long-jumped once; ChaCha20 the caller's stream itself */
    int use_x = rng->kind == FL_RNG_XOSHIRO256SS;
    st = fl_csm_init(m, csm, rules->decks, use_x ? &g : rng);
    if (st == FL_OK) {
        o.csm = m;
        st = run_tally(rng, rules, n_rounds, &o);
        if (use_x) (void)fl_xoshiro_long_jump(rng);
    }
    free(m);
    return st;
}
