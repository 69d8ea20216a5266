/* The combinatorial analyzer's split passes: split hands' values by pattern of second
 * cards and the all-bust correction under no hole card (method: analyzer.c's header
 * comment). */
#include <stdlib.h>
#include <string.h>

#include "analyzer_internal.h"

/* ------------------------------------------------------------ split passes */

static double bust_value(const an_ctx *c, const an_node *a, int x, double stake) {
    /* a split hand `a` busted by a card of value index x; under no hole card and
     * "original" its wager comes back when the dealer shows a blackjack (some other hand
     * being live: the case where none is, is added exactly by all_bust below) */
    if (c->r->peek || c->r->enhc_takes != 0 || c->bj_x < 0) return -stake;
    int32_t comp[NV];
    int32_t N = comp_of(c, a, c->split_p, c->split_k - 1, comp);
    comp[x]--;
    N--;
    if (N <= 0 || comp[x] < 0) return -stake;
    return -stake * (1.0 - (double)comp[c->bj_x] / N);
}

static double live_bj_loss(const an_ctx *c, double stake) {
    if (c->r->peek) return 0.0;
    return c->r->enhc_takes == FL_TAKES_ALL ? -stake : 0.0;
}

/* the strategy's play of a split hand at node i: 0 stand, 1 hit, 2 double */
int split_action(const an_ctx *c, int i) {
    const fl_analyzer_rules *r = c->r;
    const an_node *a = &c->nodes[i];
    int soft, t = node_total(a, &soft);
    if (a->n == 2 && c->split_p == 0 && r->split_aces_one_card) return 0;
    if (t >= 21) return 0;
    if ((r->strategy == FL_AN_CDP1 || r->strategy == FL_AN_CDP) && c->pstamp[i] == c->cur_pstamp)
        return c->pdec[i]; /* the optimal play at k = 2 pair cards out */
    if (r->strategy != FL_AN_TABLE) {
        int action = c->dec[i] ? SPLIT_HIT : SPLIT_STAND;
        if (a->n == 2 && r->double_after_split && may_double(r, a) &&
            c->dbl[i] > (c->stand[i] > c->hit[i] ? c->stand[i] : c->hit[i]))
            action = SPLIT_DOUBLE;
        return action;
    }
    int act = table_action(c, a);
    if (act >= FL_ACT_DOUBLE_ELSE_HIT && a->n == 2 && r->double_after_split && may_double(r, a))
        return SPLIT_DOUBLE;
    return (act == FL_ACT_HIT || act == FL_ACT_DOUBLE_ELSE_HIT) ? SPLIT_HIT : SPLIT_STAND;
}

#define AB_MEMO_BITS 20
#define AB_MEMO_SIZE (1u << AB_MEMO_BITS)
#define AB_LIST_CAP 8192

/* one way a split hand busts: the cards it drew after its pair card (the multiset, the
 * second card first in `second`), its stake, and how many orders of those cards the
 * strategy plays to that bust; ns values sv drawn sm times each: m's support */
typedef struct {
    uint8_t m[NV];
    uint8_t n, second, stake;
    double ways;
    uint8_t ns, sv[NV], sm[NV];
} ab_bust;

typedef struct {
    int P, H;
    int32_t base[NV]; /* the unseen cards when the split began */
    uint64_t *keys;   /* memo of ab_next: removed cards, h, pend (0: empty) */
    double (*vals)[2];
    uint32_t used;
    ab_bust *list;
    int nlist;
    int overflow;
    int most[NV]; /* the most cards of each value one busting play draws */
    int most_n;   /* the most cards one busting play draws */
} ab_args;

static void ab_add(ab_args *g, const uint8_t *m, int n, int second, int stake, double ways) {
    for (int k = g->nlist - 1; k >= 0; k--) {
        ab_bust *b = &g->list[k];
        if (b->n == n && b->second == second && b->stake == stake && !memcmp(b->m, m, NV)) {
            b->ways += ways;
            return;
        }
    }
    if (g->nlist >= AB_LIST_CAP) {
        g->overflow = 1;
        return;
    }
    ab_bust *b = &g->list[g->nlist++];
    memcpy(b->m, m, NV);
    b->n = (uint8_t)n;
    b->second = (uint8_t)second;
    b->stake = (uint8_t)stake;
    b->ways = ways;
    b->ns = 0;
    for (int v = 0; v < NV; v++)
        if (m[v]) {
            b->sv[b->ns] = (uint8_t)v;
            b->sm[b->ns++] = m[v];
            if (m[v] > g->most[v]) g->most[v] = m[v];
        }
    if (n > g->most_n) g->most_n = n;
}

