"""A readable, one-line-per-step rendering of table events (``feltlab play``)."""

from __future__ import annotations

from feltlab.cards import card_str
from feltlab.events import Event
from feltlab.money import money


def describe_event(event: Event) -> list[str]:
    """Zero or more readable lines for ``event``; cards as ``A♠``, money as dollars."""
    d = event.data
    k = event.kind
    if k == "round_started":
        return [f"--- round {event.round} ---"]
    if k == "shoe_shuffled":
        rule = f" (rule {d['rule']})" if "rule" in d else ""
        return [f"  shoe shuffled: {str(d['reason']).replace('_', ' ')}{rule}"]
    if k == "wager_placed":
        return [f"  box {d['box']} {d['player']}: {d['wager']} {money(int(d['amount']))}"]
    if k == "card_dealt":
        who = "dealer" if d["to"] == "dealer" else f"box {d['box']} hand {d['hand']}"
        return [f"  {who} <- {card_str(int(d['card']))}"]
    if k == "decision":
        return [f"  box {d['box']} hand {d['hand']}: {d['decision']}"]
    if k == "dealer_done":
        cards = " ".join(card_str(int(c)) for c in d["cards"])
        bj = " blackjack" if d["blackjack"] else ""
        return [f"  dealer: {cards} = {d['total']}{bj}"]
    if k == "wager_settled":
        return [
            f"  settle box {d['box']} {d['player']} {d['wager']}: {d['outcome']} "
            f"{money(int(d['net']), signed=True)} (rule {d['rule']})"
        ]
    if k == "jackpot_pressed":
        return [
            f"  jackpot button for box {d['box']} pressed by {d['by']}: {money(int(d['prize']))}"
        ]
    if k == "cut_card_reached":
        return [f"  cut card reached (rule {d['rule']})"]
    if k == "insurance_offered":
        return [f"  insurance offered: dealer shows {card_str(int(d['dealer_up']))}"]
    if k == "hand_voided":
        return [f"  box {d['box']} hand void (rule {d['rule']})"]
    if k == "device_fault":
        return [
            f"  device {d['device']} fault during {d['during']}: {d['message']} (rule {d['rule']})"
        ]
    if k == "round_settled":
        nets = ", ".join(f"{p} {money(int(v), signed=True)}" for p, v in sorted(d["net"].items()))
        return [f"  round {event.round} net: {nets}"]
    return []
