/*
 * The combinatorial analyzer of the main wager: exact expected values of one
 * box played from a given shoe composition, by enumeration of hand
 * compositions (E. O. Thorp and P. Griffin's method, as in every
 * combinatorial analyzer).  Written for feltlab from the published method; no
 * code of any other analyzer is used.
 *
 * Shoe: counts of the ten card values (index 0 aces .. 9 ten-valued cards).
 * Cards are exchangeable, so the value of a hand depends only on the multiset
 * of cards it holds and the cards removed from the shoe.
 *
 * Dealer: the distribution of the dealer's final total (17..21, bust,
 * blackjack) is computed for each composition by a forward pass over the DAG
 * of the dealer's drawn multisets (each multiset's probability is the same
 * for every order of its cards, so orders merge).  Under peek and an ace or
 * ten up, the hole card is conditioned on not completing a blackjack, and so
 * is every card the player draws: p(c) = n_c (N - 1 - n_X + [c = X]) /
 * ((N - 1)(N - n_X)), X the excluded hole value (Bayes; the hole is one of the
 * unseen cards).
 *
 * Strategies: FL_AN_CDZ is the composition-dependent optimum of each hand
 * (stand, hit, double, split, surrender) with the pre-split strategy reused
 * after splitting (CDZ-, E. Farmer's term; bjstrat.net and
 * blackjacktheforum.com threads on CDZ-): a post-split hand plays as the
 * same cards would play as an unsplit hand (its decision computed against the
 * shoe less its own cards and the up card), and doubles only under DAS.
 * FL_AN_TABLE plays the total-dependent tables of the round simulator
 * (sim.c) exactly as the simulator does.
 *
 * Splits are exact for a zero-memory strategy (both strategies are): the
 * second cards of the split hands are drawn first (exchangeability), each
 * pair card drawn while hands < limit makes a new hand; a hand completed with
 * a non-pair card while resplitting was possible is an "N" hand, one filled
 * after the limit an "x" hand.  For each such pattern the value of a hand,
 * conditioned on the statuses of the other second cards, is expanded by
 * inclusion-exclusion (1{non-pair} = 1 - 1{pair}) into sums of EV_N(k) and
 * EV_x(k): the expected value of one hand from the shoe with k pair cards
 * removed (E. Farmer's grouping of split outcomes by pattern, by linearity of
 * expectation).
 *
 * No hole card (European): the dealer's blackjack is an outcome of the
 * dealer's draw.  Under "all" it takes every wager.  Under "original" and
 * "original and busted", an unsplit hand's live wager loses one unit and a
 * busted one its whole wager; a split box loses one unit once (-P(dealer
 * blackjack), exact by exchangeability), busted hands their stakes (or, under
 * "original", only when no blackjack shows), and the event where every split
 * hand busts first (the dealer then takes no second card: every wager lost
 * whole) is enumerated exactly over the hands' busting plays (all_bust_
 * correction), for every split that is played.  A split not played needs it under
 * "original" never (the stakes lost exceed the one unit counted: it only lowers the split)
 * and under "original and busted" only where the split's value plus the term's bound, the
 * share of blackjack cards left (a martingale: optional stopping), reaches the play chosen.
 * A split with too many busting plays for the budget (FL_AN_ALL_BUST_BUDGET, smaller for a
 * split not played) keeps the one-unit count and is reported in fl_analysis.p_split_approx.
 *
 * Post-split play: CDZ- reuses the pre-split decisions; CDP1 and CDP (E. Farmer's terms)
 * take, in split_value, the best of standing, hitting and doubling for the shoe less the up
 * card, the hand's cards and k pair cards (CDP at every k; CDP1 at k = 2, computed first,
 * those decisions kept for every k).  Both are zero-memory, so the pattern grouping holds.
 *
 * Distribution of split rounds (analyzer_dist.c, with rules.split_dist): each split hand's
 * plays are listed once as the multisets of cards drawn after its pair card, with their
 * number of orders (a path count over the hand DAG), stake and final class; the hands are
 * chained over the unseen cards in the order of play and the dealer's unconditioned outcome
 * distribution is taken off the exact composition left (the probability of a sequence of
 * draws depends only on the multiset drawn, so it is exact); under peek the dealer's
 * blackjack is dropped and the rest renormalised.  Re-split rounds past an enumeration
 * budget are approximated (their remaining hands drawn independently from the shoe at the
 * re-split) and reported in fl_analysis.p_split_dist_approx.
 *
 * Up cards are independent: each is analysed in its own context (the hand DAG shared
 * read-only), by rules.threads threads taking them in turn, and their sums are added in
 * up-card order, so the figures do not depend on the thread count.
 *
 * No global state: every buffer is allocated per call and freed.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#define FL_AN_PTHREADS 1
#include <pthread.h>
#include <unistd.h>
#else
#define FL_AN_PTHREADS 0
#endif

#include "analyzer_internal.h"

/* ------------------------------------------------------------ entry point */