/* every busting play of a split hand from node i; m: the cards drawn so far */
static void ab_collect(an_ctx *c, ab_args *g, int i, uint8_t *m, int n, int second) {
    if (g->overflow || --c->ab_budget < 0) {
        g->overflow = 1;
        return;
    }
    int act = split_action(c, i);
    if (act == SPLIT_STAND) return;
    const an_node *a = &c->nodes[i];
    for (int x = 0; x < NV; x++) {
        int j = a->child[x];
        m[x]++;
        if (j < 0)
            ab_add(g, m, n + 1, second, act == SPLIT_DOUBLE ? 2 : 1, 1.0);
        else if (act == SPLIT_HIT)
            ab_collect(c, g, j, m, n + 1, second);
        m[x]--;
    }
}

/* the probability of one given order of a busting play's cards off one composition, by
 * tables: ff[v][k] = c_v (c_v - 1) .. (c_v - k + 1) (0 past c_v), ip[k] = 1 / (N (N - 1) ..
 * (N - k + 1)) */
typedef struct {
    double ff[NV][NODE_DEPTH];
    double ip[NODE_DEPTH];
} ab_draw_t;

static void ab_prep(const ab_args *g, ab_draw_t *t, const int32_t *comp, int32_t N) {
    for (int v = 0; v < NV; v++) {
        double f = 1.0;
        t->ff[v][0] = 1.0;
        for (int k = 1; k <= g->most[v]; k++) {
            int32_t left = comp[v] - (k - 1);
            f *= left > 0 ? (double)left : 0.0;
            t->ff[v][k] = f;
        }
    }
    double f = 1.0;
    t->ip[0] = 1.0;
    for (int k = 1; k <= g->most_n; k++) {
        f *= N - (k - 1) > 0 ? 1.0 / (double)(N - (k - 1)) : 0.0;
        t->ip[k] = f;
    }
}

static inline double ab_draw(const ab_draw_t *t, const ab_bust *b) {
    double p = t->ip[b->n];
    for (int i = 0; i < b->ns; i++) p *= t->ff[b->sv[i]][b->sm[i]];
    return p;
}

/* the probability that the `pend` hands still to play (h hands so far) all bust and the
 * dealer's next card makes a blackjack, off comp (N cards); *stakes gains the expectation of
 * those hands' stakes on that event.  Memoised by the cards removed since the split. */
static double ab_next(an_ctx *c, ab_args *g, int32_t *comp, int32_t N, int h, int pend,
                      double *stakes) {
    if (N <= 0 || c->ab_failed) return 0.0;
    if (pend == 0) return (double)comp[c->bj_x] / N;
    uint64_t key = 0;
    uint32_t slot = 0;
    int memo = g->keys != NULL;
    for (int v = 0; v < NV && memo; v++) {
        int32_t rem = g->base[v] - comp[v];
        if (rem > 31) memo = 0;
        key |= (uint64_t)rem << (5 * v);
    }
    if (memo) {
        key = (key | (uint64_t)h << 50 | (uint64_t)pend << 53) + 1;
        slot = hash64(key) & (AB_MEMO_SIZE - 1);
        while (g->keys[slot]) {
            if (g->keys[slot] == key) {
                *stakes += g->vals[slot][1];
                return g->vals[slot][0];
            }
            slot = (slot + 1) & (AB_MEMO_SIZE - 1);
        }
    }
    c->ab_budget -= g->nlist + 1;
    if (c->ab_budget < 0) {
        c->ab_failed = 1;
        return 0.0;
    }
    double pr = 0.0, st = 0.0;
    int P = g->P, bj = c->bj_x, resplit = h < g->H;
    if (resplit && comp[P] > 0) { /* a pair card: the hand splits again */
        double p = (double)comp[P] / N, s = 0.0;
        comp[P]--;
        double q = ab_next(c, g, comp, N - 1, h + 1, pend + 1, &s);
        comp[P]++;
        pr += p * q;
        st += p * s;
    }
    ab_draw_t t;
    ab_prep(g, &t, comp, N);
    for (int k = 0; k < g->nlist; k++) {
        const ab_bust *b = &g->list[k];
        if (resplit && b->second == P) continue;
        double p = b->ways * ab_draw(&t, b);
        if (p == 0.0) continue;
        double q, s = 0.0;
        if (pend == 1) { /* the last hand: the dealer's next card off what is left */
            int32_t left = N - b->n;
            q = left > 0 ? (double)(comp[bj] - b->m[bj]) / left : 0.0;
        } else {
            for (int v = 0; v < NV; v++) comp[v] -= b->m[v];
            q = ab_next(c, g, comp, N - b->n, h, pend - 1, &s);
            for (int v = 0; v < NV; v++) comp[v] += b->m[v];
        }
        pr += p * q;
        st += p * (s + q * b->stake);
    }
    *stakes += st;
    if (memo && g->used * 2 < AB_MEMO_SIZE) {
        g->keys[slot] = key;
        g->vals[slot][0] = pr;
        g->vals[slot][1] = st;
        g->used++;
    }
    return pr;
}

