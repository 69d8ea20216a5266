"""feltlab-sidebets: 21+3 and Lucky Ladies as feltlab wager plugins (an example vendor package)."""

from feltlab_sidebets.lucky_ladies import LuckyLadies
from feltlab_sidebets.twenty_one_plus_three import TwentyOnePlusThree

__all__ = ["LuckyLadies", "TwentyOnePlusThree"]