static int hand_index(int a, int b) { /* a <= b value indexes 0..9 */
    return a * NV - a * (a - 1) / 2 + (b - a);
}

/* one up card's share of the round's sums, added up in up-card order whatever the threads */
typedef struct {
    double ev, p_total, net_dist[7], p_split, ev_split, p_split_approx, ev_approx_bound;
    double split_net[FL_AN_SPLIT_NETS], p_split_dist_approx;
    fl_status status;
} an_part;

/* the buffers of one context; nodes, hkeys and hidx (the hand DAG) are shared read-only */
static int ctx_alloc(an_ctx *c) {
    c->ds = calloc(DSTATE_CAP, sizeof *c->ds);
    c->dplan = calloc(DSTATE_CAP, sizeof *c->dplan);
    c->dwork = calloc((size_t)DSTATE_CAP * AN_LANES, sizeof *c->dwork);
    c->keybuf = calloc(2 * NODE_CAP, sizeof *c->keybuf);
    c->seen = calloc(NODE_CAP, 1);
    c->dkeys = calloc(DHASH_SIZE, sizeof *c->dkeys);
    c->didx = calloc(DHASH_SIZE, sizeof *c->didx);
    c->stand = calloc((size_t)NODE_CAP * 7, sizeof(double));
    c->vec = calloc(NODE_CAP, sizeof *c->vec);
    c->svec = calloc(NODE_CAP, sizeof *c->svec);
    c->hvec = calloc(NODE_CAP, sizeof *c->hvec);
    c->dvec = calloc(NODE_CAP, sizeof *c->dvec);
    c->dec = calloc(NODE_CAP, 1);
    c->valid = calloc(NODE_CAP, 1);
    c->stamp = calloc(NODE_CAP, sizeof *c->stamp);
    c->pdec = calloc(NODE_CAP, 1);
    c->pstamp = calloc(NODE_CAP, sizeof *c->pstamp);
    c->cache.cap = 1u << 14;
    c->cache.keys = calloc(c->cache.cap, sizeof *c->cache.keys);
    c->cache.slot = calloc(c->cache.cap, sizeof *c->cache.slot);
    c->cache.dcap = c->cache.cap;
    c->cache.dist = malloc(sizeof(*c->cache.dist) * c->cache.dcap);
    if (!c->ds || !c->dplan || !c->dwork || !c->keybuf || !c->seen || !c->dkeys ||
        !c->didx || !c->stand || !c->dec || !c->valid || !c->stamp || !c->pdec || !c->pstamp ||
        !c->cache.keys || !c->cache.slot || !c->cache.dist || !c->vec || !c->svec || !c->hvec ||
        !c->dvec)
        return 0;
    c->hit = c->stand + NODE_CAP;
    c->best = c->stand + 2 * NODE_CAP;
    c->dbl = c->stand + 3 * NODE_CAP;
    c->nobj = c->stand + 4 * NODE_CAP;
    c->pbj = c->stand + 5 * NODE_CAP;
    c->vk = c->stand + 6 * NODE_CAP;
    return 1;
}