/*
 * Under no hole card, "original" or "original and busted": the exact probability that
 * every hand of a split box busts and the dealer's next card would make a blackjack (the
 * dealer then takes no second card and the busted wagers are lost whole), and the
 * expectation of the box's stakes on that event, in the order of play.  Each hand's
 * busting plays are listed once as multisets of drawn cards with their number of orders
 * (the strategy depends on the hand's cards only); the hands are then chained over the
 * unseen cards, memoised by the cards removed.  Returns what the split's value gains over
 * the one-unit-per-box count; 0 (and ab_failed) when the busting plays are too many.
 */
static double all_bust_correction(an_ctx *c, int P, int H, long budget) {
    int32_t comp[NV], N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - (v == P ? 2 : 0);
        if (comp[v] < 0) return 0.0;
        N += comp[v];
    }
    ab_args g;
    memset(&g, 0, sizeof g);
    g.P = P;
    g.H = H;
    memcpy(g.base, comp, sizeof comp);
    g.keys = calloc(AB_MEMO_SIZE, sizeof *g.keys);
    g.vals = malloc(sizeof(*g.vals) * AB_MEMO_SIZE);
    g.list = malloc(sizeof(*g.list) * AB_LIST_CAP);
    c->split_p = P;
    c->split_k = 2; /* split_action reads only pre-split decisions */
    c->ab_budget = budget;
    c->ab_failed = 0;
    double pr = 0.0, stakes = 0.0;
    if (!g.keys || !g.vals || !g.list) {
        c->ab_failed = 1;
    } else {
        int start = c->nodes[0].child[P];
        uint8_t m[NV] = {0};
        for (int x = 0; x < NV; x++) {
            m[x]++;
            ab_collect(c, &g, c->nodes[start].child[x], m, 1, x);
            m[x]--;
        }
        if (g.overflow)
            c->ab_failed = 1;
        else
            pr = ab_next(c, &g, comp, N, 2, 2, &stakes);
    }
    free(g.keys);
    free(g.vals);
    free(g.list);
    if (c->ab_failed) return 0.0; /* too many busting plays: left approximate */
    /* "original": the event was counted as -1, it costs the stakes;
     * "original and busted": counted as the stakes plus one unit, it costs the stakes */
    return c->r->enhc_takes == FL_TAKES_ORIGINAL ? pr - stakes : pr;
}

static double split_value(an_ctx *c, int i);

/* the values of standing, hitting and doubling a split hand at node i, k pair cards out */
static double split_stand(an_ctx *c, const an_node *a, int t) {
    const double *d = cached_dist(c, a->cnt, c->split_p, c->split_k - 1);
    if (!d) return 0.0;
    return stand_nobj(d, t) + d[OUT_BJ] * live_bj_loss(c, 1.0);
}

static double split_draw(an_ctx *c, const an_node *a, const double *p, int dbl) {
    double v = 0.0;
    for (int x = 0; x < NV; x++) {
        if (p[x] == 0.0) continue;
        int j = a->child[x];
        double w;
        if (!dbl) {
            w = j < 0 ? bust_value(c, a, x, 1.0) : split_value(c, j);
        } else if (j < 0) {
            w = bust_value(c, a, x, 2.0);
        } else {
            int s2, t2 = node_total(&c->nodes[j], &s2);
            const double *d = cached_dist(c, c->nodes[j].cnt, c->split_p, c->split_k - 1);
            if (!d) return 0.0;
            w = 2.0 * stand_nobj(d, t2) + d[OUT_BJ] * live_bj_loss(c, 2.0);
        }
        v += p[x] * w;
    }
    return v;
}

