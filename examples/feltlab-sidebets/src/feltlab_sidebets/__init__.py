"""feltlab-sidebets: 21+3, Lucky Ladies, Buster Blackjack and Bust Bonus as feltlab wager
plugins (an example vendor package)."""

from feltlab_sidebets.bust_bonus import BustBonus
from feltlab_sidebets.buster import BusterBlackjack
from feltlab_sidebets.lucky_ladies import LuckyLadies
from feltlab_sidebets.twenty_one_plus_three import TwentyOnePlusThree

__all__ = ["BustBonus", "BusterBlackjack", "LuckyLadies", "TwentyOnePlusThree"]