static void ctx_free(an_ctx *c) {
    split_distribution_release(c);
    free(c->ds);
    free(c->dplan);
    free(c->dwork);
    free(c->keybuf);
    free(c->seen);
    free(c->dkeys);
    free(c->didx);
    free(c->stand);
    free(c->vec);
    free(c->svec);
    free(c->hvec);
    free(c->dvec);
    free(c->dec);
    free(c->valid);
    free(c->stamp);
    free(c->pdec);
    free(c->pstamp);
    free(c->cache.keys);
    free(c->cache.slot);
    free(c->cache.dist);
}

/* the strategy's action for the deal (pair value index a, up card index u) at node nd */
static int choose_action(const an_ctx *c, const an_node *nd, int a, int u, const int *allowed,
                         const double *unc) {
    const fl_analyzer_rules *r = c->r;
    int act = FL_AN_STAND;
    if (r->strategy != FL_AN_TABLE) {
        for (int k = 1; k < FL_AN_ACTIONS; k++)
            if (allowed[k] && unc[k] > unc[act]) act = k;
        return act;
    }
    int soft, t = node_total(nd, &soft);
    int ta = table_action(c, nd);
    if (allowed[FL_AN_SPLIT] && r->pair[a][u + 1]) return FL_AN_SPLIT;
    if (allowed[FL_AN_SURRENDER] && !soft && r->surr[t][u + 1]) return FL_AN_SURRENDER;
    if (ta >= FL_ACT_DOUBLE_ELSE_HIT && allowed[FL_AN_DOUBLE]) return FL_AN_DOUBLE;
    return (ta == FL_ACT_HIT || ta == FL_ACT_DOUBLE_ELSE_HIT) && t < 21 ? FL_AN_HIT : FL_AN_STAND;
}

/* the unconditional value of each allowed action (unc, also written to ev_row) from its
 * value given no dealer blackjack (cond): under peek a dealer blackjack (chance q) costs the
 * one unit first; surrender is -1/2, or under late surrender -1/2 unless the dealer has one */
static void uncond_values(const fl_analyzer_rules *r, double q, const double *cond,
                          const int *allowed, double *unc, double *ev_row) {
    for (int k = 0; k < FL_AN_ACTIONS; k++) {
        if (!allowed[k]) continue;
        unc[k] = r->peek ? (1.0 - q) * cond[k] - q : cond[k];
        if (k == FL_AN_SURRENDER)
            unc[k] = r->surrender == FL_SURRENDER_EARLY ? -0.5 : -0.5 * (1.0 - q) - q;
        ev_row[k] = unc[k];
    }
}

/* the all-bust term's bound for a pair of value index a: the share of blackjack cards left
 * after the up card and the pair (the chance the card after the box's is one; a martingale,
 * so optional stopping bounds the term by it) */
static double bj_share(const an_ctx *c, int a) {
    return (double)(c->s0[c->bj_x] - (a == c->bj_x ? 2 : 0)) / (c->n0 - 2);
}

/* a round played by stand, hit, double or surrender added to the net distribution (-2, -1,
 * -1/2, 0, +1, +2, blackjack): pr the deal's chance, q the dealer's blackjack chance, m the
 * chance conditioned on none under peek (already counted in net[1] under peek) */
static void add_round_net(const an_ctx *c, int act, int i, double pr, double q, double m,
                          double *net) {
    const fl_analyzer_rules *r = c->r;
    if (act == FL_AN_STAND || act == FL_AN_HIT) {
        const double *vv = act == FL_AN_STAND ? c->svec[i] : c->hvec[i];
        net[4] += m * vv[0];
        net[3] += m * vv[1];
        net[1] += m * vv[2];
    } else if (act == FL_AN_DOUBLE) {
        net[0] += m * c->dvec[i][0];
        net[1] += m * c->dvec[i][1];
        net[3] += m * c->dvec[i][2];
        net[5] += m * c->dvec[i][3];
    } else if (act == FL_AN_SURRENDER) {
        if (r->peek) net[1] -= pr * q; /* undo: counted below */
        if (r->surrender == FL_SURRENDER_EARLY) {
            net[2] += pr;
        } else {
            net[2] += pr * (1.0 - q);
            net[1] += pr * q;
        }
    }
}