/* CDP1 and CDP: the post-split play optimal for the shoe less the hand's cards, the up
 * card and k pair cards (CDP: at every k; CDP1: at k = 2, the first split hand's, kept for
 * every k) (E. Farmer's definitions) */
static int split_optimal(const an_ctx *c) {
    int s = (int)c->r->strategy;
    return s == FL_AN_CDP || (s == FL_AN_CDP1 && c->split_k == 2);
}

/* value of a split hand at node i (one of its cards a pair card), k pair cards out */
static double split_value(an_ctx *c, int i) {
    if (c->stamp[i] == c->cur_stamp) return c->vk[i];
    const an_node *a = &c->nodes[i];
    int32_t comp[NV];
    int32_t N = comp_of(c, a, c->split_p, c->split_k - 1, comp);
    double v = 0.0;
    if (N >= 0) {
        int soft, t = node_total(a, &soft);
        const fl_analyzer_rules *r = c->r;
        int forced = t >= 21 || (a->n == 2 && c->split_p == 0 && r->split_aces_one_card);
        double p[NV];
        if (!forced && split_optimal(c)) {
            draw_probs(c, comp, N, p);
            double sv = split_stand(c, a, t), hv = split_draw(c, a, p, 0);
            int act = hv > sv ? 1 : 0;
            v = act ? hv : sv;
            if (a->n == 2 && r->double_after_split && may_double(r, a)) {
                double dv = split_draw(c, a, p, 1);
                if (dv > v) {
                    v = dv;
                    act = 2;
                }
            }
            if (c->split_k == 2) {
                c->pdec[i] = (uint8_t)act;
                c->pstamp[i] = c->cur_pstamp;
            }
        } else {
            int action = split_action(c, i);
            if (action == SPLIT_STAND) {
                v = split_stand(c, a, t);
            } else {
                draw_probs(c, comp, N, p);
                v = split_draw(c, a, p, action == SPLIT_DOUBLE);
            }
        }
    }
    c->stamp[i] = c->cur_stamp;
    c->vk[i] = v;
    return v;
}

typedef struct {
    double evn[MAXK + 1], evx[MAXK + 1], pp[MAXK + 1]; /* by k = pair cards out */
    int have[MAXK + 1];
    int ok[MAXK + 1];
} split_terms;

/* the compositions split_value will read the dealer's distribution off, found by walking
 * the play it will take (every play where it chooses the best), appended to keys */
static void split_walk(an_ctx *c, int i, int *n) {
    if (c->seen[i]) return;
    c->seen[i] = 1;
    const an_node *a = &c->nodes[i];
    int32_t comp[NV];
    if (comp_of(c, a, c->split_p, c->split_k - 1, comp) < 0) return;
    const fl_analyzer_rules *r = c->r;
    int soft, t = node_total(a, &soft);
    int forced = t >= 21 || (a->n == 2 && c->split_p == 0 && r->split_aces_one_card);
    int best = !forced && split_optimal(c);
    int act = best ? -1 : split_action(c, i);
    uint8_t rem[NV];
    memcpy(rem, a->cnt, NV);
    rem[c->split_p] = (uint8_t)(rem[c->split_p] + c->split_k - 1);
    if (best || act == SPLIT_STAND) c->keybuf[(*n)++] = key_of(rem);
    int dbl = act == SPLIT_DOUBLE ||
              (best && a->n == 2 && r->double_after_split && may_double(r, a));
    for (int x = 0; x < NV; x++) {
        int j = a->child[x];
        if (j < 0 || comp[x] <= 0) continue;
        if (dbl) c->keybuf[(*n)++] = key_of(rem) + ((uint64_t)1 << (6 * x));
        if (best || act == SPLIT_HIT) split_walk(c, j, n);
    }
}