/* what the deals of one up card learn of each pair value index a (computed at its first deal
 * that needs it): the split's value (with the all-bust term once ab_done), whether that value
 * is approximate, and the split rounds' net distribution with its approximated mass */
typedef struct {
    double value[NV], net[NV][FL_AN_SPLIT_NETS], net_approx[NV];
    int done[NV], approx[NV], net_done[NV], ab_done[NV];
} up_splits;

/* the up card u's context: the shoe less it, its dealer DAG and distribution, the unsplit
 * hands' values (main_pass); 0 when out of range */
static int up_start(an_ctx *c, int u, const int32_t *S, fl_analysis *out) {
    c->up = u + 1;
    c->bj_x = u == 0 ? 9 : (u == 9 ? 0 : -1);
    c->hole_x = c->r->peek ? c->bj_x : -1;
    c->n0 = 0;
    for (int v = 0; v < NV; v++) {
        c->s0[v] = S[v] - (v == u);
        c->n0 += c->s0[v];
    }
    if (!build_dealer(c, u + 1)) return 0;
    cache_reset(&c->cache);
    /* the dealer's distribution off the shoe less the up card */
    int saved = c->hole_x;
    c->hole_x = -1;
    dealer_pass(c, c->s0, c->n0, out->dealer[u]);
    c->hole_x = saved;
    main_pass(c);
    return !c->err;
}

/* probability of the deal: player a, up u, player b (either order), from the shoe S of NS */
static double deal_probability(const int32_t *S, int32_t NS, int u, int a, int b) {
    double pr = 0.0;
    for (int o = 0; o < (a == b ? 1 : 2); o++) {
        int x = o ? b : a, y = o ? a : b;
        double n = NS;
        double f = (double)S[x] / n;
        f *= (double)(S[u] - (u == x)) / (n - 1);
        f *= (double)(S[y] - (y == x) - (y == u)) / (n - 2);
        if (f < 0) f = 0;
        pr += f;
    }
    return pr;
}

/* the action chosen at node nd (pair value index a, up u, dealer blackjack chance q): unc and
 * ev_row get each allowed action's value; the split's all-bust term added to sp where it is
 * needed (analyzer.c's header comment) and cond's split value with it */
static int choose_with_all_bust(an_ctx *c, up_splits *sp, const an_node *nd, int a, int u,
                                double q, double *cond, const int *allowed, double *unc,
                                double *ev_row) {
    const fl_analyzer_rules *r = c->r;
    for (;;) {
        uncond_values(r, q, cond, allowed, unc, ev_row);
        int act = choose_action(c, nd, a, u, allowed, unc);
        /* the all-bust term: under "original" it only lowers the split's value (the stakes
         * lost exceed the one unit counted), so it is needed where the split is played;
         * under "original and busted" it raises it, so it is needed wherever a split is
         * allowed */
        if (!allowed[FL_AN_SPLIT] || sp->ab_done[a] || !split_needs_all_bust(c) ||
            (act != FL_AN_SPLIT && r->enhc_takes != FL_TAKES_ORIGINAL_AND_BUSTED))
            return act;
        /* ... unless the term cannot make it the better play: it is at most the chance that
         * the card after the box's is a blackjack card, comp_bj / N (the share of those
         * cards left is a martingale: optional stopping) */
        if (act != FL_AN_SPLIT && unc[act] > unc[FL_AN_SPLIT] + bj_share(c, a)) return act;
        c->last_split_approx = 0;
        sp->value[a] += split_all_bust(
            c, a, act == FL_AN_SPLIT ? FL_AN_ALL_BUST_BUDGET : FL_AN_ALL_BUST_BUDGET_UNPLAYED);
        sp->approx[a] = c->last_split_approx;
        sp->ab_done[a] = 1;
        cond[FL_AN_SPLIT] = sp->value[a];
    }
}

/* a split round of pair value index a, of chance m (conditioned under peek), added to pt: its
 * mass and value, the approximation's bound (ab_top: the all-bust term's), and its net
 * distribution when asked for.  FL_ERR_RANGE on error. */
static fl_status add_split_round(an_ctx *c, up_splits *sp, int a, double m, double ab_top,
                                 an_part *pt) {
    const fl_analyzer_rules *r = c->r;
    pt->p_split += m;
    pt->ev_split += m * sp->value[a];
    if (sp->approx[a]) {
        /* "original": the term costs the stakes past the one unit, at most 7 units on the
         * event; "original and busted": it is the event */
        pt->p_split_approx += m;
        pt->ev_approx_bound += m * ab_top * (r->enhc_takes == FL_TAKES_ORIGINAL ? 7.0 : 1.0);
    }
    if (!r->split_dist) return FL_OK;
    if (!sp->net_done[a]) {
        split_distribution(c, a, sp->value[a], !sp->approx[a], sp->net[a], &sp->net_approx[a]);
        sp->net_done[a] = 1;
        if (c->err) return FL_ERR_RANGE;
    }
    for (int k = 0; k < FL_AN_SPLIT_NETS; k++) pt->split_net[k] += m * sp->net[a][k];
    pt->p_split_dist_approx += m * sp->net_approx[a];
    return FL_OK;
}

/* the deal of hand a, b (not a blackjack; row hi) against up u, of chance pr and dealer
 * blackjack chance q: its action and every action's value in out, its value in *value, and
 * its share of pt's sums (net distribution, splits).  FL_ERR_RANGE on error. */
static fl_status play_deal(an_ctx *c, up_splits *sp, int u, int a, int b, int hi, double pr,
                           double q, an_part *pt, fl_analysis *out, double *value) {
    const fl_analyzer_rules *r = c->r;
    uint8_t cnt[NV] = {0};
    cnt[a]++;
    cnt[b]++;
    int i = node_find(c, cnt);
    const an_node *nd = &c->nodes[i];
    double cond[FL_AN_ACTIONS] = {0.0, 0.0, 0.0, 0.0, 0.0};
    int allowed[FL_AN_ACTIONS] = {1, 1, 0, 0, 0};
    cond[FL_AN_STAND] = c->stand[i];
    cond[FL_AN_HIT] = c->hit[i];
    cond[FL_AN_DOUBLE] = c->dbl[i];
    allowed[FL_AN_DOUBLE] = may_double(r, nd);
    if (a == b && r->max_hands >= 2) {
        if (!sp->done[a]) {
            c->last_split_approx = 0;
            sp->value[a] = split_ev(c, a);
            sp->approx[a] = c->last_split_approx;
            sp->done[a] = 1;
            if (c->err) return FL_ERR_RANGE;
        }
        cond[FL_AN_SPLIT] = sp->value[a];
        allowed[FL_AN_SPLIT] = 1;
    }
    cond[FL_AN_SURRENDER] = -0.5;
    allowed[FL_AN_SURRENDER] = r->surrender != FL_SURRENDER_NONE;
    double unc[FL_AN_ACTIONS];
    int act = choose_with_all_bust(c, sp, nd, a, u, q, cond, allowed, unc, out->action_ev[hi][u]);
    out->action[hi][u] = (uint8_t)act;
    *value = unc[act];
    /* an all-bust term left out under "original and busted" raises the split's value: a
     * split not chosen is then not proven either; the term is at most the share of
     * blackjack cards left (the chance the card after the box's is one: optional stopping) */
    double ab_top = sp->approx[a] ? bj_share(c, a) : 0.0;
    if (allowed[FL_AN_SPLIT] && sp->approx[a] && act != FL_AN_SPLIT &&
        r->enhc_takes == FL_TAKES_ORIGINAL_AND_BUSTED) {
        pt->p_split_approx += r->peek ? pr * (1.0 - q) : pr;
        double gain = unc[FL_AN_SPLIT] + ab_top - unc[act];
        pt->ev_approx_bound += pr * (gain > 0.0 ? gain : 0.0);
    }
    /* the round's net distribution (split rounds: mass and value only) */
    double *net = pt->net_dist; /* -2, -1, -1/2, 0, +1, +2, blackjack */
    double m = r->peek ? pr * (1.0 - q) : pr; /* conditioned part */
    if (r->peek) net[1] += pr * q;
    if (act != FL_AN_SPLIT) {
        add_round_net(c, act, i, pr, q, m, net);
        return FL_OK;
    }
    return add_split_round(c, sp, a, m, ab_top, pt);
}