/* EV_N(k), EV_x(k) and p(pair | k out) for pair value index P */
static void split_terms_at(an_ctx *c, split_terms *T, int P, int k) {
    if (T->have[k]) return;
    T->have[k] = 1;
    T->ok[k] = 0;
    int start = c->nodes[0].child[P];
    int32_t comp[NV];
    int32_t N = comp_of(c, &c->nodes[start], P, k - 1, comp);
    if (N <= 0) return;
    T->ok[k] = 1;
    double p[NV];
    draw_probs(c, comp, N, p);
    c->split_p = P;
    c->split_k = k;
    c->cur_stamp++;
    { /* the dealer's distributions this pass reads, filled ahead in lane-parallel passes */
        int n = 0;
        memset(c->seen, 0, (size_t)c->nn);
        for (int x = 0; x < NV; x++)
            if (p[x] != 0.0) split_walk(c, c->nodes[start].child[x], &n);
        cached_dist_fill(c, c->keybuf, n);
    }
    double ex = 0.0, en = 0.0;
    for (int x = 0; x < NV; x++) {
        if (p[x] == 0.0) continue;
        double w = split_value(c, c->nodes[start].child[x]);
        ex += p[x] * w;
        if (x != P) en += p[x] * w;
    }
    T->pp[k] = p[P];
    T->evx[k] = ex;
    T->evn[k] = p[P] < 1.0 ? en / (1.0 - p[P]) : 0.0;
}

static double binom(int n, int k) {
    double b = 1.0;
    for (int i = 1; i <= k; i++) b = b * (n - k + i) / i;
    return b;
}

/* probability that q specific further second cards are all pair cards (2 out already) */
static double pp_prod(an_ctx *c, split_terms *T, int P, int q) {
    double pr = 1.0;
    for (int i = 0; i < q; i++) {
        int k = 2 + i;
        if (k > MAXK) return 0.0;
        split_terms_at(c, T, P, k);
        if (!T->ok[k]) return 0.0;
        pr *= T->pp[k];
        if (pr == 0.0) return 0.0;
    }
    return pr;
}

/* one hand's term: m pair cards and r non-pair cards among the other second cards */
static double hand_term(an_ctx *c, split_terms *T, int P, int m, int r, int is_n) {
    double s = 0.0;
    for (int t = 0; t <= r; t++) {
        double pr = pp_prod(c, T, P, m + t);
        if (pr == 0.0) continue;
        int k = 2 + m + t;
        if (k > MAXK) continue;
        split_terms_at(c, T, P, k);
        if (!T->ok[k]) continue;
        double term = is_n ? (1.0 - T->pp[k]) * T->evn[k] : T->evx[k];
        s += ((t & 1) ? -1.0 : 1.0) * binom(r, t) * pr * term;
    }
    return s;
}

static double split_patterns(an_ctx *c, split_terms *T, int P, int H, int h, int pend, int m,
                             int nn) {
    if (h >= H || pend == 0) {
        double s = 0.0;
        if (nn) s += nn * hand_term(c, T, P, m, nn - 1, 1);
        if (pend) s += pend * hand_term(c, T, P, m, nn, 0);
        return s;
    }
    return split_patterns(c, T, P, H, h + 1, pend + 1, m + 1, nn) +
           split_patterns(c, T, P, H, h, pend - 1, m, nn + 1);
}

static int split_hands(const an_ctx *c, int P) {
    return P == 0 && !c->r->resplit_aces ? 2 : (int)c->r->max_hands;
}

double split_ev(an_ctx *c, int P) {
    const fl_analyzer_rules *r = c->r;
    int H = split_hands(c, P);
    split_terms T;
    memset(&T, 0, sizeof T);
    c->cur_pstamp++;
    split_terms_at(c, &T, P, 2); /* first: CDP1 keeps the play found at k = 2 */
    double ev = split_patterns(c, &T, P, H, 2, 2, 0, 0);
    if (split_needs_all_bust(c)) {
        /* the box's one unit lost to a dealer blackjack */
        int32_t comp[NV], N = 0;
        for (int v = 0; v < NV; v++) {
            comp[v] = c->s0[v] - (v == P ? 2 : 0);
            N += comp[v];
        }
        if (N > 0) ev -= (double)comp[c->bj_x] / N;
    }
    (void)r;
    return ev;
}

int split_needs_all_bust(const an_ctx *c) {
    return !c->r->peek && c->r->enhc_takes != FL_TAKES_ALL && c->bj_x >= 0;
}

double split_all_bust(an_ctx *c, int P, long budget) {
    double corr = all_bust_correction(c, P, split_hands(c, P), budget);
    c->last_split_approx = c->ab_failed;
    return corr;
}