/* every deal against up card value index u: the out fields of u and pt's sums */
static fl_status analyze_up(an_ctx *c, int u, const int32_t *S, int32_t NS, an_part *pt,
                            fl_analysis *out) {
    const fl_analyzer_rules *r = c->r;
    double bj_pay = (double)r->bj_num / r->bj_den;
    if (!up_start(c, u, S, out)) return FL_ERR_RANGE;
    up_splits sp;
    memset(&sp, 0, sizeof sp);
    for (int a = 0; a < NV; a++)
        for (int b = a; b < NV; b++) {
            int hi = hand_index(a, b);
            double pr = deal_probability(S, NS, u, a, b);
            out->prob[hi][u] = pr;
            for (int k = 0; k < FL_AN_ACTIONS; k++) out->action_ev[hi][u][k] = NAN;
            if (pr <= 0.0) {
                out->action[hi][u] = 255;
                continue;
            }
            int32_t comp0[NV], n0 = 0;
            for (int v = 0; v < NV; v++) {
                comp0[v] = S[v] - (v == u) - (v == a) - (v == b);
                n0 += comp0[v];
            }
            double q = c->bj_x >= 0 ? (double)comp0[c->bj_x] / n0 : 0.0;
            out->p_dealer_bj[hi][u] = q;
            double value;
            if (a == 0 && b == 9) { /* player blackjack: paid unless the dealer has one */
                value = (1.0 - q) * bj_pay;
                pt->net_dist[6] += pr * (1.0 - q);
                pt->net_dist[3] += pr * q;
                out->action_ev[hi][u][0] = value;
                out->action[hi][u] = FL_AN_BLACKJACK;
            } else {
                fl_status st = play_deal(c, &sp, u, a, b, hi, pr, q, pt, out, &value);
                if (st != FL_OK) return st;
            }
            out->value[hi][u] = value;
            pt->ev += pr * value;
            pt->p_total += pr;
        }
    return FL_OK;
}

/* the up cards, dearest first, taken in turn by the threads (which thread takes which changes
 * no figure): the low cards' dealer DAGs are the largest; with the split rounds'
 * distribution a 7 up costs more than all the others together (pairs of 2s and 3s hit to 17
 * against it: 3.4 M of vegas_s17's 3.9 M boxes enumerated), so it goes first and one thread
 * takes the rest meanwhile */
static const int UP_ORDER[NV] = {1, 2, 0, 3, 4, 5, 6, 7, 8, 9};
static const int UP_ORDER_DIST[NV] = {6, 1, 2, 0, 3, 4, 5, 7, 8, 9};

typedef struct {
    an_ctx c;
    const int32_t *S;
    int32_t NS;
    an_part *parts;
    fl_analysis *out;
    atomic_int *next;
    fl_status status;
} an_worker;

static void *an_work(void *arg) {
    an_worker *w = arg;
    for (;;) {
        int i = atomic_fetch_add(w->next, 1);
        if (i >= NV) break;
        int u = w->c.r->split_dist ? UP_ORDER_DIST[i] : UP_ORDER[i];
        if (w->S[u] == 0) continue;
        w->parts[u].status = analyze_up(&w->c, u, w->S, w->NS, &w->parts[u], w->out);
    }
    return NULL;
}

static int an_threads(const fl_analyzer_rules *r) {
    long n = r->threads;
#if FL_AN_PTHREADS
    if (n == 0) n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    if (n < 1) n = 1;
    if (n > FL_AN_MAX_THREADS) n = FL_AN_MAX_THREADS;
#if !FL_AN_PTHREADS
    n = 1;
#endif
    return (int)n;
}

int fl_an_may_run_out(const uint32_t counts[10], uint32_t max_hands) {
    if (max_hands < 1) max_hands = 1;
    if (max_hands > 4) max_hands = 4;
    uint64_t pips = 0, last = max_hands; /* the highest cards as the last ones */
    for (int v = NV - 1; v >= 0; v--) {
        uint64_t n = counts[v], off = n < last ? n : last;
        last -= off;
        pips += (n - off) * (uint64_t)(v + 1);
    }
    return pips <= 20u * max_hands + 16u;
}

fl_status fl_analyze(const fl_analyzer_rules *r, fl_analysis *out) {
    if (!r || !out) return FL_ERR_NULL;
    uint32_t total = 0;
    for (int v = 0; v < NV; v++) {
        if (r->counts[v] > FL_AN_MAX_CARDS) return FL_ERR_RANGE;
        total += r->counts[v];
    }
    if (total < FL_AN_MIN_CARDS || total > FL_AN_MAX_CARDS) return FL_ERR_RANGE;
    if (r->max_hands >= 1 && r->max_hands <= 4 && fl_an_may_run_out(r->counts, r->max_hands))
        return FL_ERR_RANGE;
    if (r->h17 > 1 || r->peek > 1 || r->enhc_takes > FL_TAKES_ALL || r->bj_num < 1 ||
        r->bj_den < 1 || r->bj_num > 1000 || r->bj_den > 1000 ||
        r->double_on > FL_DOUBLE_HARD_10_11 || r->double_after_split > 1 || r->max_hands < 1 ||
        r->max_hands > 4 || r->resplit_aces > 1 || r->split_aces_one_card > 1 ||
        r->surrender > FL_SURRENDER_EARLY || r->strategy > 3 || r->split_dist > 1 ||
        r->threads > 1024)
        return FL_ERR_RANGE;
    if (r->strategy == FL_AN_TABLE) {
        for (int t = 0; t < 32; t++)
            for (int u = 0; u < 11; u++)
                if (r->hard[t][u] > 3 || r->soft[t][u] > 3 || r->surr[t][u] > 1)
                    return FL_ERR_RANGE;
        for (int k = 0; k < 13; k++)
            for (int u = 0; u < 11; u++)
                if (r->pair[k][u] > 1 || (k >= 9 && r->pair[k][u])) return FL_ERR_RANGE;
    }
    memset(out, 0, sizeof *out);
    an_ctx hands; /* the hand DAG, built once and read by every thread */
    memset(&hands, 0, sizeof hands);
    hands.r = r;
    hands.nodes = calloc(NODE_CAP, sizeof *hands.nodes);
    hands.hkeys = calloc(HASH_SIZE, sizeof *hands.hkeys);
    hands.hidx = calloc(HASH_SIZE, sizeof *hands.hidx);
    int nthreads = an_threads(r);
    an_worker w[FL_AN_MAX_THREADS];
    an_part parts[NV];
    memset(w, 0, sizeof w);
    memset(parts, 0, sizeof parts);
    atomic_int next;
    atomic_init(&next, 0);
    fl_status status = FL_OK;
    if (!hands.nodes || !hands.hkeys || !hands.hidx || !build_nodes(&hands)) {
        status = FL_ERR_RANGE;
        goto done;
    }
    int32_t S[NV], NS = 0;
    for (int v = 0; v < NV; v++) {
        S[v] = (int32_t)r->counts[v];
        NS += S[v];
    }
    for (int t = 0; t < nthreads; t++) {
        w[t].c.r = r;
        w[t].c.nodes = hands.nodes;
        w[t].c.hkeys = hands.hkeys;
        w[t].c.hidx = hands.hidx;
        w[t].c.nn = hands.nn;
        w[t].S = S;
        w[t].NS = NS;
        w[t].parts = parts;
        w[t].out = out;
        w[t].next = &next;
        if (!ctx_alloc(&w[t].c)) {
            status = FL_ERR_RANGE;
            goto done;
        }
    }
#if FL_AN_PTHREADS
    pthread_t tid[FL_AN_MAX_THREADS];
    int started[FL_AN_MAX_THREADS] = {0};
    for (int t = 1; t < nthreads; t++) started[t] = pthread_create(&tid[t], NULL, an_work, &w[t]) == 0;
    an_work(&w[0]); /* the calling thread works too; a thread not started leaves its share */
    for (int t = 1; t < nthreads; t++)
        if (started[t]) pthread_join(tid[t], NULL);
#else
    an_work(&w[0]);
#endif
    double ev_total = 0.0, p_total = 0.0;
    for (int u = 0; u < NV; u++) { /* in up-card order: the same sums for any thread count */
        const an_part *pt = &parts[u];
        if (pt->status != FL_OK) status = pt->status;
        ev_total += pt->ev;
        p_total += pt->p_total;
        for (int k = 0; k < 7; k++) out->net_dist[k] += pt->net_dist[k];
        out->p_split += pt->p_split;
        out->ev_split += pt->ev_split;
        out->p_split_approx += pt->p_split_approx;
        out->ev_approx_bound += pt->ev_approx_bound;
        for (int k = 0; k < FL_AN_SPLIT_NETS; k++) out->split_net[k] += pt->split_net[k];
        out->p_split_dist_approx += pt->p_split_dist_approx;
    }
    out->ev = ev_total;
    out->p_total = p_total;
    out->nodes = (uint32_t)hands.nn;
done:
    for (int t = 0; t < nthreads; t++) ctx_free(&w[t].c);
    free(hands.nodes);
    free(hands.hkeys);
    free(hands.hidx);
    return status;
}

fl_status fl_dealer_probabilities(const uint32_t counts[10], unsigned up, unsigned h17,
                                  unsigned peek, double out[7]) {
    if (!counts || !out) return FL_ERR_NULL;
    if (up < 1 || up > 10 || h17 > 1 || peek > 1) return FL_ERR_RANGE;
    fl_analyzer_rules r;
    memset(&r, 0, sizeof r);
    r.h17 = h17;
    uint32_t total = 0;
    for (int v = 0; v < NV; v++) {
        if (counts[v] > FL_AN_MAX_CARDS) return FL_ERR_RANGE;
        total += counts[v];
    }
    if (counts[up - 1] < 1 || total < FL_AN_MIN_CARDS || total > FL_AN_MAX_CARDS)
        return FL_ERR_RANGE;
    an_ctx c;
    memset(&c, 0, sizeof c);
    c.r = &r;
    c.ds = calloc(DSTATE_CAP, sizeof *c.ds);
    c.dplan = calloc(DSTATE_CAP, sizeof *c.dplan);
    c.dwork = calloc((size_t)DSTATE_CAP * AN_LANES, sizeof *c.dwork);
    c.dkeys = calloc(DHASH_SIZE, sizeof *c.dkeys);
    c.didx = calloc(DHASH_SIZE, sizeof *c.didx);
    fl_status st = FL_OK;
    if (!c.ds || !c.dplan || !c.dwork || !c.dkeys || !c.didx || !build_dealer(&c, (int)up)) {
        st = FL_ERR_RANGE;
    } else {
        int32_t comp[NV], N = 0;
        for (int v = 0; v < NV; v++) {
            comp[v] = (int32_t)counts[v] - (v == (int)up - 1);
            N += comp[v];
        }
        int bx = up == 1 ? 9 : (up == 10 ? 0 : -1);
        c.hole_x = peek ? bx : -1;
        dealer_pass(&c, comp, N, out);
    }
    free(c.ds);
    free(c.dplan);
    free(c.dwork);
    free(c.dkeys);
    free(c.didx);
    return st;
}
